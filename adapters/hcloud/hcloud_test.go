package hcloud_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/cdkx-dev/cdkx/adapters/hcloud"
	"github.com/cdkx-dev/cdkx/adapters/internal/scripted"
	"github.com/cdkx-dev/cdkx/adapters/transport"
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
