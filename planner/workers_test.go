package planner_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/pkg/diag"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/planner"
)

// stepView is what a step says, for comparing two plans' steps with cmp.Diff: the pointers it holds
// compare by identity (the same resource, the same record), the rest by value.
type stepView struct {
	Key, Type, Provider, SchemaType string
	Decision                        planner.Decision
	SameResource, SameOld           bool
	Object                          *state.Object
	Inputs                          resource.Properties
	Dependencies                    []string
	ForceReplace                    bool
	Rank                            int
}

type planView struct {
	Stacks          []string
	Steps, Deletes  []stepView
	Outputs         map[string]resource.Properties
	Diagnostics     diag.Diagnostics
	Nodes, Selected int
}

func viewOf(p *planner.Plan, ds diag.Diagnostics, ref *planner.Plan) planView {
	v := planView{Diagnostics: ds}
	if p == nil {
		return v
	}
	steps := func(list, refs []*planner.Step) []stepView {
		var out []stepView
		for i, s := range list {
			sv := stepView{Key: s.Key(), Type: s.Type, Provider: s.Provider, SchemaType: s.Schema.Type, Decision: s.Decision,
				Object: s.Object, Inputs: s.Inputs, Dependencies: s.Dependencies, ForceReplace: s.ForceReplace, Rank: s.Rank}
			if i < len(refs) {
				sv.SameResource, sv.SameOld = s.Resource == refs[i].Resource, s.Old == refs[i].Old
			}
			out = append(out, sv)
		}
		return out
	}
	var refSteps, refDeletes []*planner.Step
	if ref != nil {
		refSteps, refDeletes = ref.Steps, ref.Deletes
	}
	v.Stacks, v.Outputs = p.Stacks, p.Outputs
	v.Steps, v.Deletes = steps(p.Steps, refSteps), steps(p.Deletes, refDeletes)
	v.Nodes = len(p.Graph.Nodes)
	if p.Selection != nil {
		v.Selected = len(p.Graph.Order())
	}
	return v
}

// variedRun returns a plan input over a few stacks whose resources read each other ({ref} tokens to
// stable and unstable outputs, nested, and {stackRef} tokens to earlier stacks' outputs), and a state
// that makes every kind of step: creates (never deployed, or without a physical ID), no-ops, updates
// (a changed value, a default left out), replacements (a create-only property or the type changed),
// unknown inputs (a read of a resource that changes), pending operations, objects left by replacements,
// resources gone from the assembly, updates a schema's CheckChange refuses; with random --target,
// --exclude and --replace picks. n is about how
// many resources it has.
func variedRun(r *rand.Rand, n int) planner.Input {
	a := &assembly.Assembly{Dir: "cdkx.out"}
	stacks := 1 + r.IntN(4)
	var names []string
	for i := range stacks {
		s := &assembly.Stack{ID: fmt.Sprintf("S%d", i), File: fmt.Sprintf("S%d.json", i), Outputs: map[string]*assembly.Output{}}
		deps := map[string]bool{}
		count := 1 + r.IntN(max(1, 2*n/stacks))
		value := func(j int) any {
			switch k := r.IntN(9); {
			case k == 0 && i > 0:
				t := fmt.Sprintf("S%d", r.IntN(i))
				deps[t] = true
				return stackRef(t, []string{"O0", "O1", "Missing"}[r.IntN(3)])
			case k <= 3 && j > 0:
				return ref(fmt.Sprintf("R%d", j-1-r.IntN(min(j, 12))), []string{"id", "value", "crn", "missing"}[r.IntN(4)])
			case k == 4:
				return json.Number(fmt.Sprint(r.IntN(3)))
			default:
				return []string{"a", "b"}[r.IntN(2)]
			}
		}
		for j := range count {
			props := resource.Properties{"value": value(j), "name": fmt.Sprintf("n%d", j)}
			if r.IntN(3) == 0 {
				props["name"] = value(j)
			}
			if r.IntN(2) == 0 {
				props["ttl"] = json.Number("3600")
			}
			if r.IntN(3) == 0 {
				props["value"] = map[string]any{"list": []any{value(j), "x", map[string]any{"deep": value(j)}}}
			}
			var dependsOn []string
			if j > 0 && r.IntN(5) == 0 {
				dependsOn = append(dependsOn, fmt.Sprintf("R%d", r.IntN(j)))
			}
			s.Resources = append(s.Resources, res(fmt.Sprintf("R%d", j), props, dependsOn...))
		}
		s.Outputs["O0"] = &assembly.Output{Key: "O0", Value: value(len(s.Resources)), Path: "outputs.O0"}
		s.Outputs["O1"] = &assembly.Output{Key: "O1", Value: map[string]any{"v": value(len(s.Resources))}, Path: "outputs.O1"}
		if i > 0 && r.IntN(4) == 0 {
			deps[fmt.Sprintf("S%d", r.IntN(i))] = true
		}
		for d := range deps {
			s.Dependencies = append(s.Dependencies, d)
		}
		a.Stacks = append(a.Stacks, s)
		names = append(names, s.ID)
	}
	in := planner.Input{Assembly: a, Stacks: names, State: map[string]*state.Stack{}, Schemas: lookup}
	if r.IntN(4) == 0 { // updates of a value recorded as "changed" fail the schema's CheckChange
		checked := thing
		checked.CheckChange = func(old, _ resource.Properties, _ resource.IsUnknownFunc) []resource.FieldError {
			if old["value"] == "changed" {
				return []resource.FieldError{{Path: "value", Message: "cannot change"}, {Message: "and more"}}
			}
			return nil
		}
		in.Schemas = func(provider, typ string) (resource.Schema, bool, bool) {
			return checked, provider == "fake", provider == "fake" && typ == checked.Type
		}
	}
	// First state: every resource deployed with its predicted inputs (unknowns as a value), so that a
	// plan against it is mostly no-ops; then each record is changed one way or another, or not.
	first := map[string]*state.Stack{}
	for _, s := range a.Stacks {
		first[s.ID] = state.NewStack(s.ID)
	}
	for range 2 { // twice: the second pass records what the first predicted from recorded outputs
		p, ds := planner.ReferenceMake(planner.Input{Assembly: a, Stacks: names, State: first, Schemas: lookup})
		if ds.HasErrors() {
			panic(ds.Err())
		}
		for _, st := range p.Steps {
			inputs := resource.Properties{}
			for k, v := range st.Inputs {
				if resource.ContainsUnknown(v) {
					v = "was unknown"
				}
				inputs[k] = v
			}
			first[st.Stack].Resources[st.LogicalID] = &state.Resource{LogicalID: st.LogicalID, Type: st.Type, Provider: st.Provider,
				PhysicalID: "p-" + st.LogicalID, Inputs: inputs,
				Outputs:      resource.Properties{"id": "p-" + st.LogicalID, "value": "v-" + st.LogicalID, "crn": "crn:" + st.LogicalID},
				Dependencies: st.Dependencies}
		}
		for name, outs := range p.Outputs {
			first[name].Outputs = outs
		}
	}
	var keys []string
	for _, s := range a.Stacks {
		if r.IntN(6) == 0 {
			continue // never deployed
		}
		st := first[s.ID]
		for _, rec := range st.SortedResources() {
			keys = append(keys, s.ID+"/"+rec.LogicalID)
			switch r.IntN(12) {
			case 0:
				delete(st.Resources, rec.LogicalID)
			case 1:
				rec.PhysicalID = ""
			case 2:
				rec.Inputs = resource.Properties{"value": "changed", "name": rec.Inputs["name"]}
			case 3:
				rec.Inputs = resource.Clone(rec.Inputs).(resource.Properties)
				rec.Inputs["name"] = "renamed"
			case 4:
				rec.Type = "Fake::Test::Other"
			case 5:
				rec.Pending = &state.PendingOperation{Op: state.PendingUpdate, PhysicalID: rec.PhysicalID}
			case 6:
				rec.Replaced = []state.Object{{Type: rec.Type, Provider: "fake", PhysicalID: "old-" + rec.LogicalID}}
			case 7:
				delete(rec.Inputs, "ttl")
			}
		}
		for k := range r.IntN(3) {
			g := &state.Resource{LogicalID: fmt.Sprintf("G%d", k), Type: thing.Type, Provider: "fake", PhysicalID: fmt.Sprintf("p-G%d", k)}
			st.Resources[g.LogicalID] = g
		}
		st.Version = 1
		in.State[s.ID] = st
	}
	picks := r.IntN(3) // 0: --target and --exclude, 1: --replace (of resources the plan covers), 2: neither
	for _, k := range keys {
		switch roll := r.IntN(40); {
		case picks == 0 && roll == 0:
			in.Targets = append(in.Targets, k)
		case picks == 0 && roll == 1:
			in.Excludes = append(in.Excludes, k)
		case picks == 1 && roll < 4:
			in.Replace = append(in.Replace, k)
		}
	}
	return in
}

// TestMakeMatchesReference: Make, its workers taking blocks of a few nodes, plans exactly what the one walk
// of Order it replaced (ReferenceMake) plans — steps, decisions, predicted inputs and outputs, ranks,
// deletes, diagnostics — on varied plans and on the random runs of the property test. Not parallel: it
// sets the workers' block size and GOMAXPROCS.
func TestMakeMatchesReference(t *testing.T) {
	for _, blocks := range []struct{ block, procs int }{{1, 4}, {3, 2}, {16, 3}, {256, 2}} {
		restore := planner.PlanInBlocks(blocks.block, blocks.procs)
		for seed := range uint64(150) {
			r := rand.New(rand.NewPCG(seed, 22))
			var in planner.Input
			if seed%3 == 0 {
				run := newRandomRun(r)
				in = planner.Input{Assembly: run.a, Stacks: run.stacks, State: run.state, Schemas: lookup,
					Targets: run.targets, Excludes: run.excludes}
			} else {
				in = variedRun(r, []int{5, 40, 400}[seed%3])
			}
			want, wantDs := planner.ReferenceMake(in)
			if seed%2 == 0 && len(in.Targets)+len(in.Excludes) == 0 {
				g, ds := planner.BuildGraph(in.Assembly, in.Stacks)
				if ds.HasErrors() {
					t.Fatalf("seed %d: BuildGraph: %v", seed, ds.Err())
				}
				in.Graph = g
			}
			got, gotDs := planner.Make(in)
			if diff := cmp.Diff(viewOf(want, wantDs, want), viewOf(got, gotDs, want)); diff != "" {
				t.Errorf("block %d, seed %d: Make differs from the reference (-reference +Make):\n%s", blocks.block, seed, diff)
			}
		}
		restore()
	}
}

// TestMakePanicsAsItsCaller: a panic in a worker (a schema's CheckChange, here) is Make's own, as without
// workers, whichever worker meets it, and the other workers do not wait for what it left unplanned. Not
// parallel: it sets the workers' block size.
func TestMakePanicsAsItsCaller(t *testing.T) {
	defer planner.PlanInBlocks(1, 4)()
	panicky := thing
	panicky.CheckChange = func(old, _ resource.Properties, _ resource.IsUnknownFunc) []resource.FieldError {
		if old["name"] == "boom" {
			panic("boom")
		}
		return nil
	}
	schemas := func(provider, typ string) (resource.Schema, bool, bool) { return panicky, true, typ == panicky.Type }
	st := state.NewStack("S")
	a := &assembly.Assembly{Stacks: []*assembly.Stack{{ID: "S", Outputs: map[string]*assembly.Output{}}}}
	for i := range 50 {
		id, name := fmt.Sprintf("R%02d", i), fmt.Sprintf("R%02d", i)
		if i == 20 {
			name = "boom"
		}
		props := resource.Properties{"name": name, "value": "new"}
		if i > 0 {
			props["ttl"] = ref(fmt.Sprintf("R%02d", i-1), "id")
		}
		a.Stacks[0].Resources = append(a.Stacks[0].Resources, res(id, props))
		st.Resources[id] = &state.Resource{LogicalID: id, Type: thing.Type, Provider: "fake", PhysicalID: "p-" + id,
			Inputs: resource.Properties{"name": name, "value": "old"}, Outputs: resource.Properties{"id": "p-" + id}}
	}
	var got any
	func() {
		defer func() { got = recover() }()
		planner.Make(planner.Input{Assembly: a, Stacks: []string{"S"}, State: map[string]*state.Stack{"S": st}, Schemas: schemas})
	}()
	if got != "boom" {
		t.Errorf("Make panicked with %v, want boom", got)
	}
}
