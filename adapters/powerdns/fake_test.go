package powerdns_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/adapters/powerdns"
	"github.com/cdkx-dev/cdkx/adapters/transport"
)

const testKey = "test-key-0123"

// exchange is one expected request and its canned response.
type exchange struct {
	Method string
	Path   string // URL path, decoded
	Query  string // raw query, "" for none
	Body   string // expected JSON body, compared after decoding; "" for no body
	Status int
	JSON   string // response body, sent as application/json
	Text   string // response body, sent as text/plain
}

// fake is a scripted PowerDNS: it serves the exchanges in order and fails the test on any other call,
// and on exchanges left over when the test ends.
type fake struct {
	t    *testing.T
	mu   sync.Mutex
	want []exchange
	next int
	srv  *httptest.Server
}

func newFake(t *testing.T, want ...exchange) (*fake, *powerdns.Provider) {
	t.Helper()
	f := startFake(t, want...)
	p, err := powerdns.New(powerdns.Config{URL: f.srv.URL, APIKey: testKey,
		Retry: transport.Retry{Max: 2, WaitMin: time.Millisecond, WaitMax: time.Millisecond}})
	if err != nil {
		t.Fatalf("New = %v", err)
	}
	return f, p
}

// startFake starts a fake serving want.
func startFake(t *testing.T, want ...exchange) *fake {
	t.Helper()
	f := &fake{t: t, want: want}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		f.srv.Close()
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, x := range f.want[f.next:] {
			t.Errorf("expected request never came: %s %s", x.Method, x.Path)
		}
	})
	return f
}

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	if f.next >= len(f.want) {
		f.t.Errorf("unexpected request %s %s?%s %s", r.Method, r.URL.Path, r.URL.RawQuery, body)
		http.Error(w, "unexpected request", http.StatusTeapot)
		return
	}
	x := f.want[f.next]
	f.next++
	if r.Method != x.Method || r.URL.Path != x.Path || r.URL.RawQuery != x.Query {
		f.t.Errorf("request %d = %s %s?%s, want %s %s?%s", f.next, r.Method, r.URL.Path, r.URL.RawQuery, x.Method, x.Path, x.Query)
	}
	if got := r.Header.Get("X-API-Key"); got != testKey {
		f.t.Errorf("request %d X-API-Key = %q, want %q", f.next, got, testKey)
	}
	if got := r.Header.Get("Accept"); got != "application/json" {
		f.t.Errorf("request %d Accept = %q, want application/json", f.next, got)
	}
	switch {
	case x.Body == "" && len(body) > 0:
		f.t.Errorf("request %d %s %s has body %s, want none", f.next, r.Method, r.URL.Path, body)
	case x.Body != "":
		if ct := r.Header.Get("Content-Type"); ct != "application/json" {
			f.t.Errorf("request %d Content-Type = %q, want application/json", f.next, ct)
		}
		var got, want any
		if err := json.Unmarshal(body, &got); err != nil {
			f.t.Errorf("request %d body %q is not JSON: %v", f.next, body, err)
		}
		if err := json.Unmarshal([]byte(x.Body), &want); err != nil {
			f.t.Fatalf("bad expected body %q: %v", x.Body, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			f.t.Errorf("request %d %s %s body mismatch (-want +got):\n%s", f.next, r.Method, r.URL.Path, diff)
		}
	}
	switch {
	case x.JSON != "":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(x.Status)
		_, _ = io.WriteString(w, x.JSON)
	case x.Text != "":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(x.Status)
		_, _ = io.WriteString(w, x.Text)
	default:
		w.WriteHeader(x.Status)
	}
}

// url is the fake's base URL plus path, as errors show it.
func (f *fake) url(path string) string { return f.srv.URL + path }
