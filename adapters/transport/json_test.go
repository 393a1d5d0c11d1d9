package transport_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/adapters/internal/adaptertest"
	"github.com/cdkx-dev/cdkx/adapters/transport"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// seen is what a test server saw of one request.
type seen struct {
	method, contentType, accept, apiKey string
	body                                string
}

// jsonServer answers every request with status, contentType and body, and records what it saw of the
// last request.
func jsonServer(t *testing.T, status int, contentType, body string) (*server, func() seen) {
	t.Helper()
	var (
		mu   sync.Mutex
		last seen
	)
	s := newServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		last = seen{method: r.Method, contentType: r.Header.Get("Content-Type"), accept: r.Header.Get("Accept"),
			apiKey: r.Header.Get("X-API-Key"), body: string(b)}
		mu.Unlock()
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		w.Header().Set("X-Answer", "yes")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	})
	return s, func() seen {
		mu.Lock()
		defer mu.Unlock()
		return last
	}
}

// newJSON returns a JSON client of the provider "test" with quick retries.
func newJSON(opts transport.Options) *transport.JSON {
	opts.Provider = "test"
	opts.Retry = tiny
	return &transport.JSON{Client: transport.New(opts)}
}

func TestJSONCall(t *testing.T) {
	t.Parallel()
	type object struct {
		Name  string      `json:"name"`
		Count json.Number `json:"count"`
		Any   any         `json:"any"`
	}
	tests := []struct {
		name        string
		method      string
		in          any
		status      int
		contentType string
		body        string
		decode      bool   // pass an *object as out
		want        object // decoded out
		wantSent    seen
		wantErr     string // substring of the error; "" for success
	}{
		{
			name: "2xx with a body", method: http.MethodGet, status: http.StatusOK, contentType: "application/json",
			body: `{"name":"a","count":12345678901234567890,"any":3.0}`, decode: true,
			want:     object{Name: "a", Count: "12345678901234567890", Any: json.Number("3.0")},
			wantSent: seen{method: http.MethodGet, accept: "application/json"},
		},
		{
			name: "2xx with a body and trailing data", method: http.MethodGet, status: http.StatusOK,
			body: `{"name":"a"} {"name":"b"}`, decode: true, want: object{Name: "a"},
			wantSent: seen{method: http.MethodGet, accept: "application/json"},
		},
		{
			name: "2xx with a body nobody reads", method: http.MethodPut, in: map[string]int{"n": 1}, status: http.StatusCreated,
			body:     `{"ignored":true}`,
			wantSent: seen{method: http.MethodPut, contentType: "application/json", accept: "application/json", body: `{"n":1}`},
		},
		{
			name: "204 without a body", method: http.MethodPatch, in: []string{"x"}, status: http.StatusNoContent,
			wantSent: seen{method: http.MethodPatch, contentType: "application/json", accept: "application/json", body: `["x"]`},
		},
		{
			name: "2xx without the body out wants", method: http.MethodGet, status: http.StatusOK, decode: true,
			wantSent: seen{method: http.MethodGet, accept: "application/json"},
			wantErr:  "test: GET {url}: decode 200 response: empty body",
		},
		{
			name: "2xx that is not JSON", method: http.MethodGet, status: http.StatusOK, contentType: "text/html",
			body: "<html>", decode: true,
			wantSent: seen{method: http.MethodGet, accept: "application/json"},
			wantErr:  "test: GET {url}: decode 200 response: invalid character '<' looking for beginning of value",
		},
		{
			name: "2xx of the wrong shape", method: http.MethodGet, status: http.StatusOK, body: `{"name":1}`, decode: true,
			wantSent: seen{method: http.MethodGet, accept: "application/json"},
			wantErr:  "test: GET {url}: decode 200 response: json: cannot unmarshal number into Go struct field",
		},
		{
			name: "404 without an Error hook", method: http.MethodDelete, status: http.StatusNotFound, body: "  no\n such  thing ",
			wantSent: seen{method: http.MethodDelete, accept: "application/json"},
			wantErr:  "test: DELETE {url}: 404: no such thing",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, last := jsonServer(t, tt.status, tt.contentType, tt.body)
			c := newJSON(transport.Options{})
			var got object
			var out any
			if tt.decode {
				out = &got
			}
			h, err := c.Call(t.Context(), tt.method, s.URL, tt.in, out)
			if tt.wantErr != "" {
				want := strings.ReplaceAll(tt.wantErr, "{url}", s.URL)
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("Call(%s) = %v, want an error containing %q", tt.method, err, want)
				}
			} else {
				if err != nil {
					t.Fatalf("Call(%s) = %v, want success", tt.method, err)
				}
				if h.Get("X-Answer") != "yes" {
					t.Errorf("Call(%s) headers = %v, want the response's headers", tt.method, h)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("Call(%s) decoded (-want +got):\n%s", tt.method, diff)
				}
			}
			if diff := cmp.Diff(tt.wantSent, last(), cmp.AllowUnexported(seen{})); diff != "" {
				t.Errorf("request sent (-want +got):\n%s", diff)
			}
			if got := s.hits.Load(); got != 1 {
				t.Errorf("server hits = %d, want 1", got)
			}
		})
	}
}

func TestJSONDefaultErrorKinds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status   int
		wantKind error
	}{
		{http.StatusNotFound, resource.ErrNotFound},
		{http.StatusConflict, nil},
		{http.StatusUnprocessableEntity, nil},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			t.Parallel()
			s, _ := jsonServer(t, tt.status, "application/json", `{"error":"nope"}`)
			c := newJSON(transport.Options{ErrorMessage: func(resp *http.Response, body []byte) string {
				return "decoded " + string(body)
			}})
			_, err := c.Call(t.Context(), http.MethodGet, s.URL+"/x", nil, nil)
			want := &resource.ProviderError{Provider: "test", Method: http.MethodGet, URL: s.URL + "/x", Status: tt.status,
				Message: `decoded {"error":"nope"}`, Kind: tt.wantKind}
			pe := adaptertest.ProviderError(t, err)
			if diff := cmp.Diff(*want, *pe, cmp.Comparer(func(a, b error) bool { return a == b })); diff != "" {
				t.Errorf("Call error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestJSONErrorHook(t *testing.T) {
	t.Parallel()
	s, _ := jsonServer(t, http.StatusConflict, "text/plain", "Conflict")
	errGone := errors.New("gone")
	type call struct {
		method, url, status, body string
	}
	var got []call
	c := newJSON(transport.Options{})
	c.Error = func(method, url string, resp *http.Response, body []byte) error {
		got = append(got, call{method, url, resp.Status, string(body)})
		return errGone
	}
	_, err := c.Call(t.Context(), http.MethodPost, s.URL+"/things", map[string]string{"a": "b"}, nil)
	if !errors.Is(err, errGone) {
		t.Errorf("Call = %v, want the Error hook's error", err)
	}
	want := []call{{http.MethodPost, s.URL + "/things", "409 Conflict", "Conflict"}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(call{})); diff != "" {
		t.Errorf("Error hook calls (-want +got):\n%s", diff)
	}
}

func TestJSONErrorBodyLimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		size int
		want int
	}{
		{"small", 10, 10},
		{"at the limit", transport.MaxErrorBody, transport.MaxErrorBody},
		{"over the limit", 3 * transport.MaxErrorBody, transport.MaxErrorBody},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, _ := jsonServer(t, http.StatusBadRequest, "text/plain", strings.Repeat("x", tt.size))
			c := newJSON(transport.Options{})
			got := -1
			c.Error = func(_, _ string, _ *http.Response, body []byte) error {
				got = len(body)
				return errors.New("bad")
			}
			if _, err := c.Call(t.Context(), http.MethodGet, s.URL, nil, nil); err == nil {
				t.Fatal("Call = nil, want an error")
			}
			if got != tt.want {
				t.Errorf("Error hook got a body of %d bytes, want %d", got, tt.want)
			}
		})
	}
}

func TestJSONAuthOnEveryAttempt(t *testing.T) {
	t.Parallel()
	var keys []string
	var mu sync.Mutex
	s := newServer(t, func(hit int, w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("X-API-Key"))
		mu.Unlock()
		if hit == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	c := newJSON(transport.Options{})
	var auths atomic.Int32
	c.Auth = func(r *http.Request) {
		auths.Add(1)
		r.Header.Set("X-API-Key", "k1")
	}
	if _, err := c.Call(t.Context(), http.MethodGet, s.URL, nil, nil); err != nil {
		t.Fatalf("Call = %v, want success", err)
	}
	if diff := cmp.Diff([]string{"k1", "k1"}, keys); diff != "" {
		t.Errorf("X-API-Key of each attempt (-want +got):\n%s", diff)
	}
	if got := auths.Load(); got != 1 {
		t.Errorf("Auth ran %d times, want once per Call", got)
	}
}

func TestJSONSecretsScrubbed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int // 400 is answered at once, 503 until the retries run out
	}{
		{"answered", http.StatusBadRequest},
		{"retried", http.StatusServiceUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, _ := jsonServer(t, tt.status, "text/plain", "bad password s3cret for key apikey-1")
			c := newJSON(transport.Options{Secrets: []string{"", "apikey-1"}})
			_, err := c.Call(t.Context(), http.MethodPut, s.URL, map[string]string{"password": "s3cret"}, nil, "s3cret", "")
			pe := adaptertest.ProviderError(t, err)
			if want := "bad password REDACTED for key REDACTED"; pe.Message != want {
				t.Errorf("Call error message = %q, want %q", pe.Message, want)
			}
			if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "apikey-1") {
				t.Errorf("Call error %q holds a secret", err)
			}
		})
	}
}

func TestJSONEncodeError(t *testing.T) {
	t.Parallel()
	s, _ := jsonServer(t, http.StatusOK, "", "")
	c := newJSON(transport.Options{})
	_, err := c.Call(t.Context(), http.MethodPost, s.URL, map[string]any{"f": func() {}}, nil)
	var ue *json.UnsupportedTypeError
	if !errors.As(err, &ue) || !strings.HasPrefix(err.Error(), "test: encode POST "+s.URL+" request: ") {
		t.Errorf("Call = %v, want a test: encode POST … request error wrapping *json.UnsupportedTypeError", err)
	}
	if got := s.hits.Load(); got != 0 {
		t.Errorf("server hits = %d, want none", got)
	}
}

func TestJSONContextCancel(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{})
	release := make(chan struct{})
	s := newServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		close(arrived)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	c := newJSON(transport.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-arrived
		cancel()
	}()
	start := time.Now()
	_, err := c.Call(ctx, http.MethodGet, s.URL, nil, new(any))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Call = %v, want an error wrapping context.Canceled", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Call took %v after its context was cancelled", d)
	}
	if got := s.hits.Load(); got != 1 {
		t.Errorf("server hits = %d, want 1 (no retry after cancel)", got)
	}
}

// TestKeepsConnectionsForConcurrentRequests checks that the default client reuses its connections at
// 10 requests in flight: net/http keeps only 2 idle connections per host, and go-cleanhttp
// GOMAXPROCS+1, which would open new ones for most requests of every later round.
func TestKeepsConnectionsForConcurrentRequests(t *testing.T) {
	t.Parallel()
	const inFlight, rounds = 10, 5
	var (
		mu      sync.Mutex
		waiting int
		round   = make(chan struct{})
	)
	// Each request waits until all inFlight requests of its round have arrived, so that the client
	// really has inFlight connections open at once.
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		waiting++
		ch := round
		if waiting == inFlight {
			waiting = 0
			close(round)
			round = make(chan struct{})
		}
		mu.Unlock()
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Error("a round never had all its requests in flight")
		}
		_, _ = io.WriteString(w, `{}`)
	}))
	var conns atomic.Int32
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	c := newJSON(transport.Options{})
	for range rounds {
		var wg sync.WaitGroup
		for range inFlight {
			wg.Go(func() {
				if _, err := c.Call(t.Context(), http.MethodGet, s.URL, nil, new(any)); err != nil {
					t.Errorf("Call = %v", err)
				}
			})
		}
		wg.Wait()
	}
	if got := conns.Load(); got != inFlight {
		t.Errorf("%d rounds of %d requests in flight opened %d connections, want %d", rounds, inFlight, got, inFlight)
	}
}
