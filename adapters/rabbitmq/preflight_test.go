package rabbitmq_test

import (
	"errors"
	"testing"

	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TestPreflight: the credentials are checked by one GET /api/whoami, on the first Preflight only; a 401
// is a *resource.CredentialsError naming RABBITMQ_USERNAME and RABBITMQ_PASSWORD.
func TestPreflight(t *testing.T) {
	t.Parallel()
	t.Run("accepted once", func(t *testing.T) {
		t.Parallel()
		_, p := newFake(t, exchange{Method: "GET", Path: "/api/whoami", Status: 200, JSON: `{"name":"admin","tags":["administrator"]}`})
		for range 2 {
			if _, err := p.Preflight(t.Context(), resource.PreflightRequest{}); err != nil {
				t.Errorf("Preflight = %v", err)
			}
		}
	})
	t.Run("refused", func(t *testing.T) {
		t.Parallel()
		_, p := newFake(t, exchange{Method: "GET", Path: "/api/whoami", Status: 401, JSON: `{"error":"not_authorised","reason":"Login failed"}`})
		_, err := p.Preflight(t.Context(), resource.PreflightRequest{})
		var ce *resource.CredentialsError
		if !errors.As(err, &ce) || ce.Variables != "RABBITMQ_USERNAME/RABBITMQ_PASSWORD" {
			t.Errorf("Preflight = %v, want a *resource.CredentialsError naming RABBITMQ_USERNAME/RABBITMQ_PASSWORD", err)
		}
	})
}
