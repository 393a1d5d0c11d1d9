// Package scripted is an HTTP server for adapter tests that answers a script of expected requests, in
// order, and fails the test on any other request and on requests of the script that never came.
package scripted

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Exchange is one expected request and its canned response.
type Exchange struct {
	Method string
	Path   string // URL path as sent (escaped: "/" inside a segment is %2F)
	Query  string // raw query; "" for none
	Body   string // expected JSON body, compared after decoding; "" for no body
	Status int
	JSON   string            // response body, sent as application/json
	Text   string            // response body, sent as text/plain
	Header map[string]string // response headers
}

// Server serves a script. Its URL is the base URL adapters are pointed at.
type Server struct {
	URL string

	t     *testing.T
	check func(r *http.Request) string
	srv   *httptest.Server

	mu   sync.Mutex // guards want and next
	want []Exchange
	next int
}

// Start serves want until the test ends. check, when not nil, inspects every request (credentials, say)
// and returns what is wrong with it, or "". Every request must also accept application/json and, when it
// has a body, send it as application/json.
func Start(t *testing.T, check func(r *http.Request) string, want ...Exchange) *Server {
	t.Helper()
	s := &Server{t: t, check: check, want: want}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(func() {
		s.srv.Close()
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, x := range s.want[s.next:] {
			t.Errorf("expected request never came: %s %s", x.Method, x.Path)
		}
	})
	return s
}

// URLOf is the server's base URL plus path, as errors show it.
func (s *Server) URLOf(path string) string { return s.URL + path }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	path := r.URL.EscapedPath()
	if s.next >= len(s.want) {
		s.t.Errorf("unexpected request %s %s?%s %s", r.Method, path, r.URL.RawQuery, body)
		http.Error(w, "unexpected request", http.StatusTeapot)
		return
	}
	x := s.want[s.next]
	s.next++
	if r.Method != x.Method || path != x.Path || r.URL.RawQuery != x.Query {
		s.t.Errorf("request %d = %s %s?%s, want %s %s?%s", s.next, r.Method, path, r.URL.RawQuery, x.Method, x.Path, x.Query)
	}
	if s.check != nil {
		if msg := s.check(r); msg != "" {
			s.t.Errorf("request %d %s %s: %s", s.next, r.Method, path, msg)
		}
	}
	if got := r.Header.Get("Accept"); got != "application/json" {
		s.t.Errorf("request %d Accept = %q, want application/json", s.next, got)
	}
	switch {
	case x.Body == "" && len(body) > 0:
		s.t.Errorf("request %d %s %s has body %s, want none", s.next, r.Method, path, body)
	case x.Body != "":
		if ct := r.Header.Get("Content-Type"); ct != "application/json" {
			s.t.Errorf("request %d Content-Type = %q, want application/json", s.next, ct)
		}
		var got, want any
		if err := json.Unmarshal(body, &got); err != nil {
			s.t.Errorf("request %d body %q is not JSON: %v", s.next, body, err)
		}
		if err := json.Unmarshal([]byte(x.Body), &want); err != nil {
			s.t.Fatalf("bad expected body %q: %v", x.Body, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			s.t.Errorf("request %d %s %s body mismatch (-want +got):\n%s", s.next, r.Method, path, diff)
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
