package operation_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/engine/enginetest"
	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/pkg/backend/sqlite"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/planner"
)

// view records what a run showed.
type view struct {
	mu     sync.Mutex
	events []engine.Event
	ticks  int
}

func (v *view) Event(e engine.Event) {
	v.mu.Lock()
	v.events = append(v.events, e)
	v.mu.Unlock()
}

func (v *view) Tick(time.Time) {
	v.mu.Lock()
	v.ticks++
	v.mu.Unlock()
}

func assemblyOf(n int) *assembly.Assembly {
	st := &assembly.Stack{ID: "S", Outputs: map[string]*assembly.Output{}}
	for i := range n {
		id := fmt.Sprintf("R%02d", i)
		st.Resources = append(st.Resources, &assembly.Resource{LogicalID: id, Type: enginetest.CloudType, Provider: "fake",
			Path: "resources." + id, Properties: resource.Properties{"key": "k" + id, "value": "v"}})
	}
	return &assembly.Assembly{Stacks: []*assembly.Stack{st}}
}

type fixture struct {
	env   operation.Env
	cloud *enginetest.Cloud
	view  *view
	tick  chan time.Time
}

// newFixture returns an Env on a fresh SQLite file with the fake cloud (each call takes latency) and a
// ticker the test drives: every provider call sends one tick.
func newFixture(t *testing.T, latency time.Duration) *fixture {
	t.Helper()
	b, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	fx := &fixture{cloud: enginetest.NewCloud(), view: &view{}, tick: make(chan time.Time, 1000)}
	fx.cloud.Latency = latency
	fx.cloud.Fail = func(string, string) error {
		fx.tick <- time.Now()
		return nil
	}
	fx.env = operation.Env{Backend: b, Providers: engine.NewRegistry(fx.cloud),
		NewView: func(_, _, _ []string) operation.View { return fx.view },
		Ticker:  func() (<-chan time.Time, func()) { return fx.tick, func() {} },
		Lock:    operation.LockPolicy{Holder: state.LockInfo{ID: "test", User: "t", Host: "h"}}}
	return fx
}

func (fx *fixture) deploy(t *testing.T, a *assembly.Assembly) *engine.Result {
	t.Helper()
	res, _, err := operation.Deploy{Env: fx.env, Assembly: a, Selection: operation.Selection{Stacks: []string{"S"}}}.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestEveryVerbTicks runs each verb with a slow provider: every one drives the view's ticker (destroy,
// refresh and import never did), records its own deployment and leaves no lock.
func TestEveryVerbTicks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	verbs := []struct {
		name string
		run  func(fx *fixture) (*engine.Result, error)
	}{
		{"deploy", func(fx *fixture) (*engine.Result, error) {
			res, _, err := operation.Deploy{Env: fx.env, Assembly: assemblyOf(3), Selection: operation.Selection{Stacks: []string{"S"}}}.Run(ctx)
			return res, err
		}},
		{"refresh", func(fx *fixture) (*engine.Result, error) { return operation.Refresh{Env: fx.env}.Run(ctx) }},
		{"destroy", func(fx *fixture) (*engine.Result, error) { return operation.Destroy{Env: fx.env}.Run(ctx) }},
		{"import", func(fx *fixture) (*engine.Result, error) {
			id := fx.cloud.Put(resource.Properties{"key": "kX", "value": "x"})
			r := &assembly.Resource{LogicalID: "X", Type: enginetest.CloudType, Provider: "fake", Path: "resources.X"}
			return operation.Import{Env: fx.env, Stack: "S", Resource: r, PhysicalID: id}.Run(ctx)
		}},
	}
	for _, verb := range verbs {
		t.Run(verb.name, func(t *testing.T) {
			t.Parallel()
			fx := newFixture(t, 5*time.Millisecond)
			if verb.name != "deploy" {
				fx.deploy(t, assemblyOf(3))
			}
			fx.view.ticks = 0
			res, err := verb.run(fx)
			if err != nil || res.Err() != nil {
				t.Fatalf("%s: %v, %v", verb.name, err, res.Err())
			}
			if fx.view.ticks == 0 {
				t.Errorf("%s: the view was never ticked", verb.name)
			}
			if len(res.Deployments) != 1 {
				t.Errorf("%s: %d deployment records, want 1", verb.name, len(res.Deployments))
			}
			if locks, _ := fx.env.Backend.Locks(ctx); len(locks) != 0 {
				t.Errorf("%s: %d locks left, want 0", verb.name, len(locks))
			}
		})
	}
}

// TestProviderLimits checks that every verb applies the per-provider limits: what the provider declares
// (as RabbitMQ declares 4) and what the configuration sets (refresh used to drop it).
func TestProviderLimits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		declared int
		config   map[string]int
		want     int64
	}{
		{"declared", 4, nil, 4},
		{"configured", 0, map[string]int{"fake": 2}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fx := newFixture(t, 3*time.Millisecond)
			fx.cloud.DefaultConcurrency = tc.declared
			fx.env.Providers = engine.NewRegistry(fx.cloud) // Info is read when the registry is made
			fx.env.ProviderConcurrency = tc.config
			fx.deploy(t, assemblyOf(24))
			if got := fx.cloud.MaxInFlight(); got != tc.want {
				t.Errorf("deploy: most calls in flight = %d, want %d", got, tc.want)
			}
			res, err := operation.Refresh{Env: fx.env}.Run(context.Background())
			if err != nil || res.Err() != nil {
				t.Fatal(err, res.Err())
			}
			if got := fx.cloud.MaxInFlight(); got != tc.want {
				t.Errorf("refresh: most calls in flight = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestInterruptNotice cancels a deploy during a call: OnInterrupt hears once, with the one call in flight
// (concurrency 1), the run ends interrupted and no other step started.
func TestInterruptNotice(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, 0)
	ctx, cancel := context.WithCancel(context.Background())
	var heard []int64
	var mu sync.Mutex
	fx.env.OnInterrupt = func(n int64) {
		mu.Lock()
		heard = append(heard, n)
		mu.Unlock()
	}
	release := make(chan struct{})
	var calls atomic.Int64
	fx.cloud.Fail = func(string, string) error {
		if calls.Add(1) == 1 {
			cancel()
			<-release // keep the call in flight until the notice was heard
		}
		return nil
	}
	fx.env.Concurrency = 1
	go func() {
		for {
			mu.Lock()
			n := len(heard)
			mu.Unlock()
			if n > 0 {
				close(release)
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	res, _, err := operation.Deploy{Env: fx.env, Assembly: assemblyOf(10), Selection: operation.Selection{Stacks: []string{"S"}}}.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int64{1}, heard); diff != "" {
		t.Errorf("OnInterrupt calls (-want +got):\n%s", diff)
	}
	if !errors.Is(res.Err(), engine.ErrInterrupted) || res.NotStarted != 9 || calls.Load() != 1 {
		t.Errorf("Err() = %v, NotStarted = %d, calls = %d; want interrupted, 9, 1", res.Err(), res.NotStarted, calls.Load())
	}
}

// TestDeploySettlesFirst leaves a pending create (a run killed after its call) and deploys again: the
// operation settles it by reading the provider before planning, so the object is recorded, not made twice.
func TestDeploySettlesFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFixture(t, 0)
	fx.deploy(t, assemblyOf(1))
	// R01 was created at the provider, but the run died before recording it.
	id := fx.cloud.Put(resource.Properties{"key": "kR01", "value": "v"})
	_, err := fx.env.Backend.Commit(ctx, "", "S", []state.Change{{Kind: state.PutResource, Resource: &state.Resource{
		LogicalID: "R01", Type: enginetest.CloudType, Provider: "fake", Status: string(engine.CreateInProgress),
		Pending: &state.PendingOperation{Op: state.PendingCreate, Inputs: resource.Properties{"key": "kR01", "value": "v"}, StartedAt: time.Now()}}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var notices []string
	fx.env.Notice = func(s string) { notices = append(notices, s) }
	res := fx.deploy(t, assemblyOf(2))
	if res.Err() != nil {
		t.Fatal(res.Err())
	}
	st, _ := fx.env.Backend.GetStack(ctx, "S")
	if got := st.Resources["R01"].PhysicalID; got != id || len(fx.cloud.Objects()) != 2 {
		t.Errorf("R01 = %q with %d objects at the provider, want %q and 2 (settled, not created again)", got, len(fx.cloud.Objects()), id)
	}
	if len(notices) != 1 {
		t.Errorf("notices = %q, want one saying what is settled", notices)
	}
}

// TestDestroyConfirm: a refusal deletes nothing and says so; a destroy of nothing says so.
func TestDestroyConfirm(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFixture(t, 0)
	if _, err := (operation.Destroy{Env: fx.env}).Run(ctx); !errors.Is(err, operation.ErrNothing) {
		t.Errorf("destroy with empty state = %v, want ErrNothing", err)
	}
	fx.deploy(t, assemblyOf(3))
	var asked []string
	_, err := operation.Destroy{Env: fx.env, Confirm: func(deletions []operation.Deletion, stacks []string) (bool, error) {
		for _, d := range deletions {
			asked = append(asked, d.Stack+"/"+d.LogicalID+" "+d.Type)
		}
		asked = append(asked, fmt.Sprint(stacks))
		return false, nil
	}}.Run(ctx)
	if !errors.Is(err, operation.ErrCancelled) || len(fx.cloud.Objects()) != 3 {
		t.Errorf("refused destroy = %v with %d objects left, want ErrCancelled and 3", err, len(fx.cloud.Objects()))
	}
	if diff := cmp.Diff([]string{"S/R00 " + enginetest.CloudType, "S/R01 " + enginetest.CloudType, "S/R02 " + enginetest.CloudType, "[S]"}, asked); diff != "" {
		t.Errorf("Confirm asked (-want +got):\n%s", diff)
	}
}

// TestDeployConfirm: Confirm sees the plan before anything is recorded; a "no" calls no provider and
// records no deployment, an error from Confirm is the run's error, a "yes" deploys.
func TestDeployConfirm(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFixture(t, 0)
	fx.deploy(t, assemblyOf(3))
	calls := fx.cloud.Calls()
	before, err := fx.env.Backend.ListDeployments(ctx, state.DeploymentFilter{})
	if err != nil {
		t.Fatal(err)
	}
	smaller := assemblyOf(2) // R02 is deleted
	sel := operation.Selection{Stacks: []string{"S"}}
	var deletes []string
	refuse := func(p *planner.Plan) (bool, error) {
		for _, s := range p.Deletes {
			deletes = append(deletes, s.LogicalID)
		}
		return false, nil
	}
	_, _, err = operation.Deploy{Env: fx.env, Assembly: smaller, Selection: sel, Confirm: refuse}.Run(ctx)
	if !errors.Is(err, operation.ErrCancelled) {
		t.Fatalf("refused deploy = %v, want ErrCancelled", err)
	}
	after, err := fx.env.Backend.ListDeployments(ctx, state.DeploymentFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if fx.cloud.Calls() != calls || len(fx.cloud.Objects()) != 3 || len(after) != len(before) {
		t.Errorf("after a refusal: %d provider calls, %d objects, %d deployments; want %d, 3, %d",
			fx.cloud.Calls(), len(fx.cloud.Objects()), len(after), calls, len(before))
	}
	if diff := cmp.Diff([]string{"R02"}, deletes); diff != "" {
		t.Errorf("Confirm saw deletions (-want +got):\n%s", diff)
	}
	boom := errors.New("no terminal")
	_, _, err = operation.Deploy{Env: fx.env, Assembly: smaller, Selection: sel,
		Confirm: func(*planner.Plan) (bool, error) { return false, boom }}.Run(ctx)
	if !errors.Is(err, boom) {
		t.Errorf("deploy whose Confirm failed = %v, want %v", err, boom)
	}
	_, _, err = operation.Deploy{Env: fx.env, Assembly: smaller, Selection: sel,
		Confirm: func(*planner.Plan) (bool, error) { return true, nil }}.Run(ctx)
	if err != nil || len(fx.cloud.Objects()) != 2 {
		t.Errorf("approved deploy = %v with %d objects, want nil and 2", err, len(fx.cloud.Objects()))
	}
}
