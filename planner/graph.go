package planner

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"gonum.org/v1/gonum/graph"
	"gonum.org/v1/gonum/graph/simple"
	"gonum.org/v1/gonum/graph/topo"
)

// NodeKind tells what a graph node stands for.
type NodeKind int

const (
	// ResourceNode is one resource step (create, update, replace or no-op) or, in a teardown graph, the
	// deletion of one object.
	ResourceNode NodeKind = iota
	// StackNode completes a stack: it resolves the stack's outputs once all its resources are done.
	StackNode
)

// Node is a vertex of a dependency graph. Its index in Graph.Nodes is its ID.
type Node struct {
	ID        int
	Kind      NodeKind
	Stack     string
	LogicalID string // empty for a StackNode
	// Step is the planned step of a ResourceNode (nil for a StackNode).
	Step *Step
}

// Key returns "Stack/LogicalID" for a resource node and "Stack" for a stack node.
func (n *Node) Key() string {
	if n.Kind == StackNode {
		return n.Stack
	}
	return n.Stack + "/" + n.LogicalID
}

// Graph is an acyclic dependency graph: a node may run once every node in Dependencies(id) is done.
// It is immutable once built and safe for concurrent reads.
type Graph struct {
	Nodes      []*Node
	deps       [][]int
	dependents [][]int
	order      []int
}

// Dependencies returns the IDs of the nodes that id waits for, ascending.
func (g *Graph) Dependencies(id int) []int { return g.deps[id] }

// Dependents returns the IDs of the nodes that wait for id, ascending.
func (g *Graph) Dependents(id int) []int { return g.dependents[id] }

// Order returns every node ID in a topological order, stable between runs for the same input.
func (g *Graph) Order() []int { return g.order }

// builder accumulates nodes and edges and checks them with gonum.
type builder struct {
	nodes []*Node
	index map[string]int
	edges map[[2]int]bool // {from (dependency), to (dependent)}
}

func newBuilder() *builder {
	return &builder{index: map[string]int{}, edges: map[[2]int]bool{}}
}

func (b *builder) add(n *Node) int {
	n.ID = len(b.nodes)
	b.nodes = append(b.nodes, n)
	b.index[n.Key()] = n.ID
	return n.ID
}

// edge records that dependent waits for dependency. Self edges are ignored (reported by the caller).
func (b *builder) edge(dependency, dependent int) {
	if dependency != dependent {
		b.edges[[2]int{dependency, dependent}] = true
	}
}

// CycleError lists dependency cycles, each in a stable order starting at its smallest key, e.g.
// [["App/A", "App/B", "App/A"]].
type CycleError struct {
	Cycles [][]string
}

// Error renders each cycle as "A → B → A".
func (e *CycleError) Error() string {
	parts := make([]string, len(e.Cycles))
	for i, c := range e.Cycles {
		parts[i] = strings.Join(c, " → ")
	}
	return "dependency cycle: " + strings.Join(parts, "; ")
}

// build sorts the graph topologically with gonum; it returns a *CycleError when there are cycles.
func (b *builder) build() (*Graph, error) {
	dg := simple.NewDirectedGraph()
	for _, n := range b.nodes {
		dg.AddNode(simple.Node(n.ID))
	}
	g := &Graph{Nodes: b.nodes, deps: make([][]int, len(b.nodes)), dependents: make([][]int, len(b.nodes))}
	for e := range b.edges {
		dg.SetEdge(dg.NewEdge(simple.Node(e[0]), simple.Node(e[1])))
		g.deps[e[1]] = append(g.deps[e[1]], e[0])
		g.dependents[e[0]] = append(g.dependents[e[0]], e[1])
	}
	for i := range g.deps {
		sort.Ints(g.deps[i])
		sort.Ints(g.dependents[i])
	}
	sorted, err := topo.SortStabilized(dg, func(ns []graph.Node) {
		sort.Slice(ns, func(i, j int) bool { return ns[i].ID() < ns[j].ID() })
	})
	if err != nil {
		var unorderable topo.Unorderable
		if ok := asUnorderable(err, &unorderable); ok {
			return nil, b.cycles(unorderable, g)
		}
		return nil, fmt.Errorf("sort dependency graph: %w", err)
	}
	g.order = make([]int, len(sorted))
	for i, n := range sorted {
		g.order[i] = int(n.ID())
	}
	return g, nil
}

func asUnorderable(err error, u *topo.Unorderable) bool {
	v, ok := err.(topo.Unorderable) //nolint:errorlint // gonum returns the value type, never wrapped
	if ok {
		*u = v
	}
	return ok
}

// cycles turns gonum's strongly connected components into one readable cycle each.
func (b *builder) cycles(sccs topo.Unorderable, g *Graph) *CycleError {
	ce := &CycleError{}
	for _, scc := range sccs {
		if len(scc) < 2 {
			continue
		}
		in := map[int]bool{}
		for _, n := range scc {
			in[int(n.ID())] = true
		}
		ce.Cycles = append(ce.Cycles, b.cycleThrough(in, g))
	}
	sort.Slice(ce.Cycles, func(i, j int) bool { return ce.Cycles[i][0] < ce.Cycles[j][0] })
	return ce
}

// cycleThrough finds a cycle inside one component, starting at its smallest key and always following the
// smallest next key, so the same input gives the same message. It follows dependency edges, so the
// result reads "A → B" for "A depends on B".
func (b *builder) cycleThrough(in map[int]bool, g *Graph) []string {
	ids := make([]int, 0, len(in))
	for id := range in {
		ids = append(ids, id)
	}
	key := func(id int) string { return b.nodes[id].Key() }
	sort.Slice(ids, func(i, j int) bool { return key(ids[i]) < key(ids[j]) })
	start := ids[0]
	// Breadth-first search for the shortest way back to start, neighbours in key order.
	prev := map[int]int{start: -1}
	queue := []int{start}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		next := slices.Clone(g.deps[cur])
		sort.Slice(next, func(i, j int) bool { return key(next[i]) < key(next[j]) })
		for _, n := range next {
			if !in[n] {
				continue
			}
			if n == start {
				path := []string{key(start)}
				var rev []string
				for c := cur; c != start; c = prev[c] {
					rev = append(rev, key(c))
				}
				slices.Reverse(rev)
				path = append(path, rev...)
				return append(path, key(start))
			}
			if _, seen := prev[n]; !seen {
				prev[n] = cur
				queue = append(queue, n)
			}
		}
	}
	return []string{key(start), key(start)}
}
