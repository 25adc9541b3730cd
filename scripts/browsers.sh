#!/usr/bin/env bash
# The browsers for the console's browser tests, from Debian's packages only (no browser is
# downloaded from anywhere else): Chromium, driven by playwright-core over the DevTools
# protocol, and Firefox ESR, driven by puppeteer-core over WebDriver BiDi.
#
#   scripts/browsers.sh install chromium|firefox   apt-get install the package when its binary is
#                                 missing (~40 s / ~350 MB each on a clean machine); prints its path.
#   scripts/browsers.sh path chromium|firefox      prints the path, or exits 1 when missing.
# Runs under a lock (flock on /tmp/reclaim-browsers.lock), so test files starting at once in
# several workers or worktrees install a browser once.
set -euo pipefail

case "${2:-}" in
  chromium) package=chromium; bin="${RECLAIM_CHROMIUM:-/usr/bin/chromium}" ;;
  firefox) package=firefox-esr; bin="${RECLAIM_FIREFOX:-/usr/bin/firefox-esr}" ;;
  *) echo "usage: $0 install|path chromium|firefox" >&2; exit 2 ;;
esac

case "${1:-}" in
  path)
    [ -x "$bin" ] && echo "$bin"
    ;;
  install)
    exec 9>/tmp/reclaim-browsers.lock
    flock 9
    if [ ! -x "$bin" ]; then
      echo "[browsers] installing Debian's $package" >&2
      export DEBIAN_FRONTEND=noninteractive
      apt-get install -y -q --no-install-recommends "$package" >&2 ||
        { apt-get update -q >&2 && apt-get install -y -q --no-install-recommends "$package" >&2; }
    fi
    [ -x "$bin" ] || { echo "[browsers] $bin is missing after apt-get" >&2; exit 1; }
    echo "$bin"
    ;;
  *)
    echo "usage: $0 install|path chromium|firefox" >&2
    exit 2
    ;;
esac
