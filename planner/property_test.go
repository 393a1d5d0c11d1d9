package planner_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/planner"
)

// randomRun is a random assembly of a few stacks whose resources read each other through {ref} tokens
// (nested anywhere in their properties), dependsOn entries and {stackRef} tokens to earlier stacks (from
// properties and from outputs), with manifest-only stack dependencies too; a state that records some of
// its resources, some resources gone from the assembly (with recorded dependencies among them), and the
// outputs of the stacks outside the run; and random --target and --exclude picks.
type randomRun struct {
	a                 *assembly.Assembly
	stacks            []string // the stacks of the run, in a random order
	state             map[string]*state.Stack
	targets, excludes []string
}

func newRandomRun(r *rand.Rand) randomRun {
	a := &assembly.Assembly{Dir: "cdkx.out"}
	n := 1 + r.IntN(5)
	for i := range n {
		s := &assembly.Stack{ID: fmt.Sprintf("S%d", i), Outputs: map[string]*assembly.Output{}}
		deps := map[string]bool{}
		// A value reading an earlier stack's output, or a resource of s (ref), or a constant.
		value := func(resources int) any {
			switch k := r.IntN(6); {
			case k == 0 && i > 0:
				t := fmt.Sprintf("S%d", r.IntN(i))
				deps[t] = true
				return stackRef(t, "O0")
			case k <= 2 && resources > 0:
				return ref(fmt.Sprintf("R%d", r.IntN(resources)), "id")
			default:
				return "v"
			}
		}
		for j := range r.IntN(7) {
			props := resource.Properties{"value": value(j)}
			if r.IntN(3) == 0 {
				props["nested"] = map[string]any{"list": []any{value(j), "x", map[string]any{"deep": value(j)}}}
			}
			var dependsOn []string
			if j > 0 && r.IntN(4) == 0 {
				dependsOn = append(dependsOn, fmt.Sprintf("R%d", r.IntN(j)))
			}
			s.Resources = append(s.Resources, res(fmt.Sprintf("R%d", j), props, dependsOn...))
		}
		// Every stack publishes O0 (a constant, or a read of its own resource or of an earlier stack).
		s.Outputs["O0"] = &assembly.Output{Key: "O0", Value: value(len(s.Resources)), Path: "outputs.O0"}
		if i > 0 && r.IntN(4) == 0 {
			deps[fmt.Sprintf("S%d", r.IntN(i))] = true // a manifest-only dependency
		}
		for d := range deps {
			s.Dependencies = append(s.Dependencies, d)
		}
		slices.Sort(s.Dependencies)
		a.Stacks = append(a.Stacks, s)
	}
	run := randomRun{a: a, state: map[string]*state.Stack{}}
	for _, s := range a.Stacks {
		if len(a.Stacks) > 1 && r.IntN(5) == 0 {
			// Outside the run: deployed before, its outputs recorded.
			st := state.NewStack(s.ID)
			st.Outputs = resource.Properties{"O0": "recorded"}
			run.state[s.ID] = st
			continue
		}
		run.stacks = append(run.stacks, s.ID)
		if r.IntN(3) == 0 {
			continue // never deployed
		}
		st := state.NewStack(s.ID)
		st.Outputs = resource.Properties{"O0": "recorded"}
		for _, res := range s.Resources {
			if r.IntN(3) > 0 {
				rec := &state.Resource{LogicalID: res.LogicalID, Type: thing.Type, Provider: "fake",
					PhysicalID: "p-" + res.LogicalID, Outputs: resource.Properties{"id": "p-" + res.LogicalID},
					Dependencies: planner.ResourceDependencies(res)}
				if r.IntN(6) == 0 { // an object left by an earlier replacement
					rec.Replaced = []state.Object{{Type: thing.Type, Provider: "fake", PhysicalID: "old-" + res.LogicalID}}
				}
				st.Resources[res.LogicalID] = rec
			}
		}
		for k := range r.IntN(4) {
			g := &state.Resource{LogicalID: fmt.Sprintf("G%d", k), Type: thing.Type, Provider: "fake", PhysicalID: fmt.Sprintf("p-G%d", k)}
			if k > 0 && r.IntN(2) == 0 {
				g.Dependencies = []string{fmt.Sprintf("G%d", r.IntN(k))}
			}
			st.Resources[g.LogicalID] = g
		}
		run.state[s.ID] = st
	}
	r.Shuffle(len(run.stacks), func(i, j int) { run.stacks[i], run.stacks[j] = run.stacks[j], run.stacks[i] })
	var keys []string
	for _, id := range run.stacks {
		for _, res := range stackOf(a, id).Resources {
			keys = append(keys, id+"/"+res.LogicalID)
		}
		if st := run.state[id]; st != nil {
			for _, res := range st.SortedResources() {
				if stackOf(a, id).Resource(res.LogicalID) == nil {
					keys = append(keys, id+"/"+res.LogicalID)
				}
			}
		}
	}
	for _, k := range keys {
		switch r.IntN(8) {
		case 0:
			run.targets = append(run.targets, k)
		case 1:
			run.excludes = append(run.excludes, k)
		}
	}
	return run
}

func stackOf(a *assembly.Assembly, id string) *assembly.Stack {
	for _, s := range a.Stacks {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// closure returns from and everything reachable from it along edges.
func closure(edges map[string][]string, from []string) map[string]bool {
	seen := map[string]bool{}
	todo := slices.Clone(from)
	for len(todo) > 0 {
		k := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if !seen[k] {
			seen[k] = true
			todo = append(todo, edges[k]...)
		}
	}
	return seen
}

func inverse(edges map[string][]string) map[string][]string {
	out := map[string][]string{}
	for k, ds := range edges {
		for _, d := range ds {
			out[d] = append(out[d], k)
		}
	}
	return out
}

// model is what a deploy of run depends on, computed from the assembly alone (not through the planner's
// graph): needs maps each resource key of the run to the resource keys it reads, directly — its {ref} and
// dependsOn targets, and through each {stackRef} every resource of the stack read and what that stack's
// outputs read in turn; order adds what it merely waits for (the stacks the manifest names).
func model(run randomRun) (needs, order map[string][]string) {
	inRun := map[string]bool{}
	for _, id := range run.stacks {
		inRun[id] = true
	}
	needs, order = map[string][]string{}, map[string][]string{}
	outputs := func(id string) string { return id + "#outputs" } // what reading stack id's outputs needs
	for _, id := range run.stacks {
		s := stackOf(run.a, id)
		for _, o := range s.Outputs {
			for _, t := range assembly.FindTokens("", o.Value) {
				if t.StackRef != "" && inRun[t.StackRef] {
					needs[outputs(id)] = append(needs[outputs(id)], outputs(t.StackRef))
				}
			}
		}
		for _, r := range s.Resources {
			k := id + "/" + r.LogicalID
			needs[outputs(id)] = append(needs[outputs(id)], k)
			for _, d := range r.DependsOn {
				needs[k] = append(needs[k], id+"/"+d)
			}
			for _, t := range assembly.FindTokens("", r.Properties) {
				switch {
				case t.Ref != "":
					needs[k] = append(needs[k], id+"/"+t.Ref)
				case t.StackRef != "" && inRun[t.StackRef]:
					needs[k] = append(needs[k], outputs(t.StackRef))
				}
			}
			for _, d := range s.Dependencies {
				if inRun[d] {
					order[k] = append(order[k], outputs(d))
				}
			}
		}
	}
	return needs, order
}

// TestSelectionAndOrderAgree checks, over random assemblies, states and --target/--exclude picks, that the
// one dependency model gives a consistent answer everywhere: a deploy selection holds every dependency of
// what it selects and nothing that depends on an exclusion; the plan's graph runs every dependency before
// its dependents; a destroy selection holds every dependent of what it selects and nothing an exclusion
// depends on; and the teardown order is the reverse of the dependencies.
func TestSelectionAndOrderAgree(t *testing.T) {
	t.Parallel()
	for seed := range uint64(400) {
		run := newRandomRun(rand.New(rand.NewPCG(seed, 1)))
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			checkDeploy(t, run)
			checkDestroy(t, run)
		})
	}
}

func checkDeploy(t *testing.T, run randomRun) {
	t.Helper()
	in := planner.Input{Assembly: run.a, Stacks: run.stacks, State: run.state, Schemas: lookup,
		Targets: run.targets, Excludes: run.excludes}
	p, ds := planner.Make(in)
	if ds.HasErrors() {
		t.Fatalf("Make(targets %q, excludes %q): %v", run.targets, run.excludes, ds.Err())
	}
	needs, order := model(run)
	reads := func(k string) []string { // the resources k reads, directly or through stack outputs
		var out []string
		for d := range closure(needs, needs[k]) {
			if !strings.Contains(d, "#") {
				out = append(out, d)
			}
		}
		return out
	}
	selected := func(k string) bool { return p.Selection == nil || p.Selection.Resources[k] }
	inAssembly := map[string]bool{}
	for _, id := range run.stacks {
		for _, r := range stackOf(run.a, id).Resources {
			inAssembly[id+"/"+r.LogicalID] = true
		}
	}
	var excluded []string
	for _, e := range run.excludes {
		if inAssembly[e] {
			excluded = append(excluded, e)
		}
	}
	dependents := closure(inverse(needs), excluded)
	for k := range inAssembly {
		if !selected(k) {
			continue
		}
		for _, d := range reads(k) {
			if !selected(d) {
				t.Errorf("%s is selected but %s, which it reads, is not (targets %q, excludes %q)", k, d, run.targets, run.excludes)
			}
		}
		if dependents[k] {
			t.Errorf("%s is selected but it is excluded or depends on an exclusion (excludes %q)", k, run.excludes)
		}
	}
	targeted := closure(needs, run.targets)
	for k := range inAssembly {
		want := !dependents[k] && (len(run.targets) == 0 || targeted[k])
		if got := selected(k); got != want {
			t.Errorf("selected(%s) = %v, want %v (targets %q, excludes %q)", k, got, want, run.targets, run.excludes)
		}
	}

	// The plan runs the selected resources, each after everything it reads or waits for.
	pos := map[string]int{}
	for i, id := range p.Graph.Order() {
		pos[p.Graph.Nodes[id].Key()] = i
		for _, d := range p.Graph.Dependencies(id) {
			if !slices.Contains(p.Graph.Dependents(d), id) {
				t.Errorf("%s depends on %s, which does not list it as a dependent", p.Graph.Nodes[id].Key(), p.Graph.Nodes[d].Key())
			}
		}
	}
	if len(pos) != len(p.Graph.Nodes) {
		t.Fatalf("Order() has %d nodes, want %d", len(pos), len(p.Graph.Nodes))
	}
	for id, n := range p.Graph.Nodes {
		for _, d := range p.Graph.Dependencies(id) {
			if pos[p.Graph.Nodes[d].Key()] >= pos[n.Key()] {
				t.Errorf("%s runs after %s, which depends on it", p.Graph.Nodes[d].Key(), n.Key())
			}
		}
	}
	var steps []string
	for _, s := range p.Steps {
		steps = append(steps, s.Key())
	}
	for k := range inAssembly {
		if selected(k) != slices.Contains(steps, k) {
			t.Errorf("%s: selected %v, but planned %v", k, selected(k), slices.Contains(steps, k))
		}
	}
	// waits is the whole model of the run order: a resource waits for what it reads and for the stacks
	// its stack depends on; a stack completes after its resources and the stacks it depends on. The plan
	// runs each node after everything it waits for, directly or through nodes the selection left out.
	waits := map[string][]string{}
	node := func(k string) string { return strings.TrimSuffix(k, "#outputs") } // reading outputs waits for the stack
	for k := range inAssembly {
		stack, _, _ := strings.Cut(k, "/")
		waits[stack] = append(waits[stack], k)
		for _, d := range append(slices.Clone(needs[k]), order[k]...) {
			waits[k] = append(waits[k], node(d))
		}
	}
	for _, id := range run.stacks {
		for _, d := range stackOf(run.a, id).Dependencies {
			if slices.Contains(run.stacks, d) {
				waits[id] = append(waits[id], d)
			}
		}
	}
	// The engine walks Dependencies, not Order: each node must reach what it waits for through them.
	for id, n := range p.Graph.Nodes {
		k, i := n.Key(), pos[n.Key()]
		ancestors := map[string]bool{}
		for _, a := range p.Graph.Ancestors(id) {
			ancestors[p.Graph.Nodes[a].Key()] = true
		}
		for d := range closure(waits, waits[k]) {
			if j, ok := pos[d]; ok && (j >= i || !ancestors[d]) {
				t.Errorf("%s runs at %d (an ancestor: %v), not before %s at %d, which waits for it", d, j, ancestors[d], k, i)
			}
		}
	}

	// Resources only in state: a target takes what was recorded as depending on it, an exclusion keeps
	// what it was recorded as depending on; the selected ones are deleted, dependents first.
	goneDeps := map[string][]string{}
	for _, id := range run.stacks {
		if st := run.state[id]; st != nil {
			for _, r := range st.Resources {
				if k := id + "/" + r.LogicalID; !inAssembly[k] {
					goneDeps[k] = nil
					for _, d := range r.Dependencies {
						goneDeps[k] = append(goneDeps[k], id+"/"+d)
					}
				}
			}
		}
	}
	targetedGone, excludedGone := closure(inverse(goneDeps), run.targets), closure(goneDeps, run.excludes)
	deleted := map[string]int{}
	for i, s := range p.Deletes {
		if s.Object == nil {
			deleted[s.Key()] = i
		}
	}
	for k, ds := range goneDeps {
		want := (len(run.targets) == 0 || targetedGone[k]) && !excludedGone[k]
		if got := selected(k); got != want {
			t.Errorf("selected(%s) = %v, want %v (only in state; targets %q, excludes %q)", k, got, want, run.targets, run.excludes)
		}
		if _, ok := deleted[k]; ok != want {
			t.Errorf("%s only in state: deleted %v, want %v", k, ok, want)
		}
		for _, d := range ds {
			i, okK := deleted[k]
			j, okD := deleted[d]
			if okK && okD && j <= i {
				t.Errorf("%s is deleted at %d, not after %s at %d, which depends on it", d, j, k, i)
			}
		}
	}
	for _, s := range p.Deletes {
		if !selected(s.Key()) {
			t.Errorf("%s is deleted but not selected", s.Key())
		}
	}
}

// destroyModel maps each recorded resource key to what it depends on: its recorded dependencies in its
// stack and every resource of the stacks its stack depends on.
func destroyModel(stacks []*state.Stack) map[string][]string {
	byName := map[string]*state.Stack{}
	for _, st := range stacks {
		byName[st.Name] = st
	}
	deps := map[string][]string{}
	for _, st := range stacks {
		for _, r := range st.Resources {
			k := st.Name + "/" + r.LogicalID
			deps[k] = nil
			for _, d := range r.Dependencies {
				if st.Resources[d] != nil {
					deps[k] = append(deps[k], st.Name+"/"+d)
				}
			}
			for _, sd := range st.Dependencies {
				if other := byName[sd]; other != nil {
					for id := range other.Resources {
						deps[k] = append(deps[k], sd+"/"+id)
					}
				}
			}
		}
	}
	return deps
}

func checkDestroy(t *testing.T, run randomRun) {
	t.Helper()
	var stacks []*state.Stack
	for _, id := range run.stacks {
		if st := run.state[id]; st != nil {
			c := *st
			c.Dependencies = stackOf(run.a, id).Dependencies
			stacks = append(stacks, &c)
		}
	}
	var keys []string
	for _, st := range stacks {
		for id := range st.Resources {
			keys = append(keys, st.Name+"/"+id)
		}
	}
	pick := func(ids []string) []string {
		return slices.DeleteFunc(slices.Clone(ids), func(k string) bool { return !slices.Contains(keys, k) })
	}
	targets, excludes := pick(run.targets), pick(run.excludes)
	sel, err := planner.SelectDestroy(stacks, targets, excludes)
	if err != nil {
		t.Fatalf("SelectDestroy(%q, %q): %v", targets, excludes, err)
	}
	deps := destroyModel(stacks)
	kept := closure(deps, excludes)
	targeted := closure(inverse(deps), targets)
	for _, k := range keys {
		want := !kept[k] && (len(targets) == 0 || targeted[k])
		if got := sel.Resources[k]; got != want {
			t.Errorf("destroy: selected(%s) = %v, want %v (targets %q, excludes %q)", k, got, want, targets, excludes)
		}
		if !sel.Resources[k] {
			continue
		}
		for _, dependent := range inverse(deps)[k] {
			if !sel.Resources[dependent] {
				t.Errorf("destroy: %s is selected but %s, which depends on it, is not", k, dependent)
			}
		}
	}
	// The teardown order deletes every dependent before what it depends on: the reverse of a deploy.
	filtered := sel.FilterStacks(stacks)
	stackDeps := map[string][]string{}
	for _, st := range filtered {
		stackDeps[st.Name] = st.Dependencies
	}
	g, err := planner.TeardownGraph(planner.DestroySteps(filtered), stackDeps)
	if err != nil {
		t.Fatalf("TeardownGraph: %v", err)
	}
	pos := map[string]int{}
	nodes := map[string][]int{} // the nodes of each resource: its live object and those left by replacements
	for i, id := range g.Order() {
		k := g.Nodes[id].Key()
		pos[k] = max(pos[k], i)
		nodes[k] = append(nodes[k], id)
	}
	for k, ds := range deps {
		for _, d := range ds {
			if len(nodes[k]) == 0 || len(nodes[d]) == 0 {
				continue
			}
			// Every object of d is deleted after every object of k, through Dependencies (what the engine walks).
			for _, dn := range nodes[d] {
				before := map[int]bool{}
				for _, a := range g.Ancestors(dn) {
					before[a] = true
				}
				for _, kn := range nodes[k] {
					if !before[kn] {
						t.Errorf("teardown does not delete %s (node %d) before %s (node %d), which it depends on", k, kn, d, dn)
					}
				}
			}
		}
	}
	for id := range g.Nodes {
		for _, d := range g.Dependencies(id) {
			if pos[g.Nodes[d].Key()] > pos[g.Nodes[id].Key()] {
				t.Errorf("teardown: %s runs after %s, which waits for it", g.Nodes[d].Key(), g.Nodes[id].Key())
			}
		}
	}
}
