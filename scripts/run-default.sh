#!/usr/bin/env bash
# Sets up (deps + build) and runs the main job on the embedded default: a small byte-level GPT-2
# (gpt2-mini: 4 layers, 128 channels) trained on the bundled King James text (data/kjv.txt),
# progress streamed to the terminal. Extra arguments are passed to accel-worker.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >/dev/null
exec build/worker/accel-worker --standalone --model gpt2-mini --data data/kjv.txt \
  --batch 8 --seq 128 --steps 300 --lr 1e-3 --min-lr 1e-4 --warmup 20 --schedule cosine \
  --weight-decay 0.1 --log-every 10 "$@"
