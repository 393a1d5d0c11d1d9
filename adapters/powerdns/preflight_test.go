package powerdns_test

import (
	"errors"
	"testing"

	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TestPreflight: the API key is checked by one GET of the server, on the first Preflight only; a 401 is a
// *resource.CredentialsError naming PDNS_API_KEY, and a 404 is an error naming PDNS_SERVER_ID.
func TestPreflight(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		answer   exchange
		variable string // of a CredentialsError; "" for none
		wantErr  bool
	}{
		{"accepted", exchange{Method: "GET", Path: "/api/v1/servers/localhost", Status: 200, JSON: `{"id":"localhost"}`}, "", false},
		{"refused", exchange{Method: "GET", Path: "/api/v1/servers/localhost", Status: 401, Text: "Unauthorized"}, "PDNS_API_KEY", true},
		{"forbidden", exchange{Method: "GET", Path: "/api/v1/servers/localhost", Status: 403, JSON: `{"error":"Forbidden"}`}, "PDNS_API_KEY", true},
		{"no such server", exchange{Method: "GET", Path: "/api/v1/servers/localhost", Status: 404, JSON: `{"error":"Not Found"}`}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, p := newFake(t, tc.answer)
			_, err := p.Preflight(t.Context(), resource.PreflightRequest{})
			var ce *resource.CredentialsError
			if got := errors.As(err, &ce); got != (tc.variable != "") || (got && ce.Variables != tc.variable) || (err != nil) != tc.wantErr {
				t.Fatalf("Preflight = %v, want a credentials error naming %q: %t, an error: %t", err, tc.variable, tc.variable != "", tc.wantErr)
			}
			if err == nil { // accepted: a second Preflight sends nothing (the fake fails any further request)
				if _, err := p.Preflight(t.Context(), resource.PreflightRequest{}); err != nil {
					t.Errorf("second Preflight = %v", err)
				}
			}
		})
	}
}
