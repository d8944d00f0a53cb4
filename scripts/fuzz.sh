#!/usr/bin/env bash
# Runs one libFuzzer target under ASan + UBSan (docs/reliability.md "Fuzzing").
#   scripts/fuzz.sh list               the targets
#   scripts/fuzz.sh TARGET SECONDS     build TARGET with clang into $FUZZ_BUILD_DIR (default
#                                      build-fuzz), copy fuzz/corpus/TARGET into a scratch working
#                                      corpus, fuzz for SECONDS; a crashing input is saved under
#                                      $FUZZ_OUT/TARGET/ (default fuzz-out/) as crash-<sha1>
# FUZZ_NO_BUILD=1 skips the build step; FUZZ_TIMEOUT (default 10) is libFuzzer's per-input limit
# in wall seconds (raise it on a loaded machine, where a niced run is starved). Extra libFuzzer flags may follow SECONDS (e.g. -max_len=4096). Exit status: libFuzzer's
# (0 = no finding). The normal build replays the committed corpora as ctest cases (label fuzz).
set -euo pipefail
cd "$(dirname "$0")/.."
TARGETS=(safetensors checkpoint_metadata rank_file token_shard job_file accelerate_yaml
         deepspeed_json rpc_request token_file http_request)
if [ "${1:-}" = "list" ]; then
  printf '%s\n' "${TARGETS[@]}"
  exit 0
fi
if [ $# -lt 2 ]; then
  echo "usage: scripts/fuzz.sh list | TARGET SECONDS [libFuzzer flags...]" >&2
  exit 2
fi
TARGET=$1
SECONDS_TO_RUN=$2
shift 2
if [[ ! " ${TARGETS[*]} " =~ " ${TARGET} " ]]; then
  echo "fuzz.sh: unknown target '${TARGET}' (scripts/fuzz.sh list)" >&2
  exit 2
fi
BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
OUT=${FUZZ_OUT:-fuzz-out}/${TARGET}
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  # -O1 with line tables: what libFuzzer's docs suggest, and it compiles much faster than -O2 -g.
  CC=clang CXX=clang++ cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
    -DACCEL_FUZZ=ON -DACCEL_ENABLE_CUDA=OFF
fi
# FUZZ_NO_BUILD=1 runs the binary as built (while another build uses the directory).
if [ -z "${FUZZ_NO_BUILD:-}" ]; then
  cmake --build "$BUILD_DIR" -j"${FUZZ_JOBS:-$(nproc)}" --target "${TARGET}_fuzz"
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/accel-fuzz-${TARGET}.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/corpus" "$OUT"
cp fuzz/corpus/"$TARGET"/* "$WORK/corpus/"
echo "fuzz.sh: ${TARGET} for ${SECONDS_TO_RUN} s, $(ls "$WORK/corpus" | wc -l) seeds, findings -> $OUT/"
# ASan's leak check stays on (a leak is a finding); UBSan reports abort (-fno-sanitize-recover).
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
started=$(date +%s)
set +e
"$BUILD_DIR/fuzz/${TARGET}_fuzz" "$WORK/corpus" -max_total_time="$SECONDS_TO_RUN" \
  -timeout="${FUZZ_TIMEOUT:-10}" -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$OUT/" "$@" \
  2>&1 | tee "$WORK/log"
rc=${PIPESTATUS[0]}
set -e
elapsed=$(( $(date +%s) - started ))
execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$WORK/log" | grep -o '[0-9]*$' || true)
echo "fuzz.sh: ${TARGET}: ${execs:-?} executions in ${elapsed} s, exit ${rc}" \
     "($(ls "$OUT" | wc -l) files in $OUT/)"
exit "$rc"
