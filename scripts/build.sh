#!/usr/bin/env bash
# Installs the Debian packages (if missing), configures and builds accel into ./build.
#   scripts/build.sh                  everything: libraries, programs, tests, benchmarks, fuzzers
#   scripts/build.sh TARGET...        only those CMake targets and what they link (the first
#                                     command builds acceld, accelctl and accel-worker this way),
#                                     with only the packages they need (install-deps --programs)
#   BUILD_DIR=...   build directory (default: build)
#   BUILD_TYPE=...  CMake build type (default: Release)
# Both forms build into the same directory, so building the rest later compiles only what is
# missing. The CUDA path (cmake/cuda.cmake, when nvcc is found) is the one difference: the
# targets form leaves it off on a machine where nvidia-smi lists no GPU (nothing it builds would
# run there; about 90 s of a fresh first command), and the everything form turns it on, which
# re-runs CMake and compiles the CUDA targets and the two files that use them
# (server/core/gpus.cc, worker/device_session.cc).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
BUILD_TYPE=${BUILD_TYPE:-Release}
if [ $# -gt 0 ]; then bash scripts/install-deps.sh --programs; else bash scripts/install-deps.sh; fi
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
# Paths relative to the checkout, so clones in other folders (CI) hit the same cache entries.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
gpu_visible() { nvidia-smi -L 2>/dev/null | grep -q '^GPU '; }
cuda=ON
if [ $# -gt 0 ] && ! gpu_visible; then cuda=OFF; fi
deferred="$BUILD_DIR/cuda-deferred"  # marks a CUDA path this script (not the user) left off
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" -DACCEL_ENABLE_CUDA="$cuda"
  if [ "$cuda" = OFF ]; then touch "$deferred"; fi
elif [ "$cuda" = ON ] && [ -f "$deferred" ]; then
  cmake -S . -B "$BUILD_DIR" -DACCEL_ENABLE_CUDA=ON
  rm -f "$deferred"
fi
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$BUILD_DIR" -j"$(nproc)" "${targets[@]}"
