package planner

import (
	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/pkg/diag"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// referenceMake is Make as it was before its workers (aa7420b): one walk of Order, the steps planned so
// far found by logical ID in a map. The side-by-side test compares Make with it.
func referenceMake(in Input) (*Plan, diag.Diagnostics) {
	su, ok := prepare(in)
	g, stacks, sel, ds := su.g, su.stacks, su.sel, su.ds
	if !ok {
		return nil, ds
	}
	p := &Plan{Graph: g, Outputs: map[string]resource.Properties{}, Assembly: in.Assembly, State: in.State, Selection: sel}
	pr := &refPredictor{in: in, stacks: stacks, steps: map[string]map[string]*Step{}, plan: p, replace: su.replace,
		slab: make([]Step, 0, len(g.Nodes))}
	p.Steps = make([]*Step, 0, len(g.Nodes))
	for _, id := range g.Order() {
		n := g.Nodes[id]
		switch n.Kind {
		case StackNode:
			p.Stacks = append(p.Stacks, n.Stack)
			if sel.IsPartial(n.Stack) {
				p.Outputs[n.Stack] = recordedOutputs(in.State[n.Stack])
			} else {
				p.Outputs[n.Stack] = pr.stackOutputs(stacks[n.Stack])
			}
		case ResourceNode:
			r := n.resource
			if r == nil {
				r = stacks[n.Stack].Resource(n.LogicalID)
			}
			n.Step = pr.step(r, n.Stack, n.deps)
			p.Steps = append(p.Steps, n.Step)
		}
	}
	var recorded []*state.Stack
	for _, name := range p.Stacks {
		if st := in.State[name]; st != nil {
			recorded = append(recorded, st)
		}
	}
	if pr.ds.HasErrors() {
		ds = append(ds, pr.ds...)
		ds.Sort()
		return nil, ds
	}
	rank(g)
	p.Deletes, ds = deletes(stacks, recorded, sel)
	return p, ds
}

// refPredictor computes, as Make did before it planned with workers, predicted inputs and outputs in graph order.
type refPredictor struct {
	in      Input
	stacks  map[string]*assembly.Stack
	plan    *Plan
	slab    []Step                      // where step stores steps: one allocation for all of them
	steps   map[string]map[string]*Step // by stack, by logical ID
	replace map[string]bool             // keys forced to be replaced (--replace)
	// ds are the errors of the schemas' CheckChange on updates.
	ds diag.Diagnostics

	// The last stack's steps and the last schema looked up: resources come stack by stack, and most of
	// them share a few types.
	lastStack          string
	lastSteps          map[string]*Step
	lastProvider, last string
	lastSchema         resource.Schema
}

// stackSteps returns the steps of stack planned so far (an empty map to fill when there are none).
func (pr *refPredictor) stackSteps(stack string) map[string]*Step {
	if pr.lastSteps == nil || pr.lastStack != stack {
		if pr.steps[stack] == nil {
			size := 0
			if as := pr.stacks[stack]; as != nil {
				size = len(as.Resources)
			}
			pr.steps[stack] = make(map[string]*Step, size)
		}
		pr.lastStack, pr.lastSteps = stack, pr.steps[stack]
	}
	return pr.lastSteps
}

func (pr *refPredictor) schema(provider, typ string) resource.Schema {
	if provider != pr.lastProvider || typ != pr.last || pr.lastSchema.Type == "" {
		pr.lastSchema, _, _ = pr.in.Schemas(provider, typ)
		pr.lastProvider, pr.last = provider, typ
	}
	return pr.lastSchema
}

// step plans resource r of stack; deps are its direct dependencies (ResourceDependencies), or nil to
// compute them.
func (pr *refPredictor) step(r *assembly.Resource, stack string, deps []string) *Step {
	schema := pr.schema(r.Provider, r.Type)
	var old *state.Resource
	if st := pr.in.State[stack]; st != nil {
		old = st.Resources[r.LogicalID]
	}
	if deps == nil {
		deps = ResourceDependencies(r)
	}
	inputs, ok := pr.resolve(stack, r.Properties).(map[string]any)
	if !ok || inputs == nil {
		inputs = map[string]any{}
	}
	if len(pr.slab) == cap(pr.slab) {
		pr.slab = make([]Step, 0, 64)
	}
	pr.slab = append(pr.slab, Step{Stack: stack, LogicalID: r.LogicalID, Type: r.Type, Provider: r.Provider, Resource: r,
		Schema: schema, Old: old, Inputs: inputs, Dependencies: deps})
	s := &pr.slab[len(pr.slab)-1]
	s.Decision = Decide(schema, old, r.Type, r.Provider, s.Inputs, r.Metadata)
	if len(pr.replace) > 0 && pr.replace[s.Key()] {
		s.ForceReplace = true
		s.Decision = ForceReplace(schema, s.Decision, r.Metadata)
	}
	if s.Op == OpUpdate && schema.CheckChange != nil {
		pr.checkChange(s)
	}
	pr.stackSteps(stack)[r.LogicalID] = s
	return s
}

// checkChange adds to pr.ds the errors of the schema's CheckChange on update s, at the resource's file
// and JSON path, as validation reports them.
func (pr *refPredictor) checkChange(s *Step) {
	file := ""
	if as := pr.stacks[s.Stack]; as != nil {
		file = as.File
	}
	props := s.Resource.Path + ".properties"
	for _, fe := range s.Schema.CheckChange(s.Old.Inputs, s.Inputs, isUnknown) {
		at := props
		if fe.Path != "" {
			at = assembly.JoinPath(props, fe.Path)
		}
		pr.ds.Errorf(file, at, "%s", fe.Message)
	}
}

// resolve is the worker's resolve with the old lookups: the steps planned so far by logical ID, and the
// stack outputs found in the plan so far (the prediction rules themselves are shared).
func (pr *refPredictor) resolve(stack string, v any) any {
	return predict(v, func(t assembly.Token) (any, bool) {
		if t.StackRef != "" {
			outs, planned := pr.plan.Outputs[t.StackRef]
			return predictedStackOutput(t, outs, planned, pr.in.State)
		}
		return predictedOutput(pr.stackSteps(stack)[t.Ref], t.Attr)
	})
}

func (pr *refPredictor) stackOutputs(as *assembly.Stack) resource.Properties {
	out := resource.Properties{}
	for key, o := range as.Outputs {
		out[key] = pr.resolve(as.ID, o.Value)
	}
	return out
}
