#!/bin/sh
# pdns-up.sh DIR: start PowerDNS Authoritative (LMDB backend) for end-to-end tests, on 127.0.0.1 only.
#
# The server runs in the foreground of a background job; its PID goes to DIR/pid (stop it with
# scripts/pdns-down.sh DIR). DIR holds the config, the LMDB database (wiped on each start), the control
# socket and pdns.log. The script returns once the HTTP API answers.
#
# Environment:
#   PDNS_API_PORT  HTTP API (webserver) port, default 18081
#   PDNS_DNS_PORT  DNS port (UDP and TCP), default 15353
#   PDNS_API_KEY   API key expected in X-API-Key, default e2e-key
#
# pdns-server and pdns-backend-lmdb are installed from apt only when missing (apt-get update first).
set -eu
D=${1:?usage: pdns-up.sh DIR}
KEY=${PDNS_API_KEY:-e2e-key}
PORT=${PDNS_API_PORT:-18081}
DNS_PORT=${PDNS_DNS_PORT:-15353}

if ! dpkg -s pdns-server pdns-backend-lmdb >/dev/null 2>&1; then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends pdns-server pdns-backend-lmdb
fi

mkdir -p "$D"
D=$(cd "$D" && pwd)
if [ -f "$D/pid" ] && kill -0 "$(cat "$D/pid")" 2>/dev/null; then
  echo "pdns-up: PowerDNS already running with PID $(cat "$D/pid") in $D; stop it with scripts/pdns-down.sh $D" >&2
  exit 1
fi
rm -f "$D"/pdns.lmdb* "$D/pid"
cat > "$D/pdns.conf" <<CONF
launch=lmdb
lmdb-filename=$D/pdns.lmdb
api=yes
api-key=$KEY
webserver=yes
webserver-address=127.0.0.1
webserver-port=$PORT
webserver-allow-from=127.0.0.0/8
local-address=127.0.0.1
local-port=$DNS_PORT
socket-dir=$D
daemon=no
guardian=no
security-poll-suffix=
CONF
/usr/sbin/pdns_server --config-dir="$D" >"$D/pdns.log" 2>&1 &
echo $! >"$D/pid"

i=0
until curl -sf -H "X-API-Key: $KEY" "http://127.0.0.1:$PORT/api/v1/servers/localhost" >/dev/null; do
  i=$((i + 1))
  if [ $i -gt 100 ] || ! kill -0 "$(cat "$D/pid")" 2>/dev/null; then
    echo "pdns-up: PowerDNS did not answer on 127.0.0.1:$PORT; its log follows" >&2
    cat "$D/pdns.log" >&2
    kill "$(cat "$D/pid")" 2>/dev/null || true
    rm -f "$D/pid"
    exit 1
  fi
  sleep 0.1
done
echo "pdns-up: PowerDNS PID $(cat "$D/pid"), API http://127.0.0.1:$PORT, DNS 127.0.0.1:$DNS_PORT"
