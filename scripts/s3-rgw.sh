#!/usr/bin/env bash
# A real S3 server for tests and benchmarks: a single-node Ceph RADOS Gateway from Debian's
# packages (no MinIO server exists in the registries we can reach; s3rver skips signatures
# and multipart, see ../shared/notes/toolchain.md).
#
#   scripts/s3-rgw.sh start    install (apt-get) if missing, start mon + osd + rgw, create the
#                              test user; prints the S3 variables as `export NAME=value` lines.
#                              Idempotent: a gateway already answering with our state dir is
#                              reused, never started twice.
#   scripts/s3-rgw.sh stop     stop the daemons this state dir started (by pid) and remove the dir.
#   scripts/s3-rgw.sh status   exit 0 when the gateway answers, 1 otherwise.
#
# Cost on the reference machine (2 cores): ~17 s for the packages on a clean machine, ~12 s to
# start, ~350 MB RAM while running. Data lives in RAM (memstore): nothing survives `stop`.
#
# Variables (all optional):
#   RECLAIM_RGW_DIR    state dir (conf, pids, logs, keyring-free: auth is off). Default /tmp/reclaim-rgw
#   RECLAIM_RGW_PORT   HTTP port of the gateway. Default 7480
#   RECLAIM_RGW_MON_PORT  monitor port (msgr v1). Default 6789
# Single node, no cephx: only for loopback test traffic.
set -euo pipefail

dir="${RECLAIM_RGW_DIR:-/tmp/reclaim-rgw}"
port="${RECLAIM_RGW_PORT:-7480}"
mon_port="${RECLAIM_RGW_MON_PORT:-6789}"
access_key="reclaimtestaccess"
secret_key="reclaimtestsecret0123456789abcdef"
conf="$dir/ceph.conf"

log() { printf '[s3-rgw] %s\n' "$*" >&2; }

reachable() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

print_env() {
  cat <<EOF
export RECLAIM_TEST_S3_ENDPOINT=http://127.0.0.1:$port
export RECLAIM_TEST_S3_ACCESS_KEY=$access_key
export RECLAIM_TEST_S3_SECRET_KEY=$secret_key
export RECLAIM_TEST_S3_REGION=us-east-1
EOF
}

pids() { cat "$dir"/run/*.pid 2>/dev/null || true; }

running() { # <pid>: alive and not a zombie (a daemon's zombie still answers kill -0)
  [ -r "/proc/$1/stat" ] && [ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" != "Z" ]
}

stop() {
  # Read the pids once: daemons remove their pid files while they shut down, but keep their
  # ports until they are gone, and a new cluster started meanwhile would talk to the old
  # monitor ("wrong fsid").
  local p list
  list=$(pids)
  for p in $list; do kill "$p" 2>/dev/null || true; done
  for _ in $(seq 1 100); do
    local any=0
    for p in $list; do running "$p" && any=1; done
    [ "$any" = 0 ] && break
    sleep 0.1
  done
  for p in $list; do running "$p" && kill -9 "$p" 2>/dev/null; done
  rm -rf "$dir"
}

install_packages() {
  command -v radosgw >/dev/null && command -v ceph-mon >/dev/null && command -v ceph-osd >/dev/null && return 0
  log "installing ceph-mon ceph-osd radosgw (Debian packages)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends ceph-mon ceph-osd radosgw >/dev/null 2>&1 ||
    { apt-get update >/dev/null 2>&1 && apt-get install -y --no-install-recommends ceph-mon ceph-osd radosgw >/dev/null; }
}

wait_port() { # <port> <what>
  for _ in $(seq 1 300); do
    reachable "$1" && return 0
    sleep 0.1
  done
  log "$2 did not come up on 127.0.0.1:$1 (logs in $dir/log)"
  return 1
}

start() {
  if [ -f "$dir/ready" ] && reachable "$port"; then
    print_env
    return 0
  fi
  if reachable "$port"; then
    log "port $port is taken by a server this script did not start; set RECLAIM_RGW_PORT"
    return 1
  fi
  # A half-started or crashed earlier run: start over.
  stop
  for _ in $(seq 1 100); do reachable "$mon_port" || reachable "$port" || break; sleep 0.1; done
  if reachable "$mon_port"; then
    log "port $mon_port is still taken (another monitor?); set RECLAIM_RGW_MON_PORT"
    return 1
  fi
  install_packages
  mkdir -p "$dir"/{run,log,mon/a,osd/0,rgw}
  local fsid
  fsid=$(cat /proc/sys/kernel/random/uuid)
  cat >"$conf" <<EOF
[global]
fsid = $fsid
mon host = 127.0.0.1:$mon_port
mon initial members = a
public addr = 127.0.0.1
ms bind ipv4 = true
ms bind ipv6 = false
auth cluster required = none
auth service required = none
auth client required = none
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
mon allow pool size one = true
mon allow pool delete = true
mon max pg per osd = 1000
osd crush chooseleaf type = 0
osd objectstore = memstore
memstore device bytes = 3221225472
run dir = $dir/run
pid file = $dir/run/\$name.pid
log file = $dir/log/\$name.log
admin socket = $dir/run/\$name.asok
[mon.a]
mon data = $dir/mon/a
[osd.0]
osd data = $dir/osd/0
[client.rgw.a]
rgw frontends = beast endpoint=127.0.0.1:$port
rgw data = $dir/rgw
rgw dns name = 127.0.0.1
# Free deleted objects' data within seconds instead of hours: the memstore is RAM-sized, and a
# full OSD makes the gateway block requests instead of failing them.
rgw gc obj min wait = 0
rgw gc processor period = 10
rgw gc processor max time = 10
EOF
  monmaptool --create --add a "127.0.0.1:$mon_port" --fsid "$fsid" "$dir/monmap" >/dev/null
  ceph-mon -c "$conf" --mkfs -i a --monmap "$dir/monmap" >/dev/null 2>&1
  ceph-mon -c "$conf" -i a
  wait_port "$mon_port" ceph-mon
  # Register the OSD first, then make its store with that uuid: `--mkfs` without one
  # sometimes writes an all-zero uuid and cluster fsid, and the monitor then refuses the OSD
  # ("wrong fsid").
  local osd_uuid
  osd_uuid=$(cat /proc/sys/kernel/random/uuid)
  # The monitor's port opens before it can serve commands (EPERM "problem getting command
  # descriptions"): retry until it answers.
  local registered=0
  for _ in $(seq 1 100); do
    if timeout 10 ceph -c "$conf" osd new "$osd_uuid" 0 >/dev/null 2>&1; then
      registered=1
      break
    fi
    sleep 0.2
  done
  [ "$registered" = 1 ] || { log "the monitor did not accept the OSD (logs in $dir/log)"; return 1; }
  ceph-osd -c "$conf" -i 0 --mkfs --osd-uuid "$osd_uuid" >"$dir/log/osd-mkfs.log" 2>&1
  if [ "$(cat "$dir/osd/0/ceph_fsid" 2>/dev/null)" != "$fsid" ]; then
    log "ceph-osd --mkfs did not write the cluster fsid (see $dir/log/osd-mkfs.log)"
    return 1
  fi
  # A freshly started OSD sometimes sends its first monitor command before it knows the
  # cluster fsid, is refused ("wrong fsid") and exits: starting it again is enough.
  local started=0
  for _ in $(seq 1 5); do
    if ceph-osd -c "$conf" -i 0 2>>"$dir/log/osd-start.log"; then
      started=1
      break
    fi
    sleep 0.5
  done
  [ "$started" = 1 ] || { log "ceph-osd did not start (see $dir/log/osd-start.log)"; return 1; }
  for _ in $(seq 1 300); do
    timeout 10 ceph -c "$conf" osd stat 2>/dev/null | grep -q "1 up" && break
    sleep 0.2
  done
  radosgw -c "$conf" -n client.rgw.a
  wait_port "$port" radosgw
  timeout 60 radosgw-admin -c "$conf" user create --uid reclaim-test --display-name "Reclaim tests" \
    --access-key "$access_key" --secret "$secret_key" >/dev/null 2>&1 ||
    timeout 60 radosgw-admin -c "$conf" user info --uid reclaim-test >/dev/null
  touch "$dir/ready"
  print_env
}

case "${1:-}" in
start) start ;;
stop) stop ;;
status) [ -f "$dir/ready" ] && reachable "$port" ;;
*)
  echo "usage: $0 start|stop|status" >&2
  exit 2
  ;;
esac
