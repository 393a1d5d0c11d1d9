package transport_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cdkx-dev/cdkx/adapters/transport"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TestNonIdempotentIsNotResentOnceReceived: a POST (or an unmarked PATCH) that the API may have carried out
// is sent exactly once and fails with an *OutcomeUnknownError; one the API cannot have acted on (429, 503,
// a refused connection) and every idempotent request are retried as before.
func TestNonIdempotentIsNotResentOnceReceived(t *testing.T) {
	t.Parallel()
	// late never answers in time: the client's response timeout (20ms) ends each attempt first, and the
	// handler returns when the client has gone.
	late := func(_ int, _ http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body) // then the server notices when the client hangs up
		<-r.Context().Done()
	}
	reset := func(_ int, w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.(*net.TCPConn).SetLinger(0)
			_ = conn.Close()
		}
	}
	status := func(code int, header ...string) func(int, http.ResponseWriter, *http.Request) {
		return func(hit int, w http.ResponseWriter, _ *http.Request) {
			if hit > 1 {
				w.WriteHeader(http.StatusCreated)
				return
			}
			for i := 0; i+1 < len(header); i += 2 {
				w.Header().Set(header[i], header[i+1])
			}
			http.Error(w, "the answer of attempt 1", code)
		}
	}
	for _, tc := range []struct {
		name    string
		method  string
		ctx     func(context.Context) context.Context
		header  string // Idempotency-Key value, "" for none
		handler func(int, http.ResponseWriter, *http.Request)
		// wantHits is how many requests reached the server; wantStatus the final status (0: an error).
		wantHits, wantStatus int
		wantUnknown          bool
		unknownStatus        int
	}{
		{name: "POST answered after the timeout", method: "POST", handler: late, wantHits: 1, wantUnknown: true},
		{name: "POST reset after it was written", method: "POST", handler: reset, wantHits: 1, wantUnknown: true},
		{name: "POST 500", method: "POST", handler: status(500), wantHits: 1, wantUnknown: true, unknownStatus: 500},
		{name: "POST 502 from a proxy", method: "POST", handler: status(502), wantHits: 1, wantUnknown: true, unknownStatus: 502},
		{name: "POST 504 from a proxy", method: "POST", handler: status(504), wantHits: 1, wantUnknown: true, unknownStatus: 504},
		{name: "POST 503 without Retry-After is retried", method: "POST", handler: status(503), wantHits: 2, wantStatus: 201},
		{name: "POST 503 with Retry-After is retried", method: "POST", handler: status(503, "Retry-After", "0"), wantHits: 2, wantStatus: 201},
		{name: "POST 429 is retried", method: "POST", handler: status(429), wantHits: 2, wantStatus: 201},
		{name: "POST 501 goes back to the caller", method: "POST", handler: status(501), wantHits: 1, wantStatus: 501},
		{name: "PATCH answered after the timeout", method: "PATCH", handler: late, wantHits: 1, wantUnknown: true},
		{name: "PATCH marked idempotent is retried", method: "PATCH", ctx: transport.Idempotent, handler: late, wantHits: 4},
		{name: "POST with an Idempotency-Key is retried", method: "POST", header: "k1", handler: late, wantHits: 4},
		{name: "PUT answered after the timeout is retried", method: "PUT", handler: late, wantHits: 4},
		{name: "DELETE reset is retried", method: "DELETE", handler: reset, wantHits: 4},
		{name: "PUT 502 is retried", method: "PUT", handler: status(502), wantHits: 2, wantStatus: 201},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t, tc.handler)
			c := transport.New(transport.Options{Provider: "test", Retry: tiny, Limits: transport.Limits{ResponseTimeout: 20 * time.Millisecond}})
			ctx := t.Context()
			if tc.ctx != nil {
				ctx = tc.ctx(ctx)
			}
			req, err := http.NewRequestWithContext(ctx, tc.method, s.URL+"/zones?key=secret", strings.NewReader(`{"name":"a.example."}`))
			if err != nil {
				t.Fatal(err)
			}
			if tc.header != "" {
				req.Header.Set("Idempotency-Key", tc.header)
			}
			resp, err := c.Do(req)
			if resp != nil {
				resp.Body.Close()
			}
			if got := s.hits.Load(); int(got) != tc.wantHits {
				t.Errorf("server hits = %d, want %d", got, tc.wantHits)
			}
			if got := errors.Is(err, resource.ErrOutcomeUnknown); got != tc.wantUnknown {
				t.Fatalf("errors.Is(%v, ErrOutcomeUnknown) = %v, want %v", err, got, tc.wantUnknown)
			}
			switch {
			case tc.wantUnknown:
				var u *transport.OutcomeUnknownError
				if !errors.As(err, &u) {
					t.Fatalf("error %v (%T), want an *OutcomeUnknownError", err, err)
				}
				if u.Status != tc.unknownStatus || u.Attempts != 1 || u.Method != tc.method {
					t.Errorf("OutcomeUnknownError status=%d attempts=%d method=%s, want %d, 1, %s", u.Status, u.Attempts, u.Method, tc.unknownStatus, tc.method)
				}
				if errors.Is(err, resource.ErrUnreachable) {
					t.Errorf("a request that may have been received is reported unreachable: %v", err)
				}
				want := "test: " + tc.method + " " + s.URL + "/zones?key=REDACTED: "
				if !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "it may have been carried out, so it was not sent again") {
					t.Errorf("error = %q, want prefix %q and what happened", err, want)
				}
			case tc.wantStatus != 0:
				if err != nil || resp.StatusCode != tc.wantStatus {
					t.Errorf("Do = %v, %v; want status %d", resp, err, tc.wantStatus)
				}
			default:
				var re *transport.RetryError
				if !errors.As(err, &re) {
					t.Errorf("error %v (%T), want a *RetryError after the retries", err, err)
				}
			}
		})
	}
}

// TestNonIdempotentRefusedConnectionIsRetried: a refused connection never reached the API, so even a POST
// is tried again.
func TestNonIdempotentRefusedConnectionIsRetried(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var attempts atomic.Int32
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		attempts.Add(1)
		return http.DefaultTransport.RoundTrip(r)
	})}
	c := transport.New(transport.Options{Provider: "test", HTTPClient: hc, Retry: tiny})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+addr+"/zones", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Do(req)
	if errors.Is(err, resource.ErrOutcomeUnknown) || !errors.Is(err, resource.ErrUnreachable) {
		t.Errorf("Do = %v, want an unreachable error, not an unknown outcome", err)
	}
	if got := attempts.Load(); got != 4 {
		t.Errorf("attempts = %d, want 4 (1 + 3 retries)", got)
	}
}

// TestNonIdempotentCancelledAfterWriteIsUnknown: a POST whose context ends while its answer is awaited may
// have been carried out; the error says so and still matches the context's error.
func TestNonIdempotentCancelledAfterWriteIsUnknown(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	s := newServer(t, func(_ int, _ http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		cancel() // the request has arrived: the client gives up waiting for its answer
		<-r.Context().Done()
	})
	c := transport.New(transport.Options{Provider: "test", Retry: tiny})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/zones", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Do(req)
	if !errors.Is(err, resource.ErrOutcomeUnknown) || !errors.Is(err, context.Canceled) {
		t.Errorf("Do = %v, want an unknown outcome caused by the cancelled context", err)
	}
	if got := s.hits.Load(); got != 1 {
		t.Errorf("server hits = %d, want 1", got)
	}
}

// TestIdempotentClientResendsPost: a client whose API is built for retries (Options.Idempotent, the state
// service) sends a POST again after a 500, where another client stops with an unknown outcome.
func TestIdempotentClientResendsPost(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		idempotent bool
		wantHits   int32
		wantErr    error
	}{
		{idempotent: true, wantHits: 2},
		{idempotent: false, wantHits: 1, wantErr: resource.ErrOutcomeUnknown},
	} {
		var hits atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.ReadAll(r.Body)
			if hits.Add(1) == 1 {
				w.WriteHeader(http.StatusInternalServerError)
				return
			}
			w.WriteHeader(http.StatusCreated)
		}))
		c := transport.New(transport.Options{Provider: "test", Retry: tiny, Idempotent: tc.idempotent})
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/update", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Do(req)
		if resp != nil {
			_ = resp.Body.Close()
		}
		if hits.Load() != tc.wantHits || (tc.wantErr == nil) != (err == nil) || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
			t.Errorf("Idempotent %t: %d requests, error %v; want %d and %v", tc.idempotent, hits.Load(), err, tc.wantHits, tc.wantErr)
		}
		srv.Close()
	}
}

// TestLostAnswerOfACarriedOutRequest: a 2xx answer whose body cannot be read (over the cap, announced or
// streamed; dripping past the body deadline; not JSON) means the API carried the request out. For a POST
// the call then fails as an unknown outcome, so that the engine looks the object up instead of leaving it
// outside state; a PUT's error stays what it is (sending it again is safe). Each request is sent once.
func TestLostAnswerOfACarriedOutRequest(t *testing.T) {
	t.Parallel()
	big := `{"a":"` + strings.Repeat("x", 4<<10) + `"}`
	for _, tc := range []struct {
		name    string
		answer  http.HandlerFunc
		limits  transport.Limits
		wantErr string
	}{
		{"announced over the cap", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, big)
		}, transport.Limits{MaxBody: 1 << 10}, "larger than the 1 KiB cap"},
		{"streamed over the cap", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, big[:100])
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, big[100:])
		}, transport.Limits{MaxBody: 1 << 10}, "larger than the 1 KiB cap"},
		{"dripping", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"a":`)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}, transport.Limits{BodyTimeout: 50 * time.Millisecond}, "within the 50ms body read deadline"},
		{"not JSON", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"a": nope}`)
		}, transport.Limits{}, "decode 201 response: invalid character"},
	} {
		for _, method := range []string{http.MethodPost, http.MethodPut} {
			t.Run(tc.name+"/"+method, func(t *testing.T) {
				t.Parallel()
				var sent atomic.Int32
				s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					sent.Add(1)
					tc.answer(w, r)
				}))
				t.Cleanup(s.Close)
				c := &transport.JSON{Client: transport.New(transport.Options{Provider: "test", Retry: tiny, Limits: tc.limits})}
				var out struct{ A string }
				_, err := c.Call(t.Context(), method, s.URL+"/zones", map[string]string{"name": "a."}, &out)
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Call = %v, want an error containing %q", err, tc.wantErr)
				}
				unknown := errors.Is(err, resource.ErrOutcomeUnknown)
				if want := method == http.MethodPost; unknown != want {
					t.Errorf("errors.Is(err, ErrOutcomeUnknown) = %v, want %v (err: %v)", unknown, want, err)
				}
				if unknown && !strings.Contains(err.Error(), "answered 201, but the answer could not be read") {
					t.Errorf("error = %q, want it to say the request was carried out", err)
				}
				if n := sent.Load(); n != 1 {
					t.Errorf("the request was sent %d times, want once", n)
				}
			})
		}
	}
}

// TestInterruptEndsAStalledCall: a run's calls are not cancelled by its interrupt (resource.WithInterrupt),
// but once it comes a call that receives nothing for transport.StallAfterInterrupt is ended — a POST as an
// unknown outcome, so that the engine looks its object up — while one whose answer keeps arriving
// finishes.
func TestInterruptEndsAStalledCall(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		method  string
		answer  http.HandlerFunc
		wantErr bool
		unknown bool
	}{
		{"no headers, POST", http.MethodPost, func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, true, true},
		{"no headers, GET", http.MethodGet, func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, true, false},
		{"body drips every 2 s, POST", http.MethodPost, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"a":"`)
			w.(http.Flusher).Flush()
			for {
				select {
				case <-r.Context().Done():
					return
				case <-time.After(2 * time.Second):
					_, _ = io.WriteString(w, "x")
					w.(http.Flusher).Flush()
				}
			}
		}, true, true},
		{"body arrives every 200 ms", http.MethodGet, func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, `{"a":"`)
			w.(http.Flusher).Flush()
			for range 8 {
				time.Sleep(200 * time.Millisecond)
				_, _ = io.WriteString(w, "x")
				w.(http.Flusher).Flush()
			}
			_, _ = io.WriteString(w, `"}`)
		}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := httptest.NewServer(tc.answer)
			t.Cleanup(func() {
				s.CloseClientConnections()
				s.Close()
			})
			c := &transport.JSON{Client: transport.New(transport.Options{Provider: "test", Retry: tiny})}
			interrupted := make(chan struct{})
			ctx := resource.WithInterrupt(context.WithoutCancel(t.Context()), interrupted)
			time.AfterFunc(100*time.Millisecond, func() { close(interrupted) })
			start := time.Now()
			var out struct{ A string }
			_, err := c.Call(ctx, tc.method, s.URL+"/x", nil, &out)
			took := time.Since(start)
			if !tc.wantErr {
				if err != nil || out.A != "xxxxxxxx" {
					t.Fatalf("Call = %v (out %+v), want the whole answer", err, out)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "the run was interrupted and no byte of the answer came for 1s") {
				t.Fatalf("Call = %v, want it ended after the interrupt", err)
			}
			if got := errors.Is(err, resource.ErrOutcomeUnknown); got != tc.unknown {
				t.Errorf("errors.Is(err, ErrOutcomeUnknown) = %v, want %v (%v)", got, tc.unknown, err)
			}
			// Without the interrupt the call would end only at its 60 s body deadline (or 5 min call
			// deadline); the bound leaves a loaded machine room and still tells the two apart.
			if limit := 15 * time.Second; took > limit {
				t.Errorf("Call took %s, want it ended soon after the interrupt (within %s)", took, limit)
			}
		})
	}
}
