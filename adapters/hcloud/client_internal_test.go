package hcloud

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cdkx-dev/cdkx/adapters/transport"
)

// roundTripper is an in-memory API: no sockets, so that synctest's clock runs the test.
type roundTripper func(*http.Request) *http.Response

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r), nil }

func jsonResponse(status int, body string, h http.Header) *http.Response {
	if h == nil {
		h = http.Header{}
	}
	h.Set("Content-Type", "application/json")
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body))}
}

func memProvider(t *testing.T, rt roundTripper, poll PollOptions) *Provider {
	t.Helper()
	p, err := New(Config{Token: "secret-test-token", Endpoint: "http://hetzner.test/v1", Poll: poll,
		HTTPClient: &http.Client{Transport: rt},
		Retry:      transport.Retry{WaitMin: 10 * time.Millisecond, WaitMax: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestWaitPredictsFromProgress: an action that reports its progress linearly over 1 s is seen finished
// within 10% of its duration, in a handful of polls; one whose progress stalls is polled with doubling
// waits; an action's error becomes the call's; the deadline ends the wait.
func TestWaitPredictsFromProgress(t *testing.T) {
	for _, tc := range []struct {
		name     string
		progress func(elapsed time.Duration) (int, string) // progress and status at elapsed
		timeout  time.Duration
		wantErr  string
		maxTime  time.Duration
		maxPolls int
	}{
		{"linear 1s", func(e time.Duration) (int, string) {
			if e >= time.Second {
				return 100, "success"
			}
			return int(e * 100 / time.Second), "running"
		}, 0, "", 1100 * time.Millisecond, 5},
		{"linear 30s", func(e time.Duration) (int, string) {
			if e >= 30*time.Second {
				return 100, "success"
			}
			return int(e * 100 / (30 * time.Second)), "running"
		}, 0, "", 31 * time.Second, 12},
		{"no progress 3s", func(e time.Duration) (int, string) {
			if e >= 3*time.Second {
				return 100, "success"
			}
			return 0, "running"
		}, 0, "", 6500 * time.Millisecond, 7},
		{"fails", func(e time.Duration) (int, string) {
			if e >= 500*time.Millisecond {
				return 100, "error"
			}
			return int(e * 100 / time.Second), "running"
		}, 0, "action create_server (1) failed: action_failed: boom", time.Second, 5},
		{"deadline", func(time.Duration) (int, string) { return 50, "running" }, 2 * time.Second,
			"still running after 2s", 2100 * time.Millisecond, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				polls := 0
				rt := roundTripper(func(r *http.Request) *http.Response {
					polls++
					p, status := tc.progress(time.Since(start))
					e := "null"
					if status == "error" {
						e = `{"code":"action_failed","message":"boom"}`
					}
					return jsonResponse(200, fmt.Sprintf(`{"action":{"id":1,"command":"create_server","status":%q,"progress":%d,"error":%s}}`, status, p, e), nil)
				})
				pr := memProvider(t, rt, PollOptions{Timeout: tc.timeout})
				err := pr.c.wait(t.Context(), &action{ID: 1, Command: "create_server", Status: "running"})
				took := time.Since(start)
				switch {
				case tc.wantErr == "" && err != nil:
					t.Fatalf("wait = %v", err)
				case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
					t.Fatalf("wait = %v, want %q", err, tc.wantErr)
				}
				if took > tc.maxTime || polls > tc.maxPolls {
					t.Errorf("wait took %s and %d polls, want at most %s and %d", took, polls, tc.maxTime, tc.maxPolls)
				}
				t.Logf("%s: %s, %d polls", tc.name, took, polls)
			})
		})
	}
}

// TestWaitSeveral polls several running actions in one request, GET /actions?id=…&id=….
func TestWaitSeveral(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var paths []string
		rt := roundTripper(func(r *http.Request) *http.Response {
			paths = append(paths, r.URL.Path+"?"+r.URL.RawQuery)
			return jsonResponse(200, `{"actions":[{"id":1,"status":"success","progress":100},{"id":2,"status":"success","progress":100}]}`, nil)
		})
		pr := memProvider(t, rt, PollOptions{})
		if err := pr.c.wait(t.Context(), &action{ID: 1, Status: "running"}, nil, &action{ID: 2, Status: "running"}, &action{ID: 3, Status: "success"}); err != nil {
			t.Fatal(err)
		}
		if len(paths) != 1 || (paths[0] != "/v1/actions?id=1&id=2" && paths[0] != "/v1/actions?id=2&id=1") {
			t.Errorf("requests = %q, want one GET /v1/actions?id=1&id=2", paths)
		}
	})
}

// bucket is Hetzner's rate limit: capacity requests, refilled at 1 per second.
type bucket struct {
	mu       sync.Mutex
	capacity float64
	tokens   float64
	at       time.Time
	refused  int
	served   int
	// latency, when set, delays each request before the bucket counts it and each answer after, so that
	// requests and answers overtake each other as they do over a network.
	latency func() time.Duration
}

func (b *bucket) serve(r *http.Request) *http.Response {
	if b.latency != nil { // requests reach the bucket out of the order they were sent in
		time.Sleep(b.latency())
	}
	resp := b.take()
	if b.latency != nil { // and their answers overtake each other
		time.Sleep(b.latency())
	}
	return resp
}

func (b *bucket) take() *http.Response {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	b.tokens = min(b.capacity, b.tokens+now.Sub(b.at).Seconds())
	b.at = now
	h := http.Header{}
	status, body := 200, `{"networks":[],"meta":{"pagination":{"page":1,"per_page":25,"previous_page":null,"next_page":null,"last_page":1,"total_entries":0}}}`
	if b.tokens < 1 {
		b.refused++
		status, body = 429, `{"error":{"code":"rate_limit_exceeded","message":"limit of 10 requests per hour reached","details":{}}}`
	} else {
		b.tokens--
		b.served++
	}
	h.Set("RateLimit-Limit", strconv.Itoa(int(b.capacity)))
	h.Set("RateLimit-Remaining", strconv.Itoa(int(b.tokens)))
	h.Set("RateLimit-Reset", strconv.FormatInt(now.Add(time.Duration((b.capacity-b.tokens)*float64(time.Second))).Unix(), 10))
	return jsonResponse(status, body, h)
}

// TestPacerKeepsWithinTheBudget: 60 requests, 8 at a time, against a bucket of 20 refilled at 1/s take
// about 40 s and none is refused: the pacer slows down instead of running into 429s.
func TestPacerKeepsWithinTheBudget(t *testing.T) {
	for _, jitter := range []bool{false, true} {
		t.Run(fmt.Sprintf("jitter=%t", jitter), func(t *testing.T) { testPacer(t, jitter) })
	}
}

// testPacer runs TestPacerKeepsWithinTheBudget, with answers delayed 0–200 ms at random when jitter is
// set (they then overtake each other).
func testPacer(t *testing.T, jitter bool) {
	synctest.Test(t, func(t *testing.T) {
		b := &bucket{capacity: 20, tokens: 20, at: time.Now()}
		if jitter {
			rng := rand.New(rand.NewPCG(1, 2))
			var mu sync.Mutex
			b.latency = func() time.Duration {
				mu.Lock()
				defer mu.Unlock()
				return time.Duration(rng.IntN(200)) * time.Millisecond
			}
		}
		pr := memProvider(t, b.serve, PollOptions{})
		start := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, 60)
		for w := range 8 {
			wg.Go(func() {
				for i := w; i < 60; i += 8 {
					var out map[string]json.RawMessage
					if err := pr.c.call(t.Context(), http.MethodGet, "/networks", nil, &out); err != nil {
						errs <- err
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		took := time.Since(start)
		if b.refused != 0 || b.served != 60 {
			t.Errorf("served %d, refused %d; want 60 served and none refused", b.served, b.refused)
		}
		if took < 39*time.Second || took > 55*time.Second {
			t.Errorf("60 requests took %s, want about 40 s (20 at once, then 1/s)", took)
		}
		t.Logf("60 requests in %s; held %s in all", took, pr.pacer.waited)
	})
}

func TestCheckRetry(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status int
		code   string
		want   bool
	}{
		{409, "conflict", true},
		{409, "uniqueness_error", false},
		{423, "locked", true},
		{429, "rate_limit_exceeded", true},
		{503, "unavailable", true},
		{500, "server_error", true},
		{501, "", false},
		{403, "maintenance", true},
		{403, "forbidden", false},
		{422, "invalid_input", false},
		{404, "not_found", false},
		{401, "unauthorized", false},
	} {
		body := fmt.Sprintf(`{"error":{"code":%q,"message":"m","details":{}}}`, tc.code)
		resp := jsonResponse(tc.status, body, nil)
		got, err := CheckRetry(context.Background(), resp, nil)
		if got != tc.want || err != nil {
			t.Errorf("CheckRetry(%d %s) = %t, %v; want %t", tc.status, tc.code, got, err, tc.want)
		}
		if b, _ := io.ReadAll(resp.Body); string(b) != body {
			t.Errorf("CheckRetry(%d %s) left body %q, want it intact", tc.status, tc.code, b)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_000_000, 0)
	h := func(limit, remaining string, reset int64) http.Header {
		return http.Header{"Ratelimit-Limit": {limit}, "Ratelimit-Remaining": {remaining}, "Ratelimit-Reset": {strconv.FormatInt(reset, 10)}}
	}
	for _, tc := range []struct {
		name   string
		status int
		h      http.Header
		want   time.Duration
		ok     bool
	}{
		{"empty bucket, 1/s", 429, h("3600", "0", now.Unix()+3599), time.Second, true},
		{"empty bucket, 2/s", 429, h("3600", "0", now.Unix()+1799), 500 * time.Millisecond, true},
		{"not a 429", 503, h("3600", "0", now.Unix()+3600), 0, false},
		{"no headers", 429, http.Header{}, 0, false},
		{"tokens left", 429, h("3600", "5", now.Unix()+3595), 0, true},
	} {
		d, ok := retryAfter(&http.Response{StatusCode: tc.status, Header: tc.h}, now)
		if d != tc.want || ok != tc.ok {
			t.Errorf("%s: retryAfter = %s, %t; want %s, %t", tc.name, d, ok, tc.want, tc.ok)
		}
	}
}

// TestErrorEnvelope: API errors carry Hetzner's code and message, the invalid fields, and the kinds the
// engine matches.
func TestErrorEnvelope(t *testing.T) {
	t.Parallel()
	rt := roundTripper(func(r *http.Request) *http.Response {
		return jsonResponse(422, `{"error":{"code":"invalid_input","message":"invalid input in field 'ip_range'","details":{"fields":[{"name":"ip_range","messages":["is invalid"]}]}}}`, nil)
	})
	pr := memProvider(t, rt, PollOptions{})
	err := pr.c.call(t.Context(), http.MethodPost, "/networks", map[string]any{}, nil)
	if errorCode(err) != "invalid_input" || !strings.Contains(err.Error(), "422: invalid_input: invalid input in field 'ip_range' (ip_range: is invalid)") {
		t.Errorf("error = %v (code %q)", err, errorCode(err))
	}
	var ae *apiError
	if !errors.As(err, &ae) {
		t.Errorf("error %T is not an *apiError", err)
	}
}
