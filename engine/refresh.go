package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/planner"
)

// Drift statuses of a refresh, in CloudFormation's drift vocabulary.
const (
	InSync   Status = "IN_SYNC"
	Modified Status = "MODIFIED"
	Deleted  Status = "DELETED"
)

// RefreshOptions choose what Refresh reads.
type RefreshOptions struct {
	// PendingOnly reconciles only resources with a pending operation: what every deploy does first.
	PendingOnly bool
	// DryRun computes the refreshed stacks without writing state or recording deployments (diff --refresh).
	DryRun bool
}

// Refresh reads resources from their providers and records what it finds, one deployment of kind
// "refresh" per stack that has anything to read:
//   - a pending create (a run stopped between the call and its record) is looked up with the provider's
//     Locator: found → recorded with its physical ID and outputs; absent → cleared;
//   - a pending update is read back: the live properties become the recorded inputs;
//   - a pending delete is read back: gone → the record goes; still there → recorded as DELETE_FAILED;
//   - without PendingOnly, every other resource is read: deleted out of band → the record goes (DELETED);
//     properties changed out of band → the recorded inputs take the live values (MODIFIED), so that the
//     next plan shows the change that corrects them.
//
// Reads run concurrently under Options.Concurrency. A resource that cannot be read is a Failure and keeps
// its record. Result.Stacks holds the refreshed stacks (with DryRun, only in memory).
func Refresh(ctx context.Context, stacks []*state.Stack, opts Options, ropts RefreshOptions) (*Result, error) {
	r := newRun(ctx, opts)
	var names []string
	for _, st := range stacks {
		r.stacks[st.Name] = cloneStack(st)
		if len(toRefresh(st, ropts.PendingOnly)) > 0 {
			names = append(names, st.Name)
		}
	}
	res := &Result{Counts: r.counts, Stacks: r.stacks, Deployments: map[string]*state.Deployment{}}
	if len(names) == 0 {
		return res, nil
	}
	if ropts.DryRun {
		r.j = newJournal(nil, nil, opts.OnEvent)
		r.j.dryRun = true
	} else {
		deployments, err := r.startDeployments(ctx, names, state.KindRefresh, func(string) []byte { return nil })
		if err != nil {
			return nil, err
		}
		res.Deployments = deployments
		r.j = newJournal(opts.Backend, deploymentIDs(deployments), opts.OnEvent)
	}
	var wg sync.WaitGroup
	for _, st := range stacks {
		for _, rec := range toRefresh(st, ropts.PendingOnly) {
			if ctx.Err() != nil {
				break
			}
			wg.Go(func() {
				if err := r.refreshOne(st.Name, rec); err != nil {
					r.fail(Failure{Stack: st.Name, LogicalID: rec.LogicalID, Type: rec.Type, Status: Status(rec.Status), Err: err})
					_ = r.record(st.Name, nil, Event{Stack: st.Name, Type: rec.Type, LogicalID: rec.LogicalID,
						PhysicalID: rec.PhysicalID, Status: Status(rec.Status), Reason: "refresh failed: " + err.Error()})
				}
			})
		}
	}
	wg.Wait()
	r.j.close()
	r.results.Wait()
	res.Failures, res.Interrupted = r.failures, ctx.Err() != nil
	if !ropts.DryRun {
		for _, name := range names {
			d := res.Deployments[name]
			d.Status, d.FinishedAt, d.Version = state.StatusCompleted, r.opts.Now().UTC(), r.j.versions[name]
			for _, f := range r.failures {
				if f.Stack == name {
					d.Status, d.Error = state.StatusFailed, fmt.Sprintf("%s: %v", f.LogicalID, f.Err)
					break
				}
			}
			if err := opts.Backend.FinishDeployment(context.WithoutCancel(ctx), d.ID, d.Status, d.FinishedAt, d.Version, d.Error); err != nil {
				return res, err
			}
		}
	}
	if r.stateErr != nil {
		return res, r.stateErr
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

func (r *run) refreshOne(stack string, rec *state.Resource) error {
	prov, err := r.opts.Providers.Provider(rec.Provider)
	if err != nil {
		return err
	}
	ev := func(physicalID string, status Status, reason string) Event {
		return Event{Stack: stack, Type: rec.Type, LogicalID: rec.LogicalID, PhysicalID: physicalID, Status: status, Reason: reason}
	}
	if rec.Pending != nil && rec.Pending.Op == "deleting" && rec.Pending.PhysicalID != "" && rec.Pending.PhysicalID != rec.PhysicalID {
		return r.recoverReplacedDelete(stack, rec, ev)
	}
	if rec.Pending != nil && rec.PhysicalID == "" {
		return r.recoverCreate(stack, rec, prov, ev)
	}
	var live resource.ReadResult
	err = r.call(prov.Info().Name, func(ctx context.Context) error {
		live, err = prov.Read(ctx, resource.ReadRequest{Type: rec.Type, PhysicalID: rec.PhysicalID, Properties: rec.Inputs, Outputs: rec.Outputs})
		return err
	})
	gone := errors.Is(err, resource.ErrNotFound)
	if err != nil && !gone {
		return err
	}
	switch {
	case rec.Pending != nil && rec.Pending.Op == "deleting" && gone:
		return r.dropRefreshed(stack, rec, ev(rec.PhysicalID, DeleteComplete, "recovered: the interrupted delete had happened"))
	case rec.Pending != nil && rec.Pending.Op == "deleting":
		next := *rec
		next.Pending, next.Status = nil, string(DeleteFailed)
		return r.putRefreshed(stack, &next, ev(rec.PhysicalID, DeleteFailed, "recovered: the interrupted delete had not happened; the object still exists"))
	case gone:
		reason := "deleted outside cdkx"
		if rec.Pending != nil {
			reason = "recovered: the object of the interrupted " + string(rec.Pending.Op) + " no longer exists"
		}
		return r.dropRefreshed(stack, rec, ev(rec.PhysicalID, Deleted, reason))
	}
	schema, _, _ := r.opts.Providers.Schema(rec.Provider, rec.Type)
	next := *rec
	next.Outputs = rec.Outputs
	if live.Outputs != nil {
		next.Outputs = withCRN(cloneProps(live.Outputs), rec.Type, rec.PhysicalID)
	}
	base := rec.Inputs
	if rec.Pending != nil && rec.Pending.Op == "updating" {
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
		return r.putRefreshed(stack, &next, ev(rec.PhysicalID, status, "recovered: read back the object of the interrupted update"))
	case len(changes) > 0:
		return r.putRefreshed(stack, &next, ev(rec.PhysicalID, Modified, "changed outside cdkx: "+describeChanges(changes)))
	}
	if !resource.Equal(next.Outputs, rec.Outputs) {
		return r.putRefreshed(stack, &next, ev(rec.PhysicalID, InSync, "outputs refreshed"))
	}
	r.done(InSync)
	return r.record(stack, nil, ev(rec.PhysicalID, InSync, ""))
}

func cloneProps(p resource.Properties) resource.Properties {
	out := make(resource.Properties, len(p))
	for k, v := range p {
		out[k] = resource.Clone(v)
	}
	return out
}

// recoverCreate settles a pending create: the object is looked up by the inputs that were sent.
func (r *run) recoverCreate(stack string, rec *state.Resource, prov Provider, ev func(string, Status, string) Event) error {
	if !prov.Info().CanLocate {
		return fmt.Errorf("a create of %s was interrupted and provider %s cannot look objects up by their inputs: check the provider for an object created at %s and delete it, then remove the record with cdkx destroy --target", rec.LogicalID, rec.Provider, rec.Pending.StartedAt.UTC().Format("2006-01-02T15:04:05Z"))
	}
	req := resource.CreateRequest{Type: rec.Type, LogicalID: rec.LogicalID, Properties: rec.Pending.Inputs}
	var id string
	var live resource.ReadResult
	err := r.call(prov.Info().Name, func(ctx context.Context) error {
		var err error
		if id, err = prov.Locate(ctx, req); err != nil {
			return err
		}
		live, err = prov.Read(ctx, resource.ReadRequest{Type: rec.Type, PhysicalID: id, Properties: rec.Pending.Inputs})
		return err
	})
	if errors.Is(err, resource.ErrNotFound) {
		if len(rec.Replaced) > 0 {
			next := *rec
			next.Pending, next.Status = nil, string(CreateFailed)
			return r.putRefreshed(stack, &next, ev("", CreateFailed, "recovered: the interrupted create had not happened"))
		}
		return r.dropRefreshed(stack, rec, ev("", CreateFailed, "recovered: the interrupted create had not happened; record cleared"))
	}
	if err != nil {
		return err
	}
	next := *rec
	next.PhysicalID, next.Inputs, next.Pending, next.Status = id, rec.Pending.Inputs, nil, string(CreateComplete)
	next.Outputs = withCRN(cloneProps(live.Outputs), rec.Type, id)
	return r.putRefreshed(stack, &next, ev(id, CreateComplete, "recovered: the interrupted create had succeeded; recorded"))
}

func (r *run) putRefreshed(stack string, rec *state.Resource, e Event) error {
	r.done(e.Status)
	return r.put(stack, rec, e)
}

func (r *run) dropRefreshed(stack string, rec *state.Resource, e Event) error {
	r.done(e.Status)
	if len(rec.Replaced) > 0 {
		next := *rec
		next.PhysicalID, next.Pending, next.Status = "", nil, string(e.Status)
		return r.put(stack, &next, e)
	}
	return r.drop(stack, rec.LogicalID, e)
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

// recoverReplacedDelete settles an interrupted delete of an object left by a replacement: gone → it leaves
// the record's replaced list; still there → it stays listed, and the next deploy's cleanup deletes it.
func (r *run) recoverReplacedDelete(stack string, rec *state.Resource, ev func(string, Status, string) Event) error {
	id := rec.Pending.PhysicalID
	i := slices.IndexFunc(rec.Replaced, func(o state.Object) bool { return o.PhysicalID == id })
	if i < 0 { // not listed any more: nothing to settle
		next := *rec
		next.Pending = nil
		return r.putRefreshed(stack, &next, ev(id, DeleteComplete, "recovered: the interrupted delete had been recorded"))
	}
	obj := rec.Replaced[i]
	prov, err := r.opts.Providers.Provider(obj.Provider)
	if err != nil {
		return err
	}
	err = r.call(prov.Info().Name, func(ctx context.Context) error {
		_, err := prov.Read(ctx, resource.ReadRequest{Type: obj.Type, PhysicalID: obj.PhysicalID, Properties: obj.Inputs, Outputs: obj.Outputs})
		return err
	})
	switch {
	case errors.Is(err, resource.ErrNotFound):
		r.done(DeleteComplete)
		return r.forgetReplaced(stack, rec.LogicalID, id, ev(id, DeleteComplete, "recovered: the interrupted delete of the replaced object had happened"))
	case err != nil:
		return err
	}
	next := *rec
	next.Pending = nil
	return r.putRefreshed(stack, &next, ev(id, DeleteFailed, "recovered: the replaced object still exists; the next deploy deletes it"))
}
