#!/bin/sh
# rmq-down.sh DIR: stop the RabbitMQ and the epmd started by scripts/rmq-up.sh DIR.
#
# It signals only the PIDs recorded in DIR/beam.pid and DIR/epmd.pid (after checking that each is still
# a beam.smp or an epmd): the broker first, waiting up to 30 s for it to exit (it takes 2-6 s), then
# epmd, waiting up to 5 s. A process still running then gets SIGKILL. The PID files are removed; nothing
# recorded, or a process already gone, is success.
set -eu
D=${1:?usage: rmq-down.sh DIR}

# stop FILE NAME TENTHS: stop the process recorded in DIR/FILE if it is NAME, waiting TENTHS × 0.1 s.
stop() {
  f="$D/$1"
  [ -f "$f" ] || { echo "rmq-down: no $f; nothing to stop"; return 0; }
  P=$(cat "$f")
  if ! alive "$P"; then
    rm -f "$f"
    echo "rmq-down: $2 PID $P already gone"
    return 0
  fi
  case "$(cat "/proc/$P/comm" 2>/dev/null || echo unknown)" in
    "$2"*) ;;
    *) echo "rmq-down: PID $P is not $2; leaving it alone" >&2; rm -f "$f"; return 1 ;;
  esac
  kill "$P"
  i=0
  while alive "$P"; do
    i=$((i + 1))
    if [ $i -gt "$3" ]; then
      echo "rmq-down: $2 PID $P still running after $(($3 / 10)) s; sending SIGKILL" >&2
      kill -9 "$P" 2>/dev/null || true
      break
    fi
    sleep 0.1
  done
  rm -f "$f"
  echo "rmq-down: stopped $2 PID $P"
}

# alive PID: the process exists and is not a zombie waiting for its parent to reap it.
alive() { kill -0 "$1" 2>/dev/null && [ "$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)" != Z ]; }

rc=0
stop beam.pid beam 300 || rc=1
stop epmd.pid epmd 50 || rc=1
exit $rc
