package powerdns_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/cdkx-dev/cdkx/adapters/internal/scripted"
	"github.com/cdkx-dev/cdkx/adapters/powerdns"
	"github.com/cdkx-dev/cdkx/adapters/transport"
)

const testKey = "test-key-0123"

// exchange is one expected request of a scripted PowerDNS and its canned response.
type exchange = scripted.Exchange

// fake is a scripted PowerDNS: it serves the exchanges in order and fails the test on any other call,
// and on exchanges left over when the test ends.
type fake struct{ *scripted.Server }

// newFake starts a fake serving want and a provider pointed at it, with quick retries.
func newFake(t *testing.T, want ...exchange) (*fake, *powerdns.Provider) {
	t.Helper()
	f := startFake(t, want...)
	p, err := powerdns.New(powerdns.Config{URL: f.URL, APIKey: testKey,
		Retry: transport.Retry{Max: 2, WaitMin: time.Millisecond, WaitMax: time.Millisecond}})
	if err != nil {
		t.Fatalf("New = %v", err)
	}
	return f, p
}

// startFake starts a fake serving want.
func startFake(t *testing.T, want ...exchange) *fake {
	t.Helper()
	return &fake{scripted.Start(t, checkKey, want...)}
}

// checkKey wants the test key in X-API-Key.
func checkKey(r *http.Request) string {
	if got := r.Header.Get("X-API-Key"); got != testKey {
		return fmt.Sprintf("X-API-Key = %q, want %q", got, testKey)
	}
	return ""
}

// url is the fake's base URL plus path, as errors show it.
func (f *fake) url(path string) string { return f.URLOf(path) }
