#!/bin/sh
# rmq-up.sh DIR: start RabbitMQ with its management HTTP API for end-to-end tests, on 127.0.0.1 only.
#
# It starts a private epmd (Erlang port mapper) on 127.0.0.1 and then the broker, both in the foreground
# of background jobs; their PIDs go to DIR/epmd.pid and DIR/beam.pid (stop them with scripts/rmq-down.sh
# DIR). DIR holds the config, the Mnesia database (wiped on each start, so every run starts from the
# default vhost "/" and the admin user only), the logs and a private HOME for the Erlang cookie. The
# script returns once the management API answers.
#
# Every Erlang program needs the exported environment below (RABBITMQ_NODENAME, ERL_EPMD_*, HOME, …):
# without it a rabbitmqctl or erl call spawns a global epmd listening on 0.0.0.0:4369. To run rabbitmqctl
# against this broker, export the same variables first.
#
# Environment:
#   RMQ_API_PORT    management HTTP API port, default 15673
#   RMQ_AMQP_PORT   AMQP 0-9-1 port, default 15672
#   RMQ_DIST_PORT   Erlang distribution port, default 25673
#   RMQ_EPMD_PORT   port of the private epmd, default 14369
#   RMQ_ADMIN_PASS  password of the user "admin" (tag administrator), default admin-secret
#
# rabbitmq-server is installed from apt only when missing (apt-get update first). Debian's
# /usr/sbin/rabbitmq-server wrapper switches to the rabbitmq user, so the broker is started from
# /usr/lib/rabbitmq/bin directly, as the calling user.
set -eu
D=${1:?usage: rmq-up.sh DIR}
PASS=${RMQ_ADMIN_PASS:-admin-secret}
API_PORT=${RMQ_API_PORT:-15673}
AMQP_PORT=${RMQ_AMQP_PORT:-15672}
DIST_PORT=${RMQ_DIST_PORT:-25673}
EPMD_PORT=${RMQ_EPMD_PORT:-14369}

if ! dpkg -s rabbitmq-server >/dev/null 2>&1; then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends rabbitmq-server
fi

# alive PID: the process exists and is not a zombie waiting for its parent to reap it.
alive() { kill -0 "$1" 2>/dev/null && [ "$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)" != Z ]; }

mkdir -p "$D"
D=$(cd "$D" && pwd)
for f in beam.pid epmd.pid; do
  if [ -f "$D/$f" ] && alive "$(cat "$D/$f")"; then
    echo "rmq-up: already running (PID $(cat "$D/$f") in $D/$f); stop it with scripts/rmq-down.sh $D" >&2
    exit 1
  fi
done
rm -rf "$D/mnesia" "$D/log" "$D/beam.pid" "$D/epmd.pid"
mkdir -p "$D/home" "$D/mnesia" "$D/log"
cat > "$D/rabbitmq.conf" <<CONF
listeners.tcp.1 = 127.0.0.1:$AMQP_PORT
management.tcp.ip = 127.0.0.1
management.tcp.port = $API_PORT
default_user = admin
default_pass = $PASS
default_user_tags.administrator = true
loopback_users = none
CONF
# The management plugin is enabled by file, so no rabbitmq-plugins call (and no extra epmd) is needed.
echo '[rabbitmq_management].' > "$D/enabled_plugins"

export HOME="$D/home" RABBITMQ_NODENAME=rabbit@localhost RABBITMQ_CONFIG_FILE="$D/rabbitmq.conf" \
  RABBITMQ_ENABLED_PLUGINS_FILE="$D/enabled_plugins" RABBITMQ_MNESIA_BASE="$D/mnesia" \
  RABBITMQ_LOG_BASE="$D/log" RABBITMQ_PID_FILE="$D/beam.pid" RABBITMQ_DIST_PORT="$DIST_PORT" \
  ERL_EPMD_ADDRESS=127.0.0.1 ERL_EPMD_PORT="$EPMD_PORT" \
  RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"

# fail PID... : stop what this script started, show the log and give up.
fail() {
  echo "rmq-up: $1; the broker's output follows" >&2
  tail -50 "$D/server.out" >&2 2>/dev/null || true
  for f in beam.pid epmd.pid; do
    if [ -f "$D/$f" ]; then kill "$(cat "$D/$f")" 2>/dev/null || true; fi
  done
  [ -z "${SERVER_JOB:-}" ] || kill "$SERVER_JOB" 2>/dev/null || true
  rm -f "$D/beam.pid" "$D/epmd.pid"
  exit 1
}

# epmd in the foreground of a background job, so that $! is its own PID.
epmd -address 127.0.0.1 -port "$EPMD_PORT" >"$D/epmd.out" 2>&1 &
echo $! >"$D/epmd.pid"
i=0
until epmd -port "$EPMD_PORT" -names >/dev/null 2>&1; do
  i=$((i + 1))
  if [ $i -gt 100 ] || ! alive "$(cat "$D/epmd.pid")"; then
    cat "$D/epmd.out" >&2
    fail "epmd did not start on 127.0.0.1:$EPMD_PORT"
  fi
  sleep 0.05
done

# The broker writes its own OS PID (that of beam.smp) to $RABBITMQ_PID_FILE once it runs.
/usr/lib/rabbitmq/bin/rabbitmq-server >"$D/server.out" 2>&1 &
SERVER_JOB=$!
i=0
until curl -sf -u "admin:$PASS" "http://127.0.0.1:$API_PORT/api/health/checks/alarms" >/dev/null 2>&1; do
  i=$((i + 1))
  if [ $i -gt 600 ] || ! alive "$SERVER_JOB"; then
    fail "the management API did not answer on 127.0.0.1:$API_PORT"
  fi
  sleep 0.1
done
[ -s "$D/beam.pid" ] || fail "no PID in $D/beam.pid"
echo "rmq-up: RabbitMQ PID $(cat "$D/beam.pid") (epmd PID $(cat "$D/epmd.pid")), API http://127.0.0.1:$API_PORT, AMQP 127.0.0.1:$AMQP_PORT"
