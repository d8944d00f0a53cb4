#!/usr/bin/env bash
# Sets up (deps + build) and runs the main job on the embedded default: a local acceld (state in a
# fresh temporary directory, private unix socket), the default job submitted to it — a small
# byte-level GPT-2 (gpt2-mini) trained on the bundled King James text (data/kjv.txt) by 2 CPU
# ranks with FSDP FULL_SHARD (configs/jobs/job_default.yaml) — and its progress streamed to the
# terminal until it ends (on a terminal one live block: accelctl watch's; --verbose: every event as
# a line). Exits 0 when the job SUCCEEDED. Extra arguments go to `accelctl submit`.
set -euo pipefail
cd "$(dirname "$0")/.."
# Only the three programs the job runs and their libraries; scripts/test.sh builds the rest
# (tests, benchmarks, fuzzers) in the same build directory without rebuilding these.
bash scripts/build-progress.sh acceld accelctl accel-worker   # progress shown compactly (log in build/build.log)
state=$(mktemp -d /tmp/accel-default.XXXXXX)
rm -rf /tmp/accel-ckpt/gpt2-mini-kjv   # the default job's checkpoint directory
build/server/acceld --listen "" --unix-socket "$state/acceld.sock" --state-dir "$state" \
  --cpu-slots 2 --log-level warn >"$state/acceld.log" 2>&1 &
acceld=$!
trap 'kill $acceld 2>/dev/null; wait $acceld 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -S "$state/acceld.sock" ] && [ -f "$state/token" ] && break; sleep 0.1; done
echo "acceld: pid $acceld, state $state"
build/client/accelctl --server "unix:$state/acceld.sock" --token-file "$state/token" \
  submit configs/jobs/job_default.yaml --wait "$@"
