#!/usr/bin/env bash
# Bootstrap shared by `npm run demo`, `npm test` and `npm run bench`:
#   1. install npm dependencies when node_modules is missing or older than package-lock.json;
#   2. find PostgreSQL and Redis at DATABASE_URL / REDIS_URL, or start them: an installed
#      Debian cluster or redis-server first, then Debian's packages (apt-get), then
#      `docker compose` where a Docker engine answers;
#   3. generate the Prisma client when prisma/schema.prisma changed.
# Options: --services-only skips steps 1 and 3.
# With RECLAIM_STARTED_SERVICES naming a file, each service it starts is recorded there (one
# line: `postgres <version>`, `redis <port>` or `compose <service>`) for
# scripts/stop-services.sh; `npm run demo` stops what it started that way.
# It never downloads from anywhere but the npm registry and Debian's mirrors.
set -euo pipefail
cd "$(dirname "$0")/.."

services_only=0
[ "${1:-}" = "--services-only" ] && services_only=1

: "${DATABASE_URL:=postgresql://postgres@127.0.0.1:5432/reclaim}"
: "${REDIS_URL:=redis://127.0.0.1:6379}"

log() { printf '[bootstrap] %s\n' "$*" >&2; }

started() { # <line>: what this run started, for scripts/stop-services.sh
  if [ -n "${RECLAIM_STARTED_SERVICES:-}" ]; then echo "$*" >>"$RECLAIM_STARTED_SERVICES"; fi
}

if [ "$services_only" = 0 ]; then
  if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    log "installing npm dependencies"
    npm ci --no-audit --no-fund
  fi
fi

url_host_port() { # <url> <default port>
  node -e 'const u = new URL(process.argv[1]); console.log(u.hostname || "127.0.0.1", u.port || process.argv[2])' "$1" "$2"
}

reachable() { # <host> <port>
  (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null
}

wait_for() { # <name> <host> <port>
  for _ in $(seq 1 60); do
    reachable "$2" "$3" && return 0
    sleep 0.5
  done
  log "$1 did not come up on $2:$3"
  return 1
}

is_local() { case "$1" in 127.0.0.1 | localhost | ::1) return 0 ;; *) return 1 ;; esac; }

docker_engine() { command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; }

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else return 1; fi; }

apt_install() {
  command -v apt-get >/dev/null 2>&1 || return 1
  log "installing Debian packages: $*"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >/dev/null 2>&1 ||
    { as_root apt-get update >/dev/null 2>&1 && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >/dev/null; }
}

start_postgres() {
  local fresh=0
  if ! command -v pg_ctlcluster >/dev/null 2>&1 || [ -z "$(ls /etc/postgresql 2>/dev/null)" ]; then
    if apt_install postgresql; then fresh=1; fi
  fi
  if command -v pg_ctlcluster >/dev/null 2>&1 && [ -n "$(ls /etc/postgresql 2>/dev/null)" ]; then
    local version
    version=$(ls /etc/postgresql | sort -V | tail -n 1)
    if [ "$fresh" = 1 ]; then
      # A cluster this script installed is a development database: let local TCP clients in
      # without a password, as on the reference machines (trust auth on 127.0.0.1).
      local hba="/etc/postgresql/$version/main/pg_hba.conf"
      as_root sed -i '1i host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust' "$hba"
    fi
    log "starting PostgreSQL $version"
    as_root pg_ctlcluster --skip-systemctl-redirect "$version" main start 2>/dev/null ||
      as_root pg_ctlcluster "$version" main start
    started "postgres $version"
    return 0
  fi
  if docker_engine; then
    log "starting PostgreSQL with docker compose"
    docker compose up -d postgres
    started "compose postgres"
    return 0
  fi
  return 1
}

start_redis() {
  command -v redis-server >/dev/null 2>&1 || apt_install redis-server || true
  if command -v redis-server >/dev/null 2>&1; then
    log "starting redis-server on port $1"
    redis-server --daemonize yes --bind 127.0.0.1 --port "$1" --save '' --appendonly no --dir /tmp \
      --logfile "/tmp/reclaim-redis-$1.log"
    started "redis $1"
    return 0
  fi
  if docker_engine; then
    log "starting Redis with docker compose"
    docker compose up -d redis
    started "compose redis"
    return 0
  fi
  return 1
}

read -r pg_host pg_port < <(url_host_port "$DATABASE_URL" 5432)
if ! reachable "$pg_host" "$pg_port"; then
  is_local "$pg_host" || { log "PostgreSQL at $pg_host:$pg_port is not reachable"; exit 1; }
  start_postgres || { log "cannot start PostgreSQL: install it (apt-get install postgresql) or a Docker engine"; exit 1; }
  wait_for PostgreSQL "$pg_host" "$pg_port"
fi

read -r redis_host redis_port < <(url_host_port "$REDIS_URL" 6379)
if ! reachable "$redis_host" "$redis_port"; then
  is_local "$redis_host" || { log "Redis at $redis_host:$redis_port is not reachable"; exit 1; }
  start_redis "$redis_port" || { log "cannot start Redis: install redis-server or a Docker engine"; exit 1; }
  wait_for Redis "$redis_host" "$redis_port"
fi

if [ "$services_only" = 0 ]; then
  node scripts/generate.js
fi
