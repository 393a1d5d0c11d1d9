package transport_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cdkx-dev/cdkx/adapters/transport"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// tiny keeps real waits in tests to a millisecond or two.
var tiny = transport.Retry{Max: 3, WaitMin: time.Millisecond, WaitMax: 2 * time.Millisecond}

// server answers with the statuses in order (repeating the last one) and counts the hits.
type server struct {
	*httptest.Server
	hits atomic.Int32
}

func newServer(t *testing.T, h func(hit int, w http.ResponseWriter, r *http.Request)) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h(int(s.hits.Add(1)), w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func get(t *testing.T, c *transport.Client, url string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c.Do(req)
}

func TestRetriesServerErrorsThenSucceeds(t *testing.T) {
	t.Parallel()
	s := newServer(t, func(hit int, w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if string(body) != `{"a":1}` {
			t.Errorf("attempt %d body = %q, want the original body resent", hit, body)
		}
		if hit < 3 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	c := transport.New(transport.Options{Provider: "test", Retry: tiny})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, s.URL, strings.NewReader(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("Do = %v, want success", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(b) != "ok" {
		t.Errorf("Do = %d %q, want 200 \"ok\"", resp.StatusCode, b)
	}
	if got := s.hits.Load(); got != 3 {
		t.Errorf("server hits = %d, want 3", got)
	}
}

func TestClientErrorsAreNotRetried(t *testing.T) {
	t.Parallel()
	for _, status := range []int{400, 401, 403, 404, 409, 422, 501} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			t.Parallel()
			s := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
				http.Error(w, http.StatusText(status), status)
			})
			c := transport.New(transport.Options{Provider: "test", Retry: tiny})
			resp, err := get(t, c, s.URL)
			if err != nil {
				t.Fatalf("Do = %v, want the %d response", err, status)
			}
			resp.Body.Close()
			if resp.StatusCode != status {
				t.Errorf("status = %d, want %d", resp.StatusCode, status)
			}
			if got := s.hits.Load(); got != 1 {
				t.Errorf("server hits = %d, want exactly 1", got)
			}
		})
	}
}

func TestGivesUpWithProviderMessage(t *testing.T) {
	t.Parallel()
	s := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"error":"database is locked"}`)
	})
	c := transport.New(transport.Options{
		Provider: "test",
		Retry:    tiny,
		ErrorMessage: func(_ *http.Response, body []byte) string {
			return "decoded " + string(body)
		},
	})
	_, err := get(t, c, s.URL+"/zones/x.")
	var re *transport.RetryError
	if !errors.As(err, &re) {
		t.Fatalf("Do error = %v (%T), want *transport.RetryError", err, err)
	}
	if re.Attempts != 4 || re.Status != 500 || re.Method != "GET" || re.URL != s.URL+"/zones/x." {
		t.Errorf("RetryError = %+v, want 4 attempts, status 500, GET %s/zones/x.", re, s.URL)
	}
	var pe *resource.ProviderError
	if !errors.As(err, &pe) || pe.Status != 500 {
		t.Errorf("errors.As(*resource.ProviderError) = %v, want the last response decoded", pe)
	}
	want := fmt.Sprintf(`test: GET %s/zones/x.: giving up after 4 attempts: 500: decoded {"error":"database is locked"}`, s.URL)
	if err.Error() != want {
		t.Errorf("error =\n%s\nwant\n%s", err, want)
	}
	if got := s.hits.Load(); got != 4 {
		t.Errorf("server hits = %d, want 4", got)
	}
	if errors.Is(err, resource.ErrUnreachable) {
		t.Errorf("a provider that answered 500 counts as unreachable: %v", err)
	}
}

func TestCheckRetryOverride(t *testing.T) {
	t.Parallel()
	s := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "dependency failed", http.StatusInternalServerError)
	})
	noRetry500 := func(ctx context.Context, resp *http.Response, err error) (bool, error) {
		if resp != nil && resp.StatusCode == http.StatusInternalServerError {
			return false, nil
		}
		return transport.DefaultCheckRetry(ctx, resp, err)
	}
	r := tiny
	r.Check = noRetry500
	c := transport.New(transport.Options{Provider: "test", Retry: r})
	resp, err := get(t, c, s.URL)
	if err != nil {
		t.Fatalf("Do = %v, want the 500 response", err)
	}
	resp.Body.Close()
	if got := s.hits.Load(); got != 1 {
		t.Errorf("server hits = %d, want 1", got)
	}
}

func TestConnectionRefused(t *testing.T) {
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
	c := transport.New(transport.Options{Provider: "test", HTTPClient: hc, Retry: transport.Retry{Max: 2, WaitMin: time.Millisecond, WaitMax: time.Millisecond}})
	url := "http://" + addr + "/api/v1/servers/localhost"
	_, err = get(t, c, url)
	var re *transport.RetryError
	if !errors.As(err, &re) {
		t.Fatalf("Do error = %v (%T), want *transport.RetryError", err, err)
	}
	if re.Attempts != 3 || re.Status != 0 {
		t.Errorf("RetryError attempts=%d status=%d, want 3 and 0", re.Attempts, re.Status)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("errors.Is(err, ECONNREFUSED) = false for %v", err)
	}
	if !errors.Is(err, resource.ErrUnreachable) {
		t.Errorf("errors.Is(err, resource.ErrUnreachable) = false for a refused connection: %v", err)
	}
	wantPrefix := "test: GET " + url + ": giving up after 3 attempts: "
	if !strings.HasPrefix(err.Error(), wantPrefix) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("error = %q, want prefix %q and \"connection refused\"", err, wantPrefix)
	}
	if got := attempts.Load(); got != 3 {
		t.Errorf("attempts = %d, want 3", got)
	}
}

func TestContextCancelStopsRetries(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	s := newServer(t, func(hit int, w http.ResponseWriter, _ *http.Request) {
		if hit == 2 {
			cancel()
		}
		http.Error(w, "busy", http.StatusServiceUnavailable)
	})
	c := transport.New(transport.Options{Provider: "test", Retry: transport.Retry{Max: 10, WaitMin: time.Millisecond, WaitMax: time.Millisecond}})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Do(req)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Do error = %v, want context.Canceled", err)
	}
	var re *transport.RetryError
	if errors.As(err, &re) {
		t.Errorf("a cancelled request is not a RetryError: %v", err)
	}
	if got := s.hits.Load(); got != 2 {
		t.Errorf("server hits = %d, want 2", got)
	}
}

func TestContextCancelDuringWait(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			return response(r, http.StatusTooManyRequests, "Retry-After", "60"), nil
		})}
		c := transport.New(transport.Options{Provider: "test", HTTPClient: hc, Retry: transport.Retry{MaxRetryAfter: time.Hour}})
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/x", nil)
		start := time.Now()
		_, err := c.Do(req)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Do error = %v, want context.DeadlineExceeded", err)
		}
		if got := time.Since(start); got != 10*time.Second {
			t.Errorf("Do returned after %v, want at the deadline (10s)", got)
		}
	})
}

func TestRetryAfterHonoured(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		retryAfter func(now time.Time) string
		cap        time.Duration
		wantWait   time.Duration
	}{
		{"seconds", func(time.Time) string { return "3" }, 0, 3 * time.Second},
		{"http date", func(now time.Time) string { return now.Add(7 * time.Second).UTC().Format(http.TimeFormat) }, 0, 7 * time.Second},
		{"date in the past", func(now time.Time) string { return now.Add(-time.Minute).UTC().Format(http.TimeFormat) }, 0, 0},
		{"capped", func(time.Time) string { return "120" }, 10 * time.Second, 10 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				var at []time.Time
				hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
					mu.Lock()
					defer mu.Unlock()
					at = append(at, time.Now())
					if len(at) == 1 {
						return response(r, http.StatusTooManyRequests, "Retry-After", tt.retryAfter(time.Now())), nil
					}
					return response(r, http.StatusOK), nil
				})}
				// WaitMin/WaitMax are far from every expected wait, so the test sees Retry-After at work.
				c := transport.New(transport.Options{Provider: "test", HTTPClient: hc,
					Retry: transport.Retry{WaitMin: 500 * time.Millisecond, WaitMax: time.Second, MaxRetryAfter: tt.cap}})
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://api.test/x", nil)
				resp, err := c.Do(req)
				if err != nil {
					t.Fatalf("Do = %v", err)
				}
				resp.Body.Close()
				if len(at) != 2 {
					t.Fatalf("attempts = %d, want 2", len(at))
				}
				if got := at[1].Sub(at[0]); got != tt.wantWait {
					t.Errorf("wait between attempts = %v, want %v", got, tt.wantWait)
				}
			})
		})
	}
}

func TestBackoffIsExponentialWithJitter(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var at []time.Time
		hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			at = append(at, time.Now())
			return response(r, http.StatusBadGateway), nil
		})}
		c := transport.New(transport.Options{Provider: "test", HTTPClient: hc,
			Retry: transport.Retry{Max: 5, WaitMin: 100 * time.Millisecond, WaitMax: time.Second}})
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://api.test/x", nil)
		if _, err := c.Do(req); err == nil {
			t.Fatal("Do succeeded, want a RetryError")
		}
		// Attempt n waits in [d/2, d], d = min(100ms·2ⁿ, 1s), and never less than 100ms.
		bounds := [][2]time.Duration{{100, 100}, {100, 200}, {200, 400}, {400, 800}, {500, 1000}}
		if len(at) != 6 {
			t.Fatalf("attempts = %d, want 6", len(at))
		}
		for i, b := range bounds {
			got := at[i+1].Sub(at[i])
			if got < b[0]*time.Millisecond || got > b[1]*time.Millisecond {
				t.Errorf("wait %d = %v, want within [%dms, %dms]", i, got, b[0], b[1])
			}
		}
	})
}

func TestLogsNeverCarrySecrets(t *testing.T) {
	t.Parallel()
	const key, token = "s3cret-api-key", "bearer-t0ken"
	s := newServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-API-Key") != key {
			t.Errorf("X-API-Key = %q, want the key sent", r.Header.Get("X-API-Key"))
		}
		http.Error(w, "busy", http.StatusServiceUnavailable)
	})
	var buf syncBuffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := transport.New(transport.Options{Provider: "test", Retry: tiny, Logger: log, Secrets: []string{key, token}})
	// A URL with credentials and a token in the query, as some APIs want, must be scrubbed too.
	u := strings.Replace(s.URL, "http://", "http://user:"+token+"@", 1) + "/x?api_key=" + key
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-API-Key", key)
	req.Header.Set("Authorization", "Bearer "+token)
	_, err = c.Do(req)
	if err == nil {
		t.Fatal("Do succeeded, want a RetryError")
	}
	out := buf.String()
	t.Logf("log:\n%s", out)
	if !strings.Contains(out, "retrying request") {
		t.Errorf("log has no retry record:\n%s", out)
	}
	for _, secret := range []string{key, token} {
		if strings.Contains(out, secret) {
			t.Errorf("log contains secret %q:\n%s", secret, out)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error contains secret %q: %v", secret, err)
		}
	}
}

func TestRetryAfterParse(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{"5", 5 * time.Second, true},
		{"-1", 0, false},
		{"soon", 0, false},
		{"Fri, 02 Jan 2026 03:04:35 GMT", 30 * time.Second, true},
		{"Fri, 02 Jan 2026 03:00:00 GMT", 0, true},
	}
	for _, tt := range tests {
		got, ok := transport.RetryAfter(tt.in, now)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("RetryAfter(%q) = %v, %t, want %v, %t", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestErrorText(t *testing.T) {
	t.Parallel()
	if got := transport.ErrorText([]byte("  Not\r\n Found\n")); got != "Not Found" {
		t.Errorf("ErrorText = %q, want %q", got, "Not Found")
	}
	long := bytes.Repeat([]byte("é"), 400) // 800 bytes
	got := transport.ErrorText(long)
	if !strings.HasSuffix(got, "…") || len(got) > transport.MaxErrorText+len("…") || !strings.HasPrefix(got, "éé") {
		t.Errorf("ErrorText(800 bytes) = %d bytes %q…, want at most %d bytes plus an ellipsis", len(got), got[:8], transport.MaxErrorText)
	}
	if strings.ContainsRune(strings.TrimSuffix(got, "…"), '\uFFFD') {
		t.Error("ErrorText cut a rune in half")
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func response(r *http.Request, status int, header ...string) *http.Response {
	h := http.Header{}
	for i := 0; i+1 < len(header); i += 2 {
		h.Set(header[i], header[i+1])
	}
	return &http.Response{StatusCode: status, Status: http.StatusText(status), Header: h,
		Body: io.NopCloser(strings.NewReader(http.StatusText(status))), Request: r}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRetryAfterHookAndWrap: Retry.After decides the wait after a response (over Retry-After; its false
// falls back to the backoff), capped by MaxRetryAfter; Options.Wrap sees every attempt, retries included.
func TestRetryAfterHookAndWrap(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		after    func(*http.Response, time.Time) (time.Duration, bool)
		wantWait time.Duration
	}{
		{"hook wins over Retry-After", func(*http.Response, time.Time) (time.Duration, bool) { return 4 * time.Second, true }, 4 * time.Second},
		{"capped", func(*http.Response, time.Time) (time.Duration, bool) { return time.Hour, true }, 30 * time.Second},
		{"hook declines: Retry-After", func(*http.Response, time.Time) (time.Duration, bool) { return 0, false }, 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				var at []time.Time
				wrapped := 0
				hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
					mu.Lock()
					defer mu.Unlock()
					at = append(at, time.Now())
					if len(at) == 1 {
						return response(r, http.StatusTooManyRequests, "Retry-After", "3"), nil
					}
					return response(r, http.StatusOK), nil
				})}
				c := transport.New(transport.Options{Provider: "test", HTTPClient: hc,
					Retry: transport.Retry{WaitMin: 500 * time.Millisecond, WaitMax: time.Second, After: tt.after},
					Wrap: func(next http.RoundTripper) http.RoundTripper {
						return roundTripFunc(func(r *http.Request) (*http.Response, error) {
							mu.Lock()
							wrapped++
							mu.Unlock()
							return next.RoundTrip(r)
						})
					}})
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://api.test/x", nil)
				resp, err := c.Do(req)
				if err != nil {
					t.Fatalf("Do = %v", err)
				}
				resp.Body.Close()
				if len(at) != 2 || wrapped != 2 {
					t.Fatalf("attempts = %d, seen by Wrap %d; want 2 and 2", len(at), wrapped)
				}
				if got := at[1].Sub(at[0]); got != tt.wantWait {
					t.Errorf("wait between attempts = %v, want %v", got, tt.wantWait)
				}
			})
		})
	}
}

// TestUnreachableNamesTheSetting: a request that never reached the API because the connection was refused
// or the host name is unknown says which setting holds the URL and what to check; other failures, and a
// client that names no setting, keep the plain RetryError.
func TestUnreachableNamesTheSetting(t *testing.T) {
	t.Parallel()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()            // its port now refuses connections
	refused := &http.Client{} // dials for real
	noHost := &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
		return nil, &net.DNSError{Err: "no such host", Name: "pdns.example", IsNotFound: true}
	})}
	timeout := &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
		return nil, &net.DNSError{Err: "i/o timeout", Name: "pdns.example", IsTimeout: true}
	})}
	tests := []struct {
		name             string
		client           *http.Client
		service, setting string
		url              string
		want             string
		wantUnreachable  bool
	}{
		{name: "refused", client: refused, service: "PowerDNS", setting: "PDNS_API_URL", url: closed.URL + "/api/v1/servers/localhost",
			want:            "PowerDNS at " + closed.URL + " (PDNS_API_URL) refused the connection: is it running, and is PDNS_API_URL right? (GET /api/v1/servers/localhost, 2 attempts)",
			wantUnreachable: true},
		{name: "state service", client: refused, service: "the state service", setting: "--state/CDKX_STATE", url: closed.URL + "/api/user",
			want:            "the state service at " + closed.URL + " (--state/CDKX_STATE) refused the connection: is it running, and is --state/CDKX_STATE right? (GET /api/user, 2 attempts)",
			wantUnreachable: true},
		{name: "no such host", client: noHost, service: "RabbitMQ", setting: "RABBITMQ_API_URL", url: "http://pdns.example:15672/api/whoami",
			want:            `RabbitMQ at http://pdns.example:15672 (RABBITMQ_API_URL): no such host "pdns.example": is RABBITMQ_API_URL right? (GET /api/whoami, 2 attempts)`,
			wantUnreachable: true},
		{name: "other network error", client: timeout, service: "RabbitMQ", setting: "RABBITMQ_API_URL", url: "http://pdns.example:15672/api/whoami",
			want: "test: GET http://pdns.example:15672/api/whoami: giving up after 2 attempts: lookup pdns.example: i/o timeout"},
		{name: "no setting named", client: noHost, url: "http://pdns.example:15672/api/whoami",
			want: "test: GET http://pdns.example:15672/api/whoami: giving up after 2 attempts: lookup pdns.example: no such host"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := transport.New(transport.Options{Provider: "test", Service: tt.service, URLSetting: tt.setting, HTTPClient: tt.client,
				Retry: transport.Retry{Max: 1, WaitMin: time.Millisecond, WaitMax: time.Millisecond}})
			_, err := get(t, c, tt.url)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Do() = %v, want %q", err, tt.want)
			}
			var ue *transport.UnreachableError
			if got := errors.As(err, &ue); got != tt.wantUnreachable {
				t.Errorf("errors.As(err, *UnreachableError) = %t, want %t", got, tt.wantUnreachable)
			}
			if !errors.Is(err, resource.ErrUnreachable) {
				t.Errorf("errors.Is(err, resource.ErrUnreachable) = false for %v", err)
			}
		})
	}
}
