package planner

import (
	"fmt"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

// TeardownGraph orders delete steps: an object is deleted only after every object that depends on it.
// Within a stack, dependencies are the recorded direct dependencies of each logical ID (the objects left
// by replacements of a logical ID inherit its dependencies); across stacks, every deletion in a stack waits
// for all deletions in the stacks that depend on it (stackDeps maps a stack to the stacks it depends on;
// nil uses nothing). Each step becomes one ResourceNode.
func TeardownGraph(steps []*Step, stackDeps map[string][]string) (*Graph, error) {
	b := newBuilder()
	byLogical := map[string][]int{}
	byStack := map[string][]int{}
	for _, s := range steps {
		key := s.Key()
		if s.Object != nil {
			key += "#" + s.Object.PhysicalID
		}
		id := len(b.nodes)
		b.nodes = append(b.nodes, &Node{ID: id, Kind: ResourceNode, Stack: s.Stack, LogicalID: s.LogicalID, Step: s})
		b.index[key] = id
		byLogical[s.Key()] = append(byLogical[s.Key()], id)
		byStack[s.Stack] = append(byStack[s.Stack], id)
	}
	for _, s := range steps {
		deps := s.Dependencies
		if s.Old != nil {
			deps = s.Old.Dependencies
		}
		for _, dependent := range byLogical[s.Key()] {
			for _, d := range deps {
				for _, target := range byLogical[s.Stack+"/"+d] {
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
	for stack, deps := range stackDeps {
		for _, d := range deps {
			for _, dependent := range byStack[stack] {
				for _, target := range byStack[d] {
					b.edge(dependent, target)
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
