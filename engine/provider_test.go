package engine_test

import (
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
