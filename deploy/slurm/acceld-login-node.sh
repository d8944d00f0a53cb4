#!/usr/bin/env bash
# acceld on a Slurm login node, placing every job's ranks with sbatch + srun (docs/deploy.md,
# "Slurm"). Run it as the user whose Slurm account pays for the jobs, under tmux, screen or a
# `systemd --user` unit; it is the only long-running process: no daemon runs on compute nodes.
#
# Everything a job touches must be on the filesystem that the login node and the compute nodes
# share (the state directory with the rank logs and the worker token files, the datasets, the
# checkpoints, the accel binaries): acceld never assumes a worker runs on its own host.
set -euo pipefail

SHARED=${ACCEL_SHARED:-/shared/$USER/accel}          # on the cluster's shared filesystem
PARTITION=${ACCEL_PARTITION:-gpu}
ACCOUNT=${ACCEL_ACCOUNT:-ml-research}
TIME_LIMIT=${ACCEL_TIME:-04:00:00}                   # per attempt (sbatch --time)
PORT=${ACCEL_PORT:-7070}
# The name compute nodes use to reach this login node (not 127.0.0.1).
ADVERTISE=${ACCEL_ADVERTISE:-$(hostname -f):$PORT}

mkdir -p "$SHARED/state"
chmod 0700 "$SHARED/state"

# --listen 0.0.0.0 is deliberate here: the workers on the compute nodes must reach acceld.
# Every call needs a token (the client token in $SHARED/state/token, 0600; each attempt's own
# worker token), but the traffic is not encrypted: let only the cluster's network reach $PORT
# (firewall), and see docs/rpc.md for TLS (--tls-cert / --tls-key) towards clients.
exec "$SHARED/bin/acceld" \
  --launcher slurm \
  --slurm-partition "$PARTITION" \
  --slurm-account "$ACCOUNT" \
  --slurm-time "$TIME_LIMIT" \
  --listen "0.0.0.0:$PORT" \
  --advertise "$ADVERTISE" \
  --state-dir "$SHARED/state" \
  --token-file "$SHARED/state/token" \
  --worker-bin "$SHARED/bin/accel-worker"
