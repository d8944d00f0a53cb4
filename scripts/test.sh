#!/usr/bin/env bash
# Sets up (deps + build) and runs the whole test suite. CI runs exactly this (.ci/run).
# Tests labelled `gpu` skip themselves when no CUDA device is present.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
bash scripts/install-test-oracles.sh --if-npm  # HF's tokenizers for ctest -L oracle
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j"$(nproc)" --timeout 900 "$@"
