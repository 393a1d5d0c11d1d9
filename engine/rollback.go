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
	step   *planner.Step   // the plan's step (its stack and logical ID), shared
	op     planner.Op      // what the run did
	dbr    bool            // a delete-before-replace replacement: the old object is gone
	before *state.Resource // the record before the change; nil when there was none
}

// remember records a successful change of the run.
func (r *deployRun) remember(step *planner.Step, op planner.Op, dbr bool, before *state.Resource) {
	r.mu.Lock()
	r.applied = append(r.applied, applied{step: step, op: op, dbr: dbr, before: before})
	r.mu.Unlock()
}

// rollback undoes what this run changed in the given stacks (those with a failure): in reverse dependency
// order, it deletes the objects the run created, restores the objects it updated to their last applied
// inputs, and for replacements deletes the new object and makes the old one current again (re-creating it
// from its last applied inputs when the replacement had deleted it first). Every undo is a step of the
// executor: a pending record before each call. Write-only values are not kept, so they cannot be
// restored: a rollback leaves them as the run set them. Every rollback failure is a Failure with status
// UPDATE_ROLLBACK_FAILED; the rest goes on, and state records what exists. It returns, per stack, whether
// the rollback completed.
func (r *deployRun) rollback(ctx context.Context, stacks []string) map[string]bool {
	ok := map[string]bool{}
	var steps []*planner.Step
	changes := map[string]applied{}
	r.mu.Lock()
	for _, a := range r.applied {
		if !slices.Contains(stacks, a.step.Stack) {
			continue
		}
		changes[a.step.Stack+"/"+a.step.LogicalID] = a
		cur := r.ledger.current(a.step.Stack, a.step.LogicalID)
		var deps []string
		if cur != nil {
			deps = cur.Dependencies
		}
		steps = append(steps, &planner.Step{Decision: planner.Decision{Op: planner.OpDelete}, Stack: a.step.Stack,
			LogicalID: a.step.LogicalID, Old: cur, Dependencies: deps})
	}
	r.mu.Unlock()
	for _, s := range stacks {
		ok[s] = true
		r.stackEvent(s, r.stackOp(s).rollback().statuses().inProgress, "rolling back the changes of this run")
	}
	if len(steps) == 0 {
		return ok
	}
	g, err := planner.TeardownGraph(steps, nil)
	if err != nil {
		for _, s := range stacks {
			ok[s] = false
		}
		r.tally.fail(Failure{Stack: stacks[0], Type: StackType, Status: UpdateRollbackFailed, Err: err})
		return ok
	}
	// A rollback runs to the end even after Ctrl-C: stopping half way would leave the stack half changed.
	// It also attempts every undo, in order, whatever failed before it: a failed undo is reported (and
	// recorded as UPDATE_ROLLBACK_FAILED) but does not keep the others from restoring what they can.
	ctx = context.WithoutCancel(ctx)
	var mu sync.Mutex
	walk(ctx, g, visitLimit(r.opts.Concurrency), func(id int) error {
		n := g.Nodes[id]
		if err := r.undo(ctx, changes[n.Stack+"/"+n.LogicalID]); err != nil {
			mu.Lock()
			ok[n.Stack] = false
			mu.Unlock()
		}
		return nil
	}, func(int, int) {})
	return ok
}

// undo reverts one applied change through the executor.
func (r *deployRun) undo(ctx context.Context, a applied) error {
	cur := r.ledger.current(a.step.Stack, a.step.LogicalID)
	if cur == nil {
		return nil
	}
	t := turn{serial: r.serialOf(cur.Provider, cur.Type, cur.Inputs, cur.PhysicalID)}
	schema, _, _ := r.opts.Providers.Schema(cur.Provider, cur.Type)
	switch {
	case a.op == planner.OpUpdate:
		restored := *a.before
		restored.Inputs = keepWriteOnly(schema, a.before.Inputs, cur.Inputs)
		var changed []string
		for _, c := range planner.Diff(schema, cur.Inputs, a.before.Inputs) {
			if !schema.Properties[c.Name].WriteOnly {
				changed = append(changed, c.Name)
			}
		}
		ph := phaseOf(opUpdateRollback)
		ph.reason, ph.doneReason = "restoring the last applied inputs", "restored"
		return r.x.run(ctx, newUpdateStep(a.step.Stack, ph, cur, restored.Inputs, &restored, changed, t))
	case a.op == planner.OpReplace && a.dbr:
		return r.recreate(ctx, t, cur, a)
	}
	ph := phaseOf(opUpdateRollback)
	ph.reason, ph.doneReason = "deleting the object this run created", "deleted"
	var then *state.Resource
	if a.op == planner.OpReplace {
		ph.reason = "deleting the replacement this run created"
	}
	if a.before != nil {
		// The old object (of a create-before-delete replacement) is current again, or the record goes back
		// to what it was before this run created an object for it.
		restored := *a.before
		restored.Status = string(UpdateRollbackComplete)
		then, ph.doneReason = &restored, "restored the object from before this run"
	}
	return r.x.run(ctx, newDeleteStep(a.step.Stack, ph, cur, then, UpdateRollbackComplete, t))
}

// recreate undoes a delete-before-replace replacement: it deletes the new object, then creates an object
// again from the inputs last applied before the replacement deleted the old one (a create step: its pending
// record comes first, so a crash in between cannot orphan it).
func (r *deployRun) recreate(ctx context.Context, t turn, cur *state.Resource, a applied) error {
	schema, _, _ := r.opts.Providers.Schema(a.before.Provider, a.before.Type)
	for k, ps := range schema.Properties {
		if _, isFP := resource.FingerprintSalt(a.before.Inputs[k]); ps.WriteOnly && isFP {
			return r.failWithoutCall(a.step.Stack, a.step.LogicalID, cur.Type, UpdateRollbackFailed,
				fmt.Errorf("cannot re-create the replaced object: its write-only property %q is not kept in state; deploy again", k))
		}
	}
	del := phaseOf(opUpdateRollback)
	del.reason = "deleting the replacement this run created"
	del.complete, del.doneReason = UpdateRollbackInProgress, "deleted the replacement"
	if err := r.x.run(ctx, newDeleteStep(a.step.Stack, del, cur, nil, "", t)); err != nil {
		return err
	}
	tmpl := *a.before
	tmpl.PhysicalID, tmpl.Replaced = "", nil // the create makes a new object
	if now := r.ledger.current(a.step.Stack, a.step.LogicalID); now != nil {
		tmpl.Replaced = now.Replaced
	}
	ph := phaseOf(opUpdateRollback)
	ph.reason, ph.doneReason = "re-creating the object the replacement had deleted", "re-created the object the replacement had deleted"
	t = turn{serial: r.serialOf(a.before.Provider, a.before.Type, a.before.Inputs, "")}
	return r.x.run(ctx, newCreateStep(a.step.Stack, ph, &tmpl, a.before.Inputs, nil, t))
}
