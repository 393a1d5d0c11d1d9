#!/bin/sh
# pdns-down.sh DIR: stop the PowerDNS started by scripts/pdns-up.sh DIR.
#
# It signals only the PID recorded in DIR/pid (after checking that it is still a pdns_server), waits up to
# 10 s for it to exit, then removes DIR/pid. Nothing recorded, or the process already gone, is success.
set -eu
D=${1:?usage: pdns-down.sh DIR}
[ -f "$D/pid" ] || { echo "pdns-down: no $D/pid; nothing to stop"; exit 0; }
P=$(cat "$D/pid")
# alive: the process exists and is not a zombie waiting for its parent to reap it.
alive() { kill -0 "$P" 2>/dev/null && [ "$(sed 's/.*) //' "/proc/$P/stat" 2>/dev/null | cut -d' ' -f1)" != Z ]; }
if ! alive; then
  rm -f "$D/pid"
  echo "pdns-down: PID $P already gone"
  exit 0
fi
case "$(cat "/proc/$P/comm" 2>/dev/null || echo unknown)" in
  pdns_server*) ;;
  *) echo "pdns-down: PID $P is not pdns_server; leaving it alone" >&2; rm -f "$D/pid"; exit 1 ;;
esac
kill "$P"
i=0
while alive; do
  i=$((i + 1))
  if [ $i -gt 100 ]; then
    echo "pdns-down: PID $P still running after 10 s; sending SIGKILL" >&2
    kill -9 "$P" 2>/dev/null || true
    break
  fi
  sleep 0.1
done
rm -f "$D/pid"
echo "pdns-down: stopped PID $P"
