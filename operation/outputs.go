package operation

import (
	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/planner"
)

// Outputs returns the outputs of the plan's stacks after the run, by stack (stacks without outputs left
// out); empty when either is nil.
func Outputs(res *engine.Result, plan *planner.Plan) map[string]map[string]any {
	out := map[string]map[string]any{}
	if plan == nil {
		return out
	}
	if res == nil {
		res = &engine.Result{}
	}
	for _, name := range plan.Stacks {
		if st := res.Stacks[name]; st != nil && len(st.Outputs) > 0 {
			out[name] = st.Outputs
		} else if st == nil && !plan.StackChanges(name) && len(plan.Outputs[name]) > 0 {
			out[name] = plan.Outputs[name] // a stack left unchanged, not run: its recorded outputs
		}
	}
	return out
}
