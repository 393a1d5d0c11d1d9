// Package planner builds the dependency graph of a cloud assembly and diffs it against recorded state into
// steps: create, update, replace, delete and no-op.
package planner

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

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
	// Rank is the length, in steps, of the longest chain of changes that must follow this one: its
	// dependents', and the changes after it in its serial groups (resource.Schema.Serialize, one at a
	// time). Under a concurrency limit the engine starts the waiting step of highest rank first, so
	// that the longest chain is never starved by steps with time to spare.
	Rank int
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

// setup is what a plan is made from: the graph (narrowed by Input.Targets and Excludes), the stacks by ID,
// the selection (nil without targets or exclusions), the keys Input.Replace names, and the diagnostics so far.
type setup struct {
	g       *Graph
	stacks  map[string]*assembly.Stack
	sel     *Selection
	replace map[string]bool
	ds      diag.Diagnostics
}

// prepare builds in's setup; false when its diagnostics hold errors (a cycle, a bad target or --replace ID).
func prepare(in Input) (setup, bool) {
	su := setup{g: in.Graph, replace: map[string]bool{}}
	if su.g == nil {
		if su.g, su.ds = BuildGraph(in.Assembly, in.Stacks); su.ds.HasErrors() {
			return su, false
		}
	}
	su.stacks = stackIndex(in.Assembly)
	if len(in.Targets)+len(in.Excludes) > 0 {
		var nds diag.Diagnostics
		if su.sel, su.g, nds = narrow(in, su.g, su.stacks); nds.HasErrors() {
			su.ds = append(su.ds, nds...)
			return su, false
		}
	}
	if len(in.Replace) > 0 {
		var keys []string
		for _, n := range su.g.Nodes {
			if n.Kind == ResourceNode {
				keys = append(keys, n.Key())
			}
		}
		resolved, err := resolveIDs("--replace", in.Replace, keys, in.Stacks, "the selected stacks")
		if err != nil {
			su.ds = append(su.ds, diag.Diagnostic{Severity: diag.Error, Summary: err.Error()})
			return su, false
		}
		for _, i := range resolved {
			su.replace[keys[i]] = true
		}
	}
	return su, true
}

// Make builds the dependency graph of the selected stacks and diffs it against state, narrowed to
// in.Targets and in.Excludes when given. Diagnostics report cycles, bad target IDs, reads of outputs that
// targeting leaves unrecorded and deletes that a surviving resource still needs; with errors, the plan is
// nil. It takes time linear in the size of the assembly and state it reads.
func Make(in Input) (*Plan, diag.Diagnostics) {
	su, ok := prepare(in)
	g, stacks, sel, ds := su.g, su.stacks, su.sel, su.ds
	if !ok {
		return nil, ds
	}
	p := &Plan{Graph: g, Outputs: map[string]resource.Properties{}, Assembly: in.Assembly, State: in.State, Selection: sel}
	pr := &predictor{in: in, g: g, stacks: stacks, sel: sel, plan: p, replace: su.replace, slab: make([]Step, len(g.Nodes))}
	for _, id := range g.Order() {
		if n := g.Nodes[id]; n.Kind == StackNode {
			p.Stacks = append(p.Stacks, n.Stack)
		}
	}
	var recorded []*state.Stack
	for _, name := range p.Stacks {
		if st := in.State[name]; st != nil {
			recorded = append(recorded, st)
		}
	}
	// What to delete depends on the assembly and state alone: it is found while the workers plan.
	var dels []*Step
	var dds diag.Diagnostics
	var panicked any
	deleted := make(chan struct{})
	go func() {
		defer close(deleted)
		defer func() { panicked = recover() }() // Make's own, as without the goroutine
		dels, dds = deletes(stacks, recorded, sel)
	}()
	pr.run()
	<-deleted
	if panicked != nil {
		panic(panicked)
	}
	p.Steps = make([]*Step, 0, len(g.Nodes))
	for _, id := range g.Order() {
		if n := g.Nodes[id]; n.Kind == ResourceNode {
			p.Steps = append(p.Steps, n.Step)
		}
	}
	if pr.ds.HasErrors() {
		ds = append(ds, pr.ds...)
		ds.Sort()
		return nil, ds
	}
	rank(g)
	p.Deletes, ds = dels, dds
	return p, ds
}

// rank sets the Rank of every resource step of g: 1 + the steps after it in its serial groups + the
// highest rank among its dependents. A serial group is known before deploy by the value its key's
// property holds in the template (a token as written, or a literal); its members run in some order, and
// each is ranked as if they ran in logical-ID order, so that the members' prerequisites (the server of
// each load-balancer target) are ranked in the order the group will want them. O(V + E + M log M) for M
// group members.
func rank(g *Graph) {
	groups := map[string][]*Step{}
	for _, n := range g.Nodes {
		st := n.Step
		if st == nil || st.Resource == nil {
			continue
		}
		for _, k := range st.Schema.Serialize {
			v, ok := st.Resource.Properties[k.Property]
			if k.Property == "" || !ok || v == nil {
				continue
			}
			key := n.Stack + "\x00" + st.Provider + "/" + k.Group + "=" + string(resource.Canonical(v))
			groups[key] = append(groups[key], st)
		}
	}
	after := map[*Step]int{}
	for _, members := range groups {
		slices.SortFunc(members, func(a, b *Step) int { return strings.Compare(a.LogicalID, b.LogicalID) })
		for i, st := range members {
			after[st] = max(after[st], len(members)-1-i)
		}
	}
	ranks := make([]int, len(g.Nodes))
	order := g.Order()
	for i := len(order) - 1; i >= 0; i-- {
		id := order[i]
		best := 0
		for _, d := range g.Dependents(id) {
			best = max(best, ranks[d])
		}
		if st := g.Nodes[id].Step; st != nil {
			best += 1 + after[st]
			st.Rank = best
		}
		ranks[id] = best
	}
}

// stackIndex maps each stack ID of a to its stack (the first, should the ID repeat): assembly.Stack scans
// the list, which is quadratic when called once per stack.
func stackIndex(a *assembly.Assembly) map[string]*assembly.Stack {
	out := make(map[string]*assembly.Stack, len(a.Stacks))
	for _, s := range a.Stacks {
		if _, dup := out[s.ID]; !dup {
			out[s.ID] = s
		}
	}
	return out
}

// deletes lists the resources recorded in state but gone from the assembly, and the objects left by
// earlier replacements, in teardown order; only those of resources sel selects. A delete that a resource
// of the assembly still depends on is an error.
func deletes(asm map[string]*assembly.Stack, stacks []*state.Stack, sel *Selection) ([]*Step, diag.Diagnostics) {
	var ds diag.Diagnostics
	var out []*Step
	for _, st := range stacks {
		as := asm[st.Name]
		var dependents map[string][]*assembly.Resource // logical ID → the resources of as that depend on it
		for _, r := range leftBehind(as, st) {
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
			if dependents == nil {
				dependents = map[string][]*assembly.Resource{}
				for _, other := range as.Resources {
					for _, d := range ResourceDependencies(other) {
						dependents[d] = append(dependents[d], other)
					}
				}
			}
			for _, other := range dependents[r.LogicalID] {
				ds = append(ds, diag.Diagnostic{Severity: diag.Error, File: as.File, Path: other.Path,
					Summary: fmt.Sprintf("%s still depends on %s, which is no longer in the assembly", other.LogicalID, r.LogicalID),
					Detail:  "remove the reference or keep the resource"})
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

// leftBehind returns the resources of st that leave something to delete, sorted by logical ID: those gone
// from as and those with objects left by replacements. It sorts only those, not all of st.
func leftBehind(as *assembly.Stack, st *state.Stack) []*state.Resource {
	var out []*state.Resource
	for id, r := range st.Resources {
		if len(r.Replaced) > 0 || as.Resource(id) == nil {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b *state.Resource) int { return strings.Compare(a.LogicalID, b.LogicalID) })
	return out
}

// predictor computes predicted inputs and outputs in graph order. Up to GOMAXPROCS workers plan the
// nodes, each taking the next block of Order in turn and planning its nodes (worker.plan), each once the
// nodes it reads are planned: its dependencies (a {ref} token is an edge of the graph) and any stack
// node before it in Order whose outputs it reads. So the steps are those a walk of Order makes, and
// neighbours in Order, which are mostly neighbours in memory too, are planned together.
type predictor struct {
	in      Input
	g       *Graph
	stacks  map[string]*assembly.Stack
	sel     *Selection
	plan    *Plan
	slab    []Step          // the step of resource node id is slab[id]: one allocation for all of them
	replace map[string]bool // keys forced to be replaced (--replace)
	// ds are the errors of the schemas' CheckChange on updates, in graph order.
	ds diag.Diagnostics

	pos        []int32               // by node ID: its position in Order
	stackNodes map[string]int        // stack ID → the ID of its stack node in g
	outputs    []resource.Properties // by node ID: the predicted outputs of a stack node
	done       []atomic.Bool         // by node ID: planned
	blockDone  []chan struct{}       // by block of Order: closed once all its nodes are planned
	next       atomic.Int64          // the next block of Order no worker has taken
	block      int                   // nodes of Order a worker takes at a time (planBlock)
	panicked   atomic.Pointer[any]   // what a worker panicked with first
}

// planBlock is how many nodes of Order a worker takes at a time.
var planBlock = 256

// run plans every node of pr.g: the Step of each resource node, the predicted outputs of each stack node
// (the recorded ones for a stack pr.sel covers only partly) in pr.plan.Outputs, and pr.ds.
func (pr *predictor) run() {
	order := pr.g.Order()
	pr.pos = make([]int32, len(pr.g.Nodes))
	pr.stackNodes = map[string]int{}
	for i, id := range order {
		pr.pos[id] = int32(i)
		if n := pr.g.Nodes[id]; n.Kind == StackNode {
			pr.stackNodes[n.Stack] = id
		}
	}
	pr.outputs = make([]resource.Properties, len(pr.g.Nodes))
	pr.block = planBlock
	blocks := (len(order) + pr.block - 1) / pr.block
	workers := make([]*worker, max(1, min(runtime.GOMAXPROCS(0), blocks)))
	for i := range workers {
		workers[i] = &worker{pr: pr}
	}
	if len(workers) == 1 {
		workers[0].plan(order)
	} else {
		pr.done = make([]atomic.Bool, len(pr.g.Nodes))
		pr.blockDone = make([]chan struct{}, blocks)
		for i := range pr.blockDone {
			pr.blockDone[i] = make(chan struct{})
		}
		var wg sync.WaitGroup
		for _, w := range workers {
			wg.Go(func() {
				take := func() int { return int(pr.next.Add(1) - 1) }
				b := take()
				defer func() {
					// A panic (a schema's CheckChange, say) is the caller's, as it would be without workers:
					// the other workers are let through the blocks left, then Make panics with it.
					if v := recover(); v != nil {
						pr.panicked.CompareAndSwap(nil, &v)
						for ; b < blocks; b = take() {
							close(pr.blockDone[b])
						}
					}
				}()
				for ; b < blocks; b = take() {
					if pr.panicked.Load() == nil {
						w.plan(order[b*pr.block : min((b+1)*pr.block, len(order))])
					}
					close(pr.blockDone[b])
				}
			})
		}
		wg.Wait()
		if v := pr.panicked.Load(); v != nil {
			panic(*v)
		}
	}
	for _, id := range order {
		if n := pr.g.Nodes[id]; n.Kind == StackNode {
			pr.plan.Outputs[n.Stack] = pr.outputs[id]
		}
	}
	var found []placed
	for _, w := range workers {
		found = append(found, w.ds...)
	}
	slices.SortStableFunc(found, func(a, b placed) int { return int(a.pos - b.pos) })
	for _, f := range found {
		pr.ds = append(pr.ds, f.d)
	}
}

// ready reports whether every dependency of node id is planned (with workers).
func (pr *predictor) ready(id int) bool {
	for _, d := range pr.g.deps[id] {
		if !pr.done[d].Load() {
			return false
		}
	}
	return true
}

// wait returns once node id is planned.
func (pr *predictor) wait(id int) {
	if pr.done != nil && !pr.done[id].Load() {
		<-pr.blockDone[int(pr.pos[id])/pr.block]
	}
}

// planned returns the predicted outputs of stack when its stack node comes before node id in Order (and
// so is planned before it), after waiting for them.
func (pr *predictor) planned(stack string, id int) (resource.Properties, bool) {
	sn, ok := pr.stackNodes[stack]
	if !ok || pr.pos[sn] >= pr.pos[id] {
		return nil, false
	}
	pr.wait(sn)
	return pr.outputs[sn], true
}

// placed is a diagnostic of the node at position pos of the graph's Order.
type placed struct {
	pos int32
	d   diag.Diagnostic
}

// worker plans resources of a predictor, one at a time; workers share nothing they write but the steps
// of their own nodes.
type worker struct {
	pr *predictor
	ds []placed
	id int // the node being planned
	// The last schema looked up: most resources share a few types.
	lastProvider, last string
	lastSchema         resource.Schema
	later              []int // the nodes of a block plan puts off
	// near holds the resource steps that node nearID-1 depends on, by logical ID, when it has many.
	near   map[string]*Step
	nearID int
}

// plan plans nodes ids, consecutive in Order, in Order but for those that read a node not planned yet
// (of a block another worker has): those it plans after the others, once what they read is planned, so
// that a chain of dependencies across the start of a block does not keep it waiting for the whole block
// before.
func (w *worker) plan(ids []int) {
	pr := w.pr
	later := w.later[:0]
	for _, id := range ids {
		if pr.done != nil && !pr.ready(id) {
			later = append(later, id)
			continue
		}
		w.planNode(id)
	}
	for _, id := range later {
		for _, d := range pr.g.deps[id] {
			pr.wait(d)
		}
		w.planNode(id)
	}
	w.later = later
}

// planNode plans node id, whose dependencies are planned.
func (w *worker) planNode(id int) {
	pr := w.pr
	w.id = id
	n := pr.g.Nodes[id]
	switch {
	case n.Kind == StackNode && pr.sel.IsPartial(n.Stack):
		pr.outputs[id] = recordedOutputs(pr.in.State[n.Stack])
	case n.Kind == StackNode:
		pr.outputs[id] = w.stackOutputs(pr.stacks[n.Stack])
	default:
		r := n.resource
		if r == nil {
			r = pr.stacks[n.Stack].Resource(n.LogicalID)
		}
		n.Step = w.step(r, n.Stack, n.deps)
	}
	if pr.done != nil {
		pr.done[id].Store(true)
	}
}

func (w *worker) schema(provider, typ string) resource.Schema {
	if provider != w.lastProvider || typ != w.last || w.lastSchema.Type == "" {
		w.lastSchema, _, _ = w.pr.in.Schemas(provider, typ)
		w.lastProvider, w.last = provider, typ
	}
	return w.lastSchema
}

// step plans resource r of stack, node w.id; deps are its direct dependencies (ResourceDependencies), or
// nil to compute them.
func (w *worker) step(r *assembly.Resource, stack string, deps []string) *Step {
	schema := w.schema(r.Provider, r.Type)
	var old *state.Resource
	if st := w.pr.in.State[stack]; st != nil {
		old = st.Resources[r.LogicalID]
	}
	if deps == nil {
		deps = ResourceDependencies(r)
	}
	inputs, ok := w.resolve(stack, r.Properties).(map[string]any)
	if !ok || inputs == nil {
		inputs = map[string]any{}
	}
	s := &w.pr.slab[w.id]
	*s = Step{Stack: stack, LogicalID: r.LogicalID, Type: r.Type, Provider: r.Provider, Resource: r,
		Schema: schema, Old: old, Inputs: inputs, Dependencies: deps}
	s.Decision = Decide(schema, old, r.Type, r.Provider, s.Inputs, r.Metadata)
	if len(w.pr.replace) > 0 && w.pr.replace[s.Key()] {
		s.ForceReplace = true
		s.Decision = ForceReplace(schema, s.Decision, r.Metadata)
	}
	if s.Op == OpUpdate && schema.CheckChange != nil {
		w.checkChange(s)
	}
	return s
}

// checkChange adds to w.ds the errors of the schema's CheckChange on update s, at the resource's file
// and JSON path, as validation reports them.
func (w *worker) checkChange(s *Step) {
	file := ""
	if as := w.pr.stacks[s.Stack]; as != nil {
		file = as.File
	}
	props := s.Resource.Path + ".properties"
	for _, fe := range s.Schema.CheckChange(s.Old.Inputs, s.Inputs, isUnknown) {
		at := props
		if fe.Path != "" {
			at = assembly.JoinPath(props, fe.Path)
		}
		var ds diag.Diagnostics
		ds.Errorf(file, at, "%s", fe.Message)
		w.ds = append(w.ds, placed{pos: w.pr.pos[w.id], d: ds[0]})
	}
}

// isUnknown is the resource.IsUnknownFunc of predicted inputs: a value known only at deploy.
func isUnknown(v any) bool { return resource.ContainsUnknown(v) }

// resolve returns a copy of v, a value of node w.id of stack, with each token replaced by its predicted
// value, or by resource.Unknown when it cannot be predicted.
func (w *worker) resolve(stack string, v any) any {
	return predict(v, func(t assembly.Token) (any, bool) {
		if t.StackRef != "" {
			outs, planned := w.pr.planned(t.StackRef, w.id)
			return predictedStackOutput(t, outs, planned, w.pr.in.State)
		}
		return predictedOutput(w.dependency(stack, t.Ref), t.Attr)
	})
}

// predict returns a copy of v with each token replaced by what value says of it, or by resource.Unknown
// when value does not know it.
func predict(v any, value func(assembly.Token) (any, bool)) any {
	if t, ok := assembly.AsToken(v); ok {
		if val, known := value(t); known {
			return val
		}
		return resource.Unknown{}
	}
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = predict(e, value)
		}
		return m
	case []any:
		l := make([]any, len(v))
		for i, e := range v {
			l[i] = predict(e, value)
		}
		return l
	}
	return v
}

// predictedOutput is the value output attr of the resource planned as s will have after the deploy, when
// the plan knows it: a recorded output of a resource left alone, or a stable one (or its CRN) of a
// resource updated in place. s nil (not planned) or without a record: unknown.
func predictedOutput(s *Step, attr string) (any, bool) {
	if s == nil || s.Old == nil {
		return nil, false
	}
	switch s.Op {
	case OpSame:
	case OpUpdate:
		if attr != "crn" && !slices.Contains(s.Schema.StableOutputs, attr) {
			return nil, false
		}
	default:
		return nil, false
	}
	v, ok := s.Old.Outputs[attr]
	return v, ok
}

// predictedStackOutput is the value of {stackRef} token t: from the predicted outputs of its stack when
// that stack is planned (known unless they hold an unknown), else from its recorded state.
func predictedStackOutput(t assembly.Token, outs resource.Properties, planned bool, st map[string]*state.Stack) (any, bool) {
	if planned {
		v, ok := outs[t.OutputKey]
		return v, ok && !resource.ContainsUnknown(v)
	}
	if s := st[t.StackRef]; s != nil {
		v, ok := s.Outputs[t.OutputKey]
		return v, ok
	}
	return nil, false
}

// dependency returns the step of resource ref of stack that node w.id depends on, or nil when it depends
// on none: ref is not planned (not in the assembly, or left out by --target and --exclude). A {ref} token
// is an edge of the graph, so the step is among w.id's dependencies.
func (w *worker) dependency(stack, ref string) *Step {
	g, id := w.pr.g, w.id
	deps := g.deps[id]
	if len(deps) <= 16 {
		for _, d := range deps {
			if n := g.Nodes[d]; n.Kind == ResourceNode && n.LogicalID == ref && n.Stack == stack {
				return n.Step
			}
		}
		return nil
	}
	if w.nearID != id+1 {
		w.near, w.nearID = make(map[string]*Step, len(deps)), id+1
		for _, d := range deps {
			if n := g.Nodes[d]; n.Kind == ResourceNode && n.Stack == stack {
				w.near[n.LogicalID] = n.Step
			}
		}
	}
	return w.near[ref]
}

// stackOutputs returns the predicted outputs of stack as, node w.id.
func (w *worker) stackOutputs(as *assembly.Stack) resource.Properties {
	out := resource.Properties{}
	for key, o := range as.Outputs {
		out[key] = w.resolve(as.ID, o.Value)
	}
	return out
}

// ResourceDependencies returns the direct same-stack dependencies of r: its dependsOn entries and the
// targets of its {ref} tokens, sorted and without duplicates.
func ResourceDependencies(r *assembly.Resource) []string {
	deps, _, _ := references(r)
	return deps
}

// references returns what r refers to: its direct same-stack dependencies (as ResourceDependencies),
// whether it refers to itself (a dependsOn entry or a {ref} naming its own logical ID), and the stacks its
// {stackRef} tokens name, sorted and without duplicates. It walks r's properties once.
func references(r *assembly.Resource) (deps []string, self bool, stackRefs []string) {
	deps = make([]string, 0, len(r.DependsOn)+len(r.Implied))
	deps = append(deps, r.DependsOn...)
	deps = append(deps, r.Implied...)
	eachToken(r.Properties, func(t assembly.Token) {
		switch {
		case t.Ref != "":
			deps = append(deps, t.Ref)
		case t.StackRef != "":
			stackRefs = append(stackRefs, t.StackRef)
		}
	})
	deps = sortedUnique(deps)
	if i, found := slices.BinarySearch(deps, r.LogicalID); found {
		self = true
		deps = slices.Delete(deps, i, i+1)
	}
	return deps, self, sortedUnique(stackRefs)
}

// eachToken calls fn for every token in v, in no particular order. Unlike assembly.FindTokens it builds
// no paths.
func eachToken(v any, fn func(assembly.Token)) {
	if t, ok := assembly.AsToken(v); ok {
		fn(t)
		return
	}
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			eachToken(e, fn)
		}
	case []any:
		for _, e := range v {
			eachToken(e, fn)
		}
	}
}

func sortedUnique(list []string) []string {
	if len(list) < 2 {
		return list
	}
	slices.Sort(list)
	return slices.Compact(list)
}

// BuildGraph returns the dependency graph of the selected stacks: one node per resource and per stack.
// Edges: resource → resource from dependsOn and {ref} tokens; every resource of a stack → the stack's node;
// a stack's node → every resource (and the node) of each selected stack that depends on it. The edges a
// resource's {stackRef} tokens and a stack's outputs account for are references (Graph.References); the
// others only order the run. A stack's Dependencies must name every stack its {stackRef} tokens read, as
// assembly.Load makes sure. Cycles inside a stack and across stacks are diagnostics listing the cycle in
// a stable order. It takes O(V + E log E) time for V resources and stacks and E edges.
func BuildGraph(a *assembly.Assembly, stacks []string) (*Graph, diag.Diagnostics) {
	if ds := stackCycles(a); ds.HasErrors() {
		return nil, ds
	}
	selected := make(map[string]bool, len(stacks))
	for _, s := range stacks {
		selected[s] = true
	}
	var run []*assembly.Stack
	size := 0
	for _, as := range a.Stacks {
		if selected[as.ID] {
			run = append(run, as)
			size += len(as.Resources) + 1
		}
	}
	b := newBuilder(size)
	b.edges = make([]bedge, 0, 2*size) // each resource waits for one other and completes its stack, say
	stackNodes := make(map[string]int, len(run))
	for _, as := range run {
		for _, r := range as.Resources {
			b.add(Node{Kind: ResourceNode, Stack: as.ID, LogicalID: r.LogicalID, resource: r})
		}
		stackNodes[as.ID] = b.add(Node{Kind: StackNode, Stack: as.ID})
	}
	var ds diag.Diagnostics
	first := 0 // the ID of the first resource node of as
	for _, as := range run {
		stackNode := first + len(as.Resources)
		ids := make(map[string]int, len(as.Resources))
		for i, r := range as.Resources {
			ids[r.LogicalID] = first + i
		}
		var deps []int // the stack nodes of the selected stacks as depends on
		for _, d := range as.Dependencies {
			if n, ok := stackNodes[d]; ok && n != stackNode {
				deps = append(deps, n)
			}
		}
		outputRefs := map[string]bool{}
		for _, o := range as.Outputs {
			eachToken(o.Value, func(t assembly.Token) {
				if t.StackRef != "" {
					outputRefs[t.StackRef] = true
				}
			})
		}
		for _, d := range deps {
			if outputRefs[b.nodes[d].Stack] {
				b.edge(d, stackNode)
			} else {
				b.orderEdge(d, stackNode)
			}
		}
		for i, r := range as.Resources {
			id := first + i
			b.edge(id, stackNode)
			refs, self, stackRefs := references(r)
			b.nodes[id].deps = refs
			for _, d := range deps {
				if _, reads := slices.BinarySearch(stackRefs, b.nodes[d].Stack); reads {
					b.edge(d, id)
				} else {
					b.orderEdge(d, id)
				}
			}
			if self {
				ds = append(ds, diag.Diagnostic{Severity: diag.Error, File: as.File, Path: r.Path,
					Summary: fmt.Sprintf("dependency cycle: %s depends on itself", r.LogicalID),
					Detail:  "remove the reference to itself"})
			}
			for _, d := range refs {
				if target, ok := ids[d]; ok {
					b.edge(target, id)
				}
			}
		}
		first = stackNode + 1
	}
	g, err := b.build()
	if ce, ok := err.(*CycleError); ok { //nolint:errorlint // build returns it unwrapped
		asm := stackIndex(a)
		for _, c := range ce.Cycles {
			stack, first, _ := strings.Cut(c[0], "/")
			as := asm[stack]
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

func trimStack(keys []string, stack string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = strings.TrimPrefix(k, stack+"/")
	}
	return out
}

// stackCycles reports cycles among stack dependencies (manifest dependencies and stackRef tokens).
func stackCycles(a *assembly.Assembly) diag.Diagnostics {
	_, err := stackGraph(a)
	var ds diag.Diagnostics
	if ce, ok := err.(*CycleError); ok { //nolint:errorlint // build returns it unwrapped
		for _, c := range ce.Cycles {
			ds = append(ds, diag.Diagnostic{Severity: diag.Error, File: manifestFile(a), Path: "artifacts." + c[0] + ".dependencies",
				Summary: "cross-stack dependency cycle: " + strings.Join(c, " → "),
				Detail:  "stacks may not read each other's outputs in a circle; move the shared resources to one stack"})
		}
	}
	return ds
}

// stackGraph returns the graph of a's stacks, one StackNode each in manifest order, with an edge for each
// dependency on another stack of a; a *CycleError when they form cycles.
func stackGraph(a *assembly.Assembly) (*Graph, error) {
	b := newBuilder(len(a.Stacks))
	index := make(map[string]int, len(a.Stacks))
	for _, s := range a.Stacks {
		index[s.ID] = b.add(Node{Kind: StackNode, Stack: s.ID})
	}
	for i, s := range a.Stacks {
		for _, d := range s.Dependencies {
			if dep, ok := index[d]; ok && d != s.ID { // a self reference is reported by assembly
				b.edge(dep, i)
			}
		}
	}
	return b.build()
}

func manifestFile(a *assembly.Assembly) string {
	if a.Dir == "" {
		return "manifest.json"
	}
	return strings.TrimSuffix(a.Dir, "/") + "/manifest.json"
}

// StackOrder returns the stacks of a in dependency order (dependencies first), keeping manifest order
// among independent stacks. It assumes BuildGraph found no cross-stack cycle. O(S + D log D) for S stacks
// and D dependencies.
func StackOrder(a *assembly.Assembly) []string {
	g, err := stackGraph(a)
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
