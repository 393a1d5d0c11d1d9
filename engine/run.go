package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/planner"
)

// DefaultConcurrency is the number of provider calls in flight at once when Options.Concurrency is 0.
const DefaultConcurrency = 10

// Options configure one Deploy, Destroy, Refresh or Import.
type Options struct {
	Backend   state.Backend
	Providers *Registry
	// Concurrency bounds the provider calls in flight at once (0: DefaultConcurrency).
	Concurrency int
	// ProviderConcurrency bounds the calls in flight to one provider (by name), within Concurrency. A
	// provider absent here uses the DefaultConcurrency its Info declares, if any.
	ProviderConcurrency map[string]int
	// OnEvent receives every event once it is durable, from one goroutine at a time, in commit order.
	OnEvent func(Event)
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Selection is, for Destroy, the --target/--exclude selection the stacks were filtered by
	// (planner.Selection.FilterStacks; nil: whole stacks). A stack it covers only partly is not deleted: it
	// keeps its outputs and ends UPDATE_COMPLETE (UPDATE_FAILED after a failure).
	Selection *planner.Selection
	// CreatedBy ("user@host") and CdkxVersion are recorded in each deployment.
	CreatedBy   string
	CdkxVersion string
	// NoRollback keeps the partial progress of a failed deploy instead of rolling it back.
	NoRollback bool
	// InFlight, when set, counts the provider calls in flight while the run goes on (the interrupt notice
	// says how many calls it waits for).
	InFlight *atomic.Int64
	// AtBoundary, when set, is called at each boundary of each step (tests crash a run there).
	AtBoundary func(b Boundary, stack, logicalID string)
	// Deployments, when set, are the run's deployment records by stack, already RUNNING (claimed by the
	// caller, who finishes them): events are recorded in them, and the Result carries each one's outcome
	// (Status, Error, FinishedAt, Version) without storing it. When nil, the run records a deployment per
	// stack itself (created PENDING, claimed at once, finished at the end); a stack whose queue is busy is
	// then an error (*state.QueuedError).
	Deployments map[string]*state.Deployment
	// Abort, when set, explains why the context was cancelled (an abort requested by someone): it is the
	// Error of the deployments that end ABORTED instead of ErrInterrupted's text.
	Abort func() string
	// StackContext, when set, returns the context the steps of a stack run under (Deploy only): one
	// derived from the run's, cancelled alone when the deployment of that stack is aborted, with the
	// reason as its cause ("deployment … was aborted by …"). No new step of such a stack starts, not even
	// one waiting for a concurrency slot; steps of other stacks that wait for it never start; independent
	// stacks run on. At the end, a stack with steps not started this way has its deployment ABORTED with
	// that reason (a stack that waited for an aborted one: "not finished: …"), and Result.Interrupted
	// is set.
	StackContext func(stack string) context.Context
	// Assets, when set, resolves the machine-independent asset paths of the properties sent to providers
	// (assembly.Assembly.ResolveAsset): each provider call gets the absolute path of this run's copy of the
	// asset; state, events and plans keep the machine-independent form (see ResolveAssets).
	Assets AssetResolver
}

// Failure is one resource (or stack) that failed, with the error the provider or the engine gave.
type Failure struct {
	Stack     string
	LogicalID string
	Type      string
	Status    Status
	Err       error
}

// Result is what a Deploy, Destroy, Refresh or Import did.
type Result struct {
	// Deployments are the records of this run, by stack.
	Deployments map[string]*state.Deployment
	// Failures are in the order they happened.
	Failures []Failure
	// Counts counts final resource statuses, e.g. Counts[CreateComplete]. The deletion of an object left
	// by a replacement is not counted: the replacement is (Replaced).
	Counts map[Status]int
	// Replaced counts resources replaced by a new object (included in Counts[UpdateComplete]).
	Replaced int
	// NotStarted counts steps never started because the run was interrupted.
	NotStarted int
	// Interrupted is set when the context was cancelled before every step ran.
	Interrupted bool
	// Stacks are the stacks' states at the end of the run.
	Stacks map[string]*state.Stack
}

// ErrInterrupted is returned by Result.Err when the run was interrupted (Ctrl-C, SIGTERM).
var ErrInterrupted = errors.New("interrupted: no new step was started; the steps in flight were recorded as they ended")

// FailedError is returned by Result.Err when at least one resource failed.
type FailedError struct {
	Failures []Failure
}

// Error names how many resources failed and the first one.
func (e *FailedError) Error() string {
	f := e.Failures[0]
	return fmt.Sprintf("%d resource(s) failed; first: %s/%s: %v", len(e.Failures), f.Stack, f.LogicalID, f.Err)
}

// Err summarises the result: nil on success, ErrInterrupted, or a *FailedError.
func (r *Result) Err() error {
	if len(r.Failures) > 0 {
		return &FailedError{Failures: r.Failures}
	}
	if r.Interrupted {
		return ErrInterrupted
	}
	return nil
}

// run is what every verb shares: the ledger (state in memory and its commit pipeline), the tally and the
// executor. The deploy driver adds its own fields (deployRun).
type run struct {
	opts Options
	// owned is set when the run recorded its deployments itself (and so finishes them).
	owned  bool
	ledger *ledger
	tally  *tally
	x      *executor
}

func newRun(ctx context.Context, opts Options) *run {
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	r := &run{opts: opts, ledger: newLedger(opts.Now), tally: newTally()}
	r.x = newExecutor(ctx, opts, r.ledger, r.tally)
	return r
}

// addStack puts a copy of st in the ledger (its record map is copied; records are never changed in place).
func (r *run) addStack(st *state.Stack) {
	c := *st
	c.Resources = make(map[string]*state.Resource, len(st.Resources))
	for k, v := range st.Resources {
		c.Resources[k] = v
	}
	r.ledger.stacks[st.Name] = &c
}

// start returns the run's deployment per stack and opens the commit pipeline: those of Options.Deployments, or
// new ones it records (PENDING with the template each runs with, then claimed; finish closes them).
func (r *run) start(ctx context.Context, stacks []string, kind state.DeploymentKind,
	template func(string) []byte) (map[string]*state.Deployment, error) {
	out := map[string]*state.Deployment{}
	ids := map[string]string{}
	if r.opts.Deployments != nil {
		for _, name := range stacks {
			d := r.opts.Deployments[name]
			if d == nil {
				return nil, fmt.Errorf("no deployment record was given for stack %s", name)
			}
			c := *d
			out[name], ids[name] = &c, d.ID
		}
		r.ledger.commits = newCommitPipeline(r.opts.Backend, ids, r.opts.OnEvent)
		return out, nil
	}
	now := r.opts.Now().UTC()
	ds := make([]*state.Deployment, 0, len(stacks))
	for _, name := range stacks {
		snap := template(name)
		d := &state.Deployment{ID: uuid.NewString(), Stack: name, Kind: kind, Status: state.StatusPending,
			CreatedBy: r.opts.CreatedBy, CdkxVersion: r.opts.CdkxVersion, Snapshot: snap, CreatedAt: now,
			StateVersion: r.ledger.stacks[name].Version, Version: r.ledger.stacks[name].Version}
		if snap != nil {
			sum := sha256.Sum256(snap)
			d.SnapshotHash = hex.EncodeToString(sum[:])
		}
		ds = append(ds, d)
	}
	if err := recordOwn(ctx, r.opts.Backend, ds, r.opts.CreatedBy, now); err != nil {
		return nil, err
	}
	for _, d := range ds {
		d.Snapshot = nil // stored (GetDeployment reads it back): a 100k-resource run need not hold ~20 MB of it
		out[d.Stack], ids[d.Stack] = d, d.ID
	}
	r.owned = true
	r.ledger.commits = newCommitPipeline(r.opts.Backend, ids, r.opts.OnEvent)
	return out, nil
}

// recordOwn stores ds (PENDING) and claims them at once for runner, as a run that records its own
// deployments does: a busy queue is an error (*state.QueuedError), and the deployments are then recorded
// ABORTED ("not run: …"). On success they are RUNNING since now.
func recordOwn(ctx context.Context, b state.Backend, ds []*state.Deployment, runner string, now time.Time) error {
	if err := b.CreateDeployments(ctx, ds); err != nil {
		return fmt.Errorf("record the deployments: %w", err)
	}
	ids := make([]string, len(ds))
	for i, d := range ds {
		ids[i] = d.ID
	}
	if err := b.ClaimDeployments(ctx, ids, runner, now); err != nil {
		for _, d := range ds {
			_, _ = b.UpdateDeployment(context.WithoutCancel(ctx), d.ID, state.Transition{
				From: []state.DeploymentStatus{state.StatusPending}, To: state.StatusAborted, By: runner,
				Error: "not run: " + err.Error(), At: now})
		}
		return err
	}
	for _, d := range ds {
		d.Status, d.StartedAt = state.StatusRunning, now
	}
	return nil
}

// close records d's outcome when the run owns its deployments (Options.Deployments was nil); err is the
// state error so far, returned with the recording's own failure if it is the first.
func (r *run) close(d *state.Deployment, err error) error {
	if !r.owned {
		return err
	}
	if ferr := r.opts.Backend.FinishDeployment(context.Background(), d.ID, r.opts.CreatedBy, d.Status, d.FinishedAt, d.Version, d.Error); ferr != nil && err == nil {
		return ferr
	}
	return err
}

// interruptReason is the Error of a deployment the run ends ABORTED.
func (r *run) interruptReason() string {
	if r.opts.Abort != nil {
		if why := r.opts.Abort(); why != "" {
			return why
		}
	}
	return ErrInterrupted.Error()
}

// stackOp returns the operation a run records for stack: opCreate for a stack never deployed, opUpdate
// otherwise.
func (r *run) stackOp(stack string) operation {
	r.ledger.mu.Lock()
	defer r.ledger.mu.Unlock()
	if r.ledger.stacks[stack].Version == 0 {
		return opCreate
	}
	return opUpdate
}

// stackEvent queues a stack's event without waiting for it: the pipeline commits it before anything queued
// after it (a step's pending record, which is waited for), and a failure to write it fails every later
// write. Waiting here cost a commit before the first step of every run.
func (r *run) stackEvent(stack string, status Status, reason string) {
	r.ledger.event(stack, Event{Stack: stack, Type: StackType, Status: status, Reason: reason})
}

// failWithoutCall records a failure found before any provider call (an input that does not resolve, a
// write-only value that cannot be restored): an event, the record left as it is.
func (r *run) failWithoutCall(stack, logicalID, typ string, status Status, err error) error {
	r.tally.fail(Failure{Stack: stack, LogicalID: logicalID, Type: typ, Status: status, Err: err})
	_ = r.ledger.record(stack, nil, Event{Stack: stack, Type: typ, LogicalID: logicalID, Status: status, Reason: err.Error()})
	return err
}

// ending is how a run ended, for finish.
type ending struct {
	destroy     bool
	interrupted bool
	notStarted  int
	// rolledBack holds, for each stack that was rolled back, whether the rollback completed.
	rolledBack map[string]bool
	// aborted holds, for each stack with steps not started because its deployment or one it waited for
	// was aborted (Options.StackAborted), why.
	aborted map[string]string
	// skipped holds, for each stack none of whose failures are its own but part of which was skipped
	// because another stack failed, why.
	skipped map[string]string
}

// finish writes each stack's final status, closes the commit pipeline and each deployment record.
func (r *run) finish(stacks []string, deployments map[string]*state.Deployment, end ending) *Result {
	failedStacks := r.tally.failedStacks()
	for name, why := range end.skipped {
		if failedStacks[name] == "" {
			failedStacks[name] = why
		}
	}
	for _, name := range stacks {
		var status Status
		op := r.stackOp(name)
		rbOK, rolled := end.rolledBack[name]
		failed := failedStacks[name] != ""
		switch {
		case rolled && rbOK:
			status = op.rollback().statuses().complete
		case rolled:
			status = op.rollback().statuses().failed
		case end.destroy && r.opts.Selection.IsPartial(name) && !failed && !end.interrupted:
			status = op.statuses().complete // targeting left resources: the stack lives on
		case end.destroy && r.opts.Selection.IsPartial(name):
			status = op.statuses().failed
		case end.destroy && !failed && !end.interrupted:
			status = DeleteComplete
		case end.destroy:
			status = DeleteFailed
		case failed || end.interrupted || end.aborted[name] != "":
			status = op.statuses().failed
		default:
			status = op.statuses().complete
		}
		r.ledger.mu.Lock()
		st := r.ledger.stacks[name]
		outputs := st.Outputs
		if end.destroy && status == DeleteComplete {
			outputs = resource.Properties{}
		}
		change := state.Change{Kind: state.PutStack, Status: string(status), Outputs: outputs, Dependencies: st.Dependencies}
		r.ledger.mu.Unlock()
		reason := failedStacks[name]
		if reason == "" && end.interrupted {
			reason = "interrupted"
		}
		if reason == "" {
			reason = end.aborted[name]
		}
		_ = r.ledger.putStack(name, change, Event{Stack: name, Type: StackType, Status: status, Reason: reason})
	}
	stateErr := r.ledger.close()
	res := &Result{Deployments: deployments, Failures: r.tally.failures, Counts: r.tally.counts, Replaced: r.tally.replaced,
		NotStarted: end.notStarted, Interrupted: end.interrupted || len(end.aborted) > 0, Stacks: r.ledger.stacks}
	for _, name := range stacks {
		d := deployments[name]
		d.Status = state.StatusCompleted
		switch {
		case failedStacks[name] != "":
			d.Status, d.Error = state.StatusFailed, failedStacks[name]
			if ok, rolled := end.rolledBack[name]; rolled && ok {
				d.Error += "; rolled back"
			} else if rolled {
				d.Error += "; rollback failed"
			}
		case end.interrupted:
			d.Status, d.Error = state.StatusAborted, r.interruptReason()
		case end.aborted[name] != "":
			d.Status, d.Error = state.StatusAborted, end.aborted[name]
		case stateErr != nil:
			d.Status, d.Error = state.StatusFailed, stateErr.Error()
		}
		d.FinishedAt = r.opts.Now().UTC()
		d.Version = r.ledger.commits.versions[name]
		if err := r.close(d, nil); err != nil && stateErr == nil {
			stateErr = &StateError{Err: err}
		}
	}
	if stateErr != nil {
		res.Failures = append(res.Failures, Failure{Type: StackType, Status: UpdateFailed, Err: stateErr})
	}
	return res
}

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
