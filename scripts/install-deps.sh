#!/usr/bin/env bash
# Installs the Debian packages accel needs. Idempotent; apt only. Skips apt entirely when
# everything is already installed (so repeated runs cost ~1 s).
#   scripts/install-deps.sh             everything: the build, tests and benchmarks
#   scripts/install-deps.sh --programs  only what building and running acceld, accelctl and
#                                       accel-worker needs (the first command); the test-only
#                                       engines (Slurm, Prometheus, Chromium, torch, clang) are
#                                       left to the full form, which adds them later
set -euo pipefail

# What CMake's configure step and the three programs need. Configuring finds every library the
# whole tree links (GoogleTest and Google Benchmark included), so the build directory the first
# command configures is the one scripts/test.sh builds the rest in.
PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git python3
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libspdlog-dev libfmt-dev libgloo-dev libsqlite3-dev libyaml-cpp-dev
  nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev liburing-dev
  libdnnl-dev ocl-icd-opencl-dev  # dnnl-config.cmake finds OpenCL (libdnnl-dev only recommends it)
  libcpp-httplib-dev  # server/launchers/kubernetes_api.cc, and the HTTP tests' client
  libpcre2-dev libicu-dev  # engine/text: Unicode regexes (PCRE2) and NFC (ICU) for tokenizers
  libssl-dev  # engine/data: SHA-256 (OpenSSL EVP) keys the prepared-dataset cache
)
# What only the tests and benchmarks run (the largest downloads: Chromium, torch).
TEST_PACKAGES=(
  clang  # scripts/fuzz.sh: libFuzzer, ASan and UBSan
  slurm-wlm munge  # tests/e2e/slurm_cluster.h: a real Slurm cluster in network namespaces (ctest -L slurm)
  prometheus  # tests/e2e: a real Prometheus scrapes acceld's /metrics
  chromium  # tests/e2e: the dashboard loaded in headless Chromium, with a screenshot
  python3-grpcio python3-protobuf  # clients/python/accel_client and its end-to-end test
  python3-torch  # float64 references (tests/golden generators, generation and loss-mask fixtures)
  libopenblas0-pthread  # the BLAS Debian's torch runs on (the bench/peers figures); else netlib's reference BLAS
  linux-perf  # profiling the CPU kernels (docs/performance.md)
)
case "${1:-}" in
  --programs) ;;
  "") PACKAGES+=("${TEST_PACKAGES[@]}") ;;
  *) echo "install-deps: unknown argument '$1' (expected --programs or nothing)" >&2; exit 2 ;;
esac

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
