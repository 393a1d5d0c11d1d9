package engine

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/planner"
)

// deployRun is one Deploy: the shared run plus what only a deploy needs. Fields below mu are guarded by it.
type deployRun struct {
	*run
	plan *planner.Plan

	mu           sync.Mutex
	outputs      map[string]map[string]resource.Properties // stack → logical ID → outputs of resources done
	stackOutputs map[string]resource.Properties
	// recreated holds "Stack/LogicalID" of resources replaced delete-before-replace in this run: their old
	// object is gone, and providers may have deleted what lived inside it (a zone's record sets).
	recreated map[string]bool
	// outputRefs maps stack → output key → logical IDs the output's value reads from (set before the walk).
	outputRefs map[string]map[string][]string
	// applied lists the changes the run made, in the order they succeeded (for rollback).
	applied []applied
	// skipped holds, per stack, why part of it was skipped because another stack failed.
	skipped map[string]string
}

// Deploy applies a plan: resource steps by dependency, then deletions of resources gone from the assembly
// and of objects left by replacements (the cleanup phase), then each stack's final status. Every provider
// call goes through the executor: its pending record is durable before it, its result after. Deploy
// returns an error only when it cannot start (state unwritable); what happened to each resource is in the
// Result, summarised by Result.Err. After ctx is cancelled no new step starts; calls in flight finish.
func Deploy(ctx context.Context, p *planner.Plan, opts Options) (*Result, error) {
	r := &deployRun{run: newRun(ctx, opts), plan: p, outputs: map[string]map[string]resource.Properties{},
		stackOutputs: map[string]resource.Properties{}, recreated: map[string]bool{}, skipped: map[string]string{},
		outputRefs: map[string]map[string][]string{}}
	steps, changes := map[string]int{}, 0
	for _, s := range p.Steps {
		steps[s.Stack]++
		if s.Op != planner.OpSame {
			changes++
		}
	}
	r.applied = make([]applied, 0, changes) // the most a run remembers: sized once, not grown to twice that
	for _, name := range p.Stacks {
		st := p.State[name]
		if st == nil {
			st = state.NewStack(name)
		}
		r.addStack(st)
		r.outputs[name] = make(map[string]resource.Properties, steps[name])
	}
	for name, st := range p.State {
		if _, selected := r.ledger.stacks[name]; !selected && st != nil {
			r.stackOutputs[name] = st.Outputs
		}
	}
	for _, as := range p.Assembly.Stacks {
		refs := map[string][]string{}
		for key, o := range as.Outputs {
			for _, t := range assembly.FindTokens("", o.Value) {
				if t.Ref != "" {
					refs[key] = append(refs[key], t.Ref)
				}
			}
		}
		r.outputRefs[as.ID] = refs
	}
	deployments, err := r.start(ctx, p.Stacks, state.KindDeploy, func(stack string) []byte {
		return snapshot(p.Assembly.Stack(stack), opts.Providers)
	})
	if err != nil {
		return nil, err
	}
	for _, name := range p.Stacks {
		r.stackEvent(name, r.stackOp(name).statuses().inProgress, "")
	}

	res := walk(ctx, p.Graph, visitLimit(r.opts.Concurrency), func(id int) error {
		n := p.Graph.Nodes[id]
		sctx := ctx
		if r.opts.StackContext != nil {
			sctx = r.opts.StackContext(n.Stack)
		}
		if sctx.Err() != nil {
			return errNotStarted // what waits for it never starts either
		}
		if n.Kind == planner.StackNode {
			return r.completeStack(p.Assembly.Stack(n.Stack), p.Selection.IsPartial(n.Stack))
		}
		return r.applyStep(sctx, n.Step)
	}, func(id, root int) {
		r.skip(p.Graph.Nodes[id], p.Graph.Nodes[root])
	})
	end := ending{interrupted: ctx.Err() != nil, skipped: r.skipped}
	for id, o := range res.outcomes {
		if o == outcomeNotStarted && p.Graph.Nodes[id].Kind == planner.ResourceNode {
			end.notStarted++
		}
	}
	if !end.interrupted {
		end.aborted = r.abortedStacks(p, res)
	}

	if r.tally.failureCount() > 0 && !opts.NoRollback && r.ledger.failed() == nil {
		var failed []string
		fs := r.tally.failedStacks()
		for _, name := range p.Stacks {
			if fs[name] != "" {
				failed = append(failed, name)
			}
		}
		end.rolledBack = r.rollback(ctx, failed)
	}

	if r.tally.failureCount() == 0 && len(r.skipped) == 0 && !end.interrupted && len(end.aborted) == 0 && r.ledger.failed() == nil {
		if steps := r.cleanupSteps(p.Assembly, p.Stacks, p.Selection); len(steps) > 0 {
			for _, stack := range stacksOf(steps) {
				r.stackEvent(stack, UpdateCompleteCleanup, "deleting objects no longer in the assembly or replaced")
			}
			tg, err := planner.TeardownGraph(steps, nil)
			if err != nil {
				r.tally.fail(Failure{Stack: steps[0].Stack, Type: StackType, Status: UpdateFailed, Err: err})
			} else {
				end.notStarted += r.teardown(ctx, tg).count(outcomeNotStarted)
			}
			end.interrupted = end.interrupted || ctx.Err() != nil
		}
	}
	return r.finish(p.Stacks, deployments, end), nil
}

// stackAborted returns why the deployment of stack was aborted (the cause of its Options.StackContext),
// or "".
func (r *deployRun) stackAborted(stack string) string {
	if r.opts.StackContext == nil {
		return ""
	}
	sctx := r.opts.StackContext(stack)
	if sctx.Err() == nil {
		return ""
	}
	return context.Cause(sctx).Error()
}

// abortedStacks returns, for each stack with a node the walk did not start because of an abort, why: the
// abort of its own deployment, or that it waited for a stack whose deployment was aborted.
func (r *deployRun) abortedStacks(p *planner.Plan, res *walkResult) map[string]string {
	if r.opts.StackContext == nil {
		return nil
	}
	var first string // the first aborted stack, in deployment order
	for _, name := range p.Stacks {
		if r.stackAborted(name) != "" {
			first = name
			break
		}
	}
	if first == "" {
		return nil
	}
	out := map[string]string{}
	for id, o := range res.outcomes {
		stack := p.Graph.Nodes[id].Stack
		if o != outcomeNotStarted || out[stack] != "" {
			continue
		}
		if why := r.stackAborted(stack); why != "" {
			out[stack] = why
		} else {
			out[stack] = fmt.Sprintf("not finished: it waits for stack %s, whose deployment was aborted (%s)", first, r.stackAborted(first))
		}
	}
	return out
}

// skip records that node was skipped because root failed; a stack that loses resources this way to
// another stack's failure does not complete.
func (r *deployRun) skip(node, root *planner.Node) {
	if node.Stack != root.Stack {
		r.mu.Lock()
		if r.skipped[node.Stack] == "" {
			r.skipped[node.Stack] = fmt.Sprintf("skipped: stack %s did not complete (%s failed)", root.Stack, root.Key())
		}
		r.mu.Unlock()
	}
	if node.Kind != planner.ResourceNode {
		return
	}
	reason := fmt.Sprintf("dependency %s failed", root.Key())
	if root.Stack != node.Stack {
		reason = fmt.Sprintf("stack %s did not complete (%s failed)", root.Stack, root.Key())
	}
	r.markSkipped(node, reason)
}

// Destroy deletes every object recorded in stacks — driven by state, not by the assembly — in reverse
// dependency order, independent branches in parallel. It keeps going past failures (only what a failed
// object depends on waits) and reports them all in the Result.
func Destroy(ctx context.Context, stacks []*state.Stack, opts Options) (*Result, error) {
	r := newRun(ctx, opts)
	names := make([]string, 0, len(stacks))
	stackDeps := map[string][]string{}
	for _, st := range stacks {
		names = append(names, st.Name)
		r.addStack(st)
		stackDeps[st.Name] = st.Dependencies
	}
	tg, err := planner.TeardownGraph(planner.DestroySteps(stacks), stackDeps)
	if err != nil {
		return nil, err
	}
	deployments, err := r.start(ctx, names, state.KindDestroy, func(string) []byte { return nil })
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		r.stackEvent(name, DeleteInProgress, "")
	}
	res := r.teardown(ctx, tg)
	return r.finish(names, deployments, ending{destroy: true, interrupted: ctx.Err() != nil, notStarted: res.count(outcomeNotStarted)}), nil
}

// teardown runs the delete steps of g (dependents first) through the executor.
func (r *run) teardown(ctx context.Context, g *planner.Graph) *walkResult {
	return walk(ctx, g, visitLimit(r.opts.Concurrency), func(id int) error {
		return r.teardownStep(ctx, g.Nodes[id].Step)
	}, func(id, root int) {
		r.markSkipped(g.Nodes[id], fmt.Sprintf("dependency %s failed", g.Nodes[root].Key()))
	})
}

// markSkipped counts a resource node that will not run and records its SKIPPED event, without waiting (the
// walker must not block on state; the commit pipeline keeps the order).
func (r *run) markSkipped(n *planner.Node, reason string) {
	r.tally.done(Skipped)
	r.ledger.event(n.Stack, Event{Stack: n.Stack, Type: n.Step.Type, LogicalID: n.LogicalID, Status: Skipped, Reason: reason})
}

// teardownStep deletes one object: a resource's live object (then its record goes) or an object left by a
// replacement (then it leaves the record's Replaced list).
func (r *run) teardownStep(ctx context.Context, ps *planner.Step) error {
	if o := ps.Object; o != nil {
		t := turn{serial: r.serialOf(o.Provider, o.Type, o.Inputs, o.PhysicalID)}
		return r.x.run(ctx, newDeleteReplacedStep(ps.Stack, ps.LogicalID, *o, t))
	}
	cur := r.ledger.current(ps.Stack, ps.LogicalID)
	if cur == nil {
		return nil
	}
	if cur.PhysicalID == "" {
		r.tally.done(DeleteComplete)
		return r.ledger.apply(ps.Stack, ps.LogicalID, nil, true, Event{Stack: ps.Stack, Type: ps.Type, LogicalID: ps.LogicalID,
			Status: DeleteComplete, Reason: "no object was ever created"})
	}
	ph := phaseOf(opDelete)
	ph.reason = ps.Reason
	t := turn{serial: r.serialOf(cur.Provider, cur.Type, cur.Inputs, cur.PhysicalID)}
	return r.x.run(ctx, newDeleteStep(ps.Stack, ph, cur, nil, DeleteComplete, t))
}

// serialOf returns the serial keys of a change to an object of typ.
func (r *run) serialOf(provider, typ string, inputs resource.Properties, physicalID string) []string {
	s, _, ok := r.opts.Providers.Schema(provider, typ)
	if !ok || len(s.Serialize) == 0 {
		return nil
	}
	return serialKeys(provider, s, inputs, physicalID)
}

func stacksOf(steps []*planner.Step) []string {
	var out []string
	for _, s := range steps {
		if !slices.Contains(out, s.Stack) {
			out = append(out, s.Stack)
		}
	}
	return out
}

// applyStep drives one resource of the assembly to its template: resolve its tokens from real outputs,
// decide the operation against state, run its steps, remember what changed for a rollback.
func (r *deployRun) applyStep(ctx context.Context, ps *planner.Step) error {
	if err := r.ledger.failed(); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return errNotStarted
	}
	old := r.ledger.current(ps.Stack, ps.LogicalID)
	inputs, err := r.resolveInputs(ps)
	if err != nil {
		status := CreateFailed
		if old != nil && old.PhysicalID != "" {
			status = UpdateFailed
		}
		return r.failWithoutCall(ps.Stack, ps.LogicalID, ps.Type, status, err)
	}
	d := planner.Decide(ps.Schema, old, ps.Type, ps.Provider, inputs, ps.Resource.Metadata)
	if ps.ForceReplace {
		d = planner.ForceReplace(ps.Schema, d, ps.Resource.Metadata)
	}
	if d.Op == planner.OpSame || d.Op == planner.OpUpdate {
		if dep := r.recreatedDependency(ps); dep != "" {
			d = planner.Decision{Op: planner.OpReplace, Changes: d.Changes, DeleteBeforeReplace: ps.Schema.DeleteBeforeReplace,
				Reason: fmt.Sprintf("%s was deleted and re-created, and a create-only property reads from it", dep)}
		}
	}
	t := turn{rank: ps.Rank}
	if d.Op != planner.OpSame {
		physicalID := ""
		if old != nil {
			physicalID = old.PhysicalID
		}
		t.serial = serialKeys(ps.Provider, ps.Schema, inputs, physicalID)
	}
	switch d.Op {
	case planner.OpSame:
		return r.same(ps, old)
	case planner.OpCreate:
		err = r.x.run(ctx, r.create(ps, t, old, nil, inputs, phaseOf(opCreate)))
	case planner.OpUpdate:
		err = r.update(ctx, ps, t, old, inputs, d)
	case planner.OpReplace:
		err = r.replace(ctx, ps, t, old, inputs, d)
	default:
		return fmt.Errorf("unexpected operation %q", d.Op)
	}
	if err == nil {
		rec := r.ledger.current(ps.Stack, ps.LogicalID)
		r.setOutputs(ps.Stack, ps.LogicalID, rec.Outputs)
		r.remember(ps, d.Op, d.DeleteBeforeReplace, old)
	}
	return err
}

// create returns the step that creates a new object for ps. base is the record whose older objects
// (Replaced) the new record keeps, or nil; keep is what state records when the create fails (nil: the
// record goes, unless base still lists objects left by replacements).
func (r *deployRun) create(ps *planner.Step, t turn, base, keep *state.Resource, inputs resource.Properties, ph phase) *createStep {
	var prev resource.Properties
	tmpl := &state.Resource{LogicalID: ps.LogicalID, Type: ps.Type, Provider: ps.Provider, Dependencies: ps.Dependencies}
	if base != nil {
		prev = base.Inputs
		if len(prev) == 0 && len(base.Replaced) > 0 {
			prev = base.Replaced[len(base.Replaced)-1].Inputs
		}
		tmpl.Replaced = base.Replaced
	}
	tmpl.Inputs = resource.StoredInputs(ps.Schema, inputs, prev) // write-only values only as fingerprints
	return newCreateStep(ps.Stack, ph, tmpl, inputs, keep, t)
}

func (r *deployRun) update(ctx context.Context, ps *planner.Step, t turn, old *state.Resource, inputs resource.Properties, d planner.Decision) error {
	changed := make([]string, len(d.Changes))
	for i, c := range d.Changes {
		changed[i] = c.Name
	}
	next := *old
	next.Inputs = resource.StoredInputs(ps.Schema, inputs, old.Inputs) // write-only values only as fingerprints
	next.Dependencies = ps.Dependencies
	ph := phaseOf(opUpdate)
	ph.reason = "changed: " + strings.Join(changed, ", ")
	return r.x.run(ctx, newUpdateStep(ps.Stack, ph, old, inputs, &next, changed, t))
}

// replace creates a new object before the old one is deleted in the cleanup phase (the old one is kept in
// the record's Replaced list meanwhile) or, for delete-before-replace, deletes the old one first.
func (r *deployRun) replace(ctx context.Context, ps *planner.Step, t turn, old *state.Resource, inputs resource.Properties, d planner.Decision) error {
	ph := phaseOf(opUpdate)
	if !d.DeleteBeforeReplace {
		holder := *old
		holder.PhysicalID = ""
		holder.Replaced = append(slices.Clone(old.Replaced), state.Object{Type: old.Type, Provider: old.Provider,
			PhysicalID: old.PhysicalID, Inputs: old.Inputs, Outputs: old.Outputs})
		ph.reason = "replacement: " + d.Reason + "; creating the new object first"
		// On failure the old object stays the live one: it still exists and serves.
		if err := r.x.run(ctx, r.create(ps, t, &holder, old, inputs, ph)); err != nil {
			return err
		}
		r.tally.replacedOne()
		return nil
	}
	del := phaseOf(opUpdate)
	del.reason = "replacement: " + d.Reason + "; deleting the old object first"
	del.complete, del.doneReason = UpdateInProgress, "replacement: the old object is deleted"
	oldTurn := turn{serial: r.serialOf(old.Provider, old.Type, old.Inputs, old.PhysicalID), rank: t.rank}
	if err := r.x.run(ctx, newDeleteStep(ps.Stack, del, old, nil, "", oldTurn)); err != nil {
		return err
	}
	r.mu.Lock()
	r.recreated[ps.Key()] = true
	r.mu.Unlock()
	ph.reason = "replacement: creating the new object"
	if err := r.x.run(context.WithoutCancel(ctx), r.create(ps, t, r.ledger.current(ps.Stack, ps.LogicalID), nil, inputs, ph)); err != nil {
		return err
	}
	r.tally.replacedOne()
	return nil
}

// same records a resource that needs no provider call: its outputs serve its dependents; its record
// changes only when its dependencies changed or it was left failed or pending.
func (r *deployRun) same(ps *planner.Step, old *state.Resource) error {
	r.setOutputs(ps.Stack, ps.LogicalID, old.Outputs)
	r.tally.done(NoChanges)
	e := Event{Stack: ps.Stack, Type: ps.Type, LogicalID: ps.LogicalID, Status: NoChanges}
	if slices.Equal(old.Dependencies, ps.Dependencies) && old.Pending == nil && !Status(old.Status).Failed() {
		_ = r.ledger.record(ps.Stack, nil, e)
		return r.ledger.failed()
	}
	next := *old
	next.Dependencies, next.Pending = ps.Dependencies, nil
	if Status(old.Status).Failed() {
		next.Status = string(UpdateComplete)
	}
	return r.ledger.put(ps.Stack, &next, e)
}

// recreatedDependency returns the key of a resource that this run replaced delete-before-replace and
// that one of step's create-only properties reads from (directly by {ref}, or through a stack output by
// {stackRef}), or "".
func (r *deployRun) recreatedDependency(step *planner.Step) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.recreated) == 0 {
		return ""
	}
	for name, ps := range step.Schema.Properties {
		if !ps.CreateOnly {
			continue
		}
		for _, t := range assembly.FindTokens("", step.Resource.Properties[name]) {
			if t.Ref != "" && r.recreated[step.Stack+"/"+t.Ref] {
				return step.Stack + "/" + t.Ref
			}
			if t.StackRef != "" {
				for _, ref := range r.outputRefs[t.StackRef][t.OutputKey] {
					if r.recreated[t.StackRef+"/"+ref] {
						return t.StackRef + "/" + ref
					}
				}
			}
		}
	}
	return ""
}

// completeStack resolves a stack's outputs once all its resources are done and records them, so that
// dependent stacks can read them. With keepOutputs (targeting covers the stack only partly) the recorded
// outputs stay as they are; the stack's dependencies are still recorded.
func (r *deployRun) completeStack(as *assembly.Stack, keepOutputs bool) error {
	outs := resource.Properties{}
	r.ledger.mu.Lock()
	st := r.ledger.stacks[as.ID]
	if keepOutputs {
		outs = st.Outputs
	}
	r.ledger.mu.Unlock()
	for key, o := range as.Outputs {
		if keepOutputs {
			break
		}
		v, err := assembly.Resolve(o.Path+".value", o.Value, func(t assembly.TokenAt) (any, error) {
			return r.lookup(as.ID, t)
		})
		if err != nil {
			status := r.stackOp(as.ID).statuses().failed
			return r.failWithoutCall(as.ID, "", StackType, status, fmt.Errorf("output %s: %w", key, err))
		}
		outs[key] = v
	}
	change := state.Change{Kind: state.PutStack, Status: st.Status, Outputs: outs, Dependencies: slices.Clone(as.Dependencies)}
	r.mu.Lock()
	r.stackOutputs[as.ID] = outs
	r.mu.Unlock()
	return r.ledger.putStack(as.ID, change)
}

// cleanupSteps lists, after the resource steps, the resources recorded in state but gone from the
// assembly and the objects left by replacements; only those of resources sel selects (nil: all).
func (r *deployRun) cleanupSteps(a *assembly.Assembly, stacks []string, sel *planner.Selection) []*planner.Step {
	r.ledger.mu.Lock()
	defer r.ledger.mu.Unlock()
	var out []*planner.Step
	for _, name := range stacks {
		as := a.Stack(name)
		for _, res := range r.ledger.stacks[name].SortedResources() {
			if !sel.Contains(name, res.LogicalID) {
				continue // left alone by --target/--exclude
			}
			for i := range res.Replaced {
				out = append(out, &planner.Step{Decision: planner.Decision{Op: planner.OpDelete, Reason: "replaced"},
					Stack: name, LogicalID: res.LogicalID, Type: res.Replaced[i].Type, Provider: res.Replaced[i].Provider,
					Old: res, Object: &res.Replaced[i]})
			}
			if as.Resource(res.LogicalID) == nil {
				out = append(out, &planner.Step{Decision: planner.Decision{Op: planner.OpDelete, Reason: "no longer in the assembly"},
					Stack: name, LogicalID: res.LogicalID, Type: res.Type, Provider: res.Provider, Old: res,
					Dependencies: res.Dependencies})
			}
		}
	}
	return out
}

func (r *deployRun) setOutputs(stack, logicalID string, outs resource.Properties) {
	r.mu.Lock()
	r.outputs[stack][logicalID] = outs
	r.mu.Unlock()
}

// resolveInputs replaces the step's tokens by the real outputs of resources and stacks already done.
func (r *deployRun) resolveInputs(step *planner.Step) (resource.Properties, error) {
	v, err := assembly.Resolve("properties", step.Resource.Properties, func(t assembly.TokenAt) (any, error) {
		return r.lookup(step.Stack, t)
	})
	if err != nil {
		return nil, err
	}
	if v == nil {
		return resource.Properties{}, nil
	}
	return v.(map[string]any), nil
}

// lookup resolves one token; its error names the token's location, the target and what exists.
func (r *deployRun) lookup(stack string, t assembly.TokenAt) (any, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t.StackRef != "" {
		outs, ok := r.stackOutputs[t.StackRef]
		if !ok {
			return nil, fmt.Errorf("%s: %s: stack %s has no recorded outputs; deploy it first", t.Path, t.Token, t.StackRef)
		}
		v, ok := outs[t.OutputKey]
		if !ok {
			return nil, fmt.Errorf("%s: %s: stack %s has no output %q (it has: %s)", t.Path, t.Token, t.StackRef, t.OutputKey, keys(outs))
		}
		return v, nil // shared: property values are never changed in place (package resource)
	}
	if t.Attr == "" {
		return nil, fmt.Errorf("%s: %s: a {ref} without attr is resolved only at synth time", t.Path, t.Token)
	}
	outs, ok := r.outputs[stack][t.Ref]
	if !ok {
		return nil, fmt.Errorf("%s: %s: resource %s has not been deployed", t.Path, t.Token, t.Ref)
	}
	v, ok := outs[t.Attr]
	if !ok {
		return nil, fmt.Errorf("%s: %s: resource %s has no output %q (it has: %s)", t.Path, t.Token, t.Ref, t.Attr, keys(outs))
	}
	return v, nil
}

func keys(m map[string]any) string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// snapshot returns the template a deployment ran with, as canonical JSON, with every write-only property
// shown as resource.Sensitive: secrets are read at run time and never kept in deployment records.
func snapshot(as *assembly.Stack, reg *Registry) []byte {
	type res struct {
		Type       string              `json:"type"`
		Provider   string              `json:"provider"`
		Properties resource.Properties `json:"properties,omitempty"`
		Metadata   map[string]any      `json:"metadata,omitempty"`
		DependsOn  []string            `json:"dependsOn,omitempty"`
	}
	type out struct {
		Value       any    `json:"value"`
		Description string `json:"description,omitempty"`
	}
	t := struct {
		Resources map[string]res `json:"resources"`
		Outputs   map[string]out `json:"outputs,omitempty"`
	}{Resources: map[string]res{}, Outputs: map[string]out{}}
	for _, r := range as.Resources {
		schema, _, _ := reg.Schema(r.Provider, r.Type)
		t.Resources[r.LogicalID] = res{Type: r.Type, Provider: r.Provider, Properties: resource.Redact(schema, r.Properties),
			Metadata: r.Metadata, DependsOn: r.DependsOn}
	}
	for k, o := range as.Outputs {
		t.Outputs[k] = out{Value: o.Value, Description: o.Description}
	}
	return resource.Canonical(t)
}
