#!/usr/bin/env bash
# A model larger than this machine's memory: gpt2-xl (1.56 B parameters; 16 bytes of fp32
# training state each is 25 GB, more than the 24 GiB here) trains 2 steps under full_shard
# (ZeRO-3) with parameters, gradients and optimizer state in files, inside a cgroup v1 memory
# cgroup limited to 4 GiB (page cache included), on 1 and on 2 ranks. Prints, per run, the
# step time, what rank 0 read from and wrote to the disk in each step, the cgroup's peak, and the
# disk's O_DIRECT bandwidth measured at the start of the same run (dd), for comparison.
#
#   bench/larger_than_memory.sh [--model gpt2-xl] [--limit-gib 4] [--ranks "1 2"]
#                               [--dir /var/tmp/accel-ltm] [--build build] [--seq 64]
#                               [--worker-flags "--activation-checkpointing"]
# Needs root (the cgroup) and about 2 × 25 GB free under --dir. Takes tens of minutes at gpt2-xl.
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=gpt2-xl LIMIT_GIB=4 RANKS="1 2" DIR=/var/tmp/accel-ltm BUILD=build SEQ=64 FLAGS=""
while [ $# -gt 0 ]; do
  case "$1" in
    --model) MODEL=$2; shift 2 ;;
    --limit-gib) LIMIT_GIB=$2; shift 2 ;;
    --ranks) RANKS=$2; shift 2 ;;
    --dir) DIR=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --seq) SEQ=$2; shift 2 ;;
    --worker-flags) FLAGS=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "needs root (a memory cgroup)" >&2; exit 2; }
WORKER=$BUILD/worker/accel-worker
[ -x "$WORKER" ] || { echo "no $WORKER: build first (scripts/build.sh)" >&2; exit 2; }
CG_ROOT=/sys/fs/cgroup/memory
mkdir -p "$DIR"

# The disk, as offload sees it: 1 GiB written and read back with O_DIRECT.
dd if=/dev/zero of="$DIR/bw.tmp" bs=4M count=256 oflag=direct conv=fsync 2> "$DIR/dd_w.txt"
dd if="$DIR/bw.tmp" of=/dev/null bs=4M iflag=direct 2> "$DIR/dd_r.txt"
rm -f "$DIR/bw.tmp"
bw() { tail -1 "$1" | awk -F', ' '{print $NF}'; }
echo "disk (O_DIRECT, 1 GiB): write $(bw "$DIR/dd_w.txt"), read $(bw "$DIR/dd_r.txt")"

for world in $RANKS; do
  cg=$CG_ROOT/accel_ltm_$$_$world
  mkdir -p "$cg"
  echo $((LIMIT_GIB << 30)) > "$cg/memory.limit_in_bytes"
  run=$DIR/run_$world
  rm -rf "$run"; mkdir -p "$run/nvme"
  pids=()
  for ((r = 0; r < world; r++)); do
    # LOCAL_WORLD_SIZE: the ranks share this machine and this cgroup, so each one's memory
    # check plans for all of them (as torchrun's environment says).
    LOCAL_WORLD_SIZE=$world sh -c "echo \$\$ > $cg/cgroup.procs && exec \"\$@\"" sh \
      "$WORKER" --standalone --model "$MODEL" --data data/kjv.txt --batch 1 --seq "$SEQ" \
      --steps 2 --threads $((2 / world > 0 ? 2 / world : 1)) --strategy full_shard \
      --offload-optimizer --offload-params --offload-dir "$run/nvme" \
      --world-size "$world" --rank "$r" --rdzv-dir "$run/rdzv" --comm-timeout 3600 $FLAGS \
      > "$run/rank$r.out" 2> "$run/rank$r.err" &
    pids+=($!)
  done
  status=0
  for p in "${pids[@]}"; do wait "$p" || status=$?; done
  peak=$(cat "$cg/memory.max_usage_in_bytes")
  ooms=$(awk '/oom_kill /{print $2}' "$cg/memory.oom_control")
  rmdir "$cg"
  echo "== $MODEL, $world rank(s), cgroup limit $LIMIT_GIB GiB: exit $status, cgroup peak" \
       "$(awk -v b="$peak" 'BEGIN{printf "%.2f GiB", b / 2^30}'), OOM kills $ooms"
  grep -E "^step|process memory" "$run/rank0.out" || true
  for ((r = 0; r < world; r++)); do tail -2 "$run/rank$r.err" | sed "s/^/rank $r: /"; done
  rm -rf "$run/nvme" "$run/rdzv"  # the state (tens of GB); the logs stay
done
