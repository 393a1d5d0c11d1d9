package powerdns_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cdkx-dev/cdkx/adapters/internal/adaptertest"

	"github.com/cdkx-dev/cdkx/adapters/powerdns"
	"github.com/cdkx-dev/cdkx/adapters/transport"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TestRedirectToAnotherPortLeaksNothing drives the adapter against a stand-in PowerDNS that redirects a
// zone read (307) and a zone create (308, with its body) to another port: the calls fail naming
// PDNS_API_URL, and the other port receives nothing, X-API-Key least of all.
func TestRedirectToAnotherPortLeaksNothing(t *testing.T) {
	t.Parallel()
	other := adaptertest.NewElsewhere(t)
	pdns := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status := http.StatusTemporaryRedirect
		if r.Method == http.MethodPost {
			status = http.StatusPermanentRedirect
		}
		http.Redirect(w, r, other.URL+r.URL.Path, status)
	}))
	defer pdns.Close()
	p, err := powerdns.New(powerdns.Config{URL: pdns.URL, APIKey: "secret-key", Retry: transport.Retry{Max: -1}})
	if err != nil {
		t.Fatal(err)
	}
	_, readErr := p.Read(t.Context(), resource.ReadRequest{Type: powerdns.TypeZone, PhysicalID: "example.test."})
	_, createErr := p.Create(t.Context(), resource.CreateRequest{Type: powerdns.TypeZone,
		Properties: resource.Properties{"Name": "example.test.", "Kind": "Native"}})
	for _, err := range []error{readErr, createErr} {
		if !errors.As(err, new(*transport.RedirectError)) {
			t.Errorf("error = %v (%T), want a *transport.RedirectError", err, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "redirected to "+other.URL) || !strings.Contains(msg, "check PDNS_API_URL") ||
			strings.Contains(msg, "secret-key") {
			t.Errorf("error = %q, want it to name the target and PDNS_API_URL, and not the key", msg)
		}
	}
	other.CheckNothingReceived(t)
}
