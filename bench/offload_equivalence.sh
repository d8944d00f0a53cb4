#!/usr/bin/env bash
# Same numbers, a fraction of the memory: a model (gpt2-medium by default) trains N steps with
# everything resident and again with its state offloaded to files, for each strategy that allows
# offload, in fp32 and bf16 mixed precision. Prints, per case, whether the final parameters are
# the same bytes (the saved model files compared with cmp), and each run's peak RSS (VmHWM) over
# its training steps (the last step record's "peak_rss"; the final save comes after it) with the
# offloaded / resident ratio. Resident runs are the baseline, from the same invocation.
#
#   bench/offload_equivalence.sh [--model gpt2-medium] [--steps 3] [--dir /var/tmp/accel-equiv]
#                                [--build build] [--strategies "full_shard shard_grad_op zero1 no_shard"]
#                                [--dtypes "fp32 bf16"]
# full_shard offloads parameters too (ZeRO-3 / FSDP offload_params); the others the optimizer.
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=gpt2-medium STEPS=3 DIR=/var/tmp/accel-equiv BUILD=build
STRATEGIES="full_shard shard_grad_op zero1 no_shard" DTYPES="fp32 bf16"
while [ $# -gt 0 ]; do
  case "$1" in
    --model) MODEL=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --dir) DIR=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --strategies) STRATEGIES=$2; shift 2 ;;
    --dtypes) DTYPES=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
WORKER=$BUILD/worker/accel-worker
[ -x "$WORKER" ] || { echo "no $WORKER: build first (scripts/build.sh)" >&2; exit 2; }
mkdir -p "$DIR"

# One run; prints its peak RSS over the training steps in kB. $1 name, then extra flags.
run() {
  local name=$1; shift
  "$WORKER" --standalone --model "$MODEL" --data data/kjv.txt --batch 1 --seq 64 \
    --steps "$STEPS" --threads 2 --save-final "$DIR/$name.safetensors" \
    --metrics-out "$DIR/$name.jsonl" "$@" \
    > "$DIR/$name.out" 2> "$DIR/$name.err" || { echo "$name failed:" >&2; tail -3 "$DIR/$name.err" >&2; exit 1; }
  tail -1 "$DIR/$name.jsonl" | python3 -c \
    'import json, sys; print(json.load(sys.stdin)["ranks"][0]["process"]["peak_rss"] // 1024)'
}

printf "%-14s %-5s %-10s %16s %18s %8s\n" strategy dtype same-bits "resident peak GB" "offloaded peak GB" ratio
for dtype in $DTYPES; do
  precision=()
  [ "$dtype" = bf16 ] && precision=(--mixed-precision bf16)
  for strategy in $STRATEGIES; do
    offload=(--offload-optimizer --offload-dir "$DIR/nvme")
    [ "$strategy" = full_shard ] && offload+=(--offload-params)
    rm -rf "$DIR/nvme"; mkdir -p "$DIR/nvme"
    resident=$(run "resident_${strategy}_$dtype" --strategy "$strategy" "${precision[@]}")
    offloaded=$(run "offloaded_${strategy}_$dtype" --strategy "$strategy" "${precision[@]}" "${offload[@]}")
    same=no
    cmp -s "$DIR/resident_${strategy}_$dtype.safetensors" "$DIR/offloaded_${strategy}_$dtype.safetensors" && same=yes
    printf "%-14s %-5s %-10s %16.2f %18.2f %8.3f\n" "$strategy" "$dtype" "$same" \
      "$(echo "$resident / 1048576" | bc -l)" "$(echo "$offloaded / 1048576" | bc -l)" \
      "$(echo "$offloaded / $resident" | bc -l)"
    rm -f "$DIR"/*.safetensors
  done
done
rm -rf "$DIR/nvme"
