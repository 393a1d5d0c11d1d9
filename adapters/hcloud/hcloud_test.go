package hcloud_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/cdkx-dev/cdkx/adapters/hcloud"
	"github.com/cdkx-dev/cdkx/adapters/internal/scripted"
	"github.com/cdkx-dev/cdkx/adapters/transport"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

const testToken = "test-token"

// scriptedProvider returns a provider pointed at a server that answers want in order, with quick retries
// and action polls.
func scriptedProvider(t *testing.T, want ...scripted.Exchange) (*hcloud.Provider, *scripted.Server) {
	t.Helper()
	s := scripted.Start(t, func(r *http.Request) string {
		if got := r.Header.Get("Authorization"); got != "Bearer "+testToken {
			return "Authorization = " + got
		}
		return ""
	}, want...)
	p, err := hcloud.New(hcloud.Config{Token: testToken, Endpoint: s.URL + "/v1",
		Poll:  hcloud.PollOptions{Interval: time.Millisecond, Timeout: 5 * time.Second},
		Retry: transport.Retry{WaitMin: time.Millisecond, WaitMax: 2 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	return p, s
}

func ctx(t *testing.T) context.Context { return t.Context() }

// TestEndpointRefused: an API that refuses the connection is reported with HCLOUD_ENDPOINT, the variable
// that points at it.
func TestEndpointRefused(t *testing.T) {
	t.Parallel()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close() // its port now refuses connections
	p, err := hcloud.New(hcloud.Config{Token: testToken, Endpoint: closed.URL + "/v1",
		Retry: transport.Retry{Max: 1, WaitMin: time.Millisecond, WaitMax: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeFirewall, PhysicalID: "42"})
	want := "Hetzner Cloud at " + closed.URL + " (HCLOUD_ENDPOINT) refused the connection: is it running, and is HCLOUD_ENDPOINT right? " +
		"(GET /v1/firewalls/42, 2 attempts)"
	if err == nil || err.Error() != want || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("Read error = %v, want %q wrapping ECONNREFUSED", err, want)
	}
}

// TestInfoSchemasSorted: Info lists the types sorted by name, as its documentation says (the table in
// hcloud.go is written in that order).
func TestInfoSchemasSorted(t *testing.T) {
	schemas := (&hcloud.Provider{}).Info().Schemas
	if len(schemas) != 20 {
		t.Errorf("Info lists %d types, want 20", len(schemas))
	}
	for i := 1; i < len(schemas); i++ {
		if schemas[i-1].Type >= schemas[i].Type {
			t.Errorf("Schemas[%d] %s is not before Schemas[%d] %s", i-1, schemas[i-1].Type, i, schemas[i].Type)
		}
	}
}
