#!/usr/bin/env bash
# accel against its PyTorch peer in one run (bench/peers/run.py): accel_bench_train and
# accel_bench_sharding, then bench/peers/train_peer.py at the same shapes, printed as one table
# with the CPU's flags and its measured FMA peak. Needs build/bench/accel_bench_train and
# accel_bench_sharding (scripts/build.sh accel_bench_train accel_bench_sharding) and Debian's
# python3-torch.
#   bench/peers.sh                                  small model, fp32 and bf16, a few minutes
#   bench/peers.sh --models gpt2 --steps 2          GPT-2 124M (the documented figure)
#   bench/peers.sh --peer-blas DIR                  the peer with the libblas.so.3 in DIR
#   bench/peers.sh --output json
set -euo pipefail
exec python3 "$(dirname "$0")/peers/run.py" "$@"
