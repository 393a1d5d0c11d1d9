#!/usr/bin/env bash
# demo.sh: the main job on a fresh machine. Installs PowerDNS (apt) if needed and starts it on 127.0.0.1
# unless it already runs, builds cdkx, deploys the example cloud assembly testdata/examples/dns with the
# embedded SQLite state (.cdkx/state.db), and resolves one of its records over DNS.
#
# PowerDNS keeps running afterwards (API http://127.0.0.1:18081, DNS 127.0.0.1:15353) so that you can go
# on with `./bin/cdkx diff`, `deploy`, `destroy --force`; stop it with: bash scripts/pdns-down.sh .cdkx/pdns
#
# demo.sh hetzner: the same with the Hetzner example (testdata/examples/hetzner, the TypeScript cdkx's own
# end-to-end app: two stacks, 17 resources) against hcloud-fake, the project's stateful fake of the Hetzner
# Cloud API, on http://127.0.0.1:18090/v1 (state in .cdkx/hetzner.db). The fake keeps running; stop it with:
# kill "$(cat .cdkx/hcloud-fake.pid)"
#
# demo.sh multipass: the TypeScript cdkx's Multipass example (testdata/examples/multipass, one VM with two
# mounted folders) against multipass-fake, the project's stand-in for the multipass CLI, built as
# bin/fake-multipass/multipass. For this script only, that folder goes first on PATH and MULTIPASS_BIN
# names the fake, so a real multipass on this machine is never called (the script says so when it finds
# one). The example's mount sources are folders of the machine that ran synth (/Users/me/code,
# /Users/me/.ssh); the script deploys a copy, .cdkx/multipass/cdkx.out, whose sources are folders it
# creates under .cdkx/multipass/home. State: .cdkx/multipass.db; the fake's instances:
# .cdkx/multipass/fake, the command lines cdkx ran: .cdkx/multipass/fake.log.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = multipass ]; then
  echo "== building cdkx and multipass-fake (as bin/fake-multipass/multipass)"
  go build -o bin/ ./cmd/cdkx
  go build -o bin/fake-multipass/multipass ./cmd/multipass-fake
  fake=$PWD/bin/fake-multipass/multipass
  if real=$(command -v multipass 2>/dev/null) && [ "$real" != "$fake" ]; then
    echo "note: a real multipass is installed ($real); this demo does not call it: it uses $fake"
  fi
  export PATH=$PWD/bin/fake-multipass:$PATH MULTIPASS_BIN=$fake
  export MULTIPASS_FAKE_DIR=$PWD/.cdkx/multipass/fake MULTIPASS_FAKE_LOG=$PWD/.cdkx/multipass/fake.log
  export MULTIPASS_FAKE_LAUNCH_SECONDS=${MULTIPASS_FAKE_LAUNCH_SECONDS:-2}
  echo "multipass here is the fake: MULTIPASS_BIN=$fake, first on PATH; instances in $MULTIPASS_FAKE_DIR; a launch takes ${MULTIPASS_FAKE_LAUNCH_SECONDS}s"
  # The example mounts the synth machine's /Users/me/code and /Users/me/.ssh: multipass (and cdkx's
  # preflight) refuses a mount source that does not exist here, so the copy mounts folders of .cdkx/.
  home=$PWD/.cdkx/multipass/home
  app=.cdkx/multipass/cdkx.out
  mkdir -p "$home/code" "$home/.ssh" "$app"
  : >"$MULTIPASS_FAKE_LOG" # this run's commands only
  cp testdata/examples/multipass/cdkx.out/manifest.json "$app/"
  sed "s#\"/Users/me/#\"$home/#g" testdata/examples/multipass/cdkx.out/DevVMs.json >"$app/DevVMs.json"
  echo "deploying $app: testdata/examples/multipass/cdkx.out with its mount sources under $home"
  state=.cdkx/multipass.db
  echo "== cdkx diff"
  ./bin/cdkx diff --app "$app" --state "$state"
  echo "== cdkx deploy"
  ./bin/cdkx deploy --app "$app" --state "$state"
  echo "== the instance as state records it (outputs: name, ipAddress, sshUser, crn)"
  ./bin/cdkx state export --app "$app" --state "$state" --stack DevVMs
  echo "== the multipass commands cdkx ran in this demo ($MULTIPASS_FAKE_LOG)"
  cat "$MULTIPASS_FAKE_LOG"
  echo "== multipass list"
  multipass list
  echo "== cdkx diff right after: nothing to do"
  ./bin/cdkx diff --app "$app" --state "$state" --detailed-exitcode
  echo "Done. Try (with PATH=$PWD/bin/fake-multipass:\$PATH MULTIPASS_FAKE_DIR=$MULTIPASS_FAKE_DIR):"
  echo "  ./bin/cdkx destroy --app $app --state $state --force; multipass list"
  exit 0
fi

if [ "${1:-}" = hetzner ]; then
  port=${HCLOUD_FAKE_PORT:-18090}
  export HCLOUD_TOKEN=${HCLOUD_TOKEN:-demo-token} HCLOUD_ENDPOINT=http://127.0.0.1:$port/v1
  echo "== building cdkx and hcloud-fake"
  go build -o bin/ ./cmd/cdkx ./cmd/hcloud-fake
  mkdir -p .cdkx
  if curl -sf -H "Authorization: Bearer $HCLOUD_TOKEN" "$HCLOUD_ENDPOINT/locations" >/dev/null 2>&1; then
    echo "hcloud-fake already answers on $HCLOUD_ENDPOINT"
  else
    ./bin/hcloud-fake --listen "127.0.0.1:$port" --token "$HCLOUD_TOKEN" --action-duration 500ms >.cdkx/hcloud-fake.log 2>&1 &
    echo $! >.cdkx/hcloud-fake.pid
    i=0
    until curl -sf -H "Authorization: Bearer $HCLOUD_TOKEN" "$HCLOUD_ENDPOINT/locations" >/dev/null; do
      i=$((i+1)); [ $i -gt 100 ] && { cat .cdkx/hcloud-fake.log; exit 1; }; sleep 0.1
    done
    echo "hcloud-fake listening on $HCLOUD_ENDPOINT (PID $(cat .cdkx/hcloud-fake.pid))"
  fi
  app=testdata/examples/hetzner/cdkx.out
  state=.cdkx/hetzner.db
  echo "== cdkx diff"
  ./bin/cdkx diff --app "$app" --state "$state"
  echo "== cdkx deploy"
  ./bin/cdkx deploy --app "$app" --state "$state"
  echo "== outputs"
  ./bin/cdkx outputs --app "$app" --state "$state"
  echo "== cdkx diff right after: nothing to do"
  ./bin/cdkx diff --app "$app" --state "$state" --detailed-exitcode
  echo "Done. Try: ./bin/cdkx diff --app $app --state $state; ./bin/cdkx destroy --app $app --state $state --force"
  echo "hcloud-fake keeps running; stop it with: kill \"\$(cat .cdkx/hcloud-fake.pid)\""
  exit 0
fi

export PDNS_API_PORT=${PDNS_API_PORT:-18081}
export PDNS_DNS_PORT=${PDNS_DNS_PORT:-15353}
export PDNS_API_KEY=${PDNS_API_KEY:-demo-key}
export PDNS_API_URL=http://127.0.0.1:$PDNS_API_PORT

if ! command -v dig >/dev/null 2>&1; then
  apt-get update >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends bind9-dnsutils >/dev/null
fi
if [ -f .cdkx/pdns/pid ] && kill -0 "$(cat .cdkx/pdns/pid)" 2>/dev/null; then
  echo "PowerDNS already running (PID $(cat .cdkx/pdns/pid))"
else
  bash scripts/pdns-up.sh .cdkx/pdns
fi

echo "== building cdkx"
go build -o bin/cdkx ./cmd/cdkx

app=testdata/examples/dns/cdkx.out
echo "== cdkx diff"
./bin/cdkx diff --app "$app"
echo "== cdkx deploy"
./bin/cdkx deploy --app "$app"
echo "== resolving over DNS: dig @127.0.0.1 -p $PDNS_DNS_PORT www.example.test A"
dig +short -p "$PDNS_DNS_PORT" @127.0.0.1 www.example.test A
dig +short -p "$PDNS_DNS_PORT" @127.0.0.1 web.example.test CNAME
echo "== state"
./bin/cdkx history --limit 4
echo
echo "Done. Try: ./bin/cdkx state export --stack App | head; ./bin/cdkx destroy --force"
echo "PowerDNS keeps running; stop it with: bash scripts/pdns-down.sh .cdkx/pdns"
