package powerdns_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/cdkx-dev/cdkx/adapters/powerdns"
	"github.com/cdkx-dev/cdkx/adapters/transport"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TestLateCreateAnswerIsNotResent: a stand-in PowerDNS that makes the zone of a POST /zones but answers only
// after the client's response timeout. The create is sent once and fails with resource.ErrOutcomeUnknown
// (not "already exists" after a resend); Locate then finds the zone it made, as the engine does next.
func TestLateCreateAnswerIsNotResent(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	posts := 0
	zones := map[string]bool{}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/api/v1/servers/localhost/zones":
			posts++
			var z struct{ Name string }
			_ = json.Unmarshal(body, &z)
			exists := zones[z.Name]
			zones[z.Name] = true
			mu.Unlock()
			if exists {
				http.Error(w, `{"error":"Conflict"}`, http.StatusConflict)
				return
			}
			<-r.Context().Done() // made, but the answer comes after the client gave up
			return
		case r.Method == http.MethodGet && r.URL.Path == "/api/v1/servers/localhost":
			mu.Unlock()
			_, _ = io.WriteString(w, `{"id":"localhost"}`)
			return
		case r.Method == http.MethodGet && r.URL.Path == "/api/v1/servers/localhost/zones/a.example.":
			ok := zones["a.example."]
			mu.Unlock()
			if !ok {
				w.WriteHeader(http.StatusNotFound)
				_, _ = io.WriteString(w, `{"error":"Could not find domain 'a.example.'"}`)
				return
			}
			_, _ = io.WriteString(w, `{"id":"a.example.","name":"a.example.","kind":"Native","serial":1}`)
			return
		}
		mu.Unlock()
		t.Errorf("unexpected %s %s", r.Method, r.URL)
		w.WriteHeader(http.StatusTeapot)
	}))
	t.Cleanup(s.Close)
	hc := &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: 20 * time.Millisecond}}
	p, err := powerdns.New(powerdns.Config{URL: s.URL, APIKey: testKey, HTTPClient: hc,
		Retry: transport.Retry{Max: 3, WaitMin: time.Millisecond, WaitMax: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	req := resource.CreateRequest{Type: powerdns.TypeZone, LogicalID: "Z",
		Properties: resource.Properties{"name": "a.example.", "kind": "Native", "nameservers": []any{}}}
	_, err = p.Create(t.Context(), req)
	if !errors.Is(err, resource.ErrOutcomeUnknown) || errors.Is(err, resource.ErrAlreadyExists) {
		t.Fatalf("Create = %v, want an unknown outcome", err)
	}
	id, err := p.Locate(t.Context(), req)
	if err != nil || id != "a.example." {
		t.Errorf("Locate = %q, %v; want the zone the late create made", id, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if posts != 1 {
		t.Errorf("POST /zones sent %d times, want exactly once", posts)
	}
}
