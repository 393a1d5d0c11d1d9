package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/planner"
)

// Drift statuses of a refresh, in CloudFormation's drift vocabulary: DetectionFailed is the event of a
// resource whose read failed (its record is left as it was).
const (
	InSync          Status = "IN_SYNC"
	Modified        Status = "MODIFIED"
	Deleted         Status = "DELETED"
	DetectionFailed Status = "DETECTION_FAILED"
)

// RefreshOptions choose what Refresh reads.
type RefreshOptions struct {
	// PendingOnly reconciles only resources with a pending operation: what every deploy does first.
	PendingOnly bool
	// DryRun computes the refreshed stacks without writing state or recording deployments (diff --refresh).
	DryRun bool
}

// Refresh reads resources from their providers and records what it finds, one deployment of kind
// "refresh" per stack that has anything to read. Each read is a step of the executor (reads have no
// pending operation):
//   - a pending create (a run stopped between the call and its record) is looked up with the provider's
//     Locate: found → recorded with its physical ID and outputs; absent → cleared. A provider whose Info
//     says it cannot locate objects makes this a failure that says what to check by hand;
//   - a pending update is read back: the live properties become the recorded inputs;
//   - a pending delete is read back: gone → the record goes; still there → recorded as DELETE_FAILED;
//   - without PendingOnly, every other resource is read: deleted out of band → the record goes (DELETED);
//     properties changed out of band → the recorded inputs take the live values (MODIFIED), so that the
//     next plan shows the change that corrects them.
//
// Reads run concurrently under the run's limits. A resource that cannot be read is a Failure and keeps
// its record. After ctx is cancelled no new read starts. Result.Stacks holds the refreshed stacks (with
// DryRun, only in memory).
func Refresh(ctx context.Context, stacks []*state.Stack, opts Options, ropts RefreshOptions) (*Result, error) {
	r := newRun(ctx, opts)
	var names []string
	for _, st := range stacks {
		r.addStack(st)
		if len(toRefresh(st, ropts.PendingOnly)) > 0 {
			names = append(names, st.Name)
		}
	}
	res := &Result{Counts: r.tally.counts, Stacks: r.ledger.stacks, Deployments: map[string]*state.Deployment{}}
	if len(names) == 0 {
		return res, nil
	}
	if ropts.DryRun {
		r.ledger.commits = newCommitPipeline(nil, nil, opts.OnEvent)
		r.ledger.commits.dryRun = true
	} else {
		deployments, err := r.start(ctx, names, state.KindRefresh, func(string) []byte { return nil })
		if err != nil {
			return nil, err
		}
		res.Deployments = deployments
	}
	var wg sync.WaitGroup
	var notStarted atomic.Int64
	for _, st := range stacks {
		for _, rec := range toRefresh(st, ropts.PendingOnly) {
			wg.Go(func() {
				if err := r.refreshOne(ctx, st.Name, rec); errors.Is(err, errNotStarted) {
					notStarted.Add(1)
				}
			})
		}
	}
	wg.Wait()
	stateErr := r.ledger.close()
	res.Failures, res.Interrupted, res.NotStarted = r.tally.failures, ctx.Err() != nil, int(notStarted.Load())
	if !ropts.DryRun {
		for _, name := range names {
			d := res.Deployments[name]
			d.Status, d.FinishedAt, d.Version = state.StatusCompleted, r.opts.Now().UTC(), r.ledger.commits.versions[name]
			for _, f := range r.tally.failures {
				if f.Stack == name {
					d.Status, d.Error = state.StatusFailed, fmt.Sprintf("%s: %v", f.LogicalID, f.Err)
					break
				}
			}
			if d.Status == state.StatusCompleted && res.Interrupted {
				d.Status, d.Error = state.StatusAborted, r.interruptReason()
			}
			if err := r.close(d, nil); err != nil {
				return res, err
			}
		}
	}
	if stateErr != nil {
		return res, stateErr
	}
	return res, nil
}

// toRefresh lists the records Refresh reads in st, by logical ID.
func toRefresh(st *state.Stack, pendingOnly bool) []*state.Resource {
	var out []*state.Resource
	for _, rec := range st.SortedResources() {
		if rec.Pending != nil || (!pendingOnly && rec.PhysicalID != "") {
			out = append(out, rec)
		}
	}
	return out
}

// PendingOperations counts the records with a pending operation in stacks.
func PendingOperations(stacks []*state.Stack) int {
	n := 0
	for _, st := range stacks {
		for _, rec := range st.Resources {
			if rec.Pending != nil {
				n++
			}
		}
	}
	return n
}

// refreshOne chooses the step that reads rec and runs it.
func (r *run) refreshOne(ctx context.Context, stack string, rec *state.Resource) error {
	p := rec.Pending
	switch {
	case p != nil && p.Op == state.PendingDelete && p.PhysicalID != "" && p.PhysicalID != rec.PhysicalID:
		i := slices.IndexFunc(rec.Replaced, func(o state.Object) bool { return o.PhysicalID == p.PhysicalID })
		if i < 0 { // not listed any more: nothing to settle
			next := *rec
			next.Pending = nil
			r.tally.done(DeleteComplete)
			return r.ledger.put(stack, &next, Event{Stack: stack, Type: rec.Type, LogicalID: rec.LogicalID, PhysicalID: p.PhysicalID,
				Status: DeleteComplete, Reason: "recovered: the interrupted delete had been recorded"})
		}
		return r.x.run(ctx, newReadReplacedStep(stack, rec, rec.Replaced[i]))
	case p != nil && rec.PhysicalID == "":
		if info, known := r.opts.Providers.Info(rec.Provider); known && !info.CanLocate {
			return r.failWithoutCall(stack, rec.LogicalID, rec.Type, Status(rec.Status), fmt.Errorf(
				"a create of %s was interrupted and provider %s cannot look objects up by their inputs: check the provider for an object created at %s and delete it, then remove the record with cdkx destroy --target",
				rec.LogicalID, rec.Provider, p.StartedAt.UTC().Format("2006-01-02T15:04:05Z")))
		}
		return r.x.run(ctx, newLocateStep(stack, rec))
	}
	schema, _, _ := r.opts.Providers.Schema(rec.Provider, rec.Type)
	return r.x.run(ctx, newReadStep(stack, rec, schema))
}

// refreshed decides what a read of rec found: gone, recovered, drifted or in sync.
func refreshed(rec *state.Resource, schema resource.Schema, live resource.ReadResult, gone bool) stepOutcome {
	ev := func(status Status, reason string) Event {
		return Event{PhysicalID: rec.PhysicalID, Status: status, Reason: reason}
	}
	pendingDelete := rec.Pending != nil && rec.Pending.Op == state.PendingDelete
	switch {
	case pendingDelete && gone:
		return dropRefreshed(rec, ev(DeleteComplete, "recovered: the interrupted delete had happened"))
	case pendingDelete:
		next := *rec
		next.Pending, next.Status = nil, string(DeleteFailed)
		return stepOutcome{next: &next, count: DeleteFailed, event: ev(DeleteFailed, "recovered: the interrupted delete had not happened; the object still exists")}
	case gone:
		reason := "deleted outside cdkx"
		if rec.Pending != nil {
			reason = "recovered: the object of the interrupted " + string(rec.Pending.Op) + " no longer exists"
		}
		return dropRefreshed(rec, ev(Deleted, reason))
	}
	next := *rec
	if live.Outputs != nil {
		next.Outputs = withCRN(cloneProps(live.Outputs), rec.Type, rec.PhysicalID)
	}
	base := rec.Inputs
	if rec.Pending != nil && rec.Pending.Op == state.PendingUpdate {
		base = rec.Pending.Inputs
	}
	next.Inputs, next.Pending = merge(base, live.Properties, schema), nil
	changes := planner.Diff(schema, rec.Inputs, next.Inputs)
	switch {
	case rec.Pending != nil:
		status := UpdateComplete
		if len(planner.Diff(schema, rec.Pending.Inputs, next.Inputs)) > 0 {
			status = UpdateFailed
		}
		next.Status = string(status)
		return stepOutcome{next: &next, count: status, event: ev(status, "recovered: read back the object of the interrupted update")}
	case len(changes) > 0:
		return stepOutcome{next: &next, count: Modified, event: ev(Modified, "changed outside cdkx: "+describeChanges(changes))}
	case !resource.Equal(next.Outputs, rec.Outputs):
		return stepOutcome{next: &next, count: InSync, event: ev(InSync, "outputs refreshed")}
	}
	return stepOutcome{count: InSync, event: ev(InSync, "")}
}

// dropRefreshed is the outcome for a record whose object is gone: the record goes, unless it still lists
// objects left by replacements.
func dropRefreshed(rec *state.Resource, e Event) stepOutcome {
	if len(rec.Replaced) > 0 {
		next := *rec
		next.PhysicalID, next.Pending, next.Status = "", nil, string(e.Status)
		return stepOutcome{next: &next, event: e, count: e.Status}
	}
	return stepOutcome{drop: true, event: e, count: e.Status}
}

// merge returns base with every property the provider reported live replacing its value; write-only
// properties, which providers never report, keep their recorded fingerprint.
func merge(base, live resource.Properties, schema resource.Schema) resource.Properties {
	out := resource.Properties{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range live {
		if _, known := base[k]; !known {
			continue // a provider default the template never set: not drift
		}
		if schema.Properties[k].WriteOnly {
			continue
		}
		out[k] = v
	}
	return out
}

func describeChanges(changes []planner.PropertyChange) string {
	parts := make([]string, len(changes))
	for i, c := range changes {
		parts[i] = fmt.Sprintf("%s: %s → %s", c.Name, compact(c.Old), compact(c.New))
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

func compact(v any) string {
	return string(resource.Canonical(v))
}
