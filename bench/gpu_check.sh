#!/usr/bin/env bash
# The device check, in one go (docs/gpu.md): on a machine with an NVIDIA GPU,
#   (a) configure and build the CUDA targets in build-gpu-check (Release, sm_90 only unless
#       ACCEL_CUDA_ARCHS says otherwise: one architecture halves nvcc's time),
#   (b) run the `gpu`-labelled tests and the CUDA host test,
#   (c) run the GPU benchmark: per-kernel microbenchmarks, then the GPT-2 124M bf16 training step
#       (B=16, T=1024) with tokens/s and MFU,
#   (d) train GPT-2 124M with the engine's device trainer: `accel-worker --standalone --device
#       cuda --mixed-precision bf16` (B=16, T=1024, 20 steps; the trainer's tokens/s and MFU,
#       median of steps 5..20), then a 1-rank FULL_SHARD job (`resources.device: cuda`,
#       checkpoints every 10 steps) through a local acceld, which must end SUCCEEDED with
#       checkpoints that `accelctl ckpt inspect` verifies.
# Sized to finish in under 8 minutes on one H200 with 16 cores (build ~3-4 min from scratch,
# tests < 1 min, benchmark ~1 min). Exits nonzero if any part fails, after running all of them.
#   bench/gpu_check.sh [--micro-only]      (env: BUILD_DIR, BUILD_TYPE, ACCEL_CUDA_ARCHS, JOBS)
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-gpu-check}
ARCHS=${ACCEL_CUDA_ARCHS:-90}
BUILD_TYPE=${BUILD_TYPE:-Release}
JOBS=${JOBS:-$(nproc)}
BENCH_ARGS=("$@")
status=0
step() { printf '\n==== %s (%s) ====\n' "$1" "$(date +%T)"; }

step "device"
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv || true
else
  echo "nvidia-smi not found; the tests will skip and the benchmark will say there is no device"
fi

step "configure + build ($BUILD_DIR, sm_$ARCHS, -j$JOBS)"
export CCACHE_BASEDIR=$PWD
mkdir -p "$BUILD_DIR"
if ! cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" \
    -DACCEL_CUDA_ARCHS="$ARCHS" >"$BUILD_DIR/configure.log" 2>&1; then
  tail -40 "$BUILD_DIR/configure.log"; echo "configure failed"; exit 1
fi
grep -q "accel: CUDA path ON" "$BUILD_DIR/configure.log" || {
  echo "CMake did not find nvcc: the CUDA targets are not configured"; exit 1; }
targets=(accel_cuda_host_test accel_cuda_test accel_gpu_bench accel_golden_gpu_test
         accel_model_cuda_test accel_device_trainer_test accel_device_trainer_gpu_test
         accel_shard_cuda_test accel-worker acceld accelctl)
grep -q "accel_nccl_test" "$BUILD_DIR/build.ninja" && targets+=(accel_nccl_test)
if ! cmake --build "$BUILD_DIR" -j"$JOBS" --target "${targets[@]}"; then
  echo "build failed"; exit 1
fi

step "tests: ctest -L gpu, and the CUDA host test"
ctest --test-dir "$BUILD_DIR" -L gpu --output-on-failure --timeout 300 -j1 || status=1
"$BUILD_DIR/engine/kernels/cuda/accel_cuda_host_test" --gtest_brief=1 || status=1

step "benchmark"
timeout 300 "$BUILD_DIR/bench/accel_gpu_bench" "${BENCH_ARGS[@]}" || status=1

step "device trainer: accel-worker --standalone --device cuda (gpt2 124M, bf16, B=16, T=1024)"
records=$(mktemp /tmp/accel-gpu-check-steps.XXXXXX)
timeout 300 "$BUILD_DIR/worker/accel-worker" --standalone --device cuda --model gpt2 \
  --mixed-precision bf16 --batch 16 --seq 1024 --steps 20 --data data/kjv.txt --output json \
  >"$records" || { status=1; tail -5 "$records"; }
python3 - "$records" <<'PY' || status=1
import json, statistics, sys
steps = [r for r in map(json.loads, open(sys.argv[1])) if "tokens_per_s" in r]
if len(steps) < 6: sys.exit("fewer than 6 step records")
for r in steps[::5]: print(f"step {r['step']}: loss {r['loss']:.4f}, {r['tokens_per_s']:.0f} tok/s")
tps = statistics.median(r["tokens_per_s"] for r in steps[4:])
n, l, c, t = 124_439_808, 12, 768, 1024  # the rule of docs/gpu.md and accel_bench_train
mfu = tps * (6 * n + 6 * l * c * t) / 989e12
print(f"device trainer gpt2 bf16 B=16 T=1024: {tps:.0f} tokens/s, MFU {100 * mfu:.1f}% of 989 TFLOP/s")
PY

step "a 1-rank FULL_SHARD cuda job through acceld"
state=$(mktemp -d /tmp/accel-gpu-check.XXXXXX)
"$BUILD_DIR/server/acceld" --listen "" --unix-socket "$state/acceld.sock" --state-dir "$state" \
  --cpu-slots 1 --log-level warn >"$state/acceld.log" 2>&1 &
acceld=$!
for _ in $(seq 100); do [ -S "$state/acceld.sock" ] && [ -f "$state/token" ] && break; sleep 0.1; done
cat >"$state/job.yaml" <<JOB
name: gpu-check
model: {preset: gpt2}
data: {path: $PWD/data/kjv.txt}
train: {steps: 20, micro_batch: 8, seq_len: 1024, log_every: 5}
sharding: {strategy: full_shard}
checkpoint: {dir: $state/ckpt, every_n_steps: 10}
resources: {num_processes: 1, device: cuda}
JOB
timeout 300 "$BUILD_DIR/client/accelctl" --server "unix:$state/acceld.sock" \
  --token-file "$state/token" submit "$state/job.yaml" --wait || { status=1; tail -20 "$state/acceld.log"; }
# The device checkpoints it wrote must verify (checksums, metadata) on the host.
"$BUILD_DIR/client/accelctl" ckpt inspect "$state/ckpt" || status=1
kill $acceld 2>/dev/null; wait $acceld 2>/dev/null

step "done: $([ $status -eq 0 ] && echo PASS || echo FAIL)"
exit $status
