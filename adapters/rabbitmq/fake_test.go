package rabbitmq_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/cdkx-dev/cdkx/adapters/internal/scripted"
	"github.com/cdkx-dev/cdkx/adapters/rabbitmq"
	"github.com/cdkx-dev/cdkx/adapters/transport"
)

const (
	testUser = "cdkx-admin"
	testPass = "admin-pass-0123"
)

// exchange is one expected request of a scripted RabbitMQ management API and its canned response.
type exchange = scripted.Exchange

// fake is a scripted RabbitMQ management API: it serves the exchanges in order and fails the test on any
// other call, and on exchanges left over when the test ends.
type fake struct{ *scripted.Server }

// fastRetry keeps retries of 5xx quick.
var fastRetry = transport.Retry{Max: 2, WaitMin: time.Millisecond, WaitMax: time.Millisecond}

// newFake starts a fake serving want and a provider pointed at it.
func newFake(t *testing.T, want ...exchange) (*fake, *rabbitmq.Provider) {
	t.Helper()
	f := startFake(t, want...)
	p, err := rabbitmq.New(rabbitmq.Config{URL: f.URL, Username: testUser, Password: testPass, Retry: fastRetry})
	if err != nil {
		t.Fatalf("New = %v", err)
	}
	return f, p
}

// startFake starts a fake serving want.
func startFake(t *testing.T, want ...exchange) *fake {
	t.Helper()
	return &fake{scripted.Start(t, checkAuth, want...)}
}

// checkAuth wants the test user's basic auth.
func checkAuth(r *http.Request) string {
	if user, pass, ok := r.BasicAuth(); !ok || user != testUser || pass != testPass {
		return fmt.Sprintf("basic auth = %q, %q, %t; want %q and the test password", user, pass, ok, testUser)
	}
	return ""
}

// Canned answers, as RabbitMQ 3.10.8 sends them.
const (
	notFoundJSON  = `{"error":"Object Not Found","reason":"Not Found"}`
	whoamiJSON    = `{"name":"cdkx-admin","tags":["administrator"]}`
	loginFailed   = `{"error":"not_authorized","reason":"Login failed"}`
	accessRefused = `{"error":"not_authorised","reason":"Access refused."}`
)

// get404 is a GET answered 404, as before a create.
func get404(path string) exchange {
	return exchange{Method: "GET", Path: path, Status: 404, JSON: notFoundJSON}
}

// whoami is the check that a 404 is about the object and not the API URL.
var whoami = exchange{Method: "GET", Path: "/api/whoami", Status: 200, JSON: whoamiJSON}

// url is the fake's base URL plus path, as errors show it.
func (f *fake) url(path string) string { return f.URLOf(path) }
