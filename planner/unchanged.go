package planner

import (
	"slices"

	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// StackChanges reports whether applying the plan would change stack, one of p.Stacks: a step of it other
// than OpSame, an object of it to delete, a pending operation in its recorded state (a run settles it
// first), or an output added, changed or removed. A stack for which it is false needs no deployment; a
// stack the plan does not cover (--target left none of its resources) never changes.
func (p *Plan) StackChanges(stack string) bool {
	if !slices.Contains(p.Stacks, stack) {
		return false
	}
	for _, s := range p.Steps {
		if s.Stack == stack && s.Op != OpSame {
			return true
		}
	}
	for _, s := range p.Deletes {
		if s.Stack == stack {
			return true
		}
	}
	var recorded resource.Properties
	if st := p.State[stack]; st != nil {
		for _, r := range st.Resources {
			if r.Pending != nil {
				return true
			}
		}
		recorded = st.Outputs
	}
	next := p.Outputs[stack]
	if len(next) != len(recorded) {
		return true
	}
	for k, v := range next {
		old, ok := recorded[k]
		if !ok || !resource.Equal(old, v) {
			return true
		}
	}
	return false
}
