package planner_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/planner"
)

// chains returns one stack of n resources in chains of depth 10, each reading the previous one's id.
func chains(n int) *assembly.Assembly {
	st := &assembly.Stack{ID: "S", Outputs: map[string]*assembly.Output{}}
	for i := range n {
		props := resource.Properties{"value": "v"}
		if i%10 != 0 {
			props["value"] = ref(fmt.Sprintf("R%06d", i-1), "id")
		}
		st.Resources = append(st.Resources, res(fmt.Sprintf("R%06d", i), props))
	}
	return &assembly.Assembly{Stacks: []*assembly.Stack{st}}
}

// data is the schema of Cdkx::Core::Data (adapters/core), which the planner sees through dataLookup.
var data = resource.Schema{Type: "Cdkx::Core::Data", Outputs: []string{"output", "id"}, StableOutputs: []string{"id"},
	Properties: map[string]resource.PropertySchema{
		"input":           {Kind: resource.KindAny},
		"triggersReplace": {Kind: resource.KindAny, CreateOnly: true},
	}}

func dataLookup(provider, typ string) (resource.Schema, bool, bool) {
	return data, provider == "cdkx", provider == "cdkx" && typ == data.Type
}

// dataChains returns the assembly `go run ./bench` deploys, in memory: one stack of n Cdkx::Core::Data
// resources in chains of depth 10, each one's input holding its chain, depth, a payload and (but the
// first of a chain) the id of the previous one through a {ref, attr} token; and a state that records every
// resource as deployed with exactly those inputs, so that planning the one against the other is all no-ops.
func dataChains(n int) (*assembly.Assembly, map[string]*state.Stack) {
	as := &assembly.Stack{ID: "Bench", Outputs: map[string]*assembly.Output{}}
	st := state.NewStack("Bench")
	st.Version = 1
	for i := range n {
		c, d := i/10, i%10
		id := fmt.Sprintf("Chain%dNode%d%08X", c, d, i)
		input := map[string]any{"chain": json.Number(strconv.Itoa(c)), "depth": json.Number(strconv.Itoa(d)), "payload": "value-" + id}
		recorded := map[string]any{"chain": input["chain"], "depth": input["depth"], "payload": input["payload"]}
		var deps []string
		if d > 0 {
			prev := fmt.Sprintf("Chain%dNode%d%08X", c, d-1, i-1)
			input["previous"] = ref(prev, "id")
			recorded["previous"] = "p-" + prev
			deps = []string{prev}
		}
		as.Resources = append(as.Resources, &assembly.Resource{LogicalID: id, Type: data.Type, Provider: "cdkx",
			Properties: resource.Properties{"input": input}, Path: "resources." + id,
			Metadata: map[string]any{"cdkx:path": fmt.Sprintf("Bench/Chain%d/Node%d", c, d)}})
		st.Resources[id] = &state.Resource{LogicalID: id, Type: data.Type, Provider: "cdkx", PhysicalID: "p-" + id,
			Inputs:       resource.Properties{"input": recorded},
			Outputs:      resource.Properties{"id": "p-" + id, "output": recorded},
			Dependencies: deps}
	}
	slices.SortFunc(as.Resources, func(a, b *assembly.Resource) int { return strings.Compare(a.LogicalID, b.LogicalID) })
	return &assembly.Assembly{Stacks: []*assembly.Stack{as}}, map[string]*state.Stack{"Bench": st}
}

// chainedStacks returns n stacks S00000 … each holding one resource that reads the previous stack's
// output through a {stackRef}, and publishing its own id as output Out: a chain of n stacks.
func chainedStacks(n int) (*assembly.Assembly, []string) {
	a := &assembly.Assembly{}
	names := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("S%05d", i)
		props := resource.Properties{"value": "v"}
		var deps []string
		if i > 0 {
			props["value"] = stackRef(names[i-1], "Out")
			deps = []string{names[i-1]}
		}
		a.Stacks = append(a.Stacks, &assembly.Stack{ID: names[i], Dependencies: deps,
			Resources: []*assembly.Resource{res("R", props)},
			Outputs:   map[string]*assembly.Output{"Out": {Key: "Out", Value: ref("R", "id"), Path: "outputs.Out"}}})
	}
	return a, names
}

// BenchmarkBuildGraph measures the gonum dependency graph (with cycle detection) of 10,000 resources.
func BenchmarkBuildGraph(b *testing.B) {
	a := chains(10000)
	for b.Loop() {
		if _, ds := planner.BuildGraph(a, []string{"S"}); ds.HasErrors() {
			b.Fatal(ds.Err())
		}
	}
}

// BenchmarkMake measures a whole first plan of 10,000 resources (graph, predictions, decisions).
func BenchmarkMake(b *testing.B) {
	a := chains(10000)
	for b.Loop() {
		p, ds := planner.Make(planner.Input{Assembly: a, Stacks: []string{"S"}, State: map[string]*state.Stack{}, Schemas: lookup})
		if ds.HasErrors() || len(p.Steps) != 10000 {
			b.Fatal(ds.Err())
		}
	}
}

// BenchmarkMakeNoOp measures the planner's share of `cdkx diff` on the assembly `go run ./bench` deploys,
// 100,000 Cdkx::Core::Data resources in chains of depth 10 in one stack, against a state that records
// them all as they are declared: BuildGraph (validation's cycle check) and Make reusing that graph, which
// decides 100,000 no-ops.
func BenchmarkMakeNoOp(b *testing.B) {
	const n = 100000
	a, st := dataChains(n)
	b.ReportAllocs()
	for b.Loop() {
		g, ds := planner.BuildGraph(a, []string{"Bench"})
		if ds.HasErrors() {
			b.Fatal(ds.Err())
		}
		p, ds := planner.Make(planner.Input{Assembly: a, Stacks: []string{"Bench"}, State: st, Schemas: dataLookup, Graph: g})
		if ds.HasErrors() || len(p.Steps) != n || p.HasChanges() {
			b.Fatalf("Make: %v, %d steps, changes %v", ds.Err(), len(p.Steps), p.HasChanges())
		}
	}
}

// BenchmarkMakeChainedStacks measures the planner's share of `cdkx diff` on N stacks chained through
// {stackRef}s (each depends on the previous one), never deployed: BuildGraph over every stack (validation),
// StackOrder (stack selection) and Make reusing the graph. It should grow linearly with N.
func BenchmarkMakeChainedStacks(b *testing.B) {
	for _, n := range []int{2500, 10000, 20000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			a, names := chainedStacks(n)
			b.ReportAllocs()
			for b.Loop() {
				g, ds := planner.BuildGraph(a, names)
				if ds.HasErrors() {
					b.Fatal(ds.Err())
				}
				if order := planner.StackOrder(a); len(order) != n {
					b.Fatalf("StackOrder: %d stacks, want %d", len(order), n)
				}
				p, ds := planner.Make(planner.Input{Assembly: a, Stacks: names, State: map[string]*state.Stack{}, Schemas: lookup, Graph: g})
				if ds.HasErrors() || len(p.Steps) != n {
					b.Fatalf("Make: %v, %d steps", ds.Err(), len(p.Steps))
				}
			}
		})
	}
}

// BenchmarkSelectChainedStacks measures a targeted plan of N chained stacks (as BenchmarkMakeChainedStacks):
// --target the last stack's resource, which reads the whole chain, and --exclude the middle one's, which
// takes the second half out. Selection and the subgraph should grow linearly with N.
func BenchmarkSelectChainedStacks(b *testing.B) {
	for _, n := range []int{2500, 10000, 20000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			a, names := chainedStacks(n)
			g, ds := planner.BuildGraph(a, names)
			if ds.HasErrors() {
				b.Fatal(ds.Err())
			}
			b.ReportAllocs()
			for b.Loop() {
				p, ds := planner.Make(planner.Input{Assembly: a, Stacks: names, State: map[string]*state.Stack{}, Schemas: lookup,
					Graph: g, Targets: []string{names[n-1] + "/R"}, Excludes: []string{names[n/2] + "/R"}})
				if ds.HasErrors() || len(p.Steps) != n/2 {
					b.Fatalf("Make: %v, %d steps, want %d", ds.Err(), len(p.Steps), n/2)
				}
			}
		})
	}
}

// BenchmarkMakeNoOpPlan measures Make alone on the assembly and state of BenchmarkMakeNoOp, reusing one
// graph: the planning a no-op `cdkx diff` does after validation, on its critical path.
func BenchmarkMakeNoOpPlan(b *testing.B) {
	const n = 100000
	a, st := dataChains(n)
	g, ds := planner.BuildGraph(a, []string{"Bench"})
	if ds.HasErrors() {
		b.Fatal(ds.Err())
	}
	b.ReportAllocs()
	for b.Loop() {
		p, ds := planner.Make(planner.Input{Assembly: a, Stacks: []string{"Bench"}, State: st, Schemas: dataLookup, Graph: g})
		if ds.HasErrors() || len(p.Steps) != n || p.HasChanges() {
			b.Fatalf("Make: %v, %d steps, changes %v", ds.Err(), len(p.Steps), p.HasChanges())
		}
	}
}
