package rabbitmq_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/adapters/core"
	"github.com/cdkx-dev/cdkx/adapters/powerdns"
	"github.com/cdkx-dev/cdkx/adapters/rabbitmq"
	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TestExampleAssemblies loads the example assemblies that use RabbitMQ and checks them against the
// schemas of the real adapters, and the vhosts of their bindings with CheckBindingVhosts.
func TestExampleAssemblies(t *testing.T) {
	t.Parallel()
	rmq, err := rabbitmq.New(rabbitmq.Config{URL: "http://127.0.0.1:1", Username: "u", Password: "p"})
	if err != nil {
		t.Fatal(err)
	}
	pdns, err := powerdns.New(powerdns.Config{URL: "http://127.0.0.1:1", APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	registry := engine.NewRegistry(rmq, pdns, core.New())
	tests := []struct {
		dir    string
		stacks map[string][]string // stack → dependencies
	}{
		{"../../testdata/examples/messaging/cdkx.out", map[string][]string{"Messaging": nil}},
		{"../../testdata/examples/platform/cdkx.out", map[string][]string{"Zones": nil, "App": {"Zones"}, "Messaging": {"Zones"}}},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			t.Parallel()
			a, ds := assembly.Load(tt.dir)
			if len(ds) != 0 {
				t.Fatalf("Load(%q) diagnostics: %v", tt.dir, ds)
			}
			if ds := assembly.Validate(a, registry); len(ds) != 0 {
				t.Fatalf("Validate(%q) diagnostics: %v", tt.dir, ds)
			}
			got := map[string][]string{}
			for _, s := range a.Stacks {
				got[s.ID] = s.Dependencies
				if s.ID != "Messaging" {
					continue
				}
				types := map[string]int{}
				for _, r := range s.Resources {
					types[r.Type]++
					if r.Type != rabbitmq.TypeBinding {
						continue
					}
					lookup := func(v any) (string, resource.Properties, bool) {
						tok, ok := assembly.AsToken(v)
						if !ok || tok.Ref == "" {
							return "", nil, false
						}
						target := s.Resource(tok.Ref)
						if target == nil {
							return "", nil, false
						}
						return target.Type, target.Properties, true
					}
					if fe := rabbitmq.CheckBindingVhosts(r.Properties, lookup); len(fe) != 0 {
						t.Errorf("%s: CheckBindingVhosts = %v", r.LogicalID, fe)
					}
				}
				want := map[string]int{rabbitmq.TypeVirtualHost: 1, rabbitmq.TypeExchange: 2, rabbitmq.TypeQueue: 2, rabbitmq.TypePolicy: 1,
					rabbitmq.TypeBinding: 2, rabbitmq.TypeUser: 1, rabbitmq.TypePermission: 1, core.TypeData: 1}
				if diff := cmp.Diff(want, types); diff != "" {
					t.Errorf("Messaging resource types (-want +got):\n%s", diff)
				}
			}
			if diff := cmp.Diff(tt.stacks, got); diff != "" {
				t.Errorf("stacks and dependencies (-want +got):\n%s", diff)
			}
		})
	}
}
