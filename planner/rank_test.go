package planner_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/planner"
)

// TestRank: a step's rank is 1 + the changes after it in its serial group (in logical-ID order) + the
// highest rank among its dependents, so that a load balancer whose targets run one at a time outranks
// the servers they point at, and the servers are ranked in the order the chain wants them.
func TestRank(t *testing.T) {
	t.Parallel()
	serial := thing
	serial.Type = "Fake::Test::Target"
	serial.Serialize = []resource.SerialKey{{Group: "lb", Property: "lb"}}
	look := func(provider, typ string) (resource.Schema, bool, bool) {
		if typ == serial.Type {
			return serial, true, true
		}
		return lookup(provider, typ)
	}
	target := func(id, server string) *assembly.Resource {
		r := res(id, resource.Properties{"lb": ref("Lb", "id"), "value": ref(server, "id")})
		r.Type = serial.Type
		return r
	}
	a := &assembly.Assembly{Stacks: []*assembly.Stack{{ID: "S", Outputs: map[string]*assembly.Output{}, Resources: []*assembly.Resource{
		res("Net", nil),
		res("Lb", resource.Properties{"value": ref("Net", "id")}),
		res("SrvA", resource.Properties{"value": ref("Net", "id")}),
		res("SrvB", resource.Properties{"value": ref("Net", "id")}),
		res("SrvC", resource.Properties{"value": ref("Net", "id")}),
		target("TgtA", "SrvA"), target("TgtB", "SrvB"), target("TgtC", "SrvC"),
		res("Alone", nil),
	}}}}
	p, ds := planner.Make(planner.Input{Assembly: a, Stacks: []string{"S"}, State: map[string]*state.Stack{}, Schemas: look})
	if ds.HasErrors() {
		t.Fatal(ds.Err())
	}
	got := map[string]int{}
	for _, s := range p.Steps {
		got[s.LogicalID] = s.Rank
	}
	want := map[string]int{
		"TgtA": 3, "TgtB": 2, "TgtC": 1, // two, one and no changes after them on the load balancer
		"SrvA": 4, "SrvB": 3, "SrvC": 2,
		"Lb":    4,
		"Net":   5,
		"Alone": 1,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ranks (-want +got):\n%s", diff)
	}
}
