package rabbitmq_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cdkx-dev/cdkx/adapters/internal/adaptertest"

	"github.com/cdkx-dev/cdkx/adapters/rabbitmq"
	"github.com/cdkx-dev/cdkx/adapters/transport"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TestUserPutRedirectedToAnotherPort drives a user create against a stand-in management API whose PUT
// (the one that carries the password) answers 307 to another port: the create fails naming
// RABBITMQ_API_URL, and the other port receives neither the password nor the basic auth.
func TestUserPutRedirectedToAnotherPort(t *testing.T) {
	t.Parallel()
	other := adaptertest.NewElsewhere(t)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"error":"Object Not Found","reason":"Not Found"}`)
			return
		}
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer api.Close()
	p, err := rabbitmq.New(rabbitmq.Config{URL: api.URL, Username: "admin", Password: "admin-pass", Retry: transport.Retry{Max: -1}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Create(t.Context(), resource.CreateRequest{Type: rabbitmq.TypeUser,
		Properties: resource.Properties{"name": "bob", "password": "bob-s3cret", "tags": []any{}}})
	if !errors.As(err, new(*transport.RedirectError)) {
		t.Fatalf("Create = %v (%T), want a *transport.RedirectError", err, err)
	}
	if msg := err.Error(); !strings.Contains(msg, "check RABBITMQ_API_URL") || strings.Contains(msg, "bob-s3cret") || strings.Contains(msg, "admin-pass") {
		t.Errorf("error = %q, want it to name RABBITMQ_API_URL and hold no password", msg)
	}
	other.CheckNothingReceived(t)
}
