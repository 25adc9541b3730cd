#!/usr/bin/env bash
# The browser for the console's browser tests: Debian's Chromium (no browser download from
# anywhere else; playwright-core drives it over the DevTools protocol).
#
#   scripts/chromium.sh install   apt-get install chromium when /usr/bin/chromium is missing
#                                 (~40 s and ~350 MB on a clean machine); prints its path.
#   scripts/chromium.sh path      prints the path, or exits 1 when it is not installed.
# Runs under a lock (flock on /tmp/reclaim-chromium.lock), so test files starting at once in
# several workers or worktrees install it once.
set -euo pipefail

bin="${RECLAIM_CHROMIUM:-/usr/bin/chromium}"

case "${1:-}" in
  path)
    [ -x "$bin" ] && echo "$bin"
    ;;
  install)
    exec 9>/tmp/reclaim-chromium.lock
    flock 9
    if [ ! -x "$bin" ]; then
      echo "[chromium] installing Debian's chromium" >&2
      export DEBIAN_FRONTEND=noninteractive
      apt-get install -y -q --no-install-recommends chromium >&2 ||
        { apt-get update -q >&2 && apt-get install -y -q --no-install-recommends chromium >&2; }
    fi
    [ -x "$bin" ] || { echo "[chromium] $bin is missing after apt-get" >&2; exit 1; }
    echo "$bin"
    ;;
  *)
    echo "usage: $0 install|path" >&2
    exit 2
    ;;
esac
