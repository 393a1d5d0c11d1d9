package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/engine/enginetest"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// errCrashed is what the dead backend and the dead provider answer after a simulated crash.
var errCrashed = errors.New("crashed")

// dyingBackend is a state backend that dies with the process: after kill, no write reaches it, so what
// it holds is exactly what was durable at the moment of the crash.
type dyingBackend struct {
	state.Backend
	dead *atomic.Bool
}

func (b dyingBackend) Commit(ctx context.Context, deploymentID, stack string, changes []state.Change, events []state.Event) (int64, error) {
	if b.dead.Load() {
		return 0, errCrashed
	}
	return b.Backend.Commit(ctx, deploymentID, stack, changes, events)
}

func (b dyingBackend) CreateDeployments(ctx context.Context, ds []*state.Deployment) error {
	if b.dead.Load() {
		return errCrashed
	}
	return b.Backend.CreateDeployments(ctx, ds)
}

func (b dyingBackend) FinishDeployment(ctx context.Context, id, runner string, s state.DeploymentStatus, at time.Time, v int64, msg string) error {
	if b.dead.Load() {
		return errCrashed
	}
	return b.Backend.FinishDeployment(ctx, id, runner, s, at, v, msg)
}

// crashCase is one kind of step under a crash: setup brings state and the provider to the starting point
// (without crashing); action runs the steps under test; converge is the run that must succeed after
// recovery.
type crashCase struct {
	name     string
	setup    []*assembly.Assembly
	action   func(ctx context.Context, env *crashEnv, opts engine.Options) error
	converge func(ctx context.Context, env *crashEnv, opts engine.Options) error
}

type crashEnv struct {
	t     *testing.T
	b     state.Backend
	reg   *engine.Registry
	cloud *enginetest.Cloud
	// outOfBand are objects made at the provider by hand (import), which state need not know.
	outOfBand map[string]bool
}

// fakeRes returns a resource of typ with key and value; deps are {ref} tokens to other resources' ids.
func fakeRes(id, typ, key, value string, deps ...string) *assembly.Resource {
	v := []any{value}
	for _, d := range deps {
		v = append(v, map[string]any{"ref": d, "attr": "id"})
	}
	return &assembly.Resource{LogicalID: id, Type: typ, Provider: "fake", Path: "resources." + id,
		Properties: resource.Properties{"key": key, "value": v}}
}

func oneStack(rs ...*assembly.Resource) *assembly.Assembly {
	return &assembly.Assembly{Stacks: []*assembly.Stack{{ID: "S", Outputs: map[string]*assembly.Output{}, Resources: rs}}}
}

func deployAssembly(a *assembly.Assembly) func(context.Context, *crashEnv, engine.Options) error {
	return func(_ context.Context, env *crashEnv, opts engine.Options) error {
		env.t.Helper()
		res, _ := deployWith(env.t, a, opts.Backend, env.reg, opts)
		return res.Err()
	}
}

func destroyAll(ctx context.Context, env *crashEnv, opts engine.Options) error {
	st, err := env.b.GetStack(ctx, "S")
	if err != nil {
		return err
	}
	opts.Providers = env.reg
	res, err := engine.Destroy(ctx, []*state.Stack{st}, opts)
	if err != nil {
		return err
	}
	return res.Err()
}

// TestCrashAtEveryBoundary kills a run (its state backend and its provider die at the same instant) at
// every boundary of every kind of step — after the pending record is durable and before the call, and
// after the call answered and before its result is recorded — then recovers as the next run does (settle
// pending operations by reading the provider) and checks that state and the provider agree: no orphaned
// object (at the provider, unknown to state), no record of an object that does not exist; then a normal run
// converges.
func TestCrashAtEveryBoundary(t *testing.T) {
	t.Parallel()
	T, U := enginetest.CloudType, enginetest.UniqueType
	base := oneStack(fakeRes("A", T, "kA", "a1"), fakeRes("B", T, "kB", "b1", "A"))
	failing := func(extra ...*assembly.Resource) *assembly.Assembly {
		return oneStack(append([]*assembly.Resource{fakeRes("A", T, "kA", "a2"), fakeRes("B", T, "kB", "b1", "A")}, extra...)...)
	}
	cases := []crashCase{
		{name: "create", action: deployAssembly(base), converge: deployAssembly(base)},
		{name: "update", setup: []*assembly.Assembly{base},
			action:   deployAssembly(oneStack(fakeRes("A", T, "kA", "a2"), fakeRes("B", T, "kB", "b2", "A"))),
			converge: deployAssembly(oneStack(fakeRes("A", T, "kA", "a2"), fakeRes("B", T, "kB", "b2", "A")))},
		{name: "delete", setup: []*assembly.Assembly{base},
			action: deployAssembly(oneStack(fakeRes("A", T, "kA", "a1"))), converge: deployAssembly(oneStack(fakeRes("A", T, "kA", "a1")))},
		{name: "replace create-before-delete", setup: []*assembly.Assembly{base},
			action:   deployAssembly(oneStack(fakeRes("A", T, "kA2", "a1"), fakeRes("B", T, "kB", "b1", "A"))),
			converge: deployAssembly(oneStack(fakeRes("A", T, "kA2", "a1"), fakeRes("B", T, "kB", "b1", "A")))},
		{name: "replace delete-before-replace", setup: []*assembly.Assembly{oneStack(fakeRes("U", U, "kU", "u1"))},
			action: deployAssembly(oneStack(fakeRes("U", U, "kU2", "u1"))), converge: deployAssembly(oneStack(fakeRes("U", U, "kU2", "u1")))},
		{name: "destroy", setup: []*assembly.Assembly{base}, action: destroyAll, converge: destroyAll},
		// F fails to create after A was updated and N created: the rollback restores A and deletes N.
		{name: "rollback restore and delete", setup: []*assembly.Assembly{base},
			action:   deployAssembly(failing(fakeRes("N", T, "kN", "n1"), fakeRes("F", T, "kF", "f1", "A", "N"))),
			converge: deployAssembly(base)},
		// F fails after U was replaced delete-before-replace: the rollback deletes the new U and re-creates
		// the old one.
		{name: "rollback re-create", setup: []*assembly.Assembly{oneStack(fakeRes("U", U, "kU", "u1"))},
			action:   deployAssembly(oneStack(fakeRes("U", U, "kU2", "u1"), fakeRes("F", T, "kF", "f1", "U"))),
			converge: deployAssembly(oneStack(fakeRes("U", U, "kU", "u1")))},
		{name: "refresh", setup: []*assembly.Assembly{base},
			action: func(ctx context.Context, env *crashEnv, opts engine.Options) error {
				st, err := env.b.GetStack(ctx, "S")
				if err != nil {
					return err
				}
				res, err := engine.Refresh(ctx, []*state.Stack{st}, opts, engine.RefreshOptions{})
				if err != nil {
					return err
				}
				return res.Err()
			}, converge: deployAssembly(base)},
		{name: "import", setup: []*assembly.Assembly{oneStack(fakeRes("A", T, "kA", "a1"))},
			action: func(ctx context.Context, env *crashEnv, opts engine.Options) error {
				id := env.cloud.Put(resource.Properties{"key": "kI", "value": []any{"i1"}})
				env.outOfBand[id] = true
				st, err := env.b.GetStack(ctx, "S")
				if err != nil {
					return err
				}
				_, err = engine.Import(ctx, st, fakeRes("I", T, "kI", "i1"), id, opts)
				return err
			}, converge: deployAssembly(oneStack(fakeRes("A", T, "kA", "a1")))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// A dry run counts the boundaries; then one run crashes at each of them in turn.
			n := runCrashCase(t, tc, 0)
			if n == 0 {
				t.Fatal("the action passed no boundary")
			}
			for k := 1; k <= n; k++ {
				t.Run(fmt.Sprintf("boundary=%d", k), func(t *testing.T) {
					t.Parallel()
					runCrashCase(t, tc, k)
				})
			}
		})
	}
}

// runCrashCase runs tc, crashing at the k-th boundary of its action (0: no crash), checks the recovery
// and returns how many boundaries the action passed.
func runCrashCase(t *testing.T, tc crashCase, k int) int {
	t.Helper()
	ctx := context.Background()
	var dead atomic.Bool
	cloud := enginetest.NewCloud()
	cloud.Fail = func(op, id string) error {
		switch {
		case dead.Load():
			return errCrashed
		case op == "create" && id == "F":
			return enginetest.ErrInjected
		}
		return nil
	}
	env := &crashEnv{t: t, b: openBackend(t), reg: engine.NewRegistry(cloud), cloud: cloud, outOfBand: map[string]bool{}}
	for _, a := range tc.setup {
		if err := deployAssembly(a)(ctx, env, engine.Options{Backend: env.b, Concurrency: 1}); err != nil {
			t.Fatalf("setup: %v", err)
		}
	}
	var passed atomic.Int64
	var at []string
	opts := engine.Options{Backend: dyingBackend{env.b, &dead}, Providers: env.reg, Concurrency: 1,
		AtBoundary: func(b engine.Boundary, stack, logicalID string) {
			if n := passed.Add(1); int(n) == k {
				at = append(at, fmt.Sprintf("boundary %d at %s/%s", b, stack, logicalID))
				dead.Store(true)
			}
		}}
	_ = tc.action(ctx, env, opts)
	if k == 0 {
		return int(passed.Load())
	}
	dead.Store(false)

	// The crashed run's deployment is still RUNNING; its heartbeat would stop and the queue abort it.
	running, err := env.b.ListDeployments(ctx, state.DeploymentFilter{Statuses: []state.DeploymentStatus{state.StatusRunning}})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range running {
		if _, err := env.b.UpdateDeployment(ctx, d.ID, state.Transition{From: []state.DeploymentStatus{state.StatusRunning},
			Runner: d.Runner, To: state.StatusAborted, Error: "crashed", At: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	// Recovery, as the next run does it: settle what the crash left pending by reading the provider.
	st, err := env.b.GetStack(ctx, "S")
	if err != nil {
		t.Fatal(err)
	}
	res, err := engine.Refresh(ctx, []*state.Stack{st}, engine.Options{Backend: env.b, Providers: env.reg},
		engine.RefreshOptions{PendingOnly: true})
	if err != nil || res.Err() != nil {
		t.Fatalf("recovery after crash %v: %v, %v", at, err, res.Err())
	}
	agree(t, env, fmt.Sprint("after crash ", at, " and recovery"))
	if err := tc.converge(ctx, env, engine.Options{Backend: env.b, Providers: env.reg, Concurrency: 1}); err != nil {
		t.Fatalf("converge after crash %v: %v", at, err)
	}
	agree(t, env, fmt.Sprint("after crash ", at, " and a converging run"))
	validState(t, env.b, "S")
	return int(passed.Load())
}

// agree fails the test when state and the provider disagree: an object state does not record (orphan),
// or a record of an object that does not exist.
func agree(t *testing.T, env *crashEnv, when string) {
	t.Helper()
	var atProvider, inState []string
	for id := range env.cloud.Objects() {
		if !env.outOfBand[id] {
			atProvider = append(atProvider, id)
		}
	}
	for id := range objectsInState(t, env.b, "S") {
		if !env.outOfBand[id] {
			inState = append(inState, id)
		}
	}
	sort.Strings(atProvider)
	sort.Strings(inState)
	if diff := cmp.Diff(atProvider, inState); diff != "" {
		t.Errorf("%s: objects at the provider vs in state (-provider +state):\n%s", when, diff)
	}
}
