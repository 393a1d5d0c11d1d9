package cli

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cdkx-dev/cdkx/adapters/transport"
)

// TestUnreachableStateNamesTheSetting: a state service or PostgreSQL server that refuses the connection
// is reported with --state/CDKX_STATE, the setting that holds its URL.
func TestUnreachableStateNamesTheSetting(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close() // its port now refuses connections
	port := closed.URL[strings.LastIndex(closed.URL, ":")+1:]
	getenv := func(k string) string { return map[string]string{"CDKX_TOKEN": "t", "CDKX_PROJECT": "p"}[k] }
	fast := transport.Retry{Max: 1, WaitMin: time.Millisecond, WaitMax: time.Millisecond}

	_, err := openService(t.Context(), closed.URL, getenv, fast)
	want := "the state service at " + closed.URL + " (--state/CDKX_STATE) refused the connection: is it running, " +
		"and is --state/CDKX_STATE right? (GET /api/user, 2 attempts)"
	if err == nil || err.Error() != want {
		t.Errorf("openService(%s) = %v, want %q", closed.URL, err, want)
	}

	f := New("test")
	_, err = f.OpenBackend(t.Context(), "postgres://u@127.0.0.1:"+port+"/db")
	wantPrefix := "--state/CDKX_STATE: open state database postgres://u@127.0.0.1:" + port + "/db: no PostgreSQL server is listening"
	if err == nil || !strings.HasPrefix(err.Error(), wantPrefix) {
		t.Errorf("OpenBackend(postgres at a closed port) = %v, want prefix %q", err, wantPrefix)
	}
}
