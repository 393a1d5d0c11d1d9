package planner

import (
	"fmt"
	"slices"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

// TeardownGraph orders delete steps: an object is deleted only after every object that depends on it.
// Within a stack, dependencies are the recorded direct dependencies of each logical ID (the objects left
// by replacements of a logical ID inherit its dependencies); across stacks, every deletion in a stack waits
// for all deletions in the stacks that depend on it (stackDeps maps a stack to the stacks it depends on;
// nil uses nothing; a stack naming itself is ignored). Each step becomes one ResourceNode, in the order of
// steps; every edge is a reference, so the graph is its own References.
//
// In the graph, a node's Dependencies are what must be deleted before it (its dependents in state), so
// Ancestors(id) is what deleting id takes with it and Descendants(id) is what must stay while id stays.
//
// Across stacks, only the first deletions of a stack (those that wait for nothing else in it) get edges,
// from the last deletions of each stack that depends on it (those nothing else in that stack waits for):
// the same order as an edge from every deletion to every deletion, with fewer edges. It takes
// O(V + E log E) time for V steps and E edges (still |A| × |B| edges for two stacks of independent
// resources, where every deletion is both first and last).
func TeardownGraph(steps []*Step, stackDeps map[string][]string) (*Graph, error) {
	b := newBuilder(len(steps))
	byLogical := map[stepKey][]int{}
	byStack := map[string][]int{}
	for _, s := range steps {
		id := b.add(Node{Kind: ResourceNode, Stack: s.Stack, LogicalID: s.LogicalID, Step: s})
		k := stepKey{s.Stack, s.LogicalID}
		byLogical[k] = append(byLogical[k], id)
		byStack[s.Stack] = append(byStack[s.Stack], id)
	}
	for _, s := range steps {
		deps := s.Dependencies
		if s.Old != nil {
			deps = s.Old.Dependencies
		}
		for _, dependent := range byLogical[stepKey{s.Stack, s.LogicalID}] {
			for _, d := range deps {
				for _, target := range byLogical[stepKey{s.Stack, d}] {
					// target is needed by dependent: delete dependent first.
					b.edge(dependent, target)
				}
			}
		}
	}
	// Objects left by replacements go one after another, then the live object of the same logical ID, so
	// that two steps never change one state record (or its one pending operation) at once.
	for _, ids := range byLogical {
		prevObject := -1
		for _, a := range ids {
			if b.nodes[a].Step.Object == nil {
				continue
			}
			if prevObject >= 0 {
				b.edge(prevObject, a)
			}
			prevObject = a
			for _, c := range ids {
				if b.nodes[c].Step.Object == nil {
					b.edge(a, c)
				}
			}
		}
	}
	if len(stackDeps) > 0 {
		// So far every edge joins two deletions of one stack: find each stack's first and last ones.
		waits := make([]bool, len(b.nodes))   // waits for another deletion of its stack
		awaited := make([]bool, len(b.nodes)) // another deletion of its stack waits for it
		for _, e := range b.edges {
			waits[e.dependent], awaited[e.dependency] = true, true
		}
		for stack, deps := range stackDeps {
			var last []int
			for _, id := range byStack[stack] {
				if !awaited[id] {
					last = append(last, id)
				}
			}
			for _, d := range slices.Compact(slices.Sorted(slices.Values(deps))) {
				if d == stack {
					continue
				}
				for _, target := range byStack[d] {
					if waits[target] {
						continue
					}
					for _, dependent := range last {
						b.edge(dependent, target)
					}
				}
			}
		}
	}
	g, err := b.build()
	if err != nil {
		return nil, fmt.Errorf("order deletions: %w", err)
	}
	return g, nil
}

// stepKey names a resource without building its "Stack/LogicalID" key.
type stepKey struct{ stack, logicalID string }

// DestroySteps returns a delete step for every object recorded in the given stacks: each resource's live
// object and every object left by a replacement. A resource without a physical ID (never created) still
// gets a step, so that it is dropped from state; the engine makes no provider call for it.
func DestroySteps(stacks []*state.Stack) []*Step {
	var out []*Step
	for _, st := range stacks {
		for _, r := range st.SortedResources() {
			for i := range r.Replaced {
				out = append(out, &Step{Decision: Decision{Op: OpDelete, Reason: "left by an earlier replacement"},
					Stack: st.Name, LogicalID: r.LogicalID, Type: r.Replaced[i].Type, Provider: r.Replaced[i].Provider,
					Old: r, Object: &r.Replaced[i]})
			}
			out = append(out, &Step{Decision: Decision{Op: OpDelete}, Stack: st.Name, LogicalID: r.LogicalID,
				Type: r.Type, Provider: r.Provider, Old: r, Dependencies: r.Dependencies})
		}
	}
	return out
}
