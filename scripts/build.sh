#!/usr/bin/env bash
# Installs the Debian packages (if missing), configures and builds accel into ./build.
#   scripts/build.sh                  everything: libraries, programs, tests, benchmarks, fuzzers
#   scripts/build.sh TARGET...        only those CMake targets and what they link (the first
#                                     command builds acceld, accelctl and accel-worker this way)
#   BUILD_DIR=...   build directory (default: build)
#   BUILD_TYPE=...  CMake build type (default: Release)
# Both forms configure the build directory the same way (CUDA included when nvcc is found), so
# building the rest later compiles only what is missing: nothing is configured or built twice.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
BUILD_TYPE=${BUILD_TYPE:-Release}
bash scripts/install-deps.sh
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
# Paths relative to the checkout, so clones in other folders (CI) hit the same cache entries.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE"
fi
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$BUILD_DIR" -j"$(nproc)" "${targets[@]}"
