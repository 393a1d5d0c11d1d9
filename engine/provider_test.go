package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/engine/enginetest"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TestRegistryNames: the registry is a resource.Catalog — it lists providers and types sorted, and an
// unknown provider's error suggests the nearest name and lists the known ones.
func TestRegistryNames(t *testing.T) {
	t.Parallel()
	reg := engine.NewRegistry(&enginetest.Cloud{}, &enginetest.Provider{InfoValue: resource.ProviderInfo{Name: "powerdns",
		Schemas: []resource.Schema{{Type: "PowerDNS::DNS::Zone"}, {Type: "PowerDNS::DNS::RecordSet"}}}})
	var _ resource.Catalog = reg
	if diff := cmp.Diff([]string{"fake", "powerdns"}, reg.Names()); diff != "" {
		t.Errorf("Names() (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"PowerDNS::DNS::RecordSet", "PowerDNS::DNS::Zone"}, reg.Types("powerdns")); diff != "" {
		t.Errorf("Types(powerdns) (-want +got):\n%s", diff)
	}
	if got := reg.Types("nope"); got != nil {
		t.Errorf("Types(nope) = %q, want nil", got)
	}
	tests := []struct{ name, want string }{
		{"powerdsn", `unknown provider "powerdsn" (did you mean "powerdns"?); cdkx knows fake, powerdns`},
		{"route53", `unknown provider "route53"; cdkx knows fake, powerdns`},
	}
	for _, tt := range tests {
		if _, err := reg.Provider(tt.name); err == nil || err.Error() != tt.want {
			t.Errorf("Provider(%q) = %v, want %q", tt.name, err, tt.want)
		}
	}
}

// TestRegistryPreflight: Preflight builds each named provider (a lazy one on first use only), asks it in
// the order given with its own resources, returns every problem, and stops at the first error: a
// construction error or a provider's.
func TestRegistryPreflight(t *testing.T) {
	t.Parallel()
	var asked []string
	fake := func(name string, err error) *enginetest.Provider {
		return &enginetest.Provider{InfoValue: resource.ProviderInfo{Name: name},
			PreflightFunc: func(_ context.Context, req resource.PreflightRequest) ([]resource.PreflightProblem, error) {
				asked = append(asked, name)
				var out []resource.PreflightProblem
				for _, r := range req.Resources {
					out = append(out, resource.PreflightProblem{Stack: r.Stack, LogicalID: r.LogicalID, FieldError: resource.FieldError{Message: name}})
				}
				return out, err
			}}
	}
	refused := &resource.CredentialsError{Provider: "b", Variables: "B_TOKEN", Err: errors.New("401")}
	reg := engine.NewRegistry(fake("a", nil), fake("b", refused))
	built := 0
	reg.Register(resource.ProviderInfo{Name: "lazy"}, func() (engine.Provider, error) { built++; return fake("lazy", nil), nil })
	reg.Register(resource.ProviderInfo{Name: "unset"}, func() (engine.Provider, error) { return nil, errors.New("UNSET_URL is not set") })

	resources := map[string][]resource.PreflightResource{"a": {{Stack: "S", LogicalID: "A1"}}, "lazy": {{Stack: "S", LogicalID: "L1"}}}
	problems, err := reg.Preflight(t.Context(), []string{"lazy", "a"}, resources)
	want := []resource.PreflightProblem{{Stack: "S", LogicalID: "L1", FieldError: resource.FieldError{Message: "lazy"}},
		{Stack: "S", LogicalID: "A1", FieldError: resource.FieldError{Message: "a"}}}
	if diff := cmp.Diff(want, problems); err != nil || diff != "" {
		t.Errorf("Preflight(lazy, a) = %v; problems (-want +got):\n%s", err, diff)
	}
	if _, err := reg.Preflight(t.Context(), []string{"lazy"}, nil); err != nil || built != 1 {
		t.Errorf("Preflight(lazy) again = %v, built %d times; want nil, built once", err, built)
	}
	if _, err := reg.Preflight(t.Context(), []string{"b", "a"}, resources); !errors.Is(err, refused) {
		t.Errorf("Preflight(b, a) = %v, want b's credentials error", err)
	}
	if _, err := reg.Preflight(t.Context(), []string{"unset"}, nil); err == nil || err.Error() != "UNSET_URL is not set" {
		t.Errorf("Preflight(unset) = %v, want its construction error", err)
	}
	if diff := cmp.Diff([]string{"lazy", "a", "lazy", "b"}, asked); diff != "" {
		t.Errorf("asked (-want +got):\n%s", diff)
	}
}
