package planner

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/graph"
	"gonum.org/v1/gonum/graph/simple"
	"gonum.org/v1/gonum/graph/topo"
)

// TestSortMatchesGonum: the order build computes is the one gonum's topo.SortStabilized gives, nodes
// ordered by ID, which is the order plans had before (a plan lists its steps in it), on random DAGs.
func TestSortMatchesGonum(t *testing.T) {
	t.Parallel()
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 2))
		n := r.IntN(40)
		b := newBuilder(n)
		dg := simple.NewDirectedGraph()
		perm := r.Perm(n) // a random topological order, so that edges go both ways between IDs
		rank := make([]int, n)
		for i, id := range perm {
			rank[id] = i
		}
		for id := range n {
			b.add(Node{Kind: ResourceNode, Stack: "S", LogicalID: fmt.Sprint(id)})
			dg.AddNode(simple.Node(id))
		}
		for range r.IntN(3 * (n + 1)) {
			x, y := r.IntN(n+1), r.IntN(n+1)
			if x >= n || y >= n || rank[x] == rank[y] {
				continue
			}
			if rank[x] > rank[y] {
				x, y = y, x
			}
			b.edge(x, y)
			dg.SetEdge(dg.NewEdge(simple.Node(x), simple.Node(y)))
		}
		g, err := b.build()
		if err != nil {
			t.Fatalf("seed %d: build: %v", seed, err)
		}
		want, err := topo.SortStabilized(dg, func(ns []graph.Node) {
			slices.SortFunc(ns, func(a, b graph.Node) int { return int(a.ID() - b.ID()) })
		})
		if err != nil {
			t.Fatalf("seed %d: gonum: %v", seed, err)
		}
		ids := make([]int, len(want))
		for i, n := range want {
			ids[i] = int(n.ID())
		}
		if !slices.Equal(ids, g.Order()) {
			t.Errorf("seed %d: Order() = %v, gonum's SortStabilized = %v", seed, g.Order(), ids)
		}
	}
}
