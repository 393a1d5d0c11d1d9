// Package hcloudfake is a stateful, in-memory fake of the Hetzner Cloud API (https://docs.hetzner.cloud/).
//
// It answers as Hetzner's OpenAPI spec cached in testdata/hetzner.cloud.json says: the package's tests check
// every request and answer against it with kin-openapi, status codes and error bodies included, and fail
// when a route of Fake.Routes is never answered with success under that check.
package hcloudfake

import (
	"encoding/json"
	"math"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Options configure a Fake. The zero value is a fake without authentication, faults or rate limit whose
// actions succeed at once.
type Options struct {
	// Token is the bearer token every request must carry (`Authorization: Bearer <Token>`); a wrong or
	// missing token is answered with 401 `unauthorized`. Empty accepts any request.
	Token string
	// ActionPolls keeps an action `running` until it has been fetched this many times through
	// GET /actions/{id}, GET /actions?id=… or GET /<resource>/actions/{id}.
	ActionPolls int
	// ActionDuration keeps an action `running` until this much time has passed since it started. When both
	// ActionPolls and ActionDuration are set, an action ends at whichever comes first; when both are zero,
	// actions end at once.
	ActionDuration time.Duration
	// FaultRate is the share (0…1) of /v1 requests answered, before any state change, with 429
	// `rate_limit_exceeded` or 503 `unavailable` (half each), chosen by a PRNG seeded with Seed.
	FaultRate float64
	// Seed seeds the PRNG that picks faulty requests.
	Seed int64
	// RateLimit is the size of a token bucket refilled at one request per second, like Hetzner's 3600
	// requests per hour. An empty bucket answers 429 `rate_limit_exceeded`. Zero means no limit (the
	// RateLimit-* headers then report a limit of 3600 that never runs out).
	RateLimit int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Request is one request the fake answered, as recorded by Fake.Requests.
type Request struct {
	// Method is the HTTP method, e.g. "POST".
	Method string `json:"method"`
	// Route is the path template below /v1, e.g. "/networks/{id}/actions/add_subnet"; requests that
	// matched no route have the literal path.
	Route string `json:"route"`
	// Status is the HTTP status code of the response.
	Status int `json:"status"`
}

// Fake is an in-memory Hetzner Cloud project served over HTTP. It implements http.Handler for the paths
// `/v1/...` (the base URL clients use is `<server>/v1`) and the control routes under `/_fake/`.
// Safe for concurrent use: one mutex guards all state.
type Fake struct {
	opts     Options
	now      func() time.Time
	mux      *http.ServeMux
	patterns []string // the mux patterns of the /v1 routes, in registration order; written only by New

	mu       sync.Mutex // guards every field below
	rng      *rand.Rand
	bucket   float64   // tokens left in the rate-limit bucket
	bucketAt time.Time // when bucket was last refilled
	nextID   int64
	ipSeq    int
	failNext map[string]int // command → how many next actions of it fail
	requests []Request
	st       state
}

// New returns a Fake configured by opts.
func New(opts Options) *Fake {
	f := &Fake{
		opts:     opts,
		now:      opts.Now,
		rng:      rand.New(rand.NewSource(opts.Seed)), //nolint:gosec // fault injection, not security
		bucket:   float64(opts.RateLimit),
		failNext: map[string]int{},
		st:       newState(),
	}
	if f.now == nil {
		f.now = time.Now
	}
	f.bucketAt = f.now()
	f.mux = http.NewServeMux()
	f.routes()
	return f
}

// NewServer starts an httptest.Server serving a new Fake and closes it when the test ends. Clients use
// `srv.URL + "/v1"` as their endpoint.
func NewServer(tb testing.TB, opts Options) (*Fake, *httptest.Server) {
	tb.Helper()
	f := New(opts)
	srv := httptest.NewServer(f)
	tb.Cleanup(srv.Close)
	return f, srv
}

// FailActions makes the next n actions with the given command (e.g. "create_server", "add_subnet") end
// with status `error` and `error.code` "action_failed". A failing action's effect is never applied (a
// failing create_* action creates its object, then removes it, with any auto-created Primary IPs, when the
// action ends).
func (f *Fake) FailActions(command string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failNext[command] += n
}

// Requests returns every request answered so far, oldest first, control routes excluded.
func (f *Fake) Requests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Request(nil), f.requests...)
}

// ServeHTTP serves the Hetzner Cloud API below /v1 and the control routes below /_fake.
func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/_fake/") {
		f.serveControl(w, r)
		return
	}
	if !strings.HasPrefix(r.URL.Path, "/v1/") {
		writeError(w, errNotFound("route"))
		return
	}
	rec := &statusRecorder{ResponseWriter: w}
	f.serveAPI(rec, r)
	route := strings.TrimPrefix(r.URL.Path, "/v1")
	if r.Pattern != "" {
		_, p, _ := strings.Cut(r.Pattern, " ")
		if p != "/v1/" {
			route = strings.TrimPrefix(p, "/v1")
		}
	}
	f.mu.Lock()
	f.requests = append(f.requests, Request{Method: r.Method, Route: route, Status: rec.status})
	f.mu.Unlock()
}

func (f *Fake) serveAPI(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	now := f.now()
	allowed, limit, remaining, reset := f.takeToken(now, f.authorized(r))
	w.Header().Set("RateLimit-Limit", strconv.Itoa(limit))
	w.Header().Set("RateLimit-Remaining", strconv.Itoa(remaining))
	w.Header().Set("RateLimit-Reset", strconv.FormatInt(reset, 10))
	if !f.authorized(r) {
		f.mu.Unlock()
		writeError(w, &apiError{status: http.StatusUnauthorized, code: "unauthorized", msg: "unable to authenticate"})
		return
	}
	if !allowed {
		f.mu.Unlock()
		writeError(w, &apiError{status: http.StatusTooManyRequests, code: "rate_limit_exceeded", msg: "limit of requests per hour reached"})
		return
	}
	if f.opts.FaultRate > 0 && f.rng.Float64() < f.opts.FaultRate {
		busy := f.rng.Intn(2) == 0
		f.mu.Unlock()
		if busy {
			writeError(w, &apiError{status: http.StatusTooManyRequests, code: "rate_limit_exceeded", msg: "limit of requests per hour reached (injected fault)"})
		} else {
			writeError(w, &apiError{status: http.StatusServiceUnavailable, code: "unavailable", msg: "service temporarily unavailable (injected fault)"})
		}
		return
	}
	f.settle(now)
	f.mu.Unlock()
	f.mux.ServeHTTP(w, r)
}

func (f *Fake) authorized(r *http.Request) bool {
	return f.opts.Token == "" || r.Header.Get("Authorization") == "Bearer "+f.opts.Token
}

// takeToken refills the bucket at one token per second and, when charge is true, takes one token. It
// returns whether the request may proceed and the RateLimit-* header values. Called with f.mu held.
func (f *Fake) takeToken(now time.Time, charge bool) (ok bool, limit, remaining int, reset int64) {
	if f.opts.RateLimit <= 0 {
		return true, 3600, 3600, now.Unix()
	}
	limit = f.opts.RateLimit
	if el := now.Sub(f.bucketAt).Seconds(); el > 0 {
		f.bucket = math.Min(float64(limit), f.bucket+el)
		f.bucketAt = now
	}
	ok = !charge || f.bucket >= 1
	if charge && ok {
		f.bucket--
	}
	remaining = int(math.Floor(f.bucket))
	reset = now.Add(time.Duration((float64(limit) - f.bucket) * float64(time.Second))).Unix()
	if f.bucket < float64(limit) && reset == now.Unix() {
		reset++
	}
	return ok, limit, remaining, reset
}

// serveControl answers the routes outside /v1: POST /_fake/fail-actions {"command","count"} and
// GET /_fake/requests.
func (f *Fake) serveControl(w http.ResponseWriter, r *http.Request) {
	if !f.authorized(r) {
		writeError(w, &apiError{status: http.StatusUnauthorized, code: "unauthorized", msg: "unable to authenticate"})
		return
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/_fake/fail-actions":
		var body struct {
			Command string `json:"command"`
			Count   int    `json:"count"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Command == "" {
			writeError(w, invalid(field{"command", "command and count are required"}))
			return
		}
		if body.Count == 0 {
			body.Count = 1
		}
		f.FailActions(body.Command, body.Count)
		writeJSON(w, http.StatusOK, body)
	case r.Method == http.MethodGet && r.URL.Path == "/_fake/requests":
		reqs := f.Requests()
		counts := map[string]int{}
		for _, q := range reqs {
			counts[q.Method+" "+q.Route]++
		}
		writeJSON(w, http.StatusOK, map[string]any{"requests": reqs, "counts": counts})
	default:
		writeError(w, errNotFound("route"))
	}
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Routes returns every route of the Hetzner API the fake serves, as "METHOD /v1/path-template" (e.g.
// "DELETE /v1/load_balancers/{id}", "POST /v1/networks/{id}/actions/add_subnet"), in the order they were
// registered. The catch-all that answers 404 `not_found` to any other /v1 path and the control routes
// under /_fake/ are left out.
func (f *Fake) Routes() []string {
	out := make([]string, 0, len(f.patterns))
	for _, p := range f.patterns {
		if strings.Contains(p, " ") {
			out = append(out, p)
		}
	}
	return out
}

// handle adapts a state handler to the mux: it holds f.mu while h runs and writes h's result.
func (f *Fake) handle(pattern string, h func(r *http.Request) (int, any, error)) {
	f.patterns = append(f.patterns, pattern)
	f.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		status, body, err := h(r)
		f.mu.Unlock()
		if err != nil {
			writeError(w, err)
			return
		}
		if status == http.StatusNoContent {
			w.WriteHeader(status)
			return
		}
		writeJSON(w, status, body)
	})
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
