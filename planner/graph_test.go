package planner_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/planner"
)

// graphAssembly is Base (manifest only, no reads) ← Net (Vpc; Subnet → Vpc; output VpcId reads Vpc) ←
// App (Web reads Net's VpcId; Log reads nothing), where App also depends on Base through the manifest.
func graphAssembly() *assembly.Assembly {
	return &assembly.Assembly{Stacks: []*assembly.Stack{
		{ID: "Base", Resources: []*assembly.Resource{res("Key", resource.Properties{})}},
		{ID: "Net", Dependencies: []string{"Base"},
			Outputs: map[string]*assembly.Output{"VpcId": {Key: "VpcId", Value: ref("Vpc", "id")}},
			Resources: []*assembly.Resource{
				res("Subnet", resource.Properties{"value": ref("Vpc", "id")}),
				res("Vpc", resource.Properties{}),
			}},
		{ID: "App", Dependencies: []string{"Base", "Net"}, Resources: []*assembly.Resource{
			res("Log", resource.Properties{}),
			res("Web", resource.Properties{"value": stackRef("Net", "VpcId")}),
		}},
	}}
}

// keys returns the keys of ids, in order.
func keys(g *planner.Graph, ids []int) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = g.Nodes[id].Key()
	}
	return out
}

func find(t *testing.T, g *planner.Graph, key string) int {
	t.Helper()
	for id, n := range g.Nodes {
		if n.Key() == key {
			return id
		}
	}
	t.Fatalf("no node %s", key)
	return -1
}

func TestGraphClosures(t *testing.T) {
	t.Parallel()
	g, ds := planner.BuildGraph(graphAssembly(), []string{"Base", "Net", "App"})
	if ds.HasErrors() {
		t.Fatal(ds.Err())
	}
	tests := []struct {
		name string
		got  []int
		want []string
	}{
		{name: "ancestors of Web: everything it waits for, its stack's manifest dependencies included",
			got:  g.Ancestors(find(t, g, "App/Web")),
			want: []string{"Base/Key", "Base", "Net/Subnet", "Net/Vpc", "Net", "App/Web"}},
		{name: "references of Web: what it reads, through Net's outputs the whole of Net",
			got:  g.References().Ancestors(find(t, g, "App/Web")),
			want: []string{"Net/Subnet", "Net/Vpc", "Net", "App/Web"}},
		{name: "descendants of Vpc: all that waits for it",
			got:  g.Descendants(find(t, g, "Net/Vpc")),
			want: []string{"Net/Subnet", "Net/Vpc", "Net", "App/Log", "App/Web", "App"}},
		{name: "references to Vpc: all that reads it, Log not",
			got:  g.References().Descendants(find(t, g, "Net/Vpc")),
			want: []string{"Net/Subnet", "Net/Vpc", "Net", "App/Web", "App"}},
		{name: "several IDs, duplicates and IDs out of range",
			got:  g.Ancestors(find(t, g, "Net/Vpc"), find(t, g, "Base/Key"), find(t, g, "Net/Vpc"), -1, len(g.Nodes)),
			want: []string{"Base/Key", "Base", "Net/Vpc"}},
		{name: "none", got: g.Descendants(), want: []string{}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, keys(g, tt.got), cmpopts.SortSlices(less), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
		for i := 1; i < len(tt.got); i++ {
			if tt.got[i-1] >= tt.got[i] {
				t.Errorf("%s: IDs %v are not ascending", tt.name, tt.got)
			}
		}
	}
	if g.References().References() != g.References() {
		t.Errorf("References().References() is not References()")
	}
}

func TestGraphSubgraph(t *testing.T) {
	t.Parallel()
	g, ds := planner.BuildGraph(graphAssembly(), []string{"Base", "Net", "App"})
	if ds.HasErrors() {
		t.Fatal(ds.Err())
	}
	// Keep Base/Key, Net/Vpc and App/Web: Web reaches Vpc through Net's node, and Vpc and Web reach Key
	// through Base's.
	keep := map[string]bool{"Base/Key": true, "Net/Vpc": true, "App/Web": true}
	sub := g.Subgraph(func(id int) bool { return keep[g.Nodes[id].Key()] })
	if got := keys(sub, sub.Order()); !cmp.Equal(got, []string{"Base/Key", "Net/Vpc", "App/Web"}) {
		t.Errorf("Order() = %q, want Base/Key, Net/Vpc, App/Web (g's order without the rest)", got)
	}
	for id, n := range sub.Nodes {
		if n.ID != id {
			t.Errorf("node %s has ID %d at index %d", n.Key(), n.ID, id)
		}
	}
	web := find(t, sub, "App/Web")
	if diff := cmp.Diff([]string{"Base/Key", "Net/Vpc"}, keys(sub, sub.Dependencies(web))); diff != "" {
		t.Errorf("Dependencies(App/Web) (-want +got):\n%s", diff)
	}
	// Web reads Vpc (through Net's outputs) but only waits for Key (through App's manifest dependency).
	if diff := cmp.Diff([]string{"Net/Vpc"}, keys(sub, sub.References().Dependencies(web))); diff != "" {
		t.Errorf("References().Dependencies(App/Web) (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Net/Vpc", "App/Web"}, keys(sub, sub.Dependents(find(t, sub, "Base/Key")))); diff != "" {
		t.Errorf("Dependents(Base/Key) (-want +got):\n%s", diff)
	}
	if g.Nodes[find(t, g, "App/Web")] == sub.Nodes[web] {
		t.Errorf("Subgraph shares its nodes with g; want copies")
	}
}

func TestStackOrder(t *testing.T) {
	t.Parallel()
	a := graphAssembly()
	a.Stacks[0], a.Stacks[2] = a.Stacks[2], a.Stacks[0] // App, Net, Base in the manifest
	a.Stacks = append(a.Stacks, &assembly.Stack{ID: "Alone"})
	if diff := cmp.Diff([]string{"Base", "Net", "App", "Alone"}, planner.StackOrder(a)); diff != "" {
		t.Errorf("StackOrder() (-want +got):\n%s", diff)
	}
}
