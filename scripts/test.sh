#!/usr/bin/env bash
# test.sh: run every test of cdkx on this machine.
#
# Installs PowerDNS from apt when missing, starts a private PowerDNS on 127.0.0.1 (its own ports and
# folder, stopped again on exit), checks formatting and vet, then runs the unit tests and the end-to-end
# suite (the real cdkx binary against that PowerDNS) with the race detector:
#   go test -race -count=1 -tags e2e ./...
# Without the e2e tag, `go test ./...` runs only the fast offline tests.
set -euo pipefail
cd "$(dirname "$0")/.."

export PDNS_API_PORT=${PDNS_API_PORT:-18181}
export PDNS_DNS_PORT=${PDNS_DNS_PORT:-15453}
export PDNS_API_KEY=${PDNS_API_KEY:-test-key}
export PDNS_API_URL=http://127.0.0.1:$PDNS_API_PORT

pdns_dir=$(mktemp -d /tmp/cdkx-test-pdns.XXXXXX)
cleanup() {
  bash scripts/pdns-down.sh "$pdns_dir" || true
  rm -rf "$pdns_dir"
}
trap cleanup EXIT
bash scripts/pdns-up.sh "$pdns_dir"

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change: $unformatted" >&2
  exit 1
fi
echo "== go vet"
go vet ./...
go vet -tags e2e ./...
echo "== go test"
go test -race -count=1 -tags e2e ./...
