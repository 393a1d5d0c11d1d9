// Package planner builds the dependency graph of a cloud assembly and diffs it against recorded state into
// steps: create, update, replace, delete and no-op.
package planner

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/pkg/diag"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// Step is the planned change to one resource.
type Step struct {
	Decision
	Stack     string
	LogicalID string
	Type      string
	Provider  string
	// Resource is the resource as the assembly declares it (tokens unresolved); nil for a delete.
	Resource *assembly.Resource
	// Schema is the resource type's schema (zero for a delete of a type no provider serves any more).
	Schema resource.Schema
	// Old is the recorded state of the resource; nil for a create.
	Old *state.Resource
	// Object is set on a delete of an older object left by a replacement (an entry of Old.Replaced).
	Object *state.Object
	// Inputs are the predicted inputs: tokens resolved where known, resource.Unknown elsewhere.
	Inputs resource.Properties
	// Dependencies are the direct dependencies: logical IDs in the same stack, sorted.
	Dependencies []string
	// ForceReplace is set by --replace: the resource is replaced even when nothing changed.
	ForceReplace bool
}

// Key returns "Stack/LogicalID".
func (s *Step) Key() string { return s.Stack + "/" + s.LogicalID }

// Plan is the set of steps that brings the selected stacks' state to their templates.
type Plan struct {
	// Graph holds one node per resource step and one per stack; deletes run after it, in a teardown graph.
	Graph *Graph
	// Stacks are the selected stacks in deployment order.
	Stacks []string
	// Steps are the resource steps, in Graph order.
	Steps []*Step
	// Deletes are the objects to delete once Graph is done: resources gone from the assembly and objects
	// left by earlier replacements, in the order they will be deleted.
	Deletes []*Step
	// Outputs are the predicted outputs of each selected stack (the recorded ones for a stack that
	// Selection covers only partly).
	Outputs map[string]resource.Properties
	// Selection is what --target and --exclude narrowed the plan to, or nil. Graph, Steps and Deletes hold
	// only selected resources; a stack with none is left out of Stacks.
	Selection *Selection
	// Assembly and State are what the plan was made from.
	Assembly *assembly.Assembly
	State    map[string]*state.Stack
}

// Counts returns how many resources the plan creates, updates, replaces and deletes. Deletes of objects
// left by earlier replacements count as deletes.
func (p *Plan) Counts() (create, update, replace, del int) {
	for _, s := range p.Steps {
		switch s.Op {
		case OpCreate:
			create++
		case OpUpdate:
			update++
		case OpReplace:
			replace++
		}
	}
	return create, update, replace, len(p.Deletes)
}

// HasChanges reports whether applying the plan would call a provider or change any stack output.
func (p *Plan) HasChanges() bool {
	c, u, r, d := p.Counts()
	return c+u+r+d > 0
}

// Input is what Make plans from.
type Input struct {
	Assembly *assembly.Assembly
	// Stacks are the stacks to deploy (IDs); every stack they depend on must be among them or have state.
	Stacks []string
	// State holds the recorded state of the selected stacks and of every stack they read outputs from.
	// A missing entry is a stack never deployed.
	State map[string]*state.Stack
	// Schemas finds each resource type's schema.
	Schemas resource.SchemaLookup
	// Targets and Excludes are the --target and --exclude IDs ("Stack/LogicalID" or a unique logical
	// ID): see Select. Both empty: every resource is planned.
	Targets, Excludes []string
	// Replace are the --replace IDs (same forms): resources replaced even though nothing changed.
	Replace []string
	// Graph, when set, is what BuildGraph returned for Assembly and exactly Stacks (in any order); Make
	// uses it instead of building it again, and sets its nodes' steps. Nil: Make builds it.
	Graph *Graph
}

// Make builds the dependency graph of the selected stacks and diffs it against state, narrowed to
// in.Targets and in.Excludes when given. Diagnostics report cycles, bad target IDs, reads of outputs that
// targeting leaves unrecorded and deletes that a surviving resource still needs; with errors, the plan is
// nil.
func Make(in Input) (*Plan, diag.Diagnostics) {
	g, ds := in.Graph, diag.Diagnostics(nil)
	if g == nil {
		if g, ds = BuildGraph(in.Assembly, in.Stacks); ds.HasErrors() {
			return nil, ds
		}
	}
	var sel *Selection
	if len(in.Targets)+len(in.Excludes) > 0 {
		var nds diag.Diagnostics
		if sel, g, nds = narrow(in, g); nds.HasErrors() {
			return nil, append(ds, nds...)
		}
	}
	p := &Plan{Graph: g, Outputs: map[string]resource.Properties{}, Assembly: in.Assembly, State: in.State, Selection: sel}
	pr := &predictor{in: in, steps: map[string]*Step{}, plan: p, replace: map[string]bool{}}
	if len(in.Replace) > 0 {
		var keys []string
		for _, n := range g.Nodes {
			if n.Kind == ResourceNode {
				keys = append(keys, n.Key())
			}
		}
		resolved, err := resolveIDs("--replace", in.Replace, keys, in.Stacks, "the selected stacks")
		if err != nil {
			return nil, append(ds, diag.Diagnostic{Severity: diag.Error, Summary: err.Error()})
		}
		for _, k := range resolved {
			pr.replace[k] = true
		}
	}
	for _, id := range g.Order() {
		n := g.Nodes[id]
		switch n.Kind {
		case StackNode:
			p.Stacks = append(p.Stacks, n.Stack)
			if sel.IsPartial(n.Stack) {
				p.Outputs[n.Stack] = recordedOutputs(in.State[n.Stack])
			} else {
				p.Outputs[n.Stack] = pr.stackOutputs(in.Assembly.Stack(n.Stack))
			}
		case ResourceNode:
			n.Step = pr.step(in.Assembly.Stack(n.Stack), n.Stack, n.LogicalID)
			p.Steps = append(p.Steps, n.Step)
		}
	}
	var stacks []*state.Stack
	for _, name := range p.Stacks {
		if st := in.State[name]; st != nil {
			stacks = append(stacks, st)
		}
	}
	p.Deletes, ds = deletes(in.Assembly, stacks, sel)
	return p, ds
}

// deletes lists the resources recorded in state but gone from the assembly, and the objects left by
// earlier replacements, in teardown order; only those of resources sel selects. A delete that a resource
// of the assembly still depends on is an error.
func deletes(a *assembly.Assembly, stacks []*state.Stack, sel *Selection) ([]*Step, diag.Diagnostics) {
	var ds diag.Diagnostics
	var out []*Step
	for _, st := range stacks {
		as := a.Stack(st.Name)
		for _, r := range st.SortedResources() {
			if !sel.Contains(st.Name, r.LogicalID) {
				continue
			}
			for i := range r.Replaced {
				out = append(out, &Step{Decision: Decision{Op: OpDelete, Reason: "left by an earlier replacement"},
					Stack: st.Name, LogicalID: r.LogicalID, Type: r.Replaced[i].Type, Provider: r.Replaced[i].Provider,
					Old: r, Object: &r.Replaced[i]})
			}
			if as.Resource(r.LogicalID) != nil || r.PhysicalID == "" {
				continue
			}
			for _, other := range as.Resources {
				if slices.Contains(ResourceDependencies(other), r.LogicalID) {
					ds = append(ds, diag.Diagnostic{Severity: diag.Error, File: as.File, Path: other.Path,
						Summary: fmt.Sprintf("%s still depends on %s, which is no longer in the assembly", other.LogicalID, r.LogicalID),
						Detail:  "remove the reference or keep the resource"})
				}
			}
			out = append(out, &Step{Decision: Decision{Op: OpDelete, Reason: "no longer in the assembly"},
				Stack: st.Name, LogicalID: r.LogicalID, Type: r.Type, Provider: r.Provider, Old: r,
				Dependencies: r.Dependencies})
		}
	}
	if ds.HasErrors() {
		return nil, ds
	}
	g, err := TeardownGraph(out, nil)
	if err != nil {
		return nil, diag.Diagnostics{{Severity: diag.Error, Summary: err.Error(),
			Detail: "the recorded dependencies are inconsistent; export the state and report it"}}
	}
	ordered := make([]*Step, 0, len(out))
	for _, id := range g.Order() {
		ordered = append(ordered, g.Nodes[id].Step)
	}
	return ordered, nil
}

// predictor computes predicted inputs and outputs in graph order.
type predictor struct {
	in      Input
	plan    *Plan
	steps   map[string]*Step // by "Stack/LogicalID"
	replace map[string]bool  // keys forced to be replaced (--replace)
}

func (pr *predictor) step(as *assembly.Stack, stack, logicalID string) *Step {
	r := as.Resource(logicalID)
	schema, _, _ := pr.in.Schemas(r.Provider, r.Type)
	st := pr.in.State[stack]
	var old *state.Resource
	if st != nil {
		old = st.Resources[logicalID]
	}
	inputs, _ := pr.resolve(stack, r.Properties)
	s := &Step{Stack: stack, LogicalID: logicalID, Type: r.Type, Provider: r.Provider, Resource: r, Schema: schema,
		Old: old, Inputs: inputs.(map[string]any), Dependencies: ResourceDependencies(r)}
	s.Decision = Decide(schema, old, r.Type, r.Provider, s.Inputs, r.Metadata)
	if pr.replace[s.Key()] {
		s.ForceReplace = true
		s.Decision = ForceReplace(schema, s.Decision, r.Metadata)
	}
	pr.steps[s.Key()] = s
	return s
}

// resolve replaces tokens in v by their predicted values. Unresolvable ones become resource.Unknown.
func (pr *predictor) resolve(stack string, v any) (any, bool) {
	known := true
	out, _ := assembly.Resolve("", v, func(t assembly.TokenAt) (any, error) {
		val, ok := pr.token(stack, t.Token)
		if !ok {
			known = false
			return resource.Unknown{}, nil
		}
		return val, nil
	})
	if out == nil {
		out = map[string]any{}
	}
	return out, known
}

func (pr *predictor) token(stack string, t assembly.Token) (any, bool) {
	if t.StackRef != "" {
		if outs, ok := pr.plan.Outputs[t.StackRef]; ok {
			v, ok := outs[t.OutputKey]
			return v, ok && !resource.ContainsUnknown(v)
		}
		if st := pr.in.State[t.StackRef]; st != nil {
			v, ok := st.Outputs[t.OutputKey]
			return v, ok
		}
		return nil, false
	}
	s := pr.steps[stack+"/"+t.Ref]
	if s == nil || s.Old == nil {
		return nil, false
	}
	switch s.Op {
	case OpSame:
	case OpUpdate:
		if t.Attr != "crn" && !slices.Contains(s.Schema.StableOutputs, t.Attr) {
			return nil, false
		}
	default:
		return nil, false
	}
	v, ok := s.Old.Outputs[t.Attr]
	return v, ok
}

func (pr *predictor) stackOutputs(as *assembly.Stack) resource.Properties {
	out := resource.Properties{}
	for key, o := range as.Outputs {
		v, _ := pr.resolve(as.ID, o.Value)
		out[key] = v
	}
	return out
}

// ResourceDependencies returns the direct same-stack dependencies of r: its dependsOn entries and the
// targets of its {ref} tokens, sorted and without duplicates.
func ResourceDependencies(r *assembly.Resource) []string {
	set := map[string]bool{}
	for _, d := range r.DependsOn {
		set[d] = true
	}
	for _, t := range assembly.FindTokens("", r.Properties) {
		if t.Ref != "" {
			set[t.Ref] = true
		}
	}
	out := make([]string, 0, len(set))
	for d := range set {
		if d != r.LogicalID {
			out = append(out, d)
		}
	}
	sort.Strings(out)
	return out
}

// BuildGraph returns the dependency graph of the selected stacks: one node per resource and per stack.
// Edges: resource → resource from dependsOn and {ref} tokens; every resource of a stack → the stack's node;
// a stack's node → every resource (and the node) of each selected stack that depends on it. Cycles inside a
// stack and across stacks are diagnostics listing the cycle in a stable order.
func BuildGraph(a *assembly.Assembly, stacks []string) (*Graph, diag.Diagnostics) {
	if ds := stackCycles(a); ds.HasErrors() {
		return nil, ds
	}
	selected := map[string]bool{}
	for _, s := range stacks {
		selected[s] = true
	}
	b := newBuilder()
	var ds diag.Diagnostics
	for _, as := range a.Stacks {
		if !selected[as.ID] {
			continue
		}
		for _, r := range as.Resources {
			b.add(&Node{Kind: ResourceNode, Stack: as.ID, LogicalID: r.LogicalID})
		}
		b.add(&Node{Kind: StackNode, Stack: as.ID})
	}
	for _, as := range a.Stacks {
		if !selected[as.ID] {
			continue
		}
		stackNode := b.index[as.ID]
		for _, dep := range as.Dependencies {
			if selected[dep] {
				b.edge(b.index[dep], stackNode)
			}
		}
		for _, r := range as.Resources {
			id := b.index[as.ID+"/"+r.LogicalID]
			b.edge(id, stackNode)
			for _, dep := range as.Dependencies {
				if selected[dep] {
					b.edge(b.index[dep], id)
				}
			}
			if slices.Contains(r.DependsOn, r.LogicalID) || refersTo(r, r.LogicalID) {
				ds = append(ds, diag.Diagnostic{Severity: diag.Error, File: as.File, Path: r.Path,
					Summary: fmt.Sprintf("dependency cycle: %s depends on itself", r.LogicalID),
					Detail:  "remove the reference to itself"})
			}
			for _, d := range ResourceDependencies(r) {
				if target, ok := b.index[as.ID+"/"+d]; ok {
					b.edge(target, id)
				}
			}
		}
	}
	g, err := b.build()
	if ce, ok := err.(*CycleError); ok { //nolint:errorlint // build returns it unwrapped
		for _, c := range ce.Cycles {
			stack, first, _ := strings.Cut(c[0], "/")
			as := a.Stack(stack)
			ds = append(ds, diag.Diagnostic{Severity: diag.Error, File: as.File, Path: as.Resource(first).Path,
				Summary: "dependency cycle: " + strings.Join(trimStack(c, stack), " → "),
				Detail:  "break the cycle by removing one of these references or dependsOn entries"})
		}
	} else if err != nil {
		ds = append(ds, diag.Diagnostic{Severity: diag.Error, Summary: err.Error()})
	}
	if ds.HasErrors() {
		return nil, ds
	}
	return g, ds
}

func refersTo(r *assembly.Resource, id string) bool {
	for _, t := range assembly.FindTokens("", r.Properties) {
		if t.Ref == id {
			return true
		}
	}
	return false
}

func trimStack(keys []string, stack string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = strings.TrimPrefix(k, stack+"/")
	}
	return out
}

// stackCycles reports cycles among stack dependencies (manifest dependencies and stackRef tokens).
func stackCycles(a *assembly.Assembly) diag.Diagnostics {
	b := newBuilder()
	for _, s := range a.Stacks {
		b.add(&Node{Kind: StackNode, Stack: s.ID})
	}
	var ds diag.Diagnostics
	for _, s := range a.Stacks {
		for _, d := range s.Dependencies {
			if d == s.ID {
				continue // reported by assembly as a self reference
			}
			if dep, ok := b.index[d]; ok {
				b.edge(dep, b.index[s.ID])
			}
		}
	}
	_, err := b.build()
	if ce, ok := err.(*CycleError); ok { //nolint:errorlint // build returns it unwrapped
		for _, c := range ce.Cycles {
			ds = append(ds, diag.Diagnostic{Severity: diag.Error, File: manifestFile(a), Path: "artifacts." + c[0] + ".dependencies",
				Summary: "cross-stack dependency cycle: " + strings.Join(c, " → "),
				Detail:  "stacks may not read each other's outputs in a circle; move the shared resources to one stack"})
		}
	}
	return ds
}

func manifestFile(a *assembly.Assembly) string {
	if a.Dir == "" {
		return "manifest.json"
	}
	return strings.TrimSuffix(a.Dir, "/") + "/manifest.json"
}

// StackOrder returns the stacks of a in dependency order (dependencies first), keeping manifest order
// among independent stacks. It assumes BuildGraph found no cross-stack cycle.
func StackOrder(a *assembly.Assembly) []string {
	b := newBuilder()
	for _, s := range a.Stacks {
		b.add(&Node{Kind: StackNode, Stack: s.ID})
	}
	for _, s := range a.Stacks {
		for _, d := range s.Dependencies {
			if dep, ok := b.index[d]; ok {
				b.edge(dep, b.index[s.ID])
			}
		}
	}
	g, err := b.build()
	if err != nil {
		out := make([]string, len(a.Stacks))
		for i, s := range a.Stacks {
			out[i] = s.ID
		}
		return out
	}
	out := make([]string, 0, len(g.Nodes))
	for _, id := range g.Order() {
		out = append(out, g.Nodes[id].Stack)
	}
	return out
}
