package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/planner"
)

// applied is one change this run made, kept so that a failed run can undo it.
type applied struct {
	stack, logicalID string
	op               planner.Op
	dbr              bool            // a delete-before-replace replacement: the old object is gone
	before           *state.Resource // the record before the change; nil when there was none
}

// remember records a successful change of the run.
func (r *run) remember(step *planner.Step, op planner.Op, dbr bool, before *state.Resource) {
	r.mu.Lock()
	r.applied = append(r.applied, applied{stack: step.Stack, logicalID: step.LogicalID, op: op, dbr: dbr, before: before})
	r.mu.Unlock()
}

// rollback undoes what this run changed in the given stacks (those with a failure): in reverse dependency
// order, it deletes the objects the run created, restores the objects it updated to their last applied
// inputs, and for replacements deletes the new object and makes the old one current again (re-creating it
// from its last applied inputs when the replacement had deleted it first). Write-only values are not kept,
// so they cannot be restored: a rollback leaves them as the run set them. Every rollback failure is a
// Failure with status UPDATE_ROLLBACK_FAILED; the rest goes on, and state records what exists. It returns,
// per stack, whether the rollback completed.
func (r *run) rollback(ctx context.Context, stacks []string) map[string]bool {
	ok := map[string]bool{}
	var steps []*planner.Step
	r.mu.Lock()
	changes := map[string]applied{}
	for _, a := range r.applied {
		if !slices.Contains(stacks, a.stack) {
			continue
		}
		key := a.stack + "/" + a.logicalID
		changes[key] = a
		cur := r.stacks[a.stack].Resources[a.logicalID]
		deps := []string(nil)
		if cur != nil {
			deps = cur.Dependencies
		}
		steps = append(steps, &planner.Step{Decision: planner.Decision{Op: planner.OpDelete}, Stack: a.stack,
			LogicalID: a.logicalID, Old: cur, Dependencies: deps})
	}
	r.mu.Unlock()
	for _, s := range stacks {
		ok[s] = true
		r.stackEvent(s, r.rollbackStatus(s, "IN_PROGRESS"), "rolling back the changes of this run")
	}
	if len(steps) == 0 {
		return ok
	}
	g, err := planner.TeardownGraph(steps, nil)
	if err != nil {
		for _, s := range stacks {
			ok[s] = false
		}
		r.fail(Failure{Stack: stacks[0], Type: StackType, Status: UpdateRollbackFailed, Err: err})
		return ok
	}
	// A rollback runs to the end even after Ctrl-C: stopping half way would leave the stack half changed.
	// It also attempts every undo, in order, whatever failed before it: a failed undo is reported (and
	// recorded as UPDATE_ROLLBACK_FAILED) but does not keep the others from restoring what they can.
	var mu sync.Mutex
	walk(context.WithoutCancel(ctx), g, func(id int) error {
		n := g.Nodes[id]
		if err := r.undo(changes[n.Stack+"/"+n.LogicalID]); err != nil {
			mu.Lock()
			ok[n.Stack] = false
			mu.Unlock()
		}
		return nil
	}, func(int, int) {})
	return ok
}

// rollbackStatus returns UPDATE_ROLLBACK_<suffix> for a stack deployed before, ROLLBACK_<suffix> for a
// first deploy.
func (r *run) rollbackStatus(stack, suffix string) Status {
	if r.stackStatus(stack, "X") == "CREATE_X" {
		return Status("ROLLBACK_" + suffix)
	}
	return Status("UPDATE_ROLLBACK_" + suffix)
}

// undo reverts one applied change.
func (r *run) undo(a applied) error {
	cur := r.current(a.stack, a.logicalID)
	if cur == nil {
		return nil
	}
	ev := func(status Status, reason string) Event {
		return Event{Stack: a.stack, Type: cur.Type, LogicalID: a.logicalID, PhysicalID: cur.PhysicalID, Status: status, Reason: reason}
	}
	failed := func(err error) error {
		r.fail(Failure{Stack: a.stack, LogicalID: a.logicalID, Type: cur.Type, Status: UpdateRollbackFailed, Err: err})
		kept := *r.current(a.stack, a.logicalID)
		kept.Pending, kept.Status = nil, string(UpdateRollbackFailed)
		_ = r.put(a.stack, &kept, ev(UpdateRollbackFailed, err.Error()))
		return err
	}
	prov, err := r.opts.Providers.Provider(cur.Provider)
	if err != nil {
		return failed(err)
	}
	switch a.op {
	case planner.OpUpdate:
		return r.restore(a, cur, prov, ev, failed)
	case planner.OpCreate, planner.OpReplace:
		reason := "deleting the object this run created"
		if a.op == planner.OpReplace {
			reason = "deleting the replacement this run created"
		}
		if err := r.deleteObject(a.stack, cur, prov, ev(UpdateRollbackInProgress, reason)); err != nil {
			return failed(err)
		}
	}
	switch {
	case a.before == nil:
		r.done(UpdateRollbackComplete)
		return r.drop(a.stack, a.logicalID, ev(UpdateRollbackComplete, "deleted"))
	case a.op == planner.OpReplace && a.dbr:
		return r.recreate(a, prov, ev, failed)
	}
	// The old object (of a create-before-delete replacement) is current again, or the record goes back to
	// what it was before this run created an object for it.
	restored := *a.before
	restored.Pending, restored.Status = nil, string(UpdateRollbackComplete)
	r.done(UpdateRollbackComplete)
	return r.put(a.stack, &restored, ev(UpdateRollbackComplete, "restored the object from before this run"))
}

// deleteObject deletes cur's live object, with a pending-operation record before the call.
func (r *run) deleteObject(stack string, cur *state.Resource, prov Provider, e Event) error {
	pending := *cur
	pending.Status = string(UpdateRollbackInProgress)
	pending.Pending = &state.PendingOperation{Op: "deleting", PhysicalID: cur.PhysicalID, StartedAt: r.opts.Now().UTC()}
	return r.pendingCall(stack, &pending, e, prov.Info().Name, deleteCall(prov, resource.DeleteRequest{Type: cur.Type, PhysicalID: cur.PhysicalID, Properties: cur.Inputs, Outputs: cur.Outputs}))
}

// restore updates an object back to the inputs last applied before this run.
func (r *run) restore(a applied, cur *state.Resource, prov Provider, ev func(Status, string) Event, failed func(error) error) error {
	schema, _, _ := r.opts.Providers.Schema(cur.Provider, cur.Type)
	var changed []string
	for _, c := range planner.Diff(schema, cur.Inputs, a.before.Inputs) {
		if !schema.Properties[c.Name].WriteOnly {
			changed = append(changed, c.Name)
		}
	}
	pending := *cur
	pending.Status = string(UpdateRollbackInProgress)
	pending.Pending = &state.PendingOperation{Op: "updating", Inputs: a.before.Inputs, PhysicalID: cur.PhysicalID, StartedAt: r.opts.Now().UTC()}
	var out resource.UpdateResult
	err := r.pendingCall(a.stack, &pending, ev(UpdateRollbackInProgress, "restoring the last applied inputs"), prov.Info().Name, func(ctx context.Context) error {
		var err error
		out, err = prov.Update(ctx, resource.UpdateRequest{Type: cur.Type, PhysicalID: cur.PhysicalID, Old: cur.Inputs,
			New: keepWriteOnly(schema, a.before.Inputs, cur.Inputs), OldOutputs: cur.Outputs, Changed: changed})
		return err
	})
	if IsStateError(err) {
		return err
	}
	if err != nil {
		return failed(err)
	}
	restored := *a.before
	restored.Pending, restored.Status = nil, string(UpdateRollbackComplete)
	restored.Inputs = keepWriteOnly(schema, a.before.Inputs, cur.Inputs)
	restored.Outputs = withCRN(out.Outputs, cur.Type, cur.PhysicalID)
	r.done(UpdateRollbackComplete)
	return r.put(a.stack, &restored, ev(UpdateRollbackComplete, "restored"))
}

// keepWriteOnly returns inputs with the write-only properties taken from current: they cannot be restored.
func keepWriteOnly(s resource.Schema, inputs, current resource.Properties) resource.Properties {
	out := resource.Properties{}
	for k, v := range inputs {
		out[k] = v
	}
	for k, ps := range s.Properties {
		if ps.WriteOnly {
			if v, ok := current[k]; ok {
				out[k] = v
			} else {
				delete(out, k)
			}
		}
	}
	return out
}

// recreate makes a new object from the inputs last applied before a delete-before-replace replacement
// deleted the old one.
func (r *run) recreate(a applied, prov Provider, ev func(Status, string) Event, failed func(error) error) error {
	schema, _, _ := r.opts.Providers.Schema(a.before.Provider, a.before.Type)
	for k, ps := range schema.Properties {
		if _, isFP := resource.FingerprintSalt(a.before.Inputs[k]); ps.WriteOnly && isFP {
			return failed(fmt.Errorf("cannot re-create the replaced object: its write-only property %q is not kept in state; deploy again", k))
		}
	}
	var out resource.CreateResult
	err := r.call(prov.Info().Name, func(ctx context.Context) error {
		var err error
		out, err = prov.Create(ctx, resource.CreateRequest{Type: a.before.Type, LogicalID: a.logicalID, Properties: a.before.Inputs})
		return err
	})
	if err != nil {
		return failed(err)
	}
	restored := *a.before
	restored.PhysicalID, restored.Pending, restored.Status = out.PhysicalID, nil, string(UpdateRollbackComplete)
	restored.Outputs = withCRN(out.Outputs, a.before.Type, out.PhysicalID)
	r.done(UpdateRollbackComplete)
	return r.put(a.stack, &restored, ev(UpdateRollbackComplete, "re-created the object the replacement had deleted"))
}
