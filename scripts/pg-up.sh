#!/usr/bin/env bash
# pg-up.sh DIR: start a private PostgreSQL cluster for tests, listening on 127.0.0.1 only, and print its URL.
#
# DIR/data is a new cluster (initdb, wiped on each start), DIR is also its unix socket directory, and
# DIR/postgres.log its log. The server runs as the postgres user (PostgreSQL refuses to run as root), so
# when run as root the script creates DIR owned by postgres; DIR's parents must let postgres through (e.g.
# a folder under /tmp). Authentication is "trust" for local connections: any local user can connect as
# any role, which is fine for a private, loopback-only test cluster and nothing else. It never touches a
# cluster it did not start (such as the Debian package's "main" cluster): stop it with
# scripts/pg-down.sh DIR.
#
# On success the last line on stdout is the URL, e.g. postgres://postgres@127.0.0.1:15432/cdkx?sslmode=disable
# (progress goes to stderr), so `url=$(bash scripts/pg-up.sh DIR)` works.
#
# Environment:
#   PG_PORT     TCP port on 127.0.0.1, default 15432
#   PGDATABASE  database created for cdkx, default cdkx
#
# The postgresql package is installed from apt only when no initdb is found under /usr/lib/postgresql.
set -euo pipefail
D=${1:?usage: pg-up.sh DIR}
PORT=${PG_PORT:-15432}
DB=${PGDATABASE:-cdkx}

log() { echo "pg-up: $*" >&2; }

find_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }
BIN=$(find_bin)
if [ -z "$BIN" ] || [ ! -x "$BIN/initdb" ]; then
  log "installing postgresql from apt"
  apt-get update >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql >&2
  BIN=$(find_bin)
fi
if [ -z "$BIN" ] || [ ! -x "$BIN/initdb" ]; then
  log "no initdb under /usr/lib/postgresql/*/bin; install the postgresql package"
  exit 1
fi

# as_pg runs a shell command as the postgres user (root) or as the current user (anyone else).
if [ "$(id -u)" = 0 ]; then
  as_pg() { su postgres -s /bin/bash -c "$1"; }
else
  as_pg() { bash -c "$1"; }
fi

mkdir -p "$D"
D=$(cd "$D" && pwd)
case "$D" in *[!A-Za-z0-9_./-]*) log "DIR $D has characters this script does not quote; choose a plain path"; exit 1 ;; esac
if [ -f "$D/data/postmaster.pid" ] && as_pg "'$BIN/pg_ctl' status -D '$D/data'" >/dev/null 2>&1; then
  log "PostgreSQL is already running in $D/data; stop it with scripts/pg-down.sh $D"
  exit 1
fi
if [ -e "$D/data" ] && [ ! -f "$D/data/PG_VERSION" ]; then
  log "$D/data exists and is not a PostgreSQL data directory; move it aside or choose another DIR"
  exit 1
fi
rm -rf "$D/data" "$D/postgres.log"
if [ "$(id -u)" = 0 ]; then
  chown postgres:postgres "$D"
fi
chmod 700 "$D"
if ! as_pg "test -w '$D'"; then
  log "the postgres user cannot write to $D (check the permissions of its parent folders); choose a folder under /tmp"
  exit 1
fi
echo "$BIN" >"$D/bin"

log "initdb in $D/data ($BIN)"
if ! as_pg "'$BIN/initdb' -D '$D/data' -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 --no-sync" >"$D/initdb.log" 2>&1; then
  log "initdb failed; its output follows"
  cat "$D/initdb.log" >&2
  exit 1
fi

# -w -t 30: pg_ctl waits (at most 30 s) until the server accepts connections.
opts="-c listen_addresses=127.0.0.1 -p $PORT -c unix_socket_directories=$D"
if ! as_pg "'$BIN/pg_ctl' start -D '$D/data' -l '$D/postgres.log' -w -t 30 -o '$opts'" >/dev/null 2>&1; then
  log "PostgreSQL did not start on 127.0.0.1:$PORT (is the port in use? set PG_PORT); its log follows"
  cat "$D/postgres.log" >&2 || true
  as_pg "'$BIN/pg_ctl' stop -D '$D/data' -m immediate -w -t 10" >/dev/null 2>&1 || true
  exit 1
fi
i=0
until "$BIN/pg_isready" -q -h 127.0.0.1 -p "$PORT" -U postgres -d postgres; do
  i=$((i + 1))
  if [ $i -gt 100 ]; then
    log "PostgreSQL does not answer on 127.0.0.1:$PORT after 10 s; its log follows"
    cat "$D/postgres.log" >&2 || true
    as_pg "'$BIN/pg_ctl' stop -D '$D/data' -m immediate -w -t 10" >/dev/null 2>&1 || true
    exit 1
  fi
  sleep 0.1
done
if ! "$BIN/psql" -q -h 127.0.0.1 -p "$PORT" -U postgres -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$DB'" | grep -q 1; then
  "$BIN/createdb" -h 127.0.0.1 -p "$PORT" -U postgres "$DB"
fi
log "PostgreSQL PID $(head -n 1 "$D/data/postmaster.pid") on 127.0.0.1:$PORT, data in $D/data, log $D/postgres.log"
echo "postgres://postgres@127.0.0.1:$PORT/$DB?sslmode=disable"
