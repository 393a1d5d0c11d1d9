// Package server serves the Pulumi-compatible state service over HTTP from a PostgreSQL database.
//
// The protocol is the update lifecycle of the Pulumi Service API (paths, JSON field names and status
// codes of github.com/pulumi/pulumi/sdk/v3/go/common/apitype, mirrored here), so that the cdkx CLI and
// the Pulumi CLI (`pulumi login http://host:port`) can both keep their stacks' state in it. Every
// request is one PostgreSQL transaction; the handler keeps no state between requests, so several
// replicas may serve one database behind a load balancer.
package server

import (
	"context"
	"crypto/cipher"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Defaults of Options.
const (
	// DefaultLease is how long a lease token issued by start is valid.
	DefaultLease = 300 * time.Second
	// MaxLease caps the duration renew_lease grants.
	MaxLease = 300 * time.Second
	// DefaultMaxBody bounds a request body, after gzip decoding.
	DefaultMaxBody = 64 << 20
	// DefaultPoolConns is the size of the connection pool to PostgreSQL unless the URL sets
	// pool_max_conns (pgx's own default is the number of CPUs, at least 4). With 50 concurrent updates
	// pacing their checkpoints (bench/server -think 200ms, 2 cores), 10 connections keep a checkpoint's
	// p99 at 12–15 ms where 4 let it queue to 25 ms.
	DefaultPoolConns = 10
	// DefaultOrganization is the organization GET /api/user/organizations/default names.
	DefaultOrganization = "organization"
)

// Options configure a Server; zero fields take the defaults.
type Options struct {
	// Now is the clock for leases and garbage collection (time.Now).
	Now func() time.Time
	// Logger receives one record per request and the collector's reports (discarded when nil).
	Logger *slog.Logger
	// Lease is the lifetime of a lease token issued by start (DefaultLease).
	Lease time.Duration
	// MaxBody bounds request bodies after gzip decoding (DefaultMaxBody).
	MaxBody int64
	// Organization is the default organization (DefaultOrganization).
	Organization string
	// LeaseGrace is how long after its lease expired the collector cancels a running update
	// (LeaseGrace).
	LeaseGrace time.Duration
	// RequireSecondPerson makes approval a second person's act (state.Policy): approving a deployment
	// whose creator is the approving token's name is refused (403), and a deploy enters only as a
	// proposal: creating one PENDING (deploy, deploy --no-wait) or APPROVED is refused (403, saying to
	// propose it with cdkx deploy --propose).
	RequireSecondPerson bool
	// SecretsKey is the 32-byte AES-256 key of the secrets endpoints (POST …/encrypt, …/decrypt,
	// …/batch-encrypt, …/batch-decrypt; secrets.go); nil leaves them answering 400, which tells the user
	// to configure a key or use another secrets provider. Open fails on a key of another length.
	SecretsKey []byte
}

// Server is the state service on one PostgreSQL database. It is safe for concurrent use.
type Server struct {
	pool    *pgxpool.Pool
	now     func() time.Time
	log     *slog.Logger
	lease   time.Duration
	maxBody int64
	org     string
	grace   time.Duration
	// secondPerson is Options.RequireSecondPerson.
	secondPerson bool
	// secrets seals the values of the secrets endpoints; nil without Options.SecretsKey.
	secrets cipher.AEAD
	// texts caches the latest checkpoint bytes of recently written stacks (checkpoints.go).
	texts textCache
	// owners remembers the deployments whose writer is settled for good (owner.go).
	owners ownerCache
}

// Open connects to the PostgreSQL database at url (anything pgx accepts, e.g.
// postgres://user:password@host:5432/cdkx?sslmode=require; search_path selects a schema of its own),
// applies the service's pending migrations and returns the Server.
func Open(ctx context.Context, url string, opts Options) (*Server, error) {
	aead, err := newSecretsAEAD(opts.SecretsKey)
	if err != nil {
		return nil, err
	}
	if url == "" {
		return nil, errors.New("open service database: empty PostgreSQL URL; pass one such as postgres://user@host:5432/cdkx")
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, errors.New("open service database: the PostgreSQL URL is not valid; write it as postgres://user:password@host:5432/database")
	}
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = max(cfg.MaxConns, DefaultPoolConns)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 10 * time.Second
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = "cdkx-server"
	}
	where := fmt.Sprintf("postgres://%s@%s:%d/%s", cfg.ConnConfig.User, cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open service database %s: %w", where, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open service database %s: check that PostgreSQL runs and the URL is right: %w", where, err)
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open service database %s: %w", where, err)
	}
	s := &Server{pool: pool, now: opts.Now, log: opts.Logger, lease: opts.Lease, maxBody: opts.MaxBody, org: opts.Organization, grace: opts.LeaseGrace,
		secondPerson: opts.RequireSecondPerson, secrets: aead}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.lease <= 0 {
		s.lease = DefaultLease
	}
	if s.maxBody <= 0 {
		s.maxBody = DefaultMaxBody
	}
	if s.grace <= 0 {
		s.grace = LeaseGrace
	}
	if s.org == "" {
		s.org = DefaultOrganization
	}
	return s, nil
}

// Close closes the connection pool.
func (s *Server) Close() { s.pool.Close() }

// Handler returns the HTTP handler of the service.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	const st = "/api/stacks/{org}/{project}/{stack}"
	const up = st + "/{kind}/{id}"
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.Handle("GET /api/capabilities", s.api(s.capabilities))
	mux.Handle("GET /api/user", s.api(s.user))
	mux.Handle("GET /api/user/organizations/default", s.api(s.defaultOrg))
	mux.Handle("GET /api/user/stacks", s.api(s.listStacks))
	mux.Handle("POST /api/stacks/{org}/{project}", s.api(s.createStack))
	mux.Handle("HEAD /api/stacks/{org}/{project}", s.api(s.projectExists))
	mux.Handle("GET "+st, s.api(s.getStack))
	mux.Handle("DELETE "+st, s.api(s.deleteStack))
	mux.Handle("GET "+st+"/export", s.api(s.export))
	mux.Handle("GET "+st+"/export/{version}", s.api(s.exportHistoryVersion))
	mux.Handle("POST "+st+"/import", s.api(s.importStack))
	mux.Handle("POST "+st+"/encrypt", s.api(s.encrypt))
	mux.Handle("POST "+st+"/batch-encrypt", s.api(s.batchEncrypt))
	mux.Handle("POST "+st+"/decrypt", s.api(s.decrypt))
	mux.Handle("POST "+st+"/batch-decrypt", s.api(s.batchDecrypt))
	mux.Handle("POST "+st+"/decrypt/log-decryption", s.api(s.logDecryption))
	mux.Handle("POST "+st+"/decrypt/log-batch-decryption", s.api(s.logDecryption))
	mux.Handle("PATCH "+st+"/tags", s.api(s.updateTags))
	mux.Handle("POST "+st+"/rename", s.api(s.renameStack))
	mux.Handle("GET "+st+"/updates", s.api(s.history))
	mux.Handle("GET "+st+"/updates/latest", s.api(s.latestUpdate))
	for _, kind := range createKinds {
		mux.Handle("POST "+st+"/"+kind, s.api(s.createUpdate(kind)))
	}
	// Follow-up calls: {kind} is one of followUpKinds (404 otherwise), whatever the update's own kind.
	mux.Handle("POST "+up, followUp(s.api(s.startUpdate)))
	mux.Handle("GET "+up, followUp(s.api(s.updateStatus)))
	mux.Handle("POST "+up+"/cancel", followUp(s.api(s.cancelUpdate)))
	mux.Handle("GET "+up+"/events", followUp(s.api(s.listEvents)))
	mux.Handle("PATCH "+up+"/checkpoint", followUp(s.exec(s.checkpoint)))
	mux.Handle("PATCH "+up+"/checkpointverbatim", followUp(s.exec(s.checkpointVerbatim)))
	mux.Handle("PATCH "+up+"/checkpointdelta", followUp(s.exec(s.checkpointDelta)))
	mux.Handle("PATCH "+up+"/journalentries", followUp(s.exec(s.journalEntries)))
	mux.Handle("POST "+up+"/events/batch", followUp(s.exec(s.eventsBatch)))
	mux.Handle("POST "+up+"/renew_lease", followUp(s.exec(s.renewLease)))
	mux.Handle("POST "+up+"/complete", followUp(s.exec(s.complete)))
	// The cdkx extension (cdkx.go).
	const cx = "/api/cdkx/{org}/{project}"
	mux.Handle("PATCH "+up+"/commit", followUp(s.exec(s.cdkxCommit)))
	mux.Handle("GET "+cx+"/locks", s.api(s.cdkxLocks))
	// The deployment queue (deployments.go).
	mux.Handle("POST "+cx+"/deployments", s.api(s.createDeployments))
	mux.Handle("POST "+cx+"/deployments/claim", s.api(s.claimDeployments))
	mux.Handle("POST "+cx+"/deployments/claim-next", s.api(s.claimNext))
	mux.Handle("POST "+cx+"/deployments/heartbeat", s.api(s.heartbeatDeployments))
	mux.Handle("POST "+cx+"/deployments/{id}/transition", s.api(s.transitionDeployment))
	mux.Handle("POST "+cx+"/deployments/{id}/abort", s.api(s.requestAbort))
	mux.Handle("PATCH "+cx+"/deployments/{id}", s.api(s.finishDeployment))
	mux.Handle("GET "+cx+"/deployments", s.api(s.listDeployments))
	mux.Handle("GET "+cx+"/deployments/{id}", s.api(s.getDeployment))
	mux.Handle("GET "+cx+"/deployments/{id}/events", s.api(s.deploymentEvents))
	return s.logRequests(mux)
}

// followUp answers 404 to a follow-up call whose {kind} is not one of followUpKinds, so that the
// pattern …/{kind}/{id} never serves a path meant for another route.
func followUp(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !followUpKinds[r.PathValue("kind")] {
			writeError(w, &apiError{code: http.StatusNotFound, msg: fmt.Sprintf("Not Found: no route %s %s", r.Method, r.URL.Path)})
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	if err := s.pool.Ping(ctx); err != nil {
		writeError(w, &apiError{code: http.StatusServiceUnavailable, msg: "Service Unavailable: the database does not answer"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// logRequests logs one record per request: method, path (never headers: they hold tokens), status and
// duration.
func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		level := slog.LevelInfo
		if rec.status >= 500 {
			level = slog.LevelError
		}
		s.log.LogAttrs(r.Context(), level, "request", slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.Int("status", rec.status), slog.Duration("duration", time.Since(start)))
	})
}
