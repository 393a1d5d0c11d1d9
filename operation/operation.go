// Package operation runs each cdkx verb (deploy, destroy, refresh, import, diff, state import, review, agent,
// unlock, cancel) as a library call.
//
// A verb is a value — Deploy{…}.Run(ctx) — given an Env: the state backend, the providers, the view, the
// clock and ticker, the limits and the lock policy. Commands only bind flags and render; every verb gets
// the same "still …" ticker, interrupt handling, locking, settling of pending operations and concurrency
// policy from here, and is tested without a terminal.
package operation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/pkg/diag"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// View receives what a run shows while it goes on. Event is called with each durable event, from one
// goroutine at a time; Tick with the ticker's time (for "still creating… [10s elapsed]" lines).
type View interface {
	Event(engine.Event)
	Tick(time.Time)
}

// Env is what every operation is given.
type Env struct {
	Backend   state.Backend
	Providers *engine.Registry
	// NewView returns the view of one engine run (settling, then the verb's own run), given the stacks,
	// types and logical IDs it may show (a table sizes its columns by them); nil shows nothing.
	NewView func(stacks, types, logicalIDs []string) View
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Ticker returns the channel that drives View.Tick and its stop (nil: no ticks).
	Ticker func() (<-chan time.Time, func())
	// Concurrency bounds provider calls in flight (0: engine.DefaultConcurrency); ProviderConcurrency
	// bounds one provider's, within it (absent: what the provider declares).
	Concurrency         int
	ProviderConcurrency map[string]int
	// Lock is how stacks are locked.
	Lock LockPolicy
	// CreatedBy ("user@host") and Version are recorded in each deployment.
	CreatedBy, Version string
	// OnInterrupt, when set, is called once when ctx is cancelled during a run, with the number of provider
	// calls then in flight (they finish and are recorded; nothing new starts).
	OnInterrupt func(inFlight int64)
	// Notice, when set, receives progress lines that are not events (e.g. "Settling 2 operation(s)…").
	Notice func(string)
}

// LockPolicy says who takes stack locks and how long to wait for them.
type LockPolicy struct {
	// Holder describes this run (ID, user, host, PID); Operation is set by each verb.
	Holder state.LockInfo
	// Timeout is how long to wait for a held lock (0: fail at once with *state.LockedError).
	Timeout time.Duration
	// Notify is told whom the run waits for (takeover "") or whose stale lock it takes over, and why.
	Notify func(holder state.LockInfo, takeover string)
	// Queued is told where the run's first waiting deployment stands in its stack's queue, each time
	// that changes while it waits for its turn (up to Timeout).
	Queued func(*state.QueuedError)
}

// PlanError is returned when the assembly cannot be planned against state; Diagnostics say why.
type PlanError struct {
	Diagnostics diag.Diagnostics
}

// Error counts the errors.
func (e *PlanError) Error() string {
	n := 0
	for _, d := range e.Diagnostics {
		if d.Severity == diag.Error {
			n++
		}
	}
	return fmt.Sprintf("the plan has %d error(s)", n)
}

// SettleError is returned when operations an interrupted run left pending could not be settled: planning
// on an unknown state could create a duplicate or orphan an object, so nothing else was done. Result has
// the reads' failures.
type SettleError struct {
	Result *engine.Result
}

// Error says what was not done.
func (e *SettleError) Error() string {
	return "some resources could not be read back from their providers; nothing else was done"
}

// Unwrap returns the failures, so that the exit code is the one of a failed resource.
func (e *SettleError) Unwrap() error { return e.Result.Err() }

// ErrNothing is returned (wrapped, with the reason) by Destroy when state records nothing it selects.
var ErrNothing = errors.New("nothing to destroy")

func (e Env) now() time.Time {
	if e.Now == nil {
		return time.Now()
	}
	return e.Now()
}

// options returns the engine options of one run shown in v; inFlight counts its calls in flight.
func (e Env) options(v View, inFlight *atomic.Int64) engine.Options {
	var onEvent func(engine.Event)
	if v != nil {
		onEvent = v.Event
	}
	return engine.Options{Backend: e.Backend, Providers: e.Providers, Concurrency: e.Concurrency,
		ProviderConcurrency: e.ProviderConcurrency, OnEvent: onEvent, Now: e.Now, CreatedBy: e.CreatedBy,
		CdkxVersion: e.Version, InFlight: inFlight}
}

// shown is what one engine run may show: its stacks and each resource's type and logical ID (a table
// sizes its columns by them).
type shown struct {
	stacks, types, ids []string
}

// shownOf returns what a run over stacks shows: the resources only selects (nil: all).
func shownOf(stacks []*state.Stack, only func(*state.Resource) bool) shown {
	var s shown
	for _, st := range stacks {
		s.stacks = append(s.stacks, st.Name)
		for _, r := range st.Resources {
			if only == nil || only(r) {
				s.types, s.ids = append(s.types, r.Type), append(s.ids, r.LogicalID)
			}
		}
	}
	return s
}

// run runs one engine call with the view of what it shows (NewView), the ticker driving its Tick and the
// interrupt notice armed, and stops both before it returns.
func (e Env) run(ctx context.Context, what shown, f func(opts engine.Options) (*engine.Result, error)) (*engine.Result, error) {
	var v View
	if e.NewView != nil {
		v = e.NewView(what.stacks, what.types, what.ids)
	}
	var inFlight atomic.Int64
	done := make(chan struct{})
	stopped := make(chan struct{})
	var ticks <-chan time.Time
	stopTicker := func() {}
	if e.Ticker != nil && v != nil {
		ticks, stopTicker = e.Ticker()
	}
	go func() {
		defer close(stopped)
		interrupt := ctx.Done()
		for {
			select {
			case <-done:
				return
			case now := <-ticks:
				v.Tick(now)
			case <-interrupt:
				interrupt = nil
				// An abort said so already ("Deployment ID aborted by WHO"); Ctrl-C says it here.
				if e.OnInterrupt != nil && !errors.As(context.Cause(ctx), new(*AbortedError)) {
					e.OnInterrupt(inFlight.Load())
				}
			}
		}
	}()
	res, err := f(e.options(v, &inFlight))
	close(done)
	<-stopped
	stopTicker()
	return res, err
}

// lock takes the stacks' locks for operation and returns their release (engine.LockStacks).
func (e Env) lock(ctx context.Context, stacks []string, operation string) (func() error, error) {
	info := e.Lock.Holder
	info.Operation = operation
	now := e.now().UTC()
	if info.StartedAt.IsZero() {
		info.StartedAt, info.HeartbeatAt = now, now
	}
	return engine.LockStacks(ctx, e.Backend, stacks, info, e.Lock.Timeout, e.Lock.Notify)
}

// releaseInto runs release and keeps its error in *err when *err is nil. Deferred after lock, it makes a
// lock lost while the run held it the run's error, so that the run does not report success.
func releaseInto(release func() error, err *error) {
	if rerr := release(); rerr != nil && *err == nil {
		*err = rerr
	}
}

func (e Env) notice(format string, args ...any) {
	if e.Notice != nil {
		e.Notice(fmt.Sprintf(format, args...))
	}
}

// configure builds the providers that stacks' resources name, so that missing configuration is reported
// before any provider call.
func (e Env) configure(stacks []*state.Stack, only func(*state.Resource) bool) error {
	return e.Providers.Configure(providersOf(stacks, only))
}

// providersOf returns the providers of stacks' resources (those only selects, nil: all) and of the older
// objects replacements left, sorted.
func providersOf(stacks []*state.Stack, only func(*state.Resource) bool) []string {
	var names []string
	for _, st := range stacks {
		for _, r := range st.Resources {
			if only == nil || only(r) {
				names = append(names, r.Provider)
				for _, o := range r.Replaced {
					names = append(names, o.Provider)
				}
			}
		}
	}
	sort.Strings(names)
	return slices.Compact(names)
}

// Settle reads stacks' resources from their providers before a deploy, diff or destroy plans: with Full,
// every resource (drift: deploy --refresh, diff --refresh); otherwise only those with a pending operation
// left by an interrupted run, and only when there are any. With DryRun nothing is written (diff). The
// caller holds the stacks' locks unless DryRun.
type Settle struct {
	Env
	// Stacks are the stacks' states by name; Names are those to settle.
	Stacks map[string]*state.Stack
	Names  []string
	Full   bool
	DryRun bool
	// deployments, when set, are the caller's claimed deployment records: the settling's events go into
	// them and the caller finishes them (without: the settling records refresh deployments of its own).
	deployments map[string]*state.Deployment
	// assets, when set, resolves asset paths for the reads and lookups (engine.Options.Assets).
	assets engine.AssetResolver
}

// Run returns Stacks with the settled stacks in place, or a *SettleError when a resource could not be
// read (nothing else should then be done).
func (s Settle) Run(ctx context.Context) (map[string]*state.Stack, error) {
	var stacks []*state.Stack
	toRead := 0
	for _, n := range s.Names {
		st := s.Stacks[n]
		if st == nil || st.Version == 0 {
			continue
		}
		stacks = append(stacks, st)
		for _, r := range st.Resources {
			if s.Full || r.Pending != nil {
				toRead++
			}
		}
	}
	if toRead == 0 {
		return s.Stacks, nil
	}
	if !s.Full {
		s.notice("Settling %d operation(s) left pending by an interrupted run, by reading the providers:", toRead)
	}
	only := func(r *state.Resource) bool { return s.Full || r.Pending != nil }
	if err := s.checkCredentials(ctx, stacks, only); err != nil {
		return nil, err
	}
	res, err := s.run(ctx, shownOf(stacks, only), func(opts engine.Options) (*engine.Result, error) {
		opts.Deployments, opts.Assets = s.deployments, s.assets
		return engine.Refresh(ctx, stacks, opts, engine.RefreshOptions{PendingOnly: !s.Full, DryRun: s.DryRun})
	})
	if err != nil {
		return nil, err
	}
	if len(res.Failures) > 0 {
		return nil, &SettleError{Result: res}
	}
	if res.Interrupted {
		return nil, engine.ErrInterrupted
	}
	out := make(map[string]*state.Stack, len(s.Stacks))
	for k, v := range s.Stacks {
		out[k] = v
	}
	for name, st := range res.Stacks {
		out[name] = st
	}
	return out, nil
}

// Refresh reads every resource recorded for Stacks (all stacks with state when empty) from its provider
// and records drift, as a deployment of kind "refresh" per stack, under the stacks' locks. Pending
// operations are settled on the way.
type Refresh struct {
	Env
	Stacks []string
}

// Run returns the refresh's result; a stack without state is an error that says to deploy it first.
func (r Refresh) Run(ctx context.Context) (*engine.Result, error) {
	names := r.Stacks
	if len(names) == 0 {
		var err error
		if names, err = r.Backend.ListStacks(ctx); err != nil {
			return nil, err
		}
	}
	return r.queued(ctx, state.KindRefresh, names, nil, func(ctx context.Context, deployments map[string]*state.Deployment) (_ *engine.Result, err error) {
		release, err := r.lock(ctx, names, "refresh")
		if err != nil {
			return nil, err
		}
		defer releaseInto(release, &err)
		var stacks []*state.Stack
		for _, n := range names {
			st, err := r.Backend.GetStack(ctx, n)
			if err != nil {
				return nil, err
			}
			if st.Version == 0 {
				return nil, fmt.Errorf("stack %s has no state; deploy it first", n)
			}
			stacks = append(stacks, st)
		}
		if err := r.checkCredentials(ctx, stacks, nil); err != nil {
			return nil, err
		}
		return r.run(ctx, shownOf(stacks, nil), func(opts engine.Options) (*engine.Result, error) {
			opts.Deployments = deployments
			return engine.Refresh(ctx, stacks, opts, engine.RefreshOptions{})
		})
	})
}

// queued records one deployment of kind per stack (PENDING, without snapshot or plan: the run happens
// here and now), waits for their turn in the stacks' queues, runs f with them RUNNING, and records each
// one's end from f's result (engine.Result.Deployments) or error. known holds stacks the caller has
// already read (their versions are recorded; others are read).
func (e Env) queued(ctx context.Context, kind state.DeploymentKind, stacks []string, known map[string]*state.Stack,
	f func(ctx context.Context, deployments map[string]*state.Deployment) (*engine.Result, error)) (*engine.Result, error) {
	now := e.now().UTC()
	var ds []*state.Deployment
	byStack := map[string]*state.Deployment{}
	for _, n := range stacks {
		st := known[n]
		if st == nil {
			var err error
			if st, err = e.Backend.GetStack(ctx, n); err != nil {
				return nil, err
			}
		}
		d := &state.Deployment{ID: uuid.NewString(), Stack: n, Kind: kind, Status: state.StatusPending, CreatedBy: e.CreatedBy,
			CdkxVersion: e.Version, CreatedAt: now, StateVersion: st.Version, Version: st.Version}
		ds = append(ds, d)
		byStack[n] = d
	}
	if err := e.Backend.CreateDeployments(ctx, ds); err != nil {
		return nil, fmt.Errorf("record the deployments: %w", err)
	}
	sess, err := e.enter(ctx, ds, e.Lock.Queued, true)
	if err != nil {
		return nil, err
	}
	defer sess.detach()
	return sess.run(func(ctx context.Context) (*engine.Result, error) { return f(ctx, byStack) })
}
