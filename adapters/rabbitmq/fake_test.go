package rabbitmq_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/adapters/rabbitmq"
	"github.com/cdkx-dev/cdkx/adapters/transport"
)

const (
	testUser = "cdkx-admin"
	testPass = "admin-pass-0123"
)

// exchange is one expected request and its canned response.
type exchange struct {
	Method string
	Path   string // URL path as sent, escaped: the vhost "/" is %2F
	Body   string // expected JSON body, compared after decoding; "" for no body
	Status int
	JSON   string            // response body, sent as application/json
	Text   string            // response body, sent as text/plain
	Header map[string]string // response headers
}

// fake is a scripted RabbitMQ management API: it serves the exchanges in order and fails the test on any
// other call, and on exchanges left over when the test ends.
type fake struct {
	t    *testing.T
	mu   sync.Mutex
	want []exchange
	next int
	srv  *httptest.Server
}

// fastRetry keeps retries of 5xx quick.
var fastRetry = transport.Retry{Max: 2, WaitMin: time.Millisecond, WaitMax: time.Millisecond}

func newFake(t *testing.T, want ...exchange) (*fake, *rabbitmq.Provider) {
	t.Helper()
	f := startFake(t, want...)
	p, err := rabbitmq.New(rabbitmq.Config{URL: f.srv.URL, Username: testUser, Password: testPass, Retry: fastRetry})
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
		f.t.Errorf("unexpected request %s %s %s", r.Method, r.URL.EscapedPath(), body)
		http.Error(w, "unexpected request", http.StatusTeapot)
		return
	}
	x := f.want[f.next]
	f.next++
	if r.Method != x.Method || r.URL.EscapedPath() != x.Path || r.URL.RawQuery != "" {
		f.t.Errorf("request %d = %s %s?%s, want %s %s", f.next, r.Method, r.URL.EscapedPath(), r.URL.RawQuery, x.Method, x.Path)
	}
	if user, pass, ok := r.BasicAuth(); !ok || user != testUser || pass != testPass {
		f.t.Errorf("request %d basic auth = %q, %q, %t; want %q and the test password", f.next, user, pass, ok, testUser)
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
	for k, v := range x.Header {
		w.Header().Set(k, v)
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

// Canned answers, as RabbitMQ 3.10.8 sends them.
const (
	notFoundJSON  = `{"error":"Object Not Found","reason":"Not Found"}`
	whoamiJSON    = `{"name":"cdkx-admin","tags":["administrator"]}`
	loginFailed   = `{"error":"not_authorized","reason":"Login failed"}`
	accessRefused = `{"error":"not_authorised","reason":"Access refused."}`
)

// get404 is a GET answered 404, as before a create.
func get404(path string) exchange {
	return exchange{Method: "GET", Path: path, Status: 404, JSON: notFoundJSON}
}

// whoami is the check that a 404 is about the object and not the API URL.
var whoami = exchange{Method: "GET", Path: "/api/whoami", Status: 200, JSON: whoamiJSON}
