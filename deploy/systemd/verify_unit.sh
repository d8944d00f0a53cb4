#!/usr/bin/env bash
# ctest Deploy.SystemdUnit*: checks deploy/systemd/acceld.service keeps its hardening and its
# loopback-only listen address, then runs `systemd-analyze verify` on it (ExecStart pointed at
# the build's binaries, which verify requires to exist) and fails on any warning, since verify
# exits 0 even for an unknown or misspelt directive. Exit 77 (skip) without systemd-analyze.
#   verify_unit.sh ACCELD_BIN WORKER_BIN [SED_EXPR]   (SED_EXPR mutates the unit first: the
#                                                     self-test that a typo is caught)
set -euo pipefail
unit="$(dirname "$0")/acceld.service"
acceld=$1 worker=$2 mutate=${3:-}
for d in 'User=accel' 'StateDirectory=accel' 'ProtectSystem=strict' 'ProtectHome=yes' \
         'NoNewPrivileges=yes' 'PrivateTmp=yes' 'Restart=on-failure' 'LimitNOFILE=[0-9]'; do
  grep -q "^$d" "$unit" || { echo "acceld.service: no '$d'"; exit 1; }
done
grep -q -- '--listen 127\.0\.0\.1:' "$unit" || { echo "acceld.service: --listen not on loopback"; exit 1; }
if grep -v '^#' "$unit" | grep -E -- '--listen (0\.0\.0\.0|\[::\])'; then echo "acceld.service: listens on all addresses"; exit 1; fi
if ! command -v systemd-analyze >/dev/null; then
  echo "SKIP: systemd-analyze is not installed"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed -e "s#/usr/local/bin/acceld#$acceld#" -e "s#/usr/local/bin/accel-worker#$worker#" \
    ${mutate:+-e "$mutate"} "$unit" > "$tmp/acceld.service"
if ! out=$(cd "$tmp" && systemd-analyze verify "$tmp/acceld.service" 2>&1); then
  echo "$out"
  exit 1
fi
if [ -n "$out" ]; then
  echo "systemd-analyze verify warns:"
  echo "$out"
  exit 1
fi
echo "systemd-analyze verify: acceld.service is clean"
