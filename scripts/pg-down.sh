#!/usr/bin/env bash
# pg-down.sh DIR: stop the PostgreSQL cluster started by scripts/pg-up.sh DIR.
#
# It runs `pg_ctl stop -m fast` on DIR/data only (as the postgres user when run as root), waiting at most
# 30 s, then `-m immediate` if the server is still up. No cluster in DIR, or one already stopped, is
# success. The data directory is left in place (pg-up.sh wipes it on the next start).
set -euo pipefail
D=${1:?usage: pg-down.sh DIR}

if [ ! -f "$D/data/postmaster.pid" ]; then
  echo "pg-down: no server running in $D/data; nothing to stop"
  exit 0
fi
D=$(cd "$D" && pwd)
BIN=$(cat "$D/bin" 2>/dev/null || ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
if [ -z "$BIN" ] || [ ! -x "$BIN/pg_ctl" ]; then
  echo "pg-down: no pg_ctl found (looked in $D/bin and /usr/lib/postgresql/*/bin)" >&2
  exit 1
fi
if [ "$(id -u)" = 0 ]; then
  as_pg() { su postgres -s /bin/bash -c "$1"; }
else
  as_pg() { bash -c "$1"; }
fi

if ! as_pg "'$BIN/pg_ctl' status -D '$D/data'" >/dev/null 2>&1; then
  echo "pg-down: server in $D/data already stopped"
  exit 0
fi
if as_pg "'$BIN/pg_ctl' stop -D '$D/data' -m fast -w -t 30" >/dev/null 2>&1; then
  echo "pg-down: stopped the server in $D/data"
  exit 0
fi
echo "pg-down: fast shutdown of $D/data did not finish in 30 s; trying immediate shutdown" >&2
as_pg "'$BIN/pg_ctl' stop -D '$D/data' -m immediate -w -t 10"
echo "pg-down: stopped the server in $D/data (immediate)"
