package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/planner"
)

// DefaultConcurrency is the number of provider calls in flight at once when Options.Concurrency is 0.
const DefaultConcurrency = 10

// Options configure one Deploy or Destroy.
type Options struct {
	Backend   state.Backend
	Providers *Registry
	// Concurrency bounds the provider calls in flight at once (0: DefaultConcurrency).
	Concurrency int
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
	// ProviderConcurrency bounds the calls in flight to one provider (by name), within Concurrency. A
	// provider absent here uses its own DefaultConcurrency when it has one (ConcurrencyLimiter), else only
	// Concurrency applies.
	ProviderConcurrency map[string]int
}

// Failure is one resource (or stack) that failed, with the error the provider or the engine gave.
type Failure struct {
	Stack     string
	LogicalID string
	Type      string
	Status    Status
	Err       error
}

// Result is what a Deploy or Destroy did.
type Result struct {
	// Deployments are the records of this run, by stack.
	Deployments map[string]*state.Deployment
	// Failures are in the order they happened.
	Failures []Failure
	// Counts counts final resource statuses, e.g. Counts[CreateComplete].
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
var ErrInterrupted = errors.New("interrupted: running steps finished and were recorded; no new step was started")

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

// run is the state of one Deploy or Destroy.
type run struct {
	opts    Options
	sem     chan struct{}
	j       *journal
	callCtx context.Context // provider calls: not cancelled by an interrupt, so running calls finish

	results sync.WaitGroup // the goroutines of putResult waiting for their commit

	semMu    sync.Mutex               // guards provSems
	provSems map[string]chan struct{} // per-provider limits, made on first use (nil: none)

	mu           sync.Mutex // guards the fields below
	stacks       map[string]*state.Stack
	outputs      map[string]map[string]resource.Properties // stack → logical ID → outputs of resources done
	stackOutputs map[string]resource.Properties
	failures     []Failure
	counts       map[Status]int
	stateErr     error
	replaced     int
	// recreated holds "Stack/LogicalID" of resources replaced delete-before-replace in this run: their old
	// object is gone, and providers may have deleted what lived inside it (a zone's record sets).
	recreated map[string]bool
	// outputRefs maps stack → output key → logical IDs the output's value reads from (set before the walk).
	outputRefs map[string]map[string][]string
	// applied lists the changes the run made, in the order they succeeded (for rollback).
	applied []applied
	// down marks providers found unreachable, until a time (see DownFor).
	down map[string]downMark
}

func newRun(ctx context.Context, opts Options) *run {
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &run{opts: opts, sem: make(chan struct{}, opts.Concurrency), callCtx: context.WithoutCancel(ctx), provSems: map[string]chan struct{}{},
		stacks: map[string]*state.Stack{}, outputs: map[string]map[string]resource.Properties{},
		stackOutputs: map[string]resource.Properties{}, counts: map[Status]int{}, recreated: map[string]bool{},
		down: map[string]downMark{}}
}

// Deploy applies a plan: resource steps by dependency, then deletions of resources gone from the assembly
// and of objects left by replacements (the cleanup phase), then each stack's final status. Each step is
// persisted before and after its provider call. Deploy returns an error only when it cannot start (state
// unwritable); what happened to each resource is in the Result, summarised by Result.Err.
func Deploy(ctx context.Context, p *planner.Plan, opts Options) (*Result, error) {
	r := newRun(ctx, opts)
	for _, name := range p.Stacks {
		st := p.State[name]
		if st == nil {
			st = state.NewStack(name)
		}
		r.stacks[name] = cloneStack(st)
		r.outputs[name] = map[string]resource.Properties{}
	}
	for name, st := range p.State {
		if _, selected := r.stacks[name]; !selected && st != nil {
			r.stackOutputs[name] = st.Outputs
		}
	}
	r.outputRefs = map[string]map[string][]string{}
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
	deployments, err := r.startDeployments(ctx, p.Stacks, state.KindDeploy, func(stack string) []byte {
		return snapshot(p.Assembly.Stack(stack), opts.Providers)
	})
	if err != nil {
		return nil, err
	}
	r.j = newJournal(opts.Backend, deploymentIDs(deployments), opts.OnEvent)
	for _, name := range p.Stacks {
		r.stackEvent(name, r.stackStatus(name, "IN_PROGRESS"), "")
	}

	res := walk(ctx, p.Graph, func(id int) error {
		n := p.Graph.Nodes[id]
		if n.Kind == planner.StackNode {
			return r.completeStack(p.Assembly.Stack(n.Stack), p.Selection.IsPartial(n.Stack))
		}
		return r.applyStep(n.Step)
	}, func(id, root int) {
		if n := p.Graph.Nodes[id]; n.Kind == planner.ResourceNode {
			r.skip(n.Stack, n.LogicalID, n.Step.Type, p.Graph.Nodes[root])
		}
	})
	interrupted := ctx.Err() != nil
	notStarted := count(res, outcomeNotStarted)

	var rolledBack map[string]bool
	if len(r.failures) > 0 && !opts.NoRollback && r.stateFailed() == nil {
		var failed []string
		for _, name := range p.Stacks {
			if slices.ContainsFunc(r.failures, func(f Failure) bool { return f.Stack == name }) {
				failed = append(failed, name)
			}
		}
		rolledBack = r.rollback(ctx, failed)
	}

	if len(r.failures) == 0 && !interrupted && r.stateFailed() == nil {
		if steps := r.cleanupSteps(p.Assembly, p.Stacks, p.Selection); len(steps) > 0 {
			for _, stack := range stacksOf(steps) {
				r.stackEvent(stack, UpdateCompleteCleanup, "deleting objects no longer in the assembly or replaced")
			}
			tg, err := planner.TeardownGraph(steps, nil)
			if err != nil {
				r.fail(Failure{Stack: steps[0].Stack, Type: StackType, Status: UpdateFailed, Err: err})
			} else {
				tres := r.teardown(ctx, tg)
				notStarted += count(tres, outcomeNotStarted)
			}
			interrupted = interrupted || ctx.Err() != nil
		}
	}
	return r.finish(p.Stacks, deployments, interrupted, notStarted, false, rolledBack), nil
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
		r.stacks[st.Name] = cloneStack(st)
		stackDeps[st.Name] = st.Dependencies
	}
	deployments, err := r.startDeployments(ctx, names, state.KindDestroy, func(string) []byte { return nil })
	if err != nil {
		return nil, err
	}
	r.j = newJournal(opts.Backend, deploymentIDs(deployments), opts.OnEvent)
	for _, name := range names {
		r.stackEvent(name, DeleteInProgress, "")
	}
	tg, err := planner.TeardownGraph(planner.DestroySteps(stacks), stackDeps)
	if err != nil {
		r.j.close()
		return nil, err
	}
	res := r.teardown(ctx, tg)
	return r.finish(names, deployments, ctx.Err() != nil, count(res, outcomeNotStarted), true, nil), nil
}

func (r *run) teardown(ctx context.Context, g *planner.Graph) *walkResult {
	return walk(ctx, g, func(id int) error {
		return r.deleteStep(g.Nodes[id].Step)
	}, func(id, root int) {
		n := g.Nodes[id]
		r.skip(n.Stack, n.LogicalID, n.Step.Type, g.Nodes[root])
	})
}

func count(res *walkResult, o outcome) int {
	n := 0
	for _, x := range res.outcomes {
		if x == o {
			n++
		}
	}
	return n
}

func deploymentIDs(ds map[string]*state.Deployment) map[string]string {
	ids := make(map[string]string, len(ds))
	for stack, d := range ds {
		ids[stack] = d.ID
	}
	return ids
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

func cloneStack(st *state.Stack) *state.Stack {
	c := *st
	c.Resources = make(map[string]*state.Resource, len(st.Resources))
	for k, v := range st.Resources {
		c.Resources[k] = v
	}
	return &c
}

// startDeployments records one RUNNING deployment per stack with the template it runs with.
func (r *run) startDeployments(ctx context.Context, stacks []string, kind state.DeploymentKind,
	template func(string) []byte) (map[string]*state.Deployment, error) {
	out := map[string]*state.Deployment{}
	for _, name := range stacks {
		snap := template(name)
		d := &state.Deployment{ID: uuid.NewString(), Stack: name, Kind: kind, Status: state.StatusRunning,
			CreatedBy: r.opts.CreatedBy, CdkxVersion: r.opts.CdkxVersion, Snapshot: snap,
			StartedAt: r.opts.Now().UTC(), Version: r.stacks[name].Version}
		if snap != nil {
			sum := sha256.Sum256(snap)
			d.SnapshotHash = hex.EncodeToString(sum[:])
		}
		if err := r.opts.Backend.CreateDeployment(ctx, d); err != nil {
			return nil, fmt.Errorf("record deployment of stack %s: %w", name, err)
		}
		out[name] = d
	}
	return out, nil
}

// stackStatus returns CREATE_<suffix> for a stack never deployed and UPDATE_<suffix> otherwise.
func (r *run) stackStatus(stack, suffix string) Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stacks[stack].Version == 0 {
		return Status("CREATE_" + suffix)
	}
	return Status("UPDATE_" + suffix)
}

// finish writes each stack's final status and closes its deployment record.
// rolledBack holds, for each stack that was rolled back, whether the rollback completed.
func (r *run) finish(stacks []string, deployments map[string]*state.Deployment, interrupted bool, notStarted int,
	destroy bool, rolledBack map[string]bool) *Result {
	failedStacks := map[string]string{}
	for _, f := range r.failures {
		if _, ok := failedStacks[f.Stack]; !ok {
			failedStacks[f.Stack] = fmt.Sprintf("%s failed: %v", f.LogicalID, f.Err)
		}
	}
	for _, name := range stacks {
		var status Status
		rbOK, rolled := rolledBack[name]
		switch {
		case rolled && rbOK:
			status = r.rollbackStatus(name, "COMPLETE")
		case rolled:
			status = r.rollbackStatus(name, "FAILED")
		case destroy && r.opts.Selection.IsPartial(name) && failedStacks[name] == "" && !interrupted:
			status = r.stackStatus(name, "COMPLETE") // targeting left resources: the stack lives on
		case destroy && r.opts.Selection.IsPartial(name):
			status = r.stackStatus(name, "FAILED")
		case destroy && failedStacks[name] == "" && !interrupted:
			status = DeleteComplete
		case destroy:
			status = DeleteFailed
		case failedStacks[name] != "" || interrupted:
			status = r.stackStatus(name, "FAILED")
		default:
			status = r.stackStatus(name, "COMPLETE")
		}
		r.mu.Lock()
		st := r.stacks[name]
		outputs := st.Outputs
		if destroy && status == DeleteComplete {
			outputs = resource.Properties{}
		}
		change := state.Change{Kind: state.PutStack, Status: string(status), Outputs: outputs, Dependencies: st.Dependencies}
		_ = st.Apply(change)
		r.mu.Unlock()
		reason := failedStacks[name]
		if reason == "" && interrupted {
			reason = "interrupted"
		}
		_ = r.record(name, []state.Change{change}, Event{Stack: name, Type: StackType, Status: status, Reason: reason})
	}
	r.j.close()
	r.results.Wait()
	r.mu.Lock()
	if r.j.err != nil && r.stateErr == nil { // the journal's goroutine is done: reading its err is safe
		r.stateErr = r.j.err
	}
	r.mu.Unlock()
	res := &Result{Deployments: deployments, Failures: r.failures, Counts: r.counts, Replaced: r.replaced, NotStarted: notStarted,
		Interrupted: interrupted, Stacks: r.stacks}
	for _, name := range stacks {
		d := deployments[name]
		d.Status = state.StatusCompleted
		switch {
		case failedStacks[name] != "":
			d.Status, d.Error = state.StatusFailed, failedStacks[name]
			if ok, rolled := rolledBack[name]; rolled && ok {
				d.Error += "; rolled back"
			} else if rolled {
				d.Error += "; rollback failed"
			}
		case interrupted:
			d.Status, d.Error = state.StatusAborted, ErrInterrupted.Error()
		case r.stateErr != nil:
			d.Status, d.Error = state.StatusFailed, r.stateErr.Error()
		}
		d.FinishedAt = r.opts.Now().UTC()
		d.Version = r.j.versions[name]
		if err := r.opts.Backend.FinishDeployment(context.Background(), d.ID, d.Status, d.FinishedAt, d.Version, d.Error); err != nil && r.stateErr == nil {
			r.stateErr = &StateError{Err: err}
		}
	}
	if r.stateErr != nil {
		res.Failures = append(res.Failures, Failure{Type: StackType, Status: UpdateFailed, Err: r.stateErr})
	}
	return res
}

// record commits changes and events for a stack and waits until they are durable. A state write failure
// is remembered (the run stops starting steps) and returned.
func (r *run) record(stack string, changes []state.Change, events ...Event) error {
	now := r.opts.Now().UTC()
	for i := range events {
		events[i].Time = now
	}
	err := r.j.commit(stack, changes, events...)
	if err != nil {
		r.mu.Lock()
		if r.stateErr == nil {
			r.stateErr = err
		}
		r.mu.Unlock()
	}
	return err
}

// put records a resource's new state record (in memory at once, durably before returning).
func (r *run) put(stack string, res *state.Resource, e Event) error {
	return r.wait(r.putAsync(stack, res, e))
}

// putAsync records a resource's new state record in memory and queues it for the journal without waiting.
// It is used for the result of a step: the step's dependents may start at once, because each of them
// waits for its own pending-operation record before calling a provider, and the journal makes that record
// durable only after every record queued before it (this one included).
func (r *run) putAsync(stack string, res *state.Resource, e Event) <-chan error {
	res.UpdatedAt = r.opts.Now().UTC()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stacks[stack].Resources[res.LogicalID] = res
	return r.j.enqueue(stack, []state.Change{{Kind: state.PutResource, Resource: res}}, stamp(e, res.UpdatedAt))
}

// putResult queues a step's successful result: see putAsync. A failure to write it is remembered by the
// journal and stops the run at the next pending record.
func (r *run) putResult(stack string, res *state.Resource, e Event) error {
	ch := r.putAsync(stack, res, e)
	r.results.Go(func() { _ = r.wait(ch) })
	return nil
}

// drop removes a resource from state.
func (r *run) drop(stack, logicalID string, e Event) error {
	r.mu.Lock()
	delete(r.stacks[stack].Resources, logicalID)
	ch := r.j.enqueue(stack, []state.Change{{Kind: state.DeleteResource, LogicalID: logicalID}}, stamp(e, r.opts.Now().UTC()))
	r.mu.Unlock()
	return r.wait(ch)
}

func stamp(e Event, t time.Time) Event {
	e.Time = t
	return e
}

func (r *run) wait(ch <-chan error) error {
	err := <-ch
	if err != nil {
		r.mu.Lock()
		if r.stateErr == nil {
			r.stateErr = err
		}
		r.mu.Unlock()
	}
	return err
}

func (r *run) current(stack, logicalID string) *state.Resource {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stacks[stack].Resources[logicalID]
}

func (r *run) stackEvent(stack string, status Status, reason string) {
	_ = r.record(stack, nil, Event{Stack: stack, Type: StackType, Status: status, Reason: reason})
}

func (r *run) fail(f Failure) {
	r.mu.Lock()
	r.failures = append(r.failures, f)
	r.counts[f.Status]++
	r.mu.Unlock()
}

func (r *run) done(status Status) {
	r.mu.Lock()
	r.counts[status]++
	r.mu.Unlock()
}

func (r *run) skip(stack, logicalID, typ string, root *planner.Node) {
	reason := fmt.Sprintf("dependency %s failed", root.Key())
	if root.Stack != stack {
		reason = fmt.Sprintf("stack %s did not complete (%s failed)", root.Stack, root.Key())
	}
	r.done(Skipped)
	// Not waited for: the walker must not block on state; the journal keeps the order.
	r.mu.Lock()
	r.j.enqueue(stack, nil, Event{Time: r.opts.Now().UTC(), Stack: stack, Type: typ, LogicalID: logicalID, Status: Skipped, Reason: reason})
	r.mu.Unlock()
}

// DownFor is how long a provider that gave no response to any attempt of a call (resource.ErrUnreachable)
// is treated as down: the calls of that window fail at once, naming the first failure, instead of each
// spending its own retries on a server that is not there. The next call after it tries again.
const DownFor = 30 * time.Second

// ProviderDownError fails a call that was not made because its provider was unreachable moments before.
type ProviderDownError struct {
	Provider string
	Cause    error
}

// Error names the provider and the failure that marked it down.
func (e *ProviderDownError) Error() string {
	return fmt.Sprintf("not attempted: provider %s is unreachable (%v)", e.Provider, e.Cause)
}

// Unwrap returns the failure that marked the provider down.
func (e *ProviderDownError) Unwrap() error { return e.Cause }

// providerDown returns a *ProviderDownError while provider is marked down, else nil.
func (r *run) providerDown(provider string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if d, ok := r.down[provider]; ok && r.opts.Now().Before(d.until) {
		return &ProviderDownError{Provider: provider, Cause: d.cause}
	}
	return nil
}

// noteResult marks provider down when err says it was unreachable.
func (r *run) noteResult(provider string, err error) {
	if err == nil || !errors.Is(err, resource.ErrUnreachable) {
		return
	}
	var pd *ProviderDownError
	if errors.As(err, &pd) {
		return
	}
	r.mu.Lock()
	r.down[provider] = downMark{until: r.opts.Now().Add(DownFor), cause: err}
	r.mu.Unlock()
}

type downMark struct {
	until time.Time
	cause error
}

// call runs one call to provider under the global and the provider's concurrency limits, with a context
// an interrupt does not cancel.
func (r *run) call(provider string, f func(ctx context.Context) error) error {
	if err := r.providerDown(provider); err != nil {
		return err
	}
	release := r.acquire(provider)
	defer release()
	err := f(r.callCtx)
	r.noteResult(provider, err)
	return err
}

// acquire takes a slot of provider's limit, then one of the global limit, and returns their release. The
// provider's slot is taken first, so that a slow provider's queue never holds global slots that other
// providers could use.
func (r *run) acquire(provider string) func() {
	ps := r.providerSem(provider)
	if ps != nil {
		ps <- struct{}{}
	}
	r.sem <- struct{}{}
	return func() {
		<-r.sem
		if ps != nil {
			<-ps
		}
	}
}

// pendingCall runs one provider call preceded by its durable pending-operation record: it takes the
// provider's and the global concurrency slot first, so that a pending record always means "a call may be
// in flight" (never merely queued), then commits pending with its event e, then calls f, then releases the
// slot. A failure to write the record is returned as it is (a *StateError) and f is not called.
func (r *run) pendingCall(stack string, pending *state.Resource, e Event, provider string, f func(ctx context.Context) error) error {
	if err := r.providerDown(provider); err != nil {
		return err // nothing is called, so nothing is pending
	}
	release := r.acquire(provider)
	defer release()
	if err := r.providerDown(provider); err != nil {
		return err // marked down while this call waited for its slot
	}
	if err := r.put(stack, pending, e); err != nil {
		return err
	}
	err := f(r.callCtx)
	r.noteResult(provider, err)
	return err
}

// providerSem returns the semaphore of provider's own limit, or nil when only the global one applies.
func (r *run) providerSem(provider string) chan struct{} {
	r.semMu.Lock()
	defer r.semMu.Unlock()
	if s, ok := r.provSems[provider]; ok {
		return s
	}
	n := r.opts.ProviderConcurrency[provider]
	if n <= 0 {
		if info, ok := r.opts.Providers.Info(provider); ok {
			n = info.DefaultConcurrency
		}
	}
	var s chan struct{}
	if n > 0 && n < r.opts.Concurrency {
		s = make(chan struct{}, n)
	}
	r.provSems[provider] = s
	return s
}

// applyStep drives one resource of the assembly to its template: resolve its tokens from real outputs,
// decide the operation against state, call the provider, record the result.
func (r *run) applyStep(step *planner.Step) error {
	if err := r.stateFailed(); err != nil {
		return err
	}
	old := r.current(step.Stack, step.LogicalID)
	ev := func(status Status, reason string) Event {
		return Event{Stack: step.Stack, Type: step.Type, LogicalID: step.LogicalID, Status: status, Reason: reason}
	}
	inputs, err := r.resolveInputs(step)
	if err != nil {
		status := CreateFailed
		if old != nil && old.PhysicalID != "" {
			status = UpdateFailed
		}
		return r.failStep(step, status, err, ev)
	}
	d := planner.Decide(step.Schema, old, step.Type, step.Provider, inputs, step.Resource.Metadata)
	if step.ForceReplace {
		d = planner.ForceReplace(step.Schema, d, step.Resource.Metadata)
	}
	if d.Op == planner.OpSame || d.Op == planner.OpUpdate {
		if dep := r.recreatedDependency(step); dep != "" {
			d = planner.Decision{Op: planner.OpReplace, Changes: d.Changes, DeleteBeforeReplace: step.Schema.DeleteBeforeReplace,
				Reason: fmt.Sprintf("%s was deleted and re-created, and a create-only property reads from it", dep)}
		}
	}
	prov, err := r.opts.Providers.Provider(step.Provider)
	if err != nil && d.Op != planner.OpSame {
		return r.failStep(step, CreateFailed, err, ev)
	}
	switch d.Op {
	case planner.OpSame:
		return r.same(step, old, ev)
	case planner.OpCreate:
		err = r.create(step, prov, old, nil, inputs, CreateInProgress, CreateComplete, CreateFailed, "", ev)
	case planner.OpUpdate:
		err = r.update(step, prov, old, inputs, d, ev)
	case planner.OpReplace:
		err = r.replace(step, prov, old, inputs, d, ev)
	default:
		return fmt.Errorf("unexpected operation %q", d.Op)
	}
	if err == nil {
		r.remember(step, d.Op, d.DeleteBeforeReplace, old)
	}
	return err
}

func (r *run) stateFailed() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stateErr
}

func (r *run) failStep(step *planner.Step, status Status, err error, ev func(Status, string) Event) error {
	r.fail(Failure{Stack: step.Stack, LogicalID: step.LogicalID, Type: step.Type, Status: status, Err: err})
	_ = r.record(step.Stack, nil, ev(status, err.Error()))
	return err
}

// resolveInputs replaces the step's tokens by the real outputs of resources and stacks already done.
func (r *run) resolveInputs(step *planner.Step) (resource.Properties, error) {
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
func (r *run) lookup(stack string, t assembly.TokenAt) (any, error) {
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
		return resource.Clone(v), nil
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
	return resource.Clone(v), nil
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

func (r *run) setOutputs(stack, logicalID string, outs resource.Properties) {
	r.mu.Lock()
	r.outputs[stack][logicalID] = outs
	r.mu.Unlock()
}

func withCRN(outs resource.Properties, typ, physicalID string) resource.Properties {
	if outs == nil {
		outs = resource.Properties{}
	}
	outs["crn"] = resource.CRN(typ, physicalID)
	return outs
}

func (r *run) same(step *planner.Step, old *state.Resource, ev func(Status, string) Event) error {
	r.setOutputs(step.Stack, step.LogicalID, old.Outputs)
	r.done(NoChanges)
	if slices.Equal(old.Dependencies, step.Dependencies) && old.Pending == nil && !Status(old.Status).Failed() {
		_ = r.record(step.Stack, nil, ev(NoChanges, ""))
		return r.stateFailed()
	}
	next := *old
	next.Dependencies, next.Pending = step.Dependencies, nil
	if Status(old.Status).Failed() {
		next.Status = string(UpdateComplete)
	}
	return r.put(step.Stack, &next, ev(NoChanges, ""))
}

// create creates a new object for step. base is the record whose older objects (Replaced) the new record
// keeps, or nil. onFail is what state records when the create fails: nil drops the record, unless base
// still lists objects left by replacements, which state must keep knowing.
func (r *run) create(step *planner.Step, prov Provider, base, onFail *state.Resource, inputs resource.Properties,
	inProgress, complete, failed Status, reason string, ev func(Status, string) Event) error {
	old := base
	var prev resource.Properties
	if base != nil {
		prev = base.Inputs
		if len(prev) == 0 && len(base.Replaced) > 0 {
			prev = base.Replaced[len(base.Replaced)-1].Inputs
		}
	}
	stored := resource.StoredInputs(step.Schema, inputs, prev) // write-only values only as fingerprints
	pending := &state.Resource{LogicalID: step.LogicalID, Type: step.Type, Provider: step.Provider,
		Dependencies: step.Dependencies, Status: string(inProgress),
		Pending: &state.PendingOperation{Op: "creating", Inputs: stored, StartedAt: r.opts.Now().UTC()}}
	if old != nil {
		pending.Replaced = old.Replaced
	}
	var out resource.CreateResult
	err := r.pendingCall(step.Stack, pending, ev(inProgress, reason), prov.Info().Name, func(ctx context.Context) error {
		var err error
		out, err = prov.Create(ctx, resource.CreateRequest{Type: step.Type, LogicalID: step.LogicalID, Properties: inputs})
		return err
	})
	if IsStateError(err) {
		return err
	}
	if err != nil {
		r.fail(Failure{Stack: step.Stack, LogicalID: step.LogicalID, Type: step.Type, Status: failed, Err: err})
		switch {
		case onFail != nil:
			kept := *onFail
			kept.Status, kept.Pending = string(failed), nil
			_ = r.put(step.Stack, &kept, ev(failed, err.Error()))
		case len(pending.Replaced) > 0:
			gone := *pending
			gone.Pending, gone.Status = nil, string(failed)
			_ = r.put(step.Stack, &gone, ev(failed, err.Error()))
		default:
			_ = r.drop(step.Stack, step.LogicalID, ev(failed, err.Error()))
		}
		return err
	}
	outs := withCRN(out.Outputs, step.Type, out.PhysicalID)
	rec := *pending
	rec.PhysicalID, rec.Inputs, rec.Outputs, rec.Pending, rec.Status = out.PhysicalID, stored, outs, nil, string(complete)
	r.setOutputs(step.Stack, step.LogicalID, outs)
	r.done(complete)
	return r.putResult(step.Stack, &rec, Event{Stack: step.Stack, Type: step.Type, LogicalID: step.LogicalID,
		PhysicalID: out.PhysicalID, Status: complete})
}

func (r *run) update(step *planner.Step, prov Provider, old *state.Resource, inputs resource.Properties,
	d planner.Decision, ev func(Status, string) Event) error {
	changed := make([]string, len(d.Changes))
	for i, c := range d.Changes {
		changed[i] = c.Name
	}
	stored := resource.StoredInputs(step.Schema, inputs, old.Inputs) // write-only values only as fingerprints
	pending := *old
	pending.Pending = &state.PendingOperation{Op: "updating", Inputs: stored, PhysicalID: old.PhysicalID, StartedAt: r.opts.Now().UTC()}
	pending.Status = string(UpdateInProgress)
	var out resource.UpdateResult
	err := r.pendingCall(step.Stack, &pending, ev(UpdateInProgress, "changed: "+strings.Join(changed, ", ")), prov.Info().Name, func(ctx context.Context) error {
		var err error
		out, err = prov.Update(ctx, resource.UpdateRequest{Type: step.Type, PhysicalID: old.PhysicalID, Old: old.Inputs,
			New: inputs, OldOutputs: old.Outputs, Changed: changed})
		return err
	})
	if IsStateError(err) {
		return err
	}
	if err != nil {
		r.fail(Failure{Stack: step.Stack, LogicalID: step.LogicalID, Type: step.Type, Status: UpdateFailed, Err: err})
		kept := *old
		kept.Status, kept.Pending = string(UpdateFailed), nil
		_ = r.put(step.Stack, &kept, ev(UpdateFailed, err.Error()))
		return err
	}
	outs := withCRN(out.Outputs, step.Type, old.PhysicalID)
	rec := *old
	rec.Inputs, rec.Outputs, rec.Pending, rec.Status, rec.Dependencies = stored, outs, nil, string(UpdateComplete), step.Dependencies
	r.setOutputs(step.Stack, step.LogicalID, outs)
	r.done(UpdateComplete)
	return r.putResult(step.Stack, &rec, Event{Stack: step.Stack, Type: step.Type, LogicalID: step.LogicalID,
		PhysicalID: old.PhysicalID, Status: UpdateComplete})
}

// replace creates a new object before the old one is deleted in the cleanup phase (the old one is kept in
// the record's Replaced list meanwhile) or, for delete-before-replace, deletes the old one first.
func (r *run) replace(step *planner.Step, prov Provider, old *state.Resource, inputs resource.Properties,
	d planner.Decision, ev func(Status, string) Event) error {
	err := r.replaceObject(step, prov, old, inputs, d, ev)
	if err == nil {
		r.mu.Lock()
		r.replaced++
		r.mu.Unlock()
	}
	return err
}

func (r *run) replaceObject(step *planner.Step, prov Provider, old *state.Resource, inputs resource.Properties,
	d planner.Decision, ev func(Status, string) Event) error {
	oldObj := state.Object{Type: old.Type, Provider: old.Provider, PhysicalID: old.PhysicalID, Inputs: old.Inputs, Outputs: old.Outputs}
	if !d.DeleteBeforeReplace {
		holder := *old
		holder.PhysicalID, holder.Replaced = "", append(slices.Clone(old.Replaced), oldObj)
		// On failure the old object stays the live one: it still exists and serves.
		return r.create(step, prov, &holder, old, inputs, UpdateInProgress, UpdateComplete, UpdateFailed,
			"replacement: "+d.Reason+"; creating the new object first", ev)
	}
	oldProv, err := r.opts.Providers.Provider(old.Provider)
	if err != nil {
		return r.failStep(step, UpdateFailed, err, ev)
	}
	pending := *old
	pending.Status = string(UpdateInProgress)
	pending.Pending = &state.PendingOperation{Op: "deleting", PhysicalID: old.PhysicalID, StartedAt: r.opts.Now().UTC()}
	err = r.pendingCall(step.Stack, &pending, ev(UpdateInProgress, "replacement: "+d.Reason+"; deleting the old object first"), oldProv.Info().Name, deleteCall(oldProv, resource.DeleteRequest{Type: old.Type, PhysicalID: old.PhysicalID, Properties: old.Inputs, Outputs: old.Outputs}))
	if IsStateError(err) {
		return err
	}
	if err != nil {
		r.fail(Failure{Stack: step.Stack, LogicalID: step.LogicalID, Type: step.Type, Status: UpdateFailed, Err: err})
		kept := *old
		kept.Status, kept.Pending = string(UpdateFailed), nil
		_ = r.put(step.Stack, &kept, ev(UpdateFailed, err.Error()))
		return err
	}
	r.mu.Lock()
	r.recreated[step.Key()] = true
	r.mu.Unlock()
	holder := *old
	holder.PhysicalID, holder.Inputs, holder.Outputs = "", nil, nil
	return r.create(step, prov, &holder, nil, inputs, UpdateInProgress, UpdateComplete, UpdateFailed, "replacement: creating the new object", ev)
}

// recreatedDependency returns the key of a resource that this run replaced delete-before-replace and
// that one of step's create-only properties reads from (directly by {ref}, or through a stack output by
// {stackRef}), or "".
func (r *run) recreatedDependency(step *planner.Step) string {
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
func (r *run) completeStack(as *assembly.Stack, keepOutputs bool) error {
	outs := resource.Properties{}
	if keepOutputs {
		r.mu.Lock()
		outs = r.stacks[as.ID].Outputs
		r.mu.Unlock()
	}
	for key, o := range as.Outputs {
		if keepOutputs {
			break
		}
		v, err := assembly.Resolve(o.Path+".value", o.Value, func(t assembly.TokenAt) (any, error) {
			return r.lookup(as.ID, t)
		})
		if err != nil {
			err = fmt.Errorf("output %s: %w", key, err)
			r.fail(Failure{Stack: as.ID, Type: StackType, Status: r.stackStatus(as.ID, "FAILED"), Err: err})
			_ = r.record(as.ID, nil, Event{Stack: as.ID, Type: StackType, Status: r.stackStatus(as.ID, "FAILED"), Reason: err.Error()})
			return err
		}
		outs[key] = v
	}
	r.mu.Lock()
	st := r.stacks[as.ID]
	deps := slices.Clone(as.Dependencies)
	change := state.Change{Kind: state.PutStack, Status: st.Status, Outputs: outs, Dependencies: deps}
	_ = st.Apply(change)
	r.stackOutputs[as.ID] = outs
	r.mu.Unlock()
	return r.record(as.ID, []state.Change{change})
}

// cleanupSteps lists, after the resource steps, the resources recorded in state but gone from the
// assembly and the objects left by replacements; only those of resources sel selects (nil: all).
func (r *run) cleanupSteps(a *assembly.Assembly, stacks []string, sel *planner.Selection) []*planner.Step {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*planner.Step
	for _, name := range stacks {
		as := a.Stack(name)
		for _, res := range r.stacks[name].SortedResources() {
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

// deleteStep deletes one object: a resource's live object (then its record goes) or an object left by a
// replacement (then it leaves the record's Replaced list).
func (r *run) deleteStep(step *planner.Step) error {
	if err := r.stateFailed(); err != nil {
		return err
	}
	ev := func(physicalID string, status Status, reason string) Event {
		return Event{Stack: step.Stack, Type: step.Type, LogicalID: step.LogicalID, PhysicalID: physicalID, Status: status, Reason: reason}
	}
	if step.Object != nil {
		return r.deleteReplaced(step, ev)
	}
	cur := r.current(step.Stack, step.LogicalID)
	if cur == nil {
		return nil
	}
	if cur.PhysicalID == "" {
		r.done(DeleteComplete)
		return r.drop(step.Stack, step.LogicalID, ev("", DeleteComplete, "no object was ever created"))
	}
	prov, err := r.opts.Providers.Provider(cur.Provider)
	if err != nil {
		r.fail(Failure{Stack: step.Stack, LogicalID: step.LogicalID, Type: step.Type, Status: DeleteFailed, Err: err})
		_ = r.record(step.Stack, nil, ev(cur.PhysicalID, DeleteFailed, err.Error()))
		return err
	}
	pending := *cur
	pending.Status = string(DeleteInProgress)
	pending.Pending = &state.PendingOperation{Op: "deleting", PhysicalID: cur.PhysicalID, StartedAt: r.opts.Now().UTC()}
	err = r.pendingCall(step.Stack, &pending, ev(cur.PhysicalID, DeleteInProgress, step.Reason), prov.Info().Name, deleteCall(prov, resource.DeleteRequest{Type: cur.Type, PhysicalID: cur.PhysicalID, Properties: cur.Inputs, Outputs: cur.Outputs}))
	if IsStateError(err) {
		return err
	}
	if err != nil {
		r.fail(Failure{Stack: step.Stack, LogicalID: step.LogicalID, Type: step.Type, Status: DeleteFailed, Err: err})
		kept := *cur
		kept.Status, kept.Pending = string(DeleteFailed), nil
		_ = r.put(step.Stack, &kept, ev(cur.PhysicalID, DeleteFailed, err.Error()))
		return err
	}
	r.done(DeleteComplete)
	if len(cur.Replaced) > 0 {
		// Objects left by replacements are deleted first (TeardownGraph), so this keeps nothing live.
		kept := *cur
		kept.PhysicalID, kept.Pending, kept.Status = "", nil, string(DeleteComplete)
		return r.put(step.Stack, &kept, ev(cur.PhysicalID, DeleteComplete, ""))
	}
	return r.drop(step.Stack, step.LogicalID, ev(cur.PhysicalID, DeleteComplete, ""))
}

func (r *run) deleteReplaced(step *planner.Step, ev func(string, Status, string) Event) error {
	obj := *step.Object
	prov, err := r.opts.Providers.Provider(obj.Provider)
	if err == nil {
		pending := *r.current(step.Stack, step.LogicalID)
		pending.Pending = &state.PendingOperation{Op: "deleting", PhysicalID: obj.PhysicalID, StartedAt: r.opts.Now().UTC()}
		err = r.pendingCall(step.Stack, &pending, ev(obj.PhysicalID, DeleteInProgress, "old object replaced by a new one"), prov.Info().Name,
			deleteCall(prov, resource.DeleteRequest{Type: obj.Type, PhysicalID: obj.PhysicalID, Properties: obj.Inputs, Outputs: obj.Outputs}))
		if IsStateError(err) {
			return err
		}
	}
	if err != nil {
		r.fail(Failure{Stack: step.Stack, LogicalID: step.LogicalID, Type: obj.Type, Status: DeleteFailed, Err: err})
		kept := *r.current(step.Stack, step.LogicalID)
		kept.Pending = nil // the old object still exists and stays listed; the next deploy deletes it
		_ = r.put(step.Stack, &kept, ev(obj.PhysicalID, DeleteFailed, err.Error()))
		return err
	}
	r.done(DeleteComplete)
	return r.forgetReplaced(step.Stack, step.LogicalID, obj.PhysicalID, ev(obj.PhysicalID, DeleteComplete, ""))
}

// forgetReplaced removes a deleted object from its resource's list of replaced objects (and the record
// itself when nothing of it is left), clearing the pending operation.
func (r *run) forgetReplaced(stack, logicalID, physicalID string, e Event) error {
	r.mu.Lock()
	cur := r.stacks[stack].Resources[logicalID]
	next := *cur
	next.Pending = nil
	next.Replaced = slices.DeleteFunc(slices.Clone(cur.Replaced), func(o state.Object) bool { return o.PhysicalID == physicalID })
	next.UpdatedAt = r.opts.Now().UTC()
	var change state.Change
	if next.PhysicalID == "" && len(next.Replaced) == 0 {
		delete(r.stacks[stack].Resources, logicalID)
		change = state.Change{Kind: state.DeleteResource, LogicalID: logicalID}
	} else {
		r.stacks[stack].Resources[logicalID] = &next
		change = state.Change{Kind: state.PutResource, Resource: &next}
	}
	ch := r.j.enqueue(stack, []state.Change{change}, stamp(e, next.UpdatedAt))
	r.mu.Unlock()
	return r.wait(ch)
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

// deleteCall returns the provider call that deletes an object; an object already gone is success.
func deleteCall(prov Provider, req resource.DeleteRequest) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		if err := prov.Delete(ctx, req); err != nil && !errors.Is(err, resource.ErrNotFound) {
			return err
		}
		return nil
	}
}
