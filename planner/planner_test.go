package planner_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/planner"
)

var thing = resource.Schema{Type: "Fake::Test::Thing", Outputs: []string{"id", "value"}, StableOutputs: []string{"id"},
	Properties: map[string]resource.PropertySchema{
		"value": {Kind: resource.KindAny},
		"ttl":   {Kind: resource.KindInteger, Default: json.Number("3600")},
		"name":  {Kind: resource.KindString, CreateOnly: true},
		"key":   {Kind: resource.KindString, CreateOnly: true},
	}}

func lookup(provider, typ string) (resource.Schema, bool, bool) {
	if provider != "fake" {
		return resource.Schema{}, false, false
	}
	return thing, true, typ == thing.Type
}

func res(id string, props resource.Properties, dependsOn ...string) *assembly.Resource {
	return &assembly.Resource{LogicalID: id, Type: thing.Type, Provider: "fake", Properties: props, DependsOn: dependsOn, Path: "resources." + id}
}

func ref(id, attr string) map[string]any { return map[string]any{"ref": id, "attr": attr} }

func TestDecide(t *testing.T) {
	t.Parallel()
	old := &state.Resource{LogicalID: "A", Type: thing.Type, Provider: "fake", PhysicalID: "p1",
		Inputs: resource.Properties{"name": "a", "value": "v", "ttl": json.Number("300")}}
	dbr := thing
	dbr.DeleteBeforeReplace = true
	dbr.Identity = []string{"name"}
	tests := []struct {
		name   string
		schema resource.Schema
		old    *state.Resource
		typ    string
		inputs resource.Properties
		meta   map[string]any
		want   planner.Decision
	}{
		{name: "no state", schema: thing, typ: thing.Type, inputs: resource.Properties{"name": "a"},
			want: planner.Decision{Op: planner.OpCreate}},
		{name: "equal, numbers by value", schema: thing, old: old, typ: thing.Type,
			inputs: resource.Properties{"name": "a", "value": "v", "ttl": json.Number("300.0")},
			want:   planner.Decision{Op: planner.OpSame}},
		{name: "absent equals default", schema: thing, typ: thing.Type,
			old:    &state.Resource{Type: thing.Type, Provider: "fake", PhysicalID: "p", Inputs: resource.Properties{"ttl": json.Number("3600")}},
			inputs: resource.Properties{}, want: planner.Decision{Op: planner.OpSame}},
		{name: "update in place", schema: thing, old: old, typ: thing.Type,
			inputs: resource.Properties{"name": "a", "value": "w", "ttl": json.Number("300")},
			want:   planner.Decision{Op: planner.OpUpdate, Changes: []planner.PropertyChange{{Name: "value", Old: "v", New: "w"}}}},
		{name: "create-only change replaces", schema: thing, old: old, typ: thing.Type,
			inputs: resource.Properties{"name": "b", "value": "v", "ttl": json.Number("300")},
			want: planner.Decision{Op: planner.OpReplace, Reason: `create-only property "name" changed`,
				Changes: []planner.PropertyChange{{Name: "name", Old: "a", New: "b", CreateOnly: true}}}},
		{name: "unknown create-only replaces", schema: thing, old: old, typ: thing.Type,
			inputs: resource.Properties{"name": resource.Unknown{}, "value": "v", "ttl": json.Number("300")},
			want: planner.Decision{Op: planner.OpReplace, Reason: `create-only property "name" changed`,
				Changes: []planner.PropertyChange{{Name: "name", Old: "a", New: resource.Unknown{}, CreateOnly: true}}}},
		{name: "rename of a delete-before-replace type creates first", schema: dbr, old: old, typ: thing.Type,
			inputs: resource.Properties{"name": "b", "value": "v", "ttl": json.Number("300")},
			want: planner.Decision{Op: planner.OpReplace, Reason: `create-only property "name" changed`,
				Changes: []planner.PropertyChange{{Name: "name", Old: "a", New: "b", CreateOnly: true}}}},
		{name: "same identity deletes first", schema: dbr, old: old, typ: thing.Type,
			inputs: resource.Properties{"name": "a", "key": "k", "value": "v", "ttl": json.Number("300")},
			want: planner.Decision{Op: planner.OpReplace, Reason: `create-only property "key" changed`, DeleteBeforeReplace: true,
				Changes: []planner.PropertyChange{{Name: "key", New: "k", CreateOnly: true}}}},
		{name: "metadata asks for delete-before-replace", schema: thing, old: old, typ: thing.Type,
			meta:   map[string]any{"cdkx:deleteBeforeReplace": true},
			inputs: resource.Properties{"name": "b", "value": "v", "ttl": json.Number("300")},
			want: planner.Decision{Op: planner.OpReplace, Reason: `create-only property "name" changed`, DeleteBeforeReplace: true,
				Changes: []planner.PropertyChange{{Name: "name", Old: "a", New: "b", CreateOnly: true}}}},
		{name: "type change replaces", schema: thing, old: old, typ: "Fake::Test::Other",
			inputs: resource.Properties{"name": "a", "value": "v", "ttl": json.Number("300")},
			want: planner.Decision{Op: planner.OpReplace, DeleteBeforeReplace: true,
				Reason: "type changed from Fake::Test::Thing (fake) to Fake::Test::Other (fake)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := planner.Decide(tt.schema, tt.old, tt.typ, "fake", tt.inputs, tt.meta)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Decide() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBuildGraphCycles(t *testing.T) {
	t.Parallel()
	a := &assembly.Assembly{Dir: "cdkx.out", Stacks: []*assembly.Stack{{ID: "S", File: "cdkx.out/S.json", Resources: []*assembly.Resource{
		res("C", resource.Properties{"value": ref("A", "id")}),
		res("A", resource.Properties{"value": ref("B", "id")}),
		res("B", resource.Properties{}, "C"),
		res("D", resource.Properties{}, "E"),
		res("E", resource.Properties{}, "D"),
		res("F", resource.Properties{"value": ref("F", "id")}),
		res("G", resource.Properties{}),
	}}}}
	_, ds := planner.BuildGraph(a, []string{"S"})
	var got []string
	for _, d := range ds {
		got = append(got, d.String())
	}
	want := []string{
		"error: cdkx.out/S.json: resources.F: dependency cycle: F depends on itself; remove the reference to itself",
		"error: cdkx.out/S.json: resources.A: dependency cycle: A → B → C → A; break the cycle by removing one of these references or dependsOn entries",
		"error: cdkx.out/S.json: resources.D: dependency cycle: D → E → D; break the cycle by removing one of these references or dependsOn entries",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("BuildGraph() diagnostics (-want +got):\n%s", diff)
	}
}

func TestCrossStackCycle(t *testing.T) {
	t.Parallel()
	a := &assembly.Assembly{Dir: "cdkx.out", Stacks: []*assembly.Stack{
		{ID: "B", Dependencies: []string{"C"}}, {ID: "A", Dependencies: []string{"B"}}, {ID: "C", Dependencies: []string{"A"}},
	}}
	_, ds := planner.BuildGraph(a, []string{"A", "B", "C"})
	if len(ds) != 1 {
		t.Fatalf("got %d diagnostics, want 1: %v", len(ds), ds)
	}
	if got, want := ds[0].String(), "error: cdkx.out/manifest.json: artifacts.A.dependencies: cross-stack dependency cycle: A → B → C → A; stacks may not read each other's outputs in a circle; move the shared resources to one stack"; got != want {
		t.Errorf("diagnostic = %q, want %q", got, want)
	}
}

// TestPlanPredictsUnknowns checks the plan's predictions: tokens to resources being created or replaced
// are unknown, stable outputs of updated resources are known, deletes come in reverse dependency order.
func TestPlanPredictsUnknowns(t *testing.T) {
	t.Parallel()
	st := state.NewStack("S")
	st.Version = 3
	put := func(id string, inputs resource.Properties, outputs resource.Properties, deps ...string) {
		st.Resources[id] = &state.Resource{LogicalID: id, Type: thing.Type, Provider: "fake", PhysicalID: "p-" + id,
			Inputs: inputs, Outputs: outputs, Dependencies: deps}
	}
	put("Same", resource.Properties{"value": "s"}, resource.Properties{"id": "p-Same", "value": "s"})
	put("Upd", resource.Properties{"value": "u1"}, resource.Properties{"id": "p-Upd", "value": "u1"})
	put("UseSame", resource.Properties{"value": "p-Same"}, resource.Properties{"id": "p-UseSame"}, "Same")
	put("UseUpdID", resource.Properties{"value": "p-Upd"}, resource.Properties{"id": "p-UseUpdID"}, "Upd")
	put("UseUpdValue", resource.Properties{"value": "u1"}, resource.Properties{"id": "p-UseUpdValue"}, "Upd")
	put("Gone1", resource.Properties{}, resource.Properties{"id": "p-Gone1"})
	put("Gone2", resource.Properties{"value": "p-Gone1"}, resource.Properties{"id": "p-Gone2"}, "Gone1")
	a := &assembly.Assembly{Stacks: []*assembly.Stack{{ID: "S", Outputs: map[string]*assembly.Output{}, Resources: []*assembly.Resource{
		res("New", resource.Properties{"value": "n"}),
		res("Same", resource.Properties{"value": "s"}),
		res("Upd", resource.Properties{"value": "u2"}),
		res("UseNew", resource.Properties{"value": ref("New", "id")}),
		res("UseSame", resource.Properties{"value": ref("Same", "id")}),
		res("UseUpdID", resource.Properties{"value": ref("Upd", "id")}),
		res("UseUpdValue", resource.Properties{"value": ref("Upd", "value")}),
	}}}}
	p, ds := planner.Make(planner.Input{Assembly: a, Stacks: []string{"S"}, State: map[string]*state.Stack{"S": st}, Schemas: lookup})
	if ds.HasErrors() {
		t.Fatal(ds.Err())
	}
	got := map[string]string{}
	for _, s := range p.Steps {
		got[s.LogicalID] = string(s.Op)
	}
	var deletes []string
	for _, s := range p.Deletes {
		got[s.LogicalID] = string(s.Op)
		deletes = append(deletes, s.LogicalID)
	}
	want := map[string]string{"New": "create", "Same": "same", "Upd": "update", "UseNew": "create", "UseSame": "same",
		"UseUpdID": "same", "UseUpdValue": "update", "Gone1": "delete", "Gone2": "delete"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ops (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Gone2", "Gone1"}, deletes); diff != "" {
		t.Errorf("delete order (-want +got):\n%s", diff)
	}
	c, u, r, d := p.Counts()
	if diff := cmp.Diff([4]int{2, 2, 0, 2}, [4]int{c, u, r, d}); diff != "" {
		t.Errorf("Counts() (-want +got):\n%s", diff)
	}
}

// TestMakeReusesGraph: a plan made with the graph validation built equals one made from scratch.
func TestMakeReusesGraph(t *testing.T) {
	t.Parallel()
	a := chains(50)
	ops := func(p *planner.Plan) []string {
		var out []string
		for _, s := range p.Steps {
			out = append(out, s.Key()+" "+string(s.Op)+" "+string(resource.Canonical(s.Inputs)))
		}
		return out
	}
	fresh, ds := planner.Make(planner.Input{Assembly: a, Stacks: []string{"S"}, Schemas: lookup})
	if ds.HasErrors() {
		t.Fatal(ds.Err())
	}
	g, ds := planner.BuildGraph(a, []string{"S"})
	if ds.HasErrors() {
		t.Fatal(ds.Err())
	}
	reused, ds := planner.Make(planner.Input{Assembly: a, Stacks: []string{"S"}, Schemas: lookup, Graph: g})
	if ds.HasErrors() {
		t.Fatal(ds.Err())
	}
	if reused.Graph != g {
		t.Errorf("Make built a new graph instead of using the one given")
	}
	if diff := cmp.Diff(ops(fresh), ops(reused)); diff != "" {
		t.Errorf("plans differ (-fresh +reused):\n%s", diff)
	}
}

// TestPlanCheckChange: a schema's CheckChange sees the recorded and the predicted inputs of every in-place
// update (and of nothing else), and its errors fail the plan at the template's file and JSON path.
func TestPlanCheckChange(t *testing.T) {
	t.Parallel()
	grows := thing
	grows.CheckChange = func(old, new resource.Properties, unknown resource.IsUnknownFunc) []resource.FieldError {
		if unknown(new["ttl"]) {
			return nil
		}
		o, _ := old["ttl"].(json.Number).Int64()
		n, _ := new["ttl"].(json.Number).Int64()
		if n < o {
			return []resource.FieldError{{Path: "ttl", Message: "cannot shrink"}}
		}
		return nil
	}
	schemas := func(provider, typ string) (resource.Schema, bool, bool) { return grows, true, typ == grows.Type }
	st := state.NewStack("S")
	st.Version = 1
	for id, ttl := range map[string]string{"Grow": "10", "Shrink": "10", "ReplaceShrink": "10", "Same": "10", "Unknown": "10"} {
		st.Resources[id] = &state.Resource{LogicalID: id, Type: thing.Type, Provider: "fake", PhysicalID: "p-" + id,
			Inputs: resource.Properties{"ttl": json.Number(ttl), "name": id}, Outputs: resource.Properties{"id": "p-" + id}}
	}
	for _, tc := range []struct {
		name      string
		resources []*assembly.Resource
		want      []string // "file path: summary"
	}{
		{"grow, same, replace and unknown pass", []*assembly.Resource{
			res("Grow", resource.Properties{"ttl": json.Number("20"), "name": "Grow"}),
			res("Same", resource.Properties{"ttl": json.Number("10"), "name": "Same"}),
			res("ReplaceShrink", resource.Properties{"ttl": json.Number("5"), "name": "renamed"}),
			res("Unknown", resource.Properties{"ttl": ref("New", "value"), "name": "Unknown"}),
			res("New", resource.Properties{"ttl": json.Number("1"), "name": "New"}),
		}, nil},
		{"a shrink in place fails", []*assembly.Resource{
			res("Grow", resource.Properties{"ttl": json.Number("20"), "name": "Grow"}),
			res("Shrink", resource.Properties{"ttl": json.Number("5"), "name": "Shrink"}),
		}, []string{"S.json resources.Shrink.properties.ttl: cannot shrink"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := &assembly.Assembly{Stacks: []*assembly.Stack{{ID: "S", File: "S.json", Outputs: map[string]*assembly.Output{}, Resources: tc.resources}}}
			p, ds := planner.Make(planner.Input{Assembly: a, Stacks: []string{"S"}, State: map[string]*state.Stack{"S": st}, Schemas: schemas})
			var got []string
			for _, d := range ds {
				got = append(got, d.File+" "+d.Path+": "+d.Summary)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s", diff)
			}
			if (p == nil) != (len(tc.want) > 0) {
				t.Errorf("plan = %v, want a plan only without errors", p)
			}
		})
	}
}
