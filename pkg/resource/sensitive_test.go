package resource_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cdkx-dev/cdkx/pkg/resource"
)

func TestStoredInputsKeepsNoSecret(t *testing.T) {
	t.Parallel()
	s := resource.Schema{Properties: map[string]resource.PropertySchema{
		"name": {Kind: resource.KindString}, "password": {Kind: resource.KindString, WriteOnly: true}}}
	in := resource.Properties{"name": "svc", "password": "hunter2-secret"}
	first := resource.StoredInputs(s, in, nil)
	b, _ := json.Marshal(first)
	if strings.Contains(string(b), "hunter2") {
		t.Fatalf("stored inputs hold the secret: %s", b)
	}
	if !resource.MatchesFingerprint(first["password"], "hunter2-secret") {
		t.Errorf("fingerprint does not match its value")
	}
	if resource.MatchesFingerprint(first["password"], "other") {
		t.Errorf("fingerprint matches another value")
	}
	// The same secret stored again (salt reused) gives the same fingerprint: no spurious diff.
	again := resource.StoredInputs(s, in, first)
	if !resource.Equal(first, again) {
		t.Errorf("re-stored inputs differ: %v vs %v", first, again)
	}
	// The same secret in another resource looks different (fresh salt).
	other := resource.StoredInputs(s, in, nil)
	if resource.Equal(first["password"], other["password"]) {
		t.Errorf("two fresh fingerprints of one secret are equal")
	}
	if got := resource.Redact(s, in)["password"]; got != resource.Sensitive {
		t.Errorf("Redact password = %v", got)
	}
}

func TestSchemaHasWriteOnly(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		schema resource.Schema
		want   bool
	}{
		{"no properties", resource.Schema{}, false},
		{"none write-only", resource.Schema{Properties: map[string]resource.PropertySchema{"a": {}, "b": {CreateOnly: true}}}, false},
		{"one write-only", resource.Schema{Properties: map[string]resource.PropertySchema{"a": {}, "password": {WriteOnly: true}}}, true},
	}
	for _, tt := range tests {
		if got := tt.schema.HasWriteOnly(); got != tt.want {
			t.Errorf("%s: HasWriteOnly() = %v, want %v", tt.name, got, tt.want)
		}
	}
}
