package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cdkx-dev/cdkx/adapters/core"
	"github.com/cdkx-dev/cdkx/adapters/hcloud"
	"github.com/cdkx-dev/cdkx/adapters/multipass"
	"github.com/cdkx-dev/cdkx/adapters/powerdns"
	"github.com/cdkx-dev/cdkx/adapters/rabbitmq"
	"github.com/cdkx-dev/cdkx/adapters/transport"
	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/pkg/backend/postgres"
	"github.com/cdkx-dev/cdkx/pkg/backend/service"
	"github.com/cdkx-dev/cdkx/pkg/backend/sqlite"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// Factory holds lazy constructors of what commands need, so that a command builds only what it uses and
// tests can swap each one.
type Factory struct {
	IO      *IOStreams
	Version string
	Getenv  func(string) string
	Now     func() time.Time
	// OpenBackend opens the state backend at location: an http:// or https:// state service, a
	// postgres:// or postgresql:// URL, else a SQLite path.
	OpenBackend func(ctx context.Context, location string) (state.Backend, error)
	// OpenBackendReadOnly opens the state backend at location for a command that only reads: a SQLite
	// path is opened without creating anything (a missing file is an empty state) and refuses writes;
	// other locations open as with OpenBackend. Nil: OpenBackend (see OpenReadOnly).
	OpenBackendReadOnly func(ctx context.Context, location string) (state.Backend, error)
	// Providers returns every provider cdkx knows, each configured on first use.
	Providers func() *engine.Registry
	// Ticker returns the channel that drives "still creating…" lines (every 10 s in the CLI).
	Ticker func() (<-chan time.Time, func())
}

// New returns the factory of the real program.
func New(version string) *Factory {
	f := &Factory{IO: System(), Version: version, Getenv: os.Getenv, Now: time.Now}
	f.OpenBackend = func(ctx context.Context, location string) (state.Backend, error) {
		if isServiceURL(location) {
			return OpenService(ctx, location, f.Getenv)
		}
		policy, err := projectPolicy()
		if err != nil {
			return nil, err
		}
		if isPostgresURL(location) {
			b, err := postgres.Open(ctx, location)
			if err != nil {
				return nil, namePostgresSetting(err)
			}
			b.SetPolicy(policy)
			return b, nil
		}
		b, err := sqlite.Open(ctx, location)
		if err != nil {
			return nil, err
		}
		b.SetPolicy(policy)
		return b, nil
	}
	f.OpenBackendReadOnly = func(ctx context.Context, location string) (state.Backend, error) {
		if isServiceURL(location) || isPostgresURL(location) {
			return f.OpenBackend(ctx, location)
		}
		b, err := sqlite.OpenReadOnly(ctx, location)
		if err != nil {
			return nil, err
		}
		return b, nil
	}
	f.Providers = sync.OnceValue(func() *engine.Registry { return DefaultProviders(f.Getenv) })
	f.Ticker = func() (<-chan time.Time, func()) {
		t := time.NewTicker(10 * time.Second)
		return t.C, t.Stop
	}
	return f
}

// projectPolicy is the approval policy of the project in the working directory (cdkx.json's "approval"),
// which the SQLite and PostgreSQL backends enforce; a state service enforces its own (its flags).
func projectPolicy() (state.Policy, error) {
	file, err := readCdkxJSON("cdkx.json")
	if err != nil {
		return state.Policy{}, err
	}
	return state.Policy{RequireSecondPerson: file.Approval.RequireSecondPerson}, nil
}

// OpenReadOnly opens the state backend at location for reading only, through OpenBackendReadOnly, or
// OpenBackend when that is nil (a test's factory).
func (f *Factory) OpenReadOnly(ctx context.Context, location string) (state.Backend, error) {
	if f.OpenBackendReadOnly != nil {
		return f.OpenBackendReadOnly(ctx, location)
	}
	return f.OpenBackend(ctx, location)
}

// isServiceURL reports whether the state location is a state service (http:// or https://).
func isServiceURL(location string) bool {
	return strings.HasPrefix(location, "http://") || strings.HasPrefix(location, "https://")
}

// OpenService opens the state service at location with the API token CDKX_TOKEN, in organization
// CDKX_ORG (default: the service's default organization) and project CDKX_PROJECT (default: the name of
// the working directory, the app's folder). Requests are retried through the shared transport: network
// errors, 429 and 5xx, 10 times: a service whose database restarts answers 503 with Retry-After 1, so a
// request rides out about 10 s of database outage; a service that refuses connections, about 28 s of
// backoff (0.25 s doubling to 4 s, with jitter).
func OpenService(ctx context.Context, location string, getenv func(string) string) (state.Backend, error) {
	return openService(ctx, location, getenv, transport.Retry{Max: 10, WaitMin: 250 * time.Millisecond, WaitMax: 4 * time.Second, MaxRetryAfter: 10 * time.Second})
}

// openService is OpenService with the retry policy retry. A service that refuses the connection, or whose
// host name is unknown, is reported by the *transport.RetryError alone, which names --state/CDKX_STATE.
func openService(ctx context.Context, location string, getenv func(string) string, retry transport.Retry) (state.Backend, error) {
	project := getenv("CDKX_PROJECT")
	if project == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("state service: name the project with CDKX_PROJECT: %w", err)
		}
		project = filepath.Base(wd)
	}
	token := getenv("CDKX_TOKEN")
	client := transport.New(transport.Options{Provider: "state service", Service: "the state service",
		URLSetting: "--state/CDKX_STATE", Secrets: []string{token}, Retry: retry, Limits: transport.Limits{MaxBody: service.MaxAnswer},
		Idempotent: true}) // the update protocol answers a repeated request as the first
	b, err := service.Open(ctx, location, service.Options{Token: token, Organization: getenv("CDKX_ORG"), Project: project, Client: client})
	var re *transport.RetryError
	if errors.As(err, &re) && errors.As(re, new(*transport.UnreachableError)) {
		return nil, re
	}
	if err != nil {
		return nil, err
	}
	return b, nil
}

// namePostgresSetting prefixes an error of postgres.Open that says the server could not be reached (the
// connection was refused, or the host name is unknown) with the setting the URL comes from.
func namePostgresSetting(err error) error {
	if errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, new(*net.DNSError)) {
		return fmt.Errorf("--state/CDKX_STATE: %w", err)
	}
	return err
}

// isPostgresURL reports whether the state location names a PostgreSQL database (postgres:// or
// postgresql://) rather than a SQLite file.
func isPostgresURL(location string) bool {
	return strings.HasPrefix(location, "postgres://") || strings.HasPrefix(location, "postgresql://")
}

// DefaultProviders returns the registry of the providers compiled into cdkx: "cdkx" (built in),
// "powerdns" (configured from PDNS_* variables), "rabbitmq" (RABBITMQ_* variables), "hetzner"
// (HCLOUD_*) and "multipass" (MULTIPASS_BIN). All but "cdkx" are registered lazily: what they declare
// (types, default concurrency, whether they can locate an interrupted create) is known at once, and they
// read their variables through getenv on first use.
func DefaultProviders(getenv func(string) string) *engine.Registry {
	reg := engine.NewRegistry(core.New())
	reg.Register((&powerdns.Provider{}).Info(), func() (engine.Provider, error) { return powerdns.NewFromEnv(getenv) })
	reg.Register((&rabbitmq.Provider{}).Info(), func() (engine.Provider, error) { return rabbitmq.NewFromEnv(getenv) })
	reg.Register((&hcloud.Provider{}).Info(), func() (engine.Provider, error) { return hcloud.NewFromEnv(getenv) })
	reg.Register((&multipass.Provider{}).Info(), func() (engine.Provider, error) { return multipass.NewFromEnv(getenv) })
	return reg
}

// CreatedBy returns "user@host" for deployment records.
func CreatedBy() string {
	host, _ := os.Hostname()
	return UserName() + "@" + host
}

// UserName returns the name of the user running cdkx ("unknown" when it cannot be found).
func UserName() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "unknown"
}
