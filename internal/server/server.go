// Package server serves the Pulumi-compatible state service over HTTP from a PostgreSQL database.
//
// The protocol is the update lifecycle of the Pulumi Service API (paths, JSON field names and status
// codes of github.com/pulumi/pulumi/sdk/v3/go/common/apitype, mirrored here), so that the cdkx CLI and
// the Pulumi CLI (`pulumi login http://host:port`) can both keep their stacks' state in it. Every
// request is one PostgreSQL transaction; the handler keeps no state between requests, so several
// replicas may serve one database behind a load balancer.
//
// Its inner walls: this package routes, authenticates (tenancy from the token), decodes requests, decides
// and encodes answers; package storage holds all the SQL, as functions of plain values scoped by
// organization and project; the pure parts sit beside it and are tested without a database: package
// journal replays the Pulumi engine's journal entries, package integrity checks and edits the stored
// deployment texts, and the deployment queue decides by pkg/state's rules, the ones every backend applies.
package server

import (
	"context"
	"crypto/cipher"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/cdkx-dev/cdkx/internal/console"
	"github.com/cdkx-dev/cdkx/internal/server/storage"
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
	DefaultPoolConns = storage.PoolConns
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
	// MaxBody bounds the bodies of the state routes (checkpoints, journal entries, commits, import)
	// after gzip decoding (DefaultMaxBody); the other routes have smaller limits (SmallBodyLimit,
	// BatchBodyLimit, DeploymentBodyLimit), never above MaxBody.
	MaxBody int64
	// BodyBudget bounds the bytes of request bodies held by all requests in flight together
	// (DefaultBodyBudget; never below MaxBody); a request that finds it spent is answered 503 with
	// Retry-After. Negative: no budget.
	BodyBudget int64
	// BodyTimeout bounds the time a request's body takes to arrive, from its handler's start
	// (DefaultBodyTimeout; negative: none); a body later than that is answered 408.
	BodyTimeout time.Duration
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
	// Webhooks are the URLs every deployment event is posted to (webhooks.go); WebhookSecret signs the
	// deliveries (none when empty); PublicURL is the base of the links to the console's deployment pages
	// in the payloads (none when empty).
	Webhooks      []string
	WebhookSecret []byte
	PublicURL     string
	// hookConfig replaces the webhooks' client, attempts and backoff in tests.
	hookConfig hookConfig
	// Console, when not nil, serves the web console (package console, over ConsoleSource) at / beside
	// the API: every path outside /api/ and /healthz is the console's; its Options' BasePath is ignored.
	Console *console.Options
}

// Server is the state service on one PostgreSQL database. It is safe for concurrent use.
type Server struct {
	// db holds all the SQL (package storage).
	db      *storage.Store
	now     func() time.Time
	log     *slog.Logger
	lease   time.Duration
	maxBody int64
	// budget is the byte budget of request bodies in flight (Options.BodyBudget); nil: none.
	budget *budget
	// bodyTimeout is Options.BodyTimeout (0: none).
	bodyTimeout time.Duration
	org         string
	grace       time.Duration
	// secondPerson is Options.RequireSecondPerson.
	secondPerson bool
	// secrets seals the values of the secrets endpoints; nil without Options.SecretsKey.
	secrets cipher.AEAD
	// texts caches the latest checkpoint bytes of recently written stacks (checkpoints.go).
	texts textCache
	// owners remembers the deployments whose writer is settled for good (owner.go).
	owners ownerCache
	// hooks posts deployment events to Options.Webhooks; nil without any.
	hooks *notifier
	// console is Options.Console (nil: no console).
	console *console.Options
}

// Open connects to the PostgreSQL database at url (anything pgx accepts, e.g.
// postgres://user:password@host:5432/cdkx?sslmode=require; search_path selects a schema of its own),
// applies the service's pending migrations and returns the Server.
func Open(ctx context.Context, url string, opts Options) (*Server, error) {
	aead, err := newSecretsAEAD(opts.SecretsKey)
	if err != nil {
		return nil, err
	}
	db, err := storage.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	s := &Server{db: db, now: opts.Now, log: opts.Logger, lease: opts.Lease, maxBody: opts.MaxBody, org: opts.Organization, grace: opts.LeaseGrace,
		secondPerson: opts.RequireSecondPerson, secrets: aead, console: opts.Console}
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
	switch {
	case opts.BodyBudget == 0:
		s.budget = &budget{total: max(DefaultBodyBudget, s.maxBody)}
	case opts.BodyBudget > 0:
		s.budget = &budget{total: max(opts.BodyBudget, s.maxBody)}
	}
	switch {
	case opts.BodyTimeout == 0:
		s.bodyTimeout = DefaultBodyTimeout
	case opts.BodyTimeout > 0:
		s.bodyTimeout = opts.BodyTimeout
	}
	if s.grace <= 0 {
		s.grace = LeaseGrace
	}
	if s.org == "" {
		s.org = DefaultOrganization
	}
	if s.hooks, err = newNotifier(opts.Webhooks, opts.WebhookSecret, opts.PublicURL, s.now, s.log, opts.hookConfig); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// Close stops the webhooks' dispatchers (deliveries still queued are lost) and closes the connection
// pool.
func (s *Server) Close() {
	s.hooks.close()
	s.db.Close()
}

// Handler returns the HTTP handler of the service.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	// Body limits per route (limits.go), never above MaxBody.
	small, batch := min(SmallBodyLimit, s.maxBody), min(BatchBodyLimit, s.maxBody)
	deployment, state := min(DeploymentBodyLimit, s.maxBody), s.maxBody
	const st = "/api/stacks/{org}/{project}/{stack}"
	const up = st + "/{kind}/{id}"
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.Handle("GET /api/capabilities", s.limitBody(small, s.api(s.capabilities)))
	mux.Handle("GET /api/user", s.limitBody(small, s.api(s.user)))
	mux.Handle("GET /api/user/organizations/default", s.limitBody(small, s.api(s.defaultOrg)))
	mux.Handle("GET /api/user/stacks", s.limitBody(small, s.api(s.listStacks)))
	mux.Handle("POST /api/stacks/{org}/{project}", s.limitBody(small, s.api(s.createStack)))
	mux.Handle("HEAD /api/stacks/{org}/{project}", s.limitBody(small, s.api(s.projectExists)))
	mux.Handle("GET "+st, s.limitBody(small, s.api(s.getStack)))
	mux.Handle("DELETE "+st, s.limitBody(small, s.api(s.deleteStack)))
	mux.Handle("GET "+st+"/export", s.limitBody(small, s.api(s.export)))
	mux.Handle("GET "+st+"/export/{version}", s.limitBody(small, s.api(s.exportHistoryVersion)))
	mux.Handle("POST "+st+"/import", s.limitBody(state, s.api(s.importStack)))
	mux.Handle("POST "+st+"/encrypt", s.limitBody(small, s.api(s.encrypt)))
	mux.Handle("POST "+st+"/batch-encrypt", s.limitBody(batch, s.api(s.batchEncrypt)))
	mux.Handle("POST "+st+"/decrypt", s.limitBody(small, s.api(s.decrypt)))
	mux.Handle("POST "+st+"/batch-decrypt", s.limitBody(batch, s.api(s.batchDecrypt)))
	mux.Handle("POST "+st+"/decrypt/log-decryption", s.limitBody(small, s.api(s.logDecryption)))
	mux.Handle("POST "+st+"/decrypt/log-batch-decryption", s.limitBody(small, s.api(s.logDecryption)))
	mux.Handle("PATCH "+st+"/tags", s.limitBody(small, s.api(s.updateTags)))
	mux.Handle("POST "+st+"/rename", s.limitBody(small, s.api(s.renameStack)))
	mux.Handle("GET "+st+"/updates", s.limitBody(small, s.api(s.history)))
	mux.Handle("GET "+st+"/updates/latest", s.limitBody(small, s.api(s.latestUpdate)))
	for _, kind := range createKinds {
		mux.Handle("POST "+st+"/"+kind, s.limitBody(batch, s.api(s.createUpdate(kind))))
	}
	// Follow-up calls: {kind} is one of followUpKinds (404 otherwise), whatever the update's own kind.
	mux.Handle("POST "+up, s.limitBody(small, followUp(s.api(s.startUpdate))))
	mux.Handle("GET "+up, s.limitBody(small, followUp(s.api(s.updateStatus))))
	mux.Handle("POST "+up+"/cancel", s.limitBody(small, followUp(s.api(s.cancelUpdate))))
	mux.Handle("GET "+up+"/events", s.limitBody(small, followUp(s.api(s.listEvents))))
	mux.Handle("PATCH "+up+"/checkpoint", s.limitBody(state, followUp(s.exec(s.checkpoint))))
	mux.Handle("PATCH "+up+"/checkpointverbatim", s.limitBody(state, followUp(s.exec(s.checkpointVerbatim))))
	mux.Handle("PATCH "+up+"/checkpointdelta", s.limitBody(state, followUp(s.exec(s.checkpointDelta))))
	mux.Handle("PATCH "+up+"/journalentries", s.limitBody(state, followUp(s.exec(s.journalEntries))))
	mux.Handle("POST "+up+"/events/batch", s.limitBody(batch, followUp(s.exec(s.eventsBatch))))
	mux.Handle("POST "+up+"/renew_lease", s.limitBody(small, followUp(s.exec(s.renewLease))))
	mux.Handle("POST "+up+"/complete", s.limitBody(small, followUp(s.exec(s.complete))))
	// The cdkx extension (cdkx.go).
	const cx = "/api/cdkx/{org}/{project}"
	mux.Handle("PATCH "+up+"/commit", s.limitBody(state, followUp(s.exec(s.cdkxCommit))))
	mux.Handle("GET "+cx+"/locks", s.limitBody(small, s.api(s.cdkxLocks)))
	// The deployment queue (deployments.go).
	mux.Handle("POST "+cx+"/deployments", s.limitBody(deployment, s.api(s.createDeployments)))
	mux.Handle("POST "+cx+"/deployments/claim", s.limitBody(small, s.api(s.claimDeployments)))
	mux.Handle("POST "+cx+"/deployments/claim-next", s.limitBody(small, s.api(s.claimNext)))
	mux.Handle("POST "+cx+"/deployments/heartbeat", s.limitBody(small, s.api(s.heartbeatDeployments)))
	mux.Handle("POST "+cx+"/deployments/{id}/transition", s.limitBody(small, s.api(s.transitionDeployment)))
	mux.Handle("POST "+cx+"/deployments/{id}/abort", s.limitBody(small, s.api(s.requestAbort)))
	mux.Handle("PATCH "+cx+"/deployments/{id}", s.limitBody(small, s.api(s.finishDeployment)))
	mux.Handle("GET "+cx+"/deployments", s.limitBody(small, s.api(s.listDeployments)))
	mux.Handle("GET "+cx+"/deployments/{id}", s.limitBody(small, s.api(s.getDeployment)))
	mux.Handle("GET "+cx+"/deployments/{id}/events", s.limitBody(small, s.api(s.deploymentEvents)))
	// The webhooks' recent deliveries (webhooks.go).
	mux.Handle("GET /api/cdkx/webhooks/deliveries", s.limitBody(small, s.api(s.webhookDeliveries)))
	if s.console == nil {
		return s.logRequests(mux)
	}
	return s.logRequests(s.withConsole(mux))
}

// withConsole serves the API's paths (/api/…, /healthz) with api, as they are served without a console
// (its 404 and 405 included), and every other path with the console, under the console's body limit
// (ConsoleBodyLimit) and the server's body deadline.
func (s *Server) withConsole(api http.Handler) http.Handler {
	opts := *s.console
	opts.BasePath, opts.NoRedeploy = "", true // the server cannot plan again (ConsoleSource.Redeploy)
	if opts.Now == nil {
		opts.Now = s.now
	}
	if opts.Sessions == nil {
		opts.Sessions = consoleSessions{db: s.db}
	}
	limit := min(ConsoleBodyLimit, s.maxBody)
	pages := s.limitBody(limit, http.MaxBytesHandler(console.New(s.ConsoleSource(), opts), limit))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" || r.URL.Path == "/api" || strings.HasPrefix(r.URL.Path, "/api/") {
			api.ServeHTTP(w, r)
			return
		}
		pages.ServeHTTP(w, r)
	})
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
	if err := s.db.Ping(ctx); err != nil {
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

// Unwrap lets http.ResponseController reach the connection (limitBody's body deadline).
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

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
