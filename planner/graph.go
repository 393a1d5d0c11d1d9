package planner

import (
	"slices"
	"sort"
	"strings"

	"gonum.org/v1/gonum/graph/simple"
	"gonum.org/v1/gonum/graph/topo"

	"github.com/cdkx-dev/cdkx/assembly"
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

	// resource and deps are the assembly's resource of a ResourceNode that BuildGraph made and its
	// ResourceDependencies, so that Make need not find them again.
	resource *assembly.Resource
	deps     []string
}

// Key returns "Stack/LogicalID" for a resource node and "Stack" for a stack node.
func (n *Node) Key() string {
	if n.Kind == StackNode {
		return n.Stack
	}
	return n.Stack + "/" + n.LogicalID
}

// Graph is an acyclic dependency graph: a node may run once every node in Dependencies(id) is done. It is
// the planner's one model of dependencies: the run order of a deploy (BuildGraph), the order of deletions
// (TeardownGraph), and what --target and --exclude select (Select and SelectDestroy walk its Ancestors and
// Descendants) all come from it.
//
// Each edge is either a reference — the dependent reads the dependency (a {ref} token, a dependsOn entry,
// a {stackRef} token to the dependency's stack node, a stack node completed by its own resources) or, in a
// teardown graph, must be deleted before it — or an ordering edge, which only makes the dependent wait (every
// resource of a stack waits for the stacks the manifest says it depends on). Every method follows both;
// References returns the graph of references alone, which is what targeting follows.
//
// IDs run from 0 to len(Nodes)-1. A Graph is immutable once built and safe for concurrent reads, except
// that Make sets the Step of the nodes of the graph it plans on.
type Graph struct {
	Nodes      []*Node
	deps       [][]int
	dependents [][]int
	order      []int
	// refs is the graph of reference edges only: g itself when every edge is a reference.
	refs *Graph
}

// Dependencies returns the IDs of the nodes that id waits for, ascending.
func (g *Graph) Dependencies(id int) []int { return g.deps[id] }

// Dependents returns the IDs of the nodes that wait for id, ascending.
func (g *Graph) Dependents(id int) []int { return g.dependents[id] }

// Order returns every node ID in a topological order (dependencies first), stable between runs for the
// same input.
func (g *Graph) Order() []int { return g.order }

// References returns the graph of the same nodes (the same *Node values, the same IDs and Order) with only
// the reference edges: what a node reads, and what reads it. It returns g itself when g has no ordering
// edges. O(1).
func (g *Graph) References() *Graph { return g.refs }

// Ancestors returns ids and every node they depend on, directly or through other nodes, ascending: what
// must be done before ids can run. Duplicate and out-of-range IDs are ignored. It takes O(V + E) time and
// O(V) memory for a graph of V nodes and E edges (a visited mark per node).
func (g *Graph) Ancestors(ids ...int) []int { return marked(g.reach(g.deps, ids)) }

// Descendants returns ids and every node that depends on them, directly or through other nodes, ascending:
// what cannot run until ids are done. Same costs as Ancestors.
func (g *Graph) Descendants(ids ...int) []int { return marked(g.reach(g.dependents, ids)) }

// reach marks ids and every node reachable from them along adj.
func (g *Graph) reach(adj [][]int, ids []int) []bool {
	seen := make([]bool, len(g.Nodes))
	stack := make([]int, 0, len(ids))
	for _, id := range ids {
		if id >= 0 && id < len(seen) && !seen[id] {
			seen[id] = true
			stack = append(stack, id)
		}
	}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, n := range adj[id] {
			if !seen[n] {
				seen[n] = true
				stack = append(stack, n)
			}
		}
	}
	return seen
}

func marked(seen []bool) []int {
	var out []int
	for id, ok := range seen {
		if ok {
			out = append(out, id)
		}
	}
	return out
}

// Subgraph returns the graph of the nodes keep accepts (keep is called once per node, in ID order). The
// kept nodes get new IDs 0…k-1 in the order of their old ones; each is a copy of the old *Node (same
// Kind, Stack, LogicalID and Step, new ID). Where g has a path from one kept node to another through
// dropped nodes only, the subgraph has an edge, so kept nodes keep their relative order: the subgraph's
// Order is g's Order with the dropped nodes left out, and its References are the subgraph of g's
// References. A reference edge of the subgraph stands for a path of references.
//
// It takes O(V + E + F) time, where F is the total number of nearest kept dependencies found through
// the dropped nodes (each dropped node remembers the kept nodes it leads back to). F is small in plans —
// dropped nodes lead back to few kept ones — but can reach V × k when many dropped nodes each lead back
// to many kept ones.
func (g *Graph) Subgraph(keep func(id int) bool) *Graph {
	newID := make([]int, len(g.Nodes))
	sub := &Graph{}
	for id, n := range g.Nodes {
		newID[id] = -1
		if keep(id) {
			newID[id] = len(sub.Nodes)
			c := *n
			c.ID = newID[id]
			sub.Nodes = append(sub.Nodes, &c)
		}
	}
	for _, id := range g.order {
		if newID[id] >= 0 {
			sub.order = append(sub.order, newID[id])
		}
	}
	sub.deps = keptDeps(g, g.deps, newID, len(sub.Nodes))
	sub.dependents = invert(sub.deps)
	sub.refs = sub
	if g.refs != g {
		r := &Graph{Nodes: sub.Nodes, order: sub.order, deps: keptDeps(g, g.refs.deps, newID, len(sub.Nodes))}
		r.dependents, r.refs = invert(r.deps), r
		sub.refs = r
	}
	return sub
}

// keptDeps returns, for each kept node (by new ID), the new IDs of the nearest kept nodes it reaches
// along deps, looking through dropped ones, ascending and without duplicates. It walks g's order, so each
// dropped node's kept dependencies are known before any node that depends on it.
func keptDeps(g *Graph, deps [][]int, newID []int, kept int) [][]int {
	out := make([][]int, kept)
	through := make([][]int, len(g.Nodes)) // dropped node → the new IDs of its nearest kept dependencies
	seen := make([]int, kept)              // seen[k] == stamp: k is already in the list being built
	stamp := 0
	collect := func(id int) []int {
		stamp++
		var list []int
		add := func(k int) {
			if seen[k] != stamp {
				seen[k] = stamp
				list = append(list, k)
			}
		}
		for _, d := range deps[id] {
			if newID[d] >= 0 {
				add(newID[d])
				continue
			}
			for _, k := range through[d] {
				add(k)
			}
		}
		sort.Ints(list)
		return list
	}
	for _, id := range g.order {
		if k := newID[id]; k >= 0 {
			out[k] = collect(id)
		} else {
			through[id] = collect(id)
		}
	}
	return out
}

// invert returns the dependents lists of a graph given its dependencies lists, each ascending.
func invert(deps [][]int) [][]int {
	count := make([]int, len(deps))
	total := 0
	for _, ds := range deps {
		for _, d := range ds {
			count[d]++
			total++
		}
	}
	flat := make([]int, 0, total)
	out := make([][]int, len(deps))
	for id, c := range count {
		out[id] = flat[len(flat) : len(flat) : len(flat)+c]
		flat = flat[:len(flat)+c]
	}
	for id, ds := range deps { // ascending id: each list comes out ascending
		for _, d := range ds {
			out[d] = append(out[d], id)
		}
	}
	return out
}

// builder accumulates nodes and edges; build orders them and checks for cycles.
type builder struct {
	nodes []*Node
	slab  []Node // where add stores nodes: it never grows past its capacity, so pointers into it stay valid
	edges []bedge
	// ordering is set once an ordering edge is added: the graph then has a separate References view.
	ordering bool
}

// bedge is an edge being built: dependent waits for dependency; ref tells a reference from an ordering.
type bedge struct {
	dependency, dependent int32
	ref                   bool
}

// newBuilder returns a builder with room for n nodes (more can be added).
func newBuilder(n int) *builder {
	return &builder{nodes: make([]*Node, 0, n), slab: make([]Node, 0, n)}
}

// add stores a copy of n with its ID set and returns the ID.
func (b *builder) add(n Node) int {
	if len(b.slab) == cap(b.slab) {
		b.slab = make([]Node, 0, max(64, len(b.nodes)))
	}
	n.ID = len(b.nodes)
	b.slab = append(b.slab, n)
	b.nodes = append(b.nodes, &b.slab[len(b.slab)-1])
	return n.ID
}

// edge records that dependent reads dependency (a reference edge). Self edges are ignored (reported by
// the caller).
func (b *builder) edge(dependency, dependent int) {
	if dependency != dependent {
		b.edges = append(b.edges, bedge{int32(dependency), int32(dependent), true})
	}
}

// orderEdge records that dependent only waits for dependency (an ordering edge).
func (b *builder) orderEdge(dependency, dependent int) {
	if dependency != dependent {
		b.edges = append(b.edges, bedge{int32(dependency), int32(dependent), false})
		b.ordering = true
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

// build orders the graph topologically; it returns a *CycleError when there are cycles. It takes
// O(V + E log E) time: the edges are sorted once.
func (b *builder) build() (*Graph, error) {
	g := &Graph{Nodes: b.nodes, deps: adjacency(len(b.nodes), b.edges, false)}
	g.dependents = invert(g.deps)
	g.refs = g
	if b.ordering {
		r := &Graph{Nodes: b.nodes, deps: adjacency(len(b.nodes), b.edges, true)}
		r.dependents, r.refs = invert(r.deps), r
		g.refs = r
	}
	b.nodes, b.slab, b.edges = nil, nil, nil // the graph owns the nodes now
	order, ok := g.sort()
	if !ok {
		return nil, cycles(g)
	}
	g.order, g.refs.order = order, order
	return g, nil
}

// adjacency returns the dependencies of each of n nodes, ascending and without duplicates, in one backing
// array: of every edge, or of the reference edges only.
func adjacency(n int, edges []bedge, refsOnly bool) [][]int {
	count := make([]int, n+1)
	for _, e := range edges {
		if e.ref || !refsOnly {
			count[e.dependent+1]++
		}
	}
	for i := 1; i <= n; i++ {
		count[i] += count[i-1]
	}
	flat := make([]int, count[n])
	next := slices.Clone(count[:n])
	for _, e := range edges {
		if e.ref || !refsOnly {
			flat[next[e.dependent]] = int(e.dependency)
			next[e.dependent]++
		}
	}
	out := make([][]int, n)
	for i := range out {
		ds := compact(flat[count[i]:count[i+1]])
		out[i] = ds[:len(ds):len(ds)]
	}
	return out
}

// sort returns the node IDs in the topological order gonum's topo.SortStabilized gives with nodes ordered
// by ID (the order this package has always used): the reverse of the post-order of a depth-first search
// along dependents that starts from the nodes in descending ID order and visits the dependents of each in
// descending ID order. ok is false when the graph has a cycle. O(V + E), without recursion.
func (g *Graph) sort() (order []int, ok bool) {
	const (
		unseen = iota
		open   // on the current path
		done
	)
	n := len(g.Nodes)
	state := make([]uint8, n)
	post := make([]int, 0, n)
	type frame struct{ id, next int } // next: how many of id's dependents are left to visit (from the end)
	var path []frame
	for root := n - 1; root >= 0; root-- {
		if state[root] != unseen {
			continue
		}
		state[root] = open
		path = append(path, frame{root, len(g.dependents[root])})
		for len(path) > 0 {
			top := &path[len(path)-1]
			if top.next == 0 {
				state[top.id] = done
				post = append(post, top.id)
				path = path[:len(path)-1]
				continue
			}
			top.next--
			w := g.dependents[top.id][top.next]
			switch state[w] {
			case open:
				return nil, false
			case unseen:
				state[w] = open
				path = append(path, frame{w, len(g.dependents[w])})
			}
		}
	}
	slices.Reverse(post)
	return post, true
}

// compact sorts ids and removes duplicates, in place.
func compact(ids []int) []int {
	if len(ids) < 2 {
		return ids
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// cycles lists the cycles of g: gonum finds its strongly connected components, each becomes one readable
// cycle.
func cycles(g *Graph) *CycleError {
	dg := simple.NewDirectedGraph()
	for id := range g.Nodes {
		dg.AddNode(simple.Node(id))
	}
	for id, deps := range g.deps {
		for _, d := range deps {
			dg.SetEdge(dg.NewEdge(simple.Node(d), simple.Node(id)))
		}
	}
	ce := &CycleError{}
	for _, scc := range topo.TarjanSCC(dg) {
		if len(scc) < 2 {
			continue
		}
		in := map[int]bool{}
		for _, n := range scc {
			in[int(n.ID())] = true
		}
		ce.Cycles = append(ce.Cycles, cycleThrough(in, g))
	}
	sort.Slice(ce.Cycles, func(i, j int) bool { return ce.Cycles[i][0] < ce.Cycles[j][0] })
	return ce
}

// cycleThrough finds a cycle inside one component, starting at its smallest key and always following the
// smallest next key, so the same input gives the same message. It follows dependency edges, so the
// result reads "A → B" for "A depends on B".
func cycleThrough(in map[int]bool, g *Graph) []string {
	ids := make([]int, 0, len(in))
	for id := range in {
		ids = append(ids, id)
	}
	key := func(id int) string { return g.Nodes[id].Key() }
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
