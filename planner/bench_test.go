package planner_test

import (
	"fmt"
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
