#!/usr/bin/env bash
# Runs scripts/build.sh (same environment: BUILD_DIR, BUILD_TYPE; arguments: the targets to build,
# none for all) and shows only its progress:
#   - install-deps' one-line summary (and apt's "N upgraded, M newly installed ..." line);
#   - "configuring BUILD_DIR" when CMake configures;
#   - ninja's [n/N]: on a terminal one line updated in place, otherwise a line every 10 %.
# The whole output goes to $BUILD_DIR/build.log; when the build fails, that log is printed in
# full (less ninja's per-file progress lines) and the exit status is build.sh's.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
mkdir -p "$BUILD_DIR"
log="$BUILD_DIR/build.log"
tty=0
[ -t 1 ] && [ "${TERM:-}" != dumb ] && tty=1
export NINJA_STATUS="[%f/%t] "  # ninja's default, stated: the filter below reads it
start=$SECONDS
set +e
bash scripts/build.sh "$@" 2>&1 | tee "$log" | awk -v tty="$tty" '
  function show(line) { if (tty && drawn) printf "\r\033[2K"; print line; drawn = 0; fflush() }
  /^install-deps: / { show($0); next }
  /^[0-9]+ upgraded, [0-9]+ newly installed/ { show("apt: " $0); next }
  /^-- Configuring done/ && !configured { configured = 1; show("cmake: configured"); next }
  /^\[[0-9]+\/[0-9]+\] / {
    split(substr($1, 2, length($1) - 2), nt, "/")
    done = nt[1] + 0; total = nt[2] + 0
    if (total == 0) next
    pct = int(100 * done / total)
    if (tty) {
      printf "\r\033[2Kbuild: [%d/%d] %3d%%", done, total, pct; drawn = 1; fflush()
    } else if (int(pct / 10) > last_decile || done == total) {
      last_decile = int(pct / 10); printf "build: [%d/%d] %d%%\n", done, total, pct; fflush()
    }
    next
  }
  END { if (tty && drawn) print "" }'
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
  echo "build failed (exit $status); its output, without the per-file progress lines:" >&2
  grep -v -E '^\[[0-9]+/[0-9]+\] ' "$log" >&2 || true
  exit "$status"
fi
echo "build: done in $((SECONDS - start)) s (log: $log)"
