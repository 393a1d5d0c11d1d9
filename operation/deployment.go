package operation

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/google/uuid"

	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/pkg/diag"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/planner"
)

// Record plans the selected stacks of a validated assembly against the current state and records one
// deployment per stack, with its plan and a snapshot of the assembly, in the stacks' queues (PENDING) or
// as proposals (PROPOSED). No provider is called and no lock is taken.
type Record struct {
	Env
	Assembly *assembly.Assembly
	Graph    *planner.Graph
	Selection
	// Files are the assembly's files as Assembly was loaded from them (assembly.LoadWithFiles), for the
	// snapshot; nil records no snapshot (such a deployment runs only here and now).
	Files      map[string][]byte
	Status     state.DeploymentStatus
	Kind       state.DeploymentKind
	Message    string
	Refresh    bool
	NoRollback bool
	// Passphrase seals sensitive values (CDKX_SECRETS_PASSPHRASE); without one they are redacted when
	// RunHere is set (this process runs the deployment from memory) and refused otherwise.
	Passphrase string
	RunHere    bool
	// OnPlan, when set, receives the plan and its diagnostics (warnings).
	OnPlan func(*planner.Plan, diag.Diagnostics)
	// Confirm, when set, is asked after OnPlan whether to record the plan; false ends the run with
	// ErrCancelled (wrapped) and nothing recorded.
	Confirm func(*planner.Plan) (bool, error)
	// narrowed, when set (Deploy.Run), receives the plan of the changed stacks alone when some stacks are
	// left unchanged; when that plan cannot be made (a --target in an unchanged stack), every stack is
	// recorded instead and it stays nil.
	narrowed **planner.Plan
}

// Run returns the recorded deployments (in Stacks order) and the plan. A deploy records none for a stack
// the plan leaves unchanged (planner.Plan.StackChanges; with Refresh, every stack is recorded: reading
// the providers may find drift to correct): Run then returns fewer deployments than Stacks, none when no
// stack changes. Errors: a message state.CheckMessage refuses, *PlanError, ErrNoPassphrase (wrapped),
// ErrCancelled (wrapped), Confirm's error, or a state error.
func (r Record) Run(ctx context.Context) ([]*state.Deployment, *planner.Plan, error) {
	if err := state.CheckMessage(r.Message); err != nil {
		return nil, nil, fmt.Errorf("--message: %w; nothing was recorded", err)
	}
	st, err := LoadState(ctx, r.Backend, r.Assembly, r.Stacks)
	if err != nil {
		return nil, nil, err
	}
	plan, ds, err := CheckedPlan(ctx, r.Assembly, r.Graph, r.Selection, st, r.Providers)
	if err != nil {
		return nil, nil, err
	}
	if r.OnPlan != nil {
		r.OnPlan(plan, ds)
	}
	if plan == nil {
		return nil, nil, &PlanError{Diagnostics: ds}
	}
	stacks := r.Stacks
	if r.Kind == state.KindDeploy && !r.Refresh {
		if stacks, err = r.changed(ctx, plan); err != nil {
			return nil, plan, err
		}
		if len(stacks) == 0 {
			return nil, plan, nil
		}
		if r.narrowed != nil && len(stacks) < len(r.Stacks) {
			// Only the changed stacks will run here: plan them alone, from the state just read (their
			// steps are the ones shown and confirmed; no provider or backend is asked).
			sel := r.Selection
			sel.Stacks = stacks
			if *r.narrowed, _ = Plan(r.Assembly, r.Graph, sel, plan.State, r.Providers); *r.narrowed == nil {
				stacks = r.Stacks
			}
		}
	}
	if err := confirmPlan(r.Confirm, plan); err != nil {
		return nil, plan, err
	}
	var data []byte
	var hash string
	if r.Files != nil {
		snap, err := sealSnapshot(r.Assembly, r.Files, r.Providers, r.Passphrase, r.RunHere)
		if err != nil {
			return nil, nil, err
		}
		snap.CdkxVersion, snap.Kind = r.Version, r.Kind
		snap.Options = SnapshotOptions{Stacks: r.Stacks, Targets: r.Targets, Excludes: r.Excludes, Replace: r.Replace,
			Refresh: r.Refresh, NoRollback: r.NoRollback}
		if data, hash, err = snap.Encode(); err != nil {
			return nil, nil, err
		}
		r.Files = nil // encoded: not held while the deployments are stored (~26 MB at 100k)
	}
	recs := PlanRecords(plan)
	for _, rec := range recs {
		rec.SnapshotHash = hash // what the plan was made from: stores refuse a plan of another snapshot
	}
	now := r.now().UTC()
	var out []*state.Deployment
	for _, name := range stacks {
		out = append(out, &state.Deployment{ID: uuid.NewString(), Stack: name, Kind: r.Kind, Status: r.Status,
			Message: r.Message, CreatedBy: r.CreatedBy, CdkxVersion: r.Version, Snapshot: data, SnapshotHash: hash,
			Plan: recs[name], StateVersion: st[name].Version, Version: st[name].Version, CreatedAt: now})
	}
	if err := r.Backend.CreateDeployments(ctx, out); err != nil {
		return nil, nil, fmt.Errorf("record the deployments: %w", err)
	}
	for _, d := range out {
		d.Snapshot = nil
	}
	return out, plan, nil
}

// Changed returns the stacks of names that plan changes (planner.Plan.StackChanges), in order.
func Changed(plan *planner.Plan, names []string) []string {
	return slices.DeleteFunc(slices.Clone(names), func(n string) bool { return !plan.StackChanges(n) })
}

// changed returns the stacks of r that need a deployment, in order: those plan changes and, for a
// deployment that waits for its turn (not a proposal), those whose queue holds a deployment or whose
// lock is held: another run may change them before this one's turn, and this one, planned again then,
// must put back what it was asked to deploy.
func (r Record) changed(ctx context.Context, plan *planner.Plan) ([]string, error) {
	out := Changed(plan, r.Stacks)
	if r.Status == state.StatusProposed || len(out) == len(r.Stacks) {
		return out, nil
	}
	busy := map[string]bool{}
	queued, err := r.Backend.ListDeployments(ctx, state.DeploymentFilter{Statuses: []state.DeploymentStatus{state.StatusPending, state.StatusApproved, state.StatusRunning}})
	if err != nil {
		return nil, err
	}
	for _, d := range queued {
		busy[d.Stack] = true
	}
	locks, err := r.Backend.Locks(ctx)
	if err != nil {
		return nil, err
	}
	for _, l := range locks {
		busy[l.Stack] = true
	}
	return slices.DeleteFunc(slices.Clone(r.Stacks), func(n string) bool { return !slices.Contains(out, n) && !busy[n] }), nil
}

// confirmPlan asks confirm, when set, whether to run plan: a "no" is ErrCancelled, wrapped.
func confirmPlan(confirm func(*planner.Plan) (bool, error), plan *planner.Plan) error {
	if confirm == nil {
		return nil
	}
	ok, err := confirm(plan)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("deploy %w; nothing was changed", ErrCancelled)
	}
	return nil
}

// assetResolver returns a's resolver of asset paths, or nil when a has no assets (none resolves): the
// engine then hands providers their requests as they are instead of walking every request for paths.
func assetResolver(a *assembly.Assembly) engine.AssetResolver {
	if len(a.Assets) == 0 {
		return nil
	}
	return a.ResolveAsset
}

// execution is one run of recorded deployments under the stacks' locks, after their claim.
type execution struct {
	Env
	sess       *session
	assembly   *assembly.Assembly
	graph      *planner.Graph
	sel        Selection
	refresh    bool
	noRollback bool
	// prior is the plan the deployments were recorded with, reused when state did not move since.
	prior *planner.Plan
	// approved holds, by stack, the approved plan to check the new one against (stale proposals).
	approved map[string]*state.Plan
	replan   bool
	onPlan   func(*planner.Plan, diag.Diagnostics)
	// confirm is asked again when the plan had to be made anew under the lock.
	confirm func(*planner.Plan) (bool, error)
	// planOnly records the plan (diff --record) without applying it.
	planOnly bool
}

// run runs the execution in its session and records each deployment's end.
func (x execution) run() (*engine.Result, *planner.Plan, error) {
	var plan *planner.Plan
	res, err := x.sess.run(func(ctx context.Context) (*engine.Result, error) {
		var res *engine.Result
		var err error
		res, plan, err = x.apply(ctx)
		return res, err
	})
	return res, plan, err
}

func (x execution) apply(ctx context.Context) (_ *engine.Result, _ *planner.Plan, err error) {
	release, err := x.lock(ctx, x.sel.Stacks, "deploy")
	if err != nil {
		return nil, nil, err
	}
	defer releaseInto(release, &err)
	st, err := x.current(ctx)
	if err != nil {
		return nil, nil, err
	}
	deployments := map[string]*state.Deployment{}
	for _, d := range x.sess.ds {
		deployments[d.Stack] = d
	}
	// Once per run, before any provider call: the assets the providers will read are those the manifest
	// hashes.
	if err := x.assembly.VerifyAssets(); err != nil {
		return nil, nil, fmt.Errorf("%w; nothing was changed", err)
	}
	settled, err := (Settle{Env: x.Env, Stacks: st, Names: x.sel.Stacks, Full: x.refresh, deployments: deployments,
		assets: assetResolver(x.assembly)}).Run(ctx)
	if err != nil {
		return nil, nil, err
	}
	plan := x.prior
	if plan == nil || !sameVersions(plan.State, settled) || settledAny(st, settled) {
		var ds diag.Diagnostics
		if plan, ds, err = CheckedPlan(ctx, x.assembly, x.graph, x.sel, settled, x.Providers); err != nil {
			return nil, nil, err
		}
		if x.onPlan != nil {
			x.onPlan(plan, ds)
		}
		if plan == nil {
			return nil, nil, &PlanError{Diagnostics: ds}
		}
		if err := confirmPlan(x.confirm, plan); err != nil {
			return nil, plan, err
		}
	}
	if len(x.approved) > 0 {
		// The plan made now, from the snapshot and the current state, is what runs: it must be the approved
		// one, step for step and value for value, whether or not the stack moved. When it moved, the
		// difference is staleness (--replan accepts it); when it did not, only the record can have changed.
		now := PlanRecords(plan)
		for _, d := range x.sess.ds {
			approved, ok := x.approved[d.Stack]
			if !ok {
				continue
			}
			diffs := planDifferences(approved, now[d.Stack])
			if len(diffs) == 0 {
				continue
			}
			switch moved := movedSince(d, plan.State); {
			case len(moved) == 0:
				return nil, plan, &TamperedError{ID: d.ID, Stack: d.Stack, Differences: diffs}
			case !x.replan:
				return nil, plan, &StaleError{ID: d.ID, Stack: d.Stack, Moved: moved, Differences: diffs}
			}
		}
	}
	if x.planOnly {
		return nil, plan, nil
	}
	for _, s := range plan.Steps {
		s.Inputs = nil // the engine resolves real outputs; the predictions were for showing the plan
	}
	if err := x.Providers.Configure(CalledProviders(plan)); err != nil {
		return nil, plan, err
	}
	what := shown{stacks: plan.Stacks}
	for _, s := range append(slices.Clone(plan.Steps), plan.Deletes...) {
		what.types, what.ids = append(what.types, s.Type), append(what.ids, s.LogicalID)
	}
	res, err := x.Env.run(ctx, what, func(opts engine.Options) (*engine.Result, error) {
		opts.Assets = assetResolver(x.assembly)
		opts.NoRollback = x.noRollback
		opts.Deployments = deployments
		opts.Abort = func() string {
			if ae := x.sess.aborted(); ae != nil {
				return ae.Error()
			}
			return ""
		}
		opts.StackContext = x.sess.stackContext
		x.sess.setPerStack(true)
		defer x.sess.setPerStack(false)
		res, err := engine.Deploy(ctx, plan, opts)
		if res != nil {
			res.Stacks = withoutResources(res.Stacks)
		}
		return res, err
	})
	return res, plan, err
}

// withoutResources returns stacks with each stack's own fields (status, outputs, dependencies, version)
// and no resources: what a deploy's caller reads of them (Outputs). The records of a 100k-resource run
// (~130 MB) are then garbage before the deployments are finished, instead of being held to the end.
func withoutResources(stacks map[string]*state.Stack) map[string]*state.Stack {
	out := make(map[string]*state.Stack, len(stacks))
	for name, st := range stacks {
		c := *st
		c.Resources = map[string]*state.Resource{}
		out[name] = &c
	}
	return out
}

// current returns, under the stacks' locks, the state the run plans against: the state the recorded plan
// was made from when no stack it read has moved since (StackVersion: reading 100k resources again takes
// ~1.5 s), else the state read again.
func (x execution) current(ctx context.Context) (map[string]*state.Stack, error) {
	if x.prior != nil && x.prior.State != nil {
		moved := false
		for name, st := range x.prior.State {
			v, err := x.Backend.StackVersion(ctx, name)
			if err != nil {
				return nil, err
			}
			if v != st.Version {
				moved = true
				break
			}
		}
		if !moved {
			return x.prior.State, nil
		}
	}
	return LoadState(ctx, x.Backend, x.assembly, x.sel.Stacks)
}

// sameVersions reports whether every stack the plan read has the version it had then.
func sameVersions(planned, now map[string]*state.Stack) bool {
	for name, st := range planned {
		if n := now[name]; n == nil || n.Version != st.Version {
			return false
		}
	}
	return true
}

// settledAny reports whether settling replaced any stack's state.
func settledAny(before, after map[string]*state.Stack) bool {
	for name, st := range before {
		if after[name] != st {
			return true
		}
	}
	return false
}

// RunDeployment runs a stored deployment from its snapshot here: an approved proposal (cdkx deployments
// approve --run, run), or one an agent claimed. Provider credentials come from this process's
// environment. Before any provider call, the stored snapshot must be the one its recorded hash names
// (else *TamperedError), and the snapshot is always planned again against the current state: for an
// approved deployment, a plan that differs from the approved one in any step or value is refused, as
// stale (*StaleError) when the stack moved since it was planned (unless Replan), as tampered
// (*TamperedError) when it did not. Replan never accepts a changed snapshot.
type RunDeployment struct {
	Env
	Deployment *state.Deployment
	// Claimed is set when the deployment is already RUNNING for this process (ClaimNext).
	Claimed bool
	Replan  bool
	// Passphrase opens the snapshot's sealed values (CDKX_SECRETS_PASSPHRASE).
	Passphrase string
	// Notify is told where the deployment stands while it waits for its turn.
	Notify func(*state.QueuedError)
	OnPlan func(*planner.Plan, diag.Diagnostics)
}

// Run returns the engine's result and the plan it applied. A deployment whose snapshot cannot run here
// (no passphrase, a redacted or older snapshot, an assembly that no longer validates with this cdkx's
// providers) is refused before any provider call: when claimed, it is recorded FAILED with why.
func (r RunDeployment) Run(ctx context.Context) (*engine.Result, *planner.Plan, error) {
	d := r.Deployment
	if d.Status.Terminal() {
		return nil, nil, &state.TransitionError{ID: d.ID, Status: d.Status, To: state.StatusRunning}
	}
	refuse := func(err error) (*engine.Result, *planner.Plan, error) {
		if r.Claimed {
			runner := d.Runner // as the claim recorded it
			if runner == "" {
				runner = r.runner()
			}
			now := r.now().UTC()
			_ = r.Backend.FinishDeployment(context.WithoutCancel(ctx), d.ID, runner, state.StatusFailed, now, d.StateVersion, err.Error())
		}
		return nil, nil, err
	}
	if d.Snapshot == nil {
		full, err := r.Backend.GetDeployment(ctx, d.ID)
		if err != nil {
			return refuse(err)
		}
		d.Snapshot = full.Snapshot
	}
	if err := checkSnapshot(d); err != nil {
		return refuse(err)
	}
	snap, err := DecodeSnapshot(d)
	if err != nil {
		return refuse(err)
	}
	if snap.Kind != "" && snap.Kind != state.KindDeploy {
		return refuse(fmt.Errorf("deployment %s is a %s; only deploy deployments run from a snapshot", d.ID, snap.Kind))
	}
	files, err := snap.Open(r.Passphrase)
	if err != nil {
		return refuse(fmt.Errorf("deployment %s cannot run here: %w", d.ID, err))
	}
	a, g, ds := LoadSnapshot(d.ID, files, r.Providers)
	if a == nil {
		return refuse(&SnapshotInvalidError{ID: d.ID, Version: r.Version, Diagnostics: ds})
	}
	stacks := []string{d.Stack}
	if a.Stack(d.Stack) == nil {
		return refuse(fmt.Errorf("the snapshot of deployment %s has no stack %s", d.ID, d.Stack))
	}
	removeAssets, err := writeAssets(a, files)
	if err != nil {
		return refuse(err)
	}
	defer removeAssets()
	d.Snapshot = nil
	var sess *session
	if r.Claimed {
		sess = r.attach(ctx, []*state.Deployment{d})
	} else if sess, err = r.enter(ctx, []*state.Deployment{d}, r.Notify, false); err != nil {
		return nil, nil, err
	}
	defer sess.detach()
	var approved map[string]*state.Plan
	if d.ApprovedBy != "" {
		approved = map[string]*state.Plan{d.Stack: d.Plan}
		if d.Plan == nil {
			approved[d.Stack] = &state.Plan{}
		}
	}
	o := snap.Options
	x := execution{Env: r.Env, sess: sess, assembly: a, graph: g, refresh: o.Refresh, noRollback: o.NoRollback,
		sel:      Selection{Stacks: stacks, Targets: o.Targets, Excludes: o.Excludes, Replace: o.Replace},
		approved: approved, replan: r.Replan, onPlan: r.OnPlan}
	return x.run()
}

// ErrNoDeployment is returned by Agent.Step when no queue holds a deployment it may run.
var ErrNoDeployment = errors.New("no deployment to run")

// RecordPlan records a plan deployment per stack (cdkx diff --record): it takes its place in the stacks'
// queues like a deploy, and is COMPLETED with its plan once its turn comes; no provider is called.
func (e Env) RecordPlan(ctx context.Context, rec Record) ([]*state.Deployment, *planner.Plan, error) {
	rec.Env, rec.Status, rec.Kind, rec.RunHere = e, state.StatusPending, state.KindPlan, true
	ds, plan, err := rec.Run(ctx)
	if err != nil {
		return nil, plan, err
	}
	sess, err := e.enter(ctx, ds, e.Lock.Queued, true)
	if err != nil {
		return ds, plan, err
	}
	defer sess.detach()
	_, err = sess.run(func(context.Context) (*engine.Result, error) { return nil, nil })
	return ds, plan, err
}

// Redeploy records a new PROPOSED deployment with the snapshot of d (a past deployment, with its
// snapshot), planned against the stack's current state, with message; none (and no error) when that plan
// changes nothing. The snapshot's sealed values are
// opened with passphrase only to plan; the stored snapshot is d's, unchanged.
func Redeploy(ctx context.Context, e Env, d *state.Deployment, passphrase, message string) ([]*state.Deployment, error) {
	snap, err := DecodeSnapshot(d)
	if err != nil {
		return nil, err
	}
	files, err := snap.Open(passphrase)
	if err != nil {
		return nil, fmt.Errorf("deployment %s cannot be planned again here: %w", d.ID, err)
	}
	a, g, ds := LoadSnapshot(d.ID, files, e.Providers)
	if a == nil {
		return nil, &SnapshotInvalidError{ID: d.ID, Version: e.Version, Diagnostics: ds}
	}
	sel := Selection{Stacks: []string{d.Stack}, Targets: snap.Options.Targets, Excludes: snap.Options.Excludes, Replace: snap.Options.Replace}
	st, err := LoadState(ctx, e.Backend, a, sel.Stacks)
	if err != nil {
		return nil, err
	}
	plan, pds := Plan(a, g, sel, st, e.Providers)
	if plan == nil {
		return nil, &PlanError{Diagnostics: pds}
	}
	if !plan.StackChanges(d.Stack) {
		return nil, nil // the stack is as that deployment left it: nothing to propose
	}
	rec := PlanRecords(plan)[d.Stack]
	rec.SnapshotHash = state.SnapshotHash(d.Snapshot)
	nd := &state.Deployment{ID: uuid.NewString(), Stack: d.Stack, Kind: state.KindDeploy, Status: state.StatusProposed,
		Message: message, CreatedBy: e.CreatedBy, CdkxVersion: e.Version, Snapshot: d.Snapshot, SnapshotHash: d.SnapshotHash,
		Plan: rec, StateVersion: st[d.Stack].Version, Version: st[d.Stack].Version, CreatedAt: e.now().UTC()}
	if err := e.Backend.CreateDeployments(ctx, []*state.Deployment{nd}); err != nil {
		return nil, err
	}
	nd.Snapshot = nil
	return []*state.Deployment{nd}, nil
}

// sortedKeys returns the keys of a and b, each once, sorted.
func sortedKeys[V any](a, b map[string]V) []string {
	keys := slices.Collect(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
