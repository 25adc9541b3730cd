#!/usr/bin/env bash
# Stops the services scripts/bootstrap.sh recorded as started by it (see RECLAIM_STARTED_SERVICES
# there), newest first, and never one it found already running.
#   scripts/stop-services.sh <file>
set -uo pipefail
cd "$(dirname "$0")/.."
file="${1:?usage: stop-services.sh <file written by bootstrap.sh>}"
[ -s "$file" ] || exit 0

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else return 1; fi; }

tac "$file" | while read -r kind what; do
  case "$kind" in
    postgres)
      echo "[demo] stopping the PostgreSQL $what cluster it started" >&2
      as_root pg_ctlcluster --skip-systemctl-redirect "$what" main stop 2>/dev/null ||
        as_root pg_ctlcluster "$what" main stop
      ;;
    redis)
      echo "[demo] stopping the redis-server it started on port $what" >&2
      redis-cli -p "$what" shutdown nosave >/dev/null 2>&1 || true
      ;;
    compose)
      echo "[demo] stopping the $what container it started" >&2
      docker compose stop "$what"
      ;;
  esac
done
