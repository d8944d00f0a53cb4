#!/usr/bin/env bash
# Multi-node on one host: 2 simulated machines (network namespaces on a bridge, each link shaped
# to 1 Gbit/s per direction and 1 ms one way where the kernel has sch_netem), 2 ranks each,
# gpt2-mini and the benchmarks' small shape (4 layers, C=256, GPT-2 vocabulary), FULL_SHARD vs
# HYBRID_SHARD vs NO_SHARD. Prints each run's step time and the cross-node MB per step the ranks
# measured, with ring theory beside them (docs/comm.md "Traffic by link").
#
#   bench/multinode.sh [--build build] [accel_bench_multinode flags: --models gpt2-mini,small
#                      --strategies full_shard,hybrid_shard,no_shard --steps 4 --batch 1
#                      --seq 64 --rate 1gbit --delay 1ms]
# Needs root (network namespaces), `ip`, `tc` and `nsenter`. Minutes on a 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=build
if [ "${1:-}" = "--build" ]; then BUILD=$2; shift 2; fi
[ "$(id -u)" = 0 ] || { echo "needs root (network namespaces)" >&2; exit 2; }
cmake --build "$BUILD" -j"$(nproc)" --target accel_bench_multinode accel-worker >/dev/null
exec "$BUILD/bench/accel_bench_multinode" "$@"
