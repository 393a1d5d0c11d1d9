//go:build prism

package hcloudfake

import (
	"net/http"
	"os"
	"strings"
	"testing"
)

// TestPrismProxyAcceptsEveryRoute sends walkEveryRoute's requests through an independent validating proxy,
// Stoplight Prism, in front of a running hcloud-fake: with --errors Prism answers 500 to any request or
// answer the spec refuses, which fails the walk. Run by hand (it needs Node and @stoplight/prism-cli 5.16.0):
//
//	hcloud-fake --listen 127.0.0.1:8081 --token test-token &
//	prism proxy ../../../../shared/hetzner/hetzner.cloud.json http://127.0.0.1:8081/v1 --errors --port 8082 &
//	PRISM_URL=http://127.0.0.1:8082 go test -tags prism -run TestPrismProxyAcceptsEveryRoute ./adapters/hcloud/hcloudfake/
func TestPrismProxyAcceptsEveryRoute(t *testing.T) {
	base := os.Getenv("PRISM_URL")
	if base == "" {
		t.Fatal("PRISM_URL is not set: start hcloud-fake and a Prism proxy in front of it (see the comment above)")
	}
	a := &api{t: t, base: base, hc: &http.Client{Transport: stripV1{}}}
	walkEveryRoute(t, a)
}

// stripV1 drops the /v1 prefix: Prism serves the spec's paths below its own root.
type stripV1 struct{}

func (stripV1) RoundTrip(r *http.Request) (*http.Response, error) {
	r.URL.Path = strings.TrimPrefix(r.URL.Path, "/v1")
	return http.DefaultTransport.RoundTrip(r)
}
