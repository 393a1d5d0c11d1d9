// Package adaptertest holds the small helpers the provider adapters' tests share.
package adaptertest

import (
	"encoding/json"
	"errors"
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
