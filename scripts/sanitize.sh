#!/usr/bin/env bash
# Builds accel with a sanitizer into its own directory and runs the tests under it.
#   scripts/sanitize.sh asan  [ctest args...]   ASan + UBSan, whole suite      (build-asan)
#   scripts/sanitize.sh ubsan [ctest args...]   UBSan alone, whole suite       (build-ubsan)
#   scripts/sanitize.sh tsan  [ctest args...]   TSan: comm, rpc, server, worker and control-plane
#                                               tests (only their targets are built) (build-tsan)
# Extra arguments go to ctest (e.g. -R Gloo). JOBS=N sets build and ctest parallelism (default
# nproc). Every sanitizer report, also from acceld and accel-worker processes the tests start
# (they inherit this environment and are built in the same directory), is written to
# <build>/sanitizer-logs/; the run fails if ctest fails or any report is there.
# CI does not run this (scripts/test.sh is the plain build); see docs/reliability.md "Sanitizers".
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
MODE=${1:-}
[ $# -gt 0 ] && shift
JOBS=${JOBS:-$(nproc)}
SUPP=$ROOT/scripts/sanitizers
SKIP_DIRS=""
# SCALE: how many times longer the end-to-end tests wait for the processes they start
# (ACCEL_TEST_TIME_SCALE, tests/e2e/process.h) than in the plain build; the sanitizer's
# slowdown of acceld, accel-worker and the training loop, not a lost wakeup, is what a plain
# deadline would catch otherwise. Only deadlines scale; what a test asserts stays the same.
case "$MODE" in
  asan)  SANITIZE="address;undefined"; SCALE=3 ;;
  ubsan) SANITIZE="undefined"; SCALE=2 ;;
  # Left uninstrumented under TSan: the numeric engine, whose only threading is OpenMP, which
  # TSan cannot follow (cmake/sanitize.cmake); and the generated protobuf code, which gRPC's
  # (uninstrumented) threads run to parse and serialize messages they hand over through
  # synchronization TSan cannot see. accel's own code that reads and writes the messages is
  # instrumented. engine/shard is instrumented although it has no thread of its own: it holds
  # the communicators' Work handles, whose shared_ptr counts the gloo thread also changes, and
  # uninstrumented atomics there made TSan report the Work's destruction as a race.
  tsan)  SANITIZE="thread"; SCALE=5
         SKIP_DIRS="engine/tensor;engine/tensor/cuda;engine/kernels;engine/kernels/cuda;engine/model"
         SKIP_DIRS+=";engine/optim;engine/checkpoint;engine/config;proto" ;;
  *) echo "usage: scripts/sanitize.sh asan|ubsan|tsan [ctest args...]" >&2; exit 2 ;;
esac
BUILD=$ROOT/build-$MODE
LOGS=$BUILD/sanitizer-logs

bash scripts/install-deps.sh
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$ROOT}
# Release as the base (CUDA objects are then the plain build's and come from ccache);
# cmake/sanitize.cmake adds -O1 -g1 and the -fsanitize flags to C and C++.
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release "-DACCEL_SANITIZE=$SANITIZE" \
  "-DACCEL_SANITIZE_SKIP_DIRS=$SKIP_DIRS" >/dev/null

# TSan covers the multi-threaded, multi-process parts: the communicators and stores, the RPC
# glue, acceld's core and services, its HTTP side (event loop and handler threads over the
# registry and telemetry) with the dashboard in Chromium, the worker, the control plane end to
# end, and the Python client driving acceld (its stubs are a custom target).
TSAN_TARGETS=(accel_comm_test accel_rpc_test accel_server_core_test accel_server_test acceld
              accel-worker accel_worker_daemon_test accel_worker_e2e_test
              accel_controlplane_e2e_test accelctl accel_server_http_test accel_dashboard_api_test
              accel_dashboard_chromium_test accel_python_client)
# The TSan set first in every mode (so its tests can start early); then, for asan and ubsan,
# every other executable except the benchmarks, which no test runs.
[ "$MODE" = tsan ] && TSAN_TARGETS+=(accel_tsan_absl_mutex)
cmake --build "$BUILD" -j"$JOBS" --target "${TSAN_TARGETS[@]}"
if [ "$MODE" != tsan ]; then
  mapfile -t REST < <(ninja -C "$BUILD" -t targets all |
    sed -n 's/: \(CXX\|CUDA\)_EXECUTABLE_LINKER.*//p' | grep -v -e '^bench/' -e '_tests.cmake$' -e '^/')
  cmake --build "$BUILD" -j"$JOBS" --target "${REST[@]}"
fi

rm -rf "$LOGS" && mkdir -p "$LOGS"
# Reports go to files (log_path), one per process, so those of child processes are not lost in
# a job's log; halt_on_error stops a process at its first report so the test fails there.
# allocator_may_return_null: an impossible allocation returns null, as glibc's does, so the
# engine's ResourceExhausted path for it runs (buffer_test) instead of ASan aborting.
export ASAN_OPTIONS="log_path=$LOGS/asan:halt_on_error=1:detect_leaks=1:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=0:allocator_may_return_null=1"
export LSAN_OPTIONS="suppressions=$SUPP/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="log_path=$LOGS/ubsan:halt_on_error=1:print_stacktrace=1"
# TSan: Debian's absl::Mutex is uninstrumented; this library annotates it (see its source).
[ "$MODE" = tsan ] && export LD_PRELOAD=$BUILD/libaccel_tsan_absl_mutex.so
export TSAN_OPTIONS="log_path=$LOGS/tsan:halt_on_error=1:second_deadlock_stack=1:suppressions=$SUPP/tsan.supp"
export ACCEL_TEST_TIME_SCALE=${ACCEL_TEST_TIME_SCALE:-$SCALE}

CTEST_ARGS=()
# Test binaries not built in this mode appear in ctest as <target>_NOT_BUILT; leave them out,
# and the fuzz corpus replays (fuzz_corpus_*, one single-threaded parser each; asan and ubsan
# run them), whose executables the TSan set does not build either.
[ "$MODE" = tsan ] && CTEST_ARGS+=(-E '_NOT_BUILT$|^fuzz_corpus_')
# 900 s per test as in the plain run: sanitizers slow the training loops several times over.
rc=0
ctest --test-dir "$BUILD" --output-on-failure -j"$JOBS" --timeout 900 "${CTEST_ARGS[@]}" "$@" || rc=$?

# allocator_may_return_null still writes one warning line for each refused allocation (the
# 2^62-byte request of BufferTest.ImpossibleSize...); a file holding nothing else is no report.
refused='^==[0-9]+==WARNING: AddressSanitizer failed to allocate 0x[0-9a-f]+ bytes$'
for f in $(find "$LOGS" -type f); do
  if ! grep -Evq "$refused" "$f"; then
    echo "sanitize.sh: refused allocation, returned null: $(cat "$f")"
    rm "$f"
  fi
done
reports=$(find "$LOGS" -type f | sort)
if [ -n "$reports" ]; then
  echo "sanitize.sh: $(echo "$reports" | wc -l) sanitizer report file(s) in $LOGS:" >&2
  for f in $reports; do echo "==== $f" >&2; head -60 "$f" >&2; done
  rc=1
fi
[ $rc -eq 0 ] && echo "sanitize.sh $MODE: clean"
exit $rc
