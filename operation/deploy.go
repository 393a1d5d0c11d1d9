package operation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/pkg/diag"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/planner"
)

// Selection is what a deploy or a diff covers.
type Selection struct {
	// Stacks are the selected stacks, in deployment order (with the stacks they depend on, unless the user
	// asked for them exclusively).
	Stacks []string
	// Targets, Excludes and Replace are --target, --exclude and --replace.
	Targets, Excludes, Replace []string
}

// Deploy plans the selected stacks of a validated assembly against state and applies the plan, under the
// stacks' locks, after settling operations an interrupted run left pending (with Refresh: after reading
// every resource, so that drift is corrected).
type Deploy struct {
	Env
	Assembly *assembly.Assembly
	// Graph is the dependency graph of all the assembly's stacks, if validation built it (reused when the
	// selection covers every stack).
	Graph *planner.Graph
	Selection
	Refresh    bool
	NoRollback bool
	// OnPlan, when set, receives the plan and its diagnostics (warnings) before it is applied.
	OnPlan func(*planner.Plan, diag.Diagnostics)
	// Confirm, when set, is asked after OnPlan whether to run the plan: before anything is recorded or
	// any provider is called, and again should the plan change after waiting in the queue (another run
	// changed the stacks meanwhile). false ends the run with ErrCancelled, an error ends it with that error.
	Confirm func(*planner.Plan) (bool, error)
	// Files are the assembly's files for the deployments' snapshot (Record.Files).
	Files map[string][]byte
	// Passphrase seals sensitive values in the snapshot (CDKX_SECRETS_PASSPHRASE); without one they are
	// left out of it.
	Passphrase string
}

// Run records one PENDING deployment per stack that the plan changes (with the plan and a snapshot of the
// assembly), waits for their turn in the stacks' queues (up to the lock timeout), and runs them here: the
// stacks left unchanged get no deployment and are not run (their resources and outputs stay as
// recorded). When no stack changes, nothing is recorded or run: the result is nil and the plan is the one
// made. It returns the deploy's result (its Stacks with their status and outputs, not their resources)
// and the plan it applied. Errors: *QueueTimeoutError, *AbortedError, *state.LockedError (a stack
// is locked past the timeout), *PlanError, *SettleError, a provider's configuration error, or a state
// error.
func (d Deploy) Run(ctx context.Context) (*engine.Result, *planner.Plan, error) {
	var narrowed *planner.Plan
	// Record lets go of the assembly's raw files (~26 MB at 100k) once it has encoded the snapshot, before it
	// stores it with the plan: the run need not hold them, nor Record while it stores.
	files := d.Files
	d.Files = nil
	ds, plan, err := Record{Env: d.Env, Assembly: d.Assembly, Graph: d.Graph, Selection: d.Selection, Files: files,
		Status: state.StatusPending, Kind: state.KindDeploy, Refresh: d.Refresh, NoRollback: d.NoRollback,
		Passphrase: d.Passphrase, RunHere: true, OnPlan: d.OnPlan, Confirm: d.Confirm, narrowed: &narrowed}.Run(ctx)
	if err != nil || len(ds) == 0 {
		return nil, plan, err
	}
	sel, prior := d.Selection, plan
	if narrowed != nil && len(ds) < len(d.Stacks) {
		sel.Stacks, prior = narrowed.Stacks, narrowed
	}
	for _, r := range ds {
		r.Plan = nil // stored; a run here and now need not hold its steps (~30 MB at 100k resources)
	}
	sess, err := d.enter(ctx, ds, d.Lock.Queued, true)
	if err != nil {
		return nil, plan, err
	}
	defer sess.detach()
	x := execution{Env: d.Env, sess: sess, assembly: d.Assembly, graph: d.Graph, sel: sel, refresh: d.Refresh,
		noRollback: d.NoRollback, prior: prior, onPlan: d.OnPlan, confirm: d.Confirm}
	res, replanned, err := x.run()
	if replanned != nil && replanned != prior {
		plan = replanned // made anew under the lock
	}
	return res, plan, err
}

// Plan plans sel's stacks of a against st. g, when not nil, is the graph of all of a's stacks.
func Plan(a *assembly.Assembly, g *planner.Graph, sel Selection, st map[string]*state.Stack, reg *engine.Registry) (*planner.Plan, diag.Diagnostics) {
	in := planner.Input{Assembly: a, Stacks: sel.Stacks, State: st, Schemas: reg.Schema,
		Targets: sel.Targets, Excludes: sel.Excludes, Replace: sel.Replace}
	if len(sel.Stacks) == len(a.Stacks) {
		in.Graph = g // validation built exactly this graph: do not build it twice
	}
	return planner.Make(in)
}

// LoadState reads the state of the selected stacks and of every stack they read outputs from.
func LoadState(ctx context.Context, b state.Backend, a *assembly.Assembly, stacks []string) (map[string]*state.Stack, error) {
	return loadState(ctx, b, a, stacks, nil)
}

// loadState is LoadState that takes the stacks in read (already read, e.g. by ReadAhead) as they are.
func loadState(ctx context.Context, b state.Backend, a *assembly.Assembly, stacks []string, read map[string]*state.Stack) (map[string]*state.Stack, error) {
	need := map[string]bool{}
	for _, s := range stacks {
		need[s] = true
		for _, d := range a.Stack(s).Dependencies {
			need[d] = true
		}
	}
	names := make([]string, 0, len(need))
	for n := range need {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make(map[string]*state.Stack, len(names))
	for _, n := range names {
		if st := read[n]; st != nil {
			out[n] = st
			continue
		}
		st, err := b.GetStack(ctx, n)
		if err != nil {
			return nil, fmt.Errorf("read state of stack %s: %w", n, err)
		}
		out[n] = st
	}
	return out, nil
}

// CalledProviders returns the providers the plan will call: those of every step that is not a no-op,
// old providers of replacements included, sorted.
func CalledProviders(p *planner.Plan) []string {
	return planProviders(p, false)
}

// planProviders returns the providers of p's steps (with same: those of the resources it leaves alone
// too), old providers of replacements included, sorted.
func planProviders(p *planner.Plan, same bool) []string {
	var out []string
	for _, s := range append(slices.Clone(p.Steps), p.Deletes...) {
		if s.Op == planner.OpSame && !same {
			continue
		}
		out = append(out, s.Provider)
		if s.Old != nil {
			out = append(out, s.Old.Provider)
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// Destroy deletes every object that state records for Stacks (all stacks with resources in state when
// empty) and the stacks that depend on them, narrowed by Targets and Excludes, under the stacks' locks,
// after settling pending operations (a create whose result was never recorded may have made an object
// that must be deleted too).
type Destroy struct {
	Env
	Stacks            []string
	Targets, Excludes []string
	// Confirm, when set, is asked before anything is locked or deleted, with the resources that would be
	// deleted (stack by stack in destroy order, by logical ID within a stack) and the stacks they are
	// in; false ends the run with ErrCancelled.
	Confirm func(deletions []Deletion, stacks []string) (bool, error)
	// OnSelection, when set, receives the --target/--exclude selection (nil without them).
	OnSelection func(*planner.Selection)
}

// Deletion is one resource a destroy would delete, as state records it.
type Deletion struct {
	Stack, LogicalID, Type, PhysicalID string
}

// ErrCancelled is returned (wrapped, with what was left alone) by Deploy and Destroy when Confirm said no.
var ErrCancelled = errors.New("cancelled")

// Run returns the destroy's result. Errors: ErrNothing (wrapped, with the reason) when nothing is
// recorded or selected, ErrCancelled, *state.LockedError, *SettleError, or a provider's configuration
// error.
func (d Destroy) Run(ctx context.Context) (*engine.Result, error) {
	all, err := stacksWithState(ctx, d.Backend)
	if err != nil {
		return nil, err
	}
	names, err := destroyOrder(all, d.Stacks)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%w: no stack has resources in state", ErrNothing)
	}
	targeting := len(d.Targets)+len(d.Excludes) > 0
	var sel *planner.Selection
	covered := names
	if targeting {
		picked := make([]*state.Stack, len(names))
		for i, n := range names {
			picked[i] = all[n]
		}
		if sel, err = planner.SelectDestroy(picked, d.Targets, d.Excludes); err != nil {
			return nil, err
		}
		if d.OnSelection != nil {
			d.OnSelection(sel)
		}
		if sel.Len() == 0 {
			return nil, fmt.Errorf("%w: --target and --exclude select no resource", ErrNothing)
		}
		covered = slices.DeleteFunc(slices.Clone(names), func(s string) bool { return !sel.Covers(s) })
	}
	// Credentials first: a wrong token is reported before the question and before anything is recorded.
	var called []string
	for _, n := range covered {
		called = append(called, providersOf([]*state.Stack{all[n]}, func(r *state.Resource) bool { return sel.Contains(n, r.LogicalID) })...)
	}
	sort.Strings(called)
	if _, err := d.Providers.Preflight(ctx, slices.Compact(called), nil); err != nil {
		return nil, err
	}
	if d.Confirm != nil {
		var deletions []Deletion
		for _, n := range covered {
			for _, r := range all[n].SortedResources() {
				if sel.Contains(n, r.LogicalID) {
					deletions = append(deletions, Deletion{Stack: n, LogicalID: r.LogicalID, Type: r.Type, PhysicalID: r.PhysicalID})
				}
			}
		}
		ok, err := d.Confirm(deletions, covered)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("destroy %w; nothing was deleted", ErrCancelled)
		}
	}
	return d.queued(ctx, state.KindDestroy, names, all, func(ctx context.Context, deployments map[string]*state.Deployment) (*engine.Result, error) {
		return d.destroy(ctx, names, targeting, deployments)
	})
}

// destroy is Run after the confirmation, with the claimed deployments.
func (d Destroy) destroy(ctx context.Context, names []string, targeting bool, deployments map[string]*state.Deployment) (_ *engine.Result, err error) {
	release, err := d.lock(ctx, names, "destroy")
	if err != nil {
		return nil, err
	}
	defer releaseInto(release, &err)
	byName := map[string]*state.Stack{}
	for _, n := range names {
		if byName[n], err = d.Backend.GetStack(ctx, n); err != nil { // read again under the lock
			return nil, err
		}
	}
	if byName, err = (Settle{Env: d.Env, Stacks: byName, Names: names, deployments: deployments}).Run(ctx); err != nil {
		return nil, err
	}
	stacks := make([]*state.Stack, len(names))
	for i, n := range names {
		stacks[i] = byName[n]
	}
	var sel *planner.Selection
	if targeting {
		// Select again from what was read under the lock, and hand the engine only the selected resources.
		if sel, err = planner.SelectDestroy(stacks, d.Targets, d.Excludes); err != nil {
			return nil, err
		}
		if stacks = sel.FilterStacks(stacks); len(stacks) == 0 {
			return nil, fmt.Errorf("%w: --target and --exclude select no resource", ErrNothing)
		}
	}
	if err := d.configure(stacks, nil); err != nil {
		return nil, err
	}
	return d.run(ctx, shownOf(stacks, nil), func(opts engine.Options) (*engine.Result, error) {
		opts.Selection = sel
		opts.Deployments = deployments
		return engine.Destroy(ctx, stacks, opts)
	})
}

// stacksWithState returns every stack that has resources in state.
func stacksWithState(ctx context.Context, b state.Backend) (map[string]*state.Stack, error) {
	names, err := b.ListStacks(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]*state.Stack{}
	for _, n := range names {
		st, err := b.GetStack(ctx, n)
		if err != nil {
			return nil, err
		}
		if len(st.Resources) > 0 {
			out[n] = st
		}
	}
	return out, nil
}

// destroyOrder returns the named stacks (all when none) and every stack with state that depends on them,
// sorted. A named stack without state is an error.
func destroyOrder(all map[string]*state.Stack, named []string) ([]string, error) {
	known := make([]string, 0, len(all))
	for n := range all {
		known = append(known, n)
	}
	sort.Strings(known)
	if len(named) == 0 {
		return known, nil
	}
	want := map[string]bool{}
	for _, n := range named {
		if _, ok := all[n]; !ok {
			list := strings.Join(known, ", ")
			if list == "" {
				list = "none"
			}
			return nil, fmt.Errorf("stack %q has no resources in state (stacks with resources: %s)", n, list)
		}
		want[n] = true
	}
	// Dependents of a wanted stack are wanted too: a fixpoint over the recorded stack dependencies.
	for changed := true; changed; {
		changed = false
		for _, n := range known {
			if !want[n] && slices.ContainsFunc(all[n].Dependencies, func(d string) bool { return want[d] }) {
				want[n], changed = true, true
			}
		}
	}
	return slices.DeleteFunc(known, func(n string) bool { return !want[n] }), nil
}

// Import brings an object that exists at its provider under cdkx's management as the resource the
// assembly declares (cdkx import), under the stack's lock.
type Import struct {
	Env
	Stack      string
	Resource   *assembly.Resource
	PhysicalID string
}

// Run returns the import's result. Errors: engine.ErrManaged (wrapped) when state already records an
// object for the resource, resource.ErrNotFound (wrapped) when the provider has no such object,
// *state.LockedError, or a provider's configuration error.
func (i Import) Run(ctx context.Context) (*engine.Result, error) {
	return i.queued(ctx, state.KindImport, []string{i.Stack}, nil, func(ctx context.Context, deployments map[string]*state.Deployment) (_ *engine.Result, err error) {
		release, err := i.lock(ctx, []string{i.Stack}, "import")
		if err != nil {
			return nil, err
		}
		defer releaseInto(release, &err)
		st, err := i.Backend.GetStack(ctx, i.Stack)
		if err != nil {
			return nil, err
		}
		if err := i.Providers.Configure([]string{i.Resource.Provider}); err != nil {
			return nil, err
		}
		what := shown{stacks: []string{i.Stack}, types: []string{i.Resource.Type}, ids: []string{i.Resource.LogicalID}}
		return i.run(ctx, what, func(opts engine.Options) (*engine.Result, error) {
			opts.Deployments = deployments
			return engine.Import(ctx, st, i.Resource, i.PhysicalID, opts)
		})
	})
}
