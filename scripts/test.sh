#!/usr/bin/env bash
# test.sh: run every test of cdkx on this machine.
#
# Installs PowerDNS, RabbitMQ and PostgreSQL from apt when missing, starts a private PowerDNS, a private
# RabbitMQ and a private PostgreSQL cluster on 127.0.0.1 (their own ports and folders, stopped again on
# exit; CDKX_TEST_POSTGRES_URL points the PostgreSQL backend's tests at the cluster), checks formatting,
# vet and lint, then runs the unit tests and the end-to-end suite (the real cdkx binary against those
# servers) with the race detector:
#   go test -race -count=1 -timeout 30m -tags e2e ./...
# then the real Pulumi CLI against cdkx server, in the module e2e/pulumicli (README: Testing with the Pulumi CLI),
# then the web console in headless chromium (e2e/browser, build tag browser; apt-get install chromium):
#   go test -race -count=1 -timeout 15m -tags browser ./e2e/browser/
# Without the e2e tag, `go test ./...` runs only the fast offline tests.
set -euo pipefail
cd "$(dirname "$0")/.."

export PDNS_API_PORT=${PDNS_API_PORT:-18181}
export PDNS_DNS_PORT=${PDNS_DNS_PORT:-15453}
export PDNS_API_KEY=${PDNS_API_KEY:-test-key}
export PDNS_API_URL=http://127.0.0.1:$PDNS_API_PORT
GOLANGCI_LINT_VERSION=2.6.2

export RMQ_API_PORT=${RMQ_API_PORT:-15693} RMQ_AMQP_PORT=${RMQ_AMQP_PORT:-15692}
export RMQ_DIST_PORT=${RMQ_DIST_PORT:-25693} RMQ_EPMD_PORT=${RMQ_EPMD_PORT:-14389}
export RMQ_ADMIN_PASS=${RMQ_ADMIN_PASS:-test-admin-pass}
export RABBITMQ_API_URL=http://127.0.0.1:$RMQ_API_PORT RABBITMQ_USERNAME=admin RABBITMQ_PASSWORD=$RMQ_ADMIN_PASS
export PG_PORT=${PG_PORT:-15432}

pdns_dir=$(mktemp -d /tmp/cdkx-test-pdns.XXXXXX)
rmq_dir=$(mktemp -d /tmp/cdkx-test-rmq.XXXXXX)
pg_dir=$(mktemp -d /tmp/cdkx-test-pg.XXXXXX)
cleanup() {
  bash scripts/pdns-down.sh "$pdns_dir" || true
  bash scripts/rmq-down.sh "$rmq_dir" || true
  bash scripts/pg-down.sh "$pg_dir" || true
  rm -rf "$pdns_dir" "$rmq_dir" "$pg_dir"
}
trap cleanup EXIT
bash scripts/pdns-up.sh "$pdns_dir"
bash scripts/rmq-up.sh "$rmq_dir"
CDKX_TEST_POSTGRES_URL=$(bash scripts/pg-up.sh "$pg_dir")
export CDKX_TEST_POSTGRES_URL

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change: $unformatted" >&2
  exit 1
fi
echo "== go vet"
go vet ./...
go vet -tags e2e ./...
go vet -tags browser ./e2e/browser/
echo "== golangci-lint (import layering, no printing outside cmd, errcheck, …: .golangci.yml)"
lint=$(go env GOPATH)/bin/golangci-lint
if ! "$lint" version 2>/dev/null | grep -q "version $GOLANGCI_LINT_VERSION"; then
  go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v$GOLANGCI_LINT_VERSION"
fi
"$lint" run --build-tags e2e ./...
"$lint" run --build-tags browser ./e2e/browser/
echo "== go test"
go test -race -count=1 -timeout 30m -tags e2e ./...
echo "== the Pulumi CLI against cdkx server (e2e/pulumicli; the first run builds the CLI, ~10 min on 2 cores)"
(cd e2e/pulumicli && go vet -tags e2e ./... && go test -count=1 -tags e2e -timeout 40m ./...)
echo "== the web console in headless chromium (e2e/browser; screenshots in \$CDKX_SCREENSHOTS when set)"
if ! command -v chromium >/dev/null 2>&1 && [ -z "${CDKX_CHROMIUM:-}" ]; then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium
fi
go test -race -count=1 -timeout 15m -tags browser ./e2e/browser/
