// Package adaptertest holds the small helpers the provider adapters' tests share.
package adaptertest

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// Props encodes the JSON object js as resource properties (numbers as json.Number), failing the test
// when it is not one.
func Props(t *testing.T, js string) resource.Properties {
	t.Helper()
	p, err := resource.Encode(json.RawMessage(js))
	if err != nil {
		t.Fatalf("props(%s): %v", js, err)
	}
	return p
}

// ProviderError returns the *resource.ProviderError in err's chain, failing the test when there is none.
func ProviderError(t *testing.T, err error) *resource.ProviderError {
	t.Helper()
	var pe *resource.ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("error = %v (%T), want a *resource.ProviderError", err, err)
	}
	return pe
}

// IsToken stands in for the assembly's token check in schema validation: {"ref": …} is not known yet.
func IsToken(v any) bool {
	m, ok := v.(map[string]any)
	_, ref := m["ref"]
	return ok && ref
}

// Elsewhere is a stand-in for another host or port that a hostile provider redirects to: it records
// every request it receives (method, path, credential headers, body) and answers 201. Tests check that it
// received nothing.
type Elsewhere struct {
	*httptest.Server
	mu  sync.Mutex
	got []string
}

// NewElsewhere starts an Elsewhere, closed when the test ends.
func NewElsewhere(t *testing.T) *Elsewhere {
	t.Helper()
	e := &Elsewhere{}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		e.mu.Lock()
		e.got = append(e.got, r.Method+" "+r.URL.Path+" Authorization="+r.Header.Get("Authorization")+
			" X-API-Key="+r.Header.Get("X-API-Key")+" body="+string(b))
		e.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(e.Close)
	return e
}

// CheckNothingReceived fails the test when the stand-in received any request.
func (e *Elsewhere) CheckNothingReceived(t *testing.T) {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.got) != 0 {
		t.Errorf("the other port received %d requests, want none:\n%s", len(e.got), strings.Join(e.got, "\n"))
	}
}
