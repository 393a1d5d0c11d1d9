package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/engine/enginetest"
	"github.com/cdkx-dev/cdkx/pkg/backend/sqlite"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/planner"
)

// randomStack returns a stack of n fake resources; each resource i may reference resources before it
// (an acyclic graph), by {ref} token in "value" or by dependsOn.
func randomStack(rng *rand.Rand, name string, n int, keyPrefix string) *assembly.Stack {
	st := &assembly.Stack{ID: name, File: name + ".json", Outputs: map[string]*assembly.Output{}}
	for i := range n {
		id := fmt.Sprintf("R%03d", i)
		props := resource.Properties{"key": keyPrefix + id}
		var refs []any
		var dependsOn []string
		for j := range i {
			if rng.IntN(100) < 15 {
				if rng.IntN(2) == 0 {
					refs = append(refs, map[string]any{"ref": fmt.Sprintf("R%03d", j), "attr": "id"})
				} else {
					dependsOn = append(dependsOn, fmt.Sprintf("R%03d", j))
				}
			}
		}
		props["value"] = append([]any{id}, refs...)
		st.Resources = append(st.Resources, &assembly.Resource{LogicalID: id, Type: enginetest.CloudType, Provider: "fake",
			Properties: props, DependsOn: dependsOn, Path: "resources." + id})
	}
	return st
}

func openBackend(t *testing.T) state.Backend {
	t.Helper()
	b, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatalf("open state: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

type recorder struct {
	mu     sync.Mutex
	events []engine.Event
}

func (r *recorder) add(e engine.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

// deploy plans a against b's state and applies it, rolling back on failure.
func deploy(t *testing.T, a *assembly.Assembly, b state.Backend, reg *engine.Registry, conc int) (*engine.Result, *recorder) {
	t.Helper()
	return deployWith(t, a, b, reg, engine.Options{Concurrency: conc})
}

// deployWith plans a against b's state and applies it with opts (Backend, Providers and OnEvent are set).
func deployWith(t *testing.T, a *assembly.Assembly, b state.Backend, reg *engine.Registry, opts engine.Options) (*engine.Result, *recorder) {
	t.Helper()
	return deployCtx(context.Background(), t, a, b, reg, opts)
}

// deployCtx is deployWith under ctx (cancel it to interrupt the run).
func deployCtx(ctx context.Context, t *testing.T, a *assembly.Assembly, b state.Backend, reg *engine.Registry, opts engine.Options) (*engine.Result, *recorder) {
	t.Helper()
	stacks := planner.StackOrder(a)
	st := map[string]*state.Stack{}
	for _, s := range stacks {
		var err error
		if st[s], err = b.GetStack(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	p, ds := planner.Make(planner.Input{Assembly: a, Stacks: stacks, State: st, Schemas: reg.Schema})
	if ds.HasErrors() {
		t.Fatalf("plan: %v", ds.Err())
	}
	rec := &recorder{}
	opts.Backend, opts.Providers, opts.OnEvent = b, reg, rec.add
	res, err := engine.Deploy(ctx, p, opts)
	if err != nil {
		t.Fatalf("Deploy: %v", err)
	}
	return res, rec
}

// validState fails the test when the stack's state breaks an invariant of state.Stack.Validate.
func validState(t *testing.T, b state.Backend, stack string) {
	t.Helper()
	st, err := b.GetStack(context.Background(), stack)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Validate(); err != nil {
		t.Errorf("state does not validate:\n%v", err)
	}
}

// objectsInState returns physical ID → inputs of every object state records, replaced ones included.
func objectsInState(t *testing.T, b state.Backend, stack string) map[string]resource.Properties {
	t.Helper()
	st, err := b.GetStack(context.Background(), stack)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]resource.Properties{}
	for _, r := range st.Resources {
		if r.PhysicalID != "" {
			out[r.PhysicalID] = r.Inputs
		}
		for _, o := range r.Replaced {
			out[o.PhysicalID] = o.Inputs
		}
		if r.Pending != nil {
			t.Errorf("%s: pending operation %q left in state after the run", r.LogicalID, r.Pending.Op)
		}
	}
	return out
}

func normalize(m map[string]resource.Properties) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		b, _ := json.Marshal(v)
		out[k] = string(resource.Canonical(json.RawMessage(b)))
	}
	return out
}

// TestDeployRandomDAGs is a property test: over random DAGs and a provider that fails at random, with
// --no-rollback, (1) no resource is created before its dependencies, (2) nothing downstream of a failure
// runs, (3) state records exactly the objects the provider holds, and (4) a second deploy without failures
// converges to every resource created.
func TestDeployRandomDAGs(t *testing.T) {
	t.Parallel()
	for seed := range uint64(25) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 42))
			as := randomStack(rng, "S", 5+rng.IntN(40), "k")
			a := &assembly.Assembly{Stacks: []*assembly.Stack{as}}
			cloud := enginetest.NewCloud()
			var mu sync.Mutex
			created := map[string]bool{}
			failing := map[string]bool{}
			for _, r := range as.Resources {
				if rng.IntN(100) < 10 {
					failing[r.LogicalID] = true
				}
			}
			deps := map[string][]string{}
			for _, r := range as.Resources {
				deps[r.LogicalID] = planner.ResourceDependencies(r)
			}
			cloud.Fail = func(op, id string) error {
				if op != "create" {
					return nil
				}
				mu.Lock()
				defer mu.Unlock()
				for _, d := range deps[id] {
					if !created[d] {
						t.Errorf("%s created before its dependency %s", id, d)
					}
				}
				if failing[id] {
					return enginetest.ErrInjected
				}
				created[id] = true
				return nil
			}
			b := openBackend(t)
			reg := engine.NewRegistry(cloud)
			res, rec := deployWith(t, a, b, reg, engine.Options{Concurrency: 1 + rng.IntN(8), NoRollback: true})

			// Expected outcome: a resource is done iff it does not fail and none of its dependencies
			// (transitively) fails.
			bad := map[string]bool{}
			for _, r := range as.Resources { // resources are in topological order by construction
				if failing[r.LogicalID] {
					bad[r.LogicalID] = true
				}
				for _, d := range deps[r.LogicalID] {
					if bad[d] {
						bad[r.LogicalID] = true
					}
				}
			}
			final := map[string]engine.Status{}
			for _, e := range rec.events {
				if e.LogicalID != "" {
					final[e.LogicalID] = e.Status
				}
			}
			for _, r := range as.Resources {
				id := r.LogicalID
				want := engine.CreateComplete
				switch {
				case failing[id] && !anyBad(deps[id], bad):
					want = engine.CreateFailed
				case bad[id]:
					want = engine.Skipped
				}
				if final[id] != want {
					t.Errorf("%s: final status %s, want %s", id, final[id], want)
				}
			}
			if want := len(failing) > 0; (res.Err() != nil) != want {
				t.Errorf("Result.Err() = %v, want an error: %t", res.Err(), want)
			}
			if diff := cmp.Diff(normalize(cloud.Objects()), normalize(objectsInState(t, b, "S"))); diff != "" {
				t.Errorf("provider objects vs state (-provider +state):\n%s", diff)
			}
			validState(t, b, "S")

			// Fix the provider and deploy again: everything converges, nothing is duplicated.
			clear(failing)
			res, _ = deploy(t, a, b, reg, 4)
			if err := res.Err(); err != nil {
				t.Fatalf("second deploy: %v", err)
			}
			if got, want := len(cloud.Objects()), len(as.Resources); got != want {
				t.Errorf("provider holds %d objects after converging, want %d", got, want)
			}
			if diff := cmp.Diff(normalize(cloud.Objects()), normalize(objectsInState(t, b, "S"))); diff != "" {
				t.Errorf("after converging, provider objects vs state (-provider +state):\n%s", diff)
			}
		})
	}
}

func anyBad(ids []string, bad map[string]bool) bool {
	return slices.ContainsFunc(ids, func(id string) bool { return bad[id] })
}

// TestDeployChangesAndDestroy walks one stack through create, update in place, replacement (old object
// deleted in the cleanup phase), removal from the assembly, and destroy, checking the provider against
// state after each.
func TestDeployChangesAndDestroy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	mk := func(values map[string]string, keys map[string]string) *assembly.Assembly {
		st := &assembly.Stack{ID: "S", Outputs: map[string]*assembly.Output{
			"AValue": {Key: "AValue", Value: map[string]any{"ref": "A", "attr": "value"}, Path: "outputs.AValue"}}}
		ids := make([]string, 0, len(values))
		for id := range values {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			props := resource.Properties{"value": values[id], "key": keys[id]}
			if id != "A" {
				props["value"] = []any{values[id], map[string]any{"ref": "A", "attr": "id"}}
			}
			st.Resources = append(st.Resources, &assembly.Resource{LogicalID: id, Type: enginetest.CloudType, Provider: "fake", Properties: props, Path: "resources." + id})
		}
		return &assembly.Assembly{Stacks: []*assembly.Stack{st}}
	}
	cloud := enginetest.NewCloud()
	reg := engine.NewRegistry(cloud)
	b := openBackend(t)
	check := func(step string, wantObjects int) {
		t.Helper()
		if diff := cmp.Diff(normalize(cloud.Objects()), normalize(objectsInState(t, b, "S"))); diff != "" {
			t.Errorf("%s: provider vs state (-provider +state):\n%s", step, diff)
		}
		if got := len(cloud.Objects()); got != wantObjects {
			t.Errorf("%s: provider holds %d objects, want %d", step, got, wantObjects)
		}
	}
	counts := func(res *engine.Result) map[engine.Status]int {
		if err := res.Err(); err != nil {
			t.Fatalf("deploy: %v", err)
		}
		return res.Counts
	}

	res, _ := deploy(t, mk(map[string]string{"A": "a1", "B": "b1", "C": "c1"}, map[string]string{"A": "k", "B": "k", "C": "k"}), b, reg, 4)
	if diff := cmp.Diff(map[engine.Status]int{engine.CreateComplete: 3}, counts(res)); diff != "" {
		t.Errorf("create counts (-want +got):\n%s", diff)
	}
	check("create", 3)

	res, _ = deploy(t, mk(map[string]string{"A": "a1", "B": "b2", "C": "c1"}, map[string]string{"A": "k", "B": "k", "C": "k"}), b, reg, 4)
	if diff := cmp.Diff(map[engine.Status]int{engine.UpdateComplete: 1, engine.NoChanges: 2}, counts(res)); diff != "" {
		t.Errorf("update counts (-want +got):\n%s", diff)
	}
	check("update", 3)

	// Replacing A (create-only key) creates a new A, updates B and C to its new id, deletes the old A. The
	// counts are the plan's ("1 to replace, 2 to update"): deleting the replaced object is part of the
	// replacement, not a deletion of its own (it was counted as one, so deploy said "2 deleted").
	res, _ = deploy(t, mk(map[string]string{"A": "a1", "B": "b2", "C": "c1"}, map[string]string{"A": "k2", "B": "k", "C": "k"}), b, reg, 4)
	if diff := cmp.Diff(map[engine.Status]int{engine.UpdateComplete: 3}, counts(res)); diff != "" || res.Replaced != 1 {
		t.Errorf("replace counts (-want +got):\n%s\nreplaced = %d, want 1", diff, res.Replaced)
	}
	check("replace", 3)

	res, _ = deploy(t, mk(map[string]string{"A": "a1", "B": "b2"}, map[string]string{"A": "k2", "B": "k"}), b, reg, 4)
	if diff := cmp.Diff(map[engine.Status]int{engine.DeleteComplete: 1, engine.NoChanges: 2}, counts(res)); diff != "" {
		t.Errorf("remove counts (-want +got):\n%s", diff)
	}
	check("remove", 2)

	st, err := b.GetStack(ctx, "S")
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Outputs["AValue"]; got != "a1" {
		t.Errorf("stack output AValue = %v, want a1", got)
	}
	dres, err := engine.Destroy(ctx, []*state.Stack{st}, engine.Options{Backend: b, Providers: reg})
	if err != nil || dres.Err() != nil {
		t.Fatalf("Destroy: %v, %v", err, dres.Err())
	}
	check("destroy", 0)
	if st, _ = b.GetStack(ctx, "S"); len(st.Resources) != 0 || st.Status != string(engine.DeleteComplete) {
		t.Errorf("after destroy: %d resources, status %s", len(st.Resources), st.Status)
	}
}

// TestDestroyKeepsGoing checks that a failed delete stops only what it depends on and every failure is
// reported.
func TestDestroyKeepsGoing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 7))
	as := randomStack(rng, "S", 30, "k")
	cloud := enginetest.NewCloud()
	reg := engine.NewRegistry(cloud)
	b := openBackend(t)
	if res, _ := deploy(t, &assembly.Assembly{Stacks: []*assembly.Stack{as}}, b, reg, 8); res.Err() != nil {
		t.Fatal(res.Err())
	}
	st, _ := b.GetStack(ctx, "S")
	failID := st.Resources["R020"].PhysicalID
	cloud.Fail = func(op, id string) error {
		if op == "delete" && id == failID {
			return enginetest.ErrInjected
		}
		return nil
	}
	res, err := engine.Destroy(ctx, []*state.Stack{st}, engine.Options{Backend: b, Providers: reg, Concurrency: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failures) != 1 || res.Failures[0].LogicalID != "R020" {
		t.Fatalf("failures = %+v, want exactly R020", res.Failures)
	}
	if diff := cmp.Diff(normalize(cloud.Objects()), normalize(objectsInState(t, b, "S"))); diff != "" {
		t.Errorf("provider vs state (-provider +state):\n%s", diff)
	}
	// Everything R020 does not (transitively) depend on is gone.
	if n := len(cloud.Objects()); n == 0 || n == len(as.Resources) {
		t.Errorf("provider holds %d objects; want some but not all deleted", n)
	}
}

// TestInterruptStopsScheduling cancels the context during a deploy: running calls finish and are
// recorded, nothing new starts, and state matches the provider.
func TestInterruptStopsScheduling(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 3))
	as := randomStack(rng, "S", 60, "k")
	cloud := enginetest.NewCloud()
	cloud.Latency = 5 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	var once sync.Once
	cloud.Fail = func(op, id string) error {
		if cloud.Calls() > 10 {
			once.Do(cancel)
		}
		return nil
	}
	reg := engine.NewRegistry(cloud)
	b := openBackend(t)
	st, _ := b.GetStack(ctx, "S")
	a := &assembly.Assembly{Stacks: []*assembly.Stack{as}}
	p, ds := planner.Make(planner.Input{Assembly: a, Stacks: []string{"S"}, State: map[string]*state.Stack{"S": st}, Schemas: reg.Schema})
	if ds.HasErrors() {
		t.Fatal(ds.Err())
	}
	res, err := engine.Deploy(ctx, p, engine.Options{Backend: b, Providers: reg, Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted || res.NotStarted == 0 {
		t.Errorf("Interrupted = %t, NotStarted = %d; want an interrupted run with steps not started", res.Interrupted, res.NotStarted)
	}
	if got := res.Err(); got != engine.ErrInterrupted {
		t.Errorf("Err() = %v, want ErrInterrupted", got)
	}
	if diff := cmp.Diff(normalize(cloud.Objects()), normalize(objectsInState(t, b, "S"))); diff != "" {
		t.Errorf("provider vs state (-provider +state):\n%s", diff)
	}
}

// TestInterruptStartsNothingWaiting interrupts a run whose steps are all ready and waiting for the one
// concurrency slot (300 independent resources, --concurrency 1): after the interrupt only the call in
// flight finishes, no waiting step starts, each of every verb's steps counts as not started, and the
// interrupt is seen while the call is in flight (Options.InFlight). Before, the 299 waiting steps each
// started once the slot freed up.
func TestInterruptStartsNothingWaiting(t *testing.T) {
	t.Parallel()
	values := map[string]string{}
	for i := range 300 {
		values[fmt.Sprintf("R%03d", i)] = "v"
	}
	for _, verb := range []string{"deploy", "destroy", "refresh"} {
		t.Run(verb, func(t *testing.T) {
			t.Parallel()
			cloud := enginetest.NewCloud()
			reg := engine.NewRegistry(cloud)
			b := openBackend(t)
			if verb != "deploy" {
				if res, _ := deploy(t, mkAssembly(values), b, reg, 10); res.Err() != nil {
					t.Fatal(res.Err())
				}
			}
			before := cloud.Calls()
			ctx, cancel := context.WithCancel(context.Background())
			var inFlight atomic.Int64
			var seen atomic.Int64
			opts := engine.Options{Backend: b, Providers: reg, Concurrency: 1, InFlight: &inFlight}
			cloud.Fail = func(string, string) error {
				seen.Store(inFlight.Load())
				cancel() // Ctrl-C during the first call
				return nil
			}
			st, _ := b.GetStack(ctx, "S")
			var res *engine.Result
			var err error
			switch verb {
			case "deploy":
				res, _ = deployCtx(ctx, t, mkAssembly(values), b, reg, opts)
			case "destroy":
				res, err = engine.Destroy(ctx, []*state.Stack{st}, opts)
			case "refresh":
				res, err = engine.Refresh(ctx, []*state.Stack{st}, opts, engine.RefreshOptions{})
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cloud.Calls() - before; got != 1 {
				t.Errorf("%s: %d provider calls, want 1 (the one in flight at the interrupt)", verb, got)
			}
			if !res.Interrupted || res.NotStarted != 299 || seen.Load() != 1 {
				t.Errorf("%s: Interrupted = %t, NotStarted = %d, in flight at the interrupt = %d; want true, 299, 1",
					verb, res.Interrupted, res.NotStarted, seen.Load())
			}
			if diff := cmp.Diff(normalize(cloud.Objects()), normalize(objectsInState(t, b, "S"))); diff != "" {
				t.Errorf("provider vs state (-provider +state):\n%s", diff)
			}
		})
	}
}

// mkAssembly returns one stack "S" of independent fake resources with the given values (keys "k"+ID).
func mkAssembly(values map[string]string) *assembly.Assembly {
	st := &assembly.Stack{ID: "S", Outputs: map[string]*assembly.Output{}}
	ids := make([]string, 0, len(values))
	for id := range values {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		st.Resources = append(st.Resources, &assembly.Resource{LogicalID: id, Type: enginetest.CloudType, Provider: "fake",
			Properties: resource.Properties{"key": "k" + id, "value": values[id]}, Path: "resources." + id})
	}
	return &assembly.Assembly{Stacks: []*assembly.Stack{st}}
}

// TestWriteOnlyNeverStored deploys a resource with a write-only secret: the state file never holds it, an
// unchanged secret is no change, a changed one is an update.
func TestWriteOnlyNeverStored(t *testing.T) {
	t.Parallel()
	cloud := enginetest.NewCloud()
	reg := engine.NewRegistry(cloud)
	dir := t.TempDir()
	b, err := sqlite.Open(context.Background(), filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	mk := func(secret string) *assembly.Assembly {
		return &assembly.Assembly{Stacks: []*assembly.Stack{{ID: "S", Outputs: map[string]*assembly.Output{}, Resources: []*assembly.Resource{{
			LogicalID: "U", Type: enginetest.CloudType, Provider: "fake", Path: "resources.U",
			Properties: resource.Properties{"key": "u", "secret": secret}}}}}}
	}
	for _, step := range []struct {
		secret string
		want   engine.Status
	}{{"first-S3CRET", engine.CreateComplete}, {"first-S3CRET", engine.NoChanges}, {"second-S3CRET", engine.UpdateComplete}} {
		res, _ := deploy(t, mk(step.secret), b, reg, 2)
		if res.Counts[step.want] != 1 {
			t.Errorf("secret %s: counts %v, want one %s", step.secret, res.Counts, step.want)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"state.db", "state.db-wal"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			continue
		}
		if bytes.Contains(data, []byte("S3CRET")) {
			t.Errorf("%s contains the secret", f)
		}
	}
	if got := cloud.Objects(); len(got) != 1 {
		t.Errorf("provider holds %d objects, want 1", len(got))
	}
}

// TestRollbackRandomDAGs is a property test of rollback: a random DAG is deployed, then changed (values
// updated in place, create-only keys replaced, resources added) while the provider fails at random. After
// the run, the provider's objects equal state's, and every resource that existed is back at its first
// inputs, or, when a rollback step failed, state says so (UPDATE_ROLLBACK_FAILED).
func TestRollbackRandomDAGs(t *testing.T) {
	t.Parallel()
	for seed := range uint64(25) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(seed, 99))
			n := 5 + rng.IntN(30)
			as := randomStack(rand.New(rand.NewPCG(seed, 1)), "S", n, "k")
			cloud := enginetest.NewCloud()
			reg := engine.NewRegistry(cloud)
			b := openBackend(t)
			if res, _ := deploy(t, &assembly.Assembly{Stacks: []*assembly.Stack{as}}, b, reg, 4); res.Err() != nil {
				t.Fatal(res.Err())
			}
			before, _ := b.GetStack(ctx, "S")

			changed := randomStack(rand.New(rand.NewPCG(seed, 1)), "S", n+3, "k") // same edges, 3 more resources
			for _, r := range changed.Resources {
				switch rng.IntN(3) {
				case 0:
					r.Properties["key"] = "k2" + r.LogicalID // replacement
				case 1:
					r.Properties["value"] = append([]any{"v2"}, r.Properties["value"].([]any)[1:]...) // update
				}
			}
			var failOnce sync.Map
			var rngMu sync.Mutex
			cloud.Fail = func(op, id string) error {
				rngMu.Lock()
				roll := rng.IntN(100)
				rngMu.Unlock()
				if op != "delete" && roll < 15 {
					if _, done := failOnce.LoadOrStore(op+id, true); !done {
						return enginetest.ErrInjected
					}
				}
				return nil
			}
			res, rec := deploy(t, &assembly.Assembly{Stacks: []*assembly.Stack{changed}}, b, reg, 1+rng.IntN(6))
			cloud.Fail = nil
			if testing.Verbose() {
				for _, e := range rec.events {
					t.Logf("event %s %s %s %s", e.LogicalID, e.Status, e.PhysicalID, e.Reason)
				}
			}
			if diff := cmp.Diff(normalize(cloud.Objects()), normalize(objectsInState(t, b, "S"))); diff != "" {
				t.Errorf("provider objects vs state (-provider +state):\n%s", diff)
			}
			validState(t, b, "S")
			after, _ := b.GetStack(ctx, "S")
			if res.Err() == nil {
				return // nothing failed: nothing to roll back
			}
			if testing.Verbose() {
				for _, f := range res.Failures {
					t.Logf("failure %s %s: %v", f.LogicalID, f.Status, f.Err)
				}
				for _, r := range after.SortedResources() {
					t.Logf("final %s %s", r.LogicalID, r.Status)
				}
			}
			rollbackFailed := false
			for _, f := range res.Failures {
				rollbackFailed = rollbackFailed || f.Status == engine.UpdateRollbackFailed
			}
			if !rollbackFailed && after.Status != string(engine.UpdateRollbackComplete) {
				t.Errorf("stack status %s, want UPDATE_ROLLBACK_COMPLETE", after.Status)
			}
			for id, old := range before.Resources {
				cur := after.Resources[id]
				if cur == nil {
					t.Errorf("%s: gone after rollback", id)
					continue
				}
				if cur.Status == string(engine.UpdateRollbackFailed) {
					continue
				}
				if !resource.Equal(cur.Inputs, old.Inputs) || len(cur.Replaced) != len(old.Replaced) {
					t.Errorf("%s: after rollback inputs %v (replaced %d), want %v (replaced %d)", id, cur.Inputs, len(cur.Replaced), old.Inputs, len(old.Replaced))
				}
			}
			for id, cur := range after.Resources {
				if before.Resources[id] == nil && cur.Status != string(engine.UpdateRollbackFailed) {
					t.Errorf("%s: created by the failed run and still in state (%s)", id, cur.Status)
				}
			}
		})
	}
}

func TestProviderConcurrency(t *testing.T) {
	t.Parallel()
	values := map[string]string{}
	for i := range 40 {
		values[fmt.Sprintf("R%02d", i)] = "v"
	}
	for _, tc := range []struct {
		name     string
		declared int
		config   map[string]int
		want     int64
	}{
		{"global only", 0, nil, 10},
		{"provider default", 3, nil, 3},
		{"configuration wins", 3, map[string]int{"fake": 5}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cloud := enginetest.NewCloud()
			cloud.Latency = 30 * time.Millisecond // long enough that every slot fills on a loaded machine (5 ms once saw 9 of 10)
			cloud.DefaultConcurrency = tc.declared
			res, _ := deployWith(t, mkAssembly(values), openBackend(t), engine.NewRegistry(cloud),
				engine.Options{Concurrency: 10, ProviderConcurrency: tc.config})
			if res.Err() != nil {
				t.Fatal(res.Err())
			}
			if got := cloud.MaxInFlight(); got != tc.want {
				t.Errorf("max calls in flight = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestForcedReplace replaces an unchanged resource with --replace: a new object, the old one deleted in
// the cleanup phase, the plan and the run agreeing.
func TestForcedReplace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cloud := enginetest.NewCloud()
	reg := engine.NewRegistry(cloud)
	b := openBackend(t)
	a := mkAssembly(map[string]string{"A": "a", "B": "b"})
	if res, _ := deploy(t, a, b, reg, 2); res.Err() != nil {
		t.Fatal(res.Err())
	}
	st, _ := b.GetStack(ctx, "S")
	oldID := st.Resources["A"].PhysicalID
	p, ds := planner.Make(planner.Input{Assembly: a, Stacks: []string{"S"}, State: map[string]*state.Stack{"S": st},
		Schemas: reg.Schema, Replace: []string{"A"}})
	if ds.HasErrors() {
		t.Fatal(ds.Err())
	}
	if c, u, r, d := p.Counts(); c+u+d != 0 || r != 1 {
		t.Fatalf("plan counts = %d %d %d %d, want one replacement", c, u, r, d)
	}
	res, err := engine.Deploy(ctx, p, engine.Options{Backend: b, Providers: reg})
	if err != nil || res.Err() != nil || res.Replaced != 1 {
		t.Fatalf("Deploy: %v %v, replaced %d", err, res.Err(), res.Replaced)
	}
	st, _ = b.GetStack(ctx, "S")
	if st.Resources["A"].PhysicalID == oldID || len(st.Resources["A"].Replaced) != 0 {
		t.Errorf("A after --replace: physical ID %s (old %s), %d replaced objects left", st.Resources["A"].PhysicalID, oldID, len(st.Resources["A"].Replaced))
	}
	if _, ok := cloud.Objects()[oldID]; ok {
		t.Errorf("old object %s still exists", oldID)
	}
	if _, ds := planner.Make(planner.Input{Assembly: a, Stacks: []string{"S"}, State: map[string]*state.Stack{"S": st},
		Schemas: reg.Schema, Replace: []string{"Nope"}}); !ds.HasErrors() {
		t.Errorf("--replace of an unknown ID: no error")
	}
}

// TestUnreachableProviderFailsFast: once a call finds its provider unreachable (no response to any
// attempt), the calls that follow fail at once naming that failure, instead of each retrying.
func TestUnreachableProviderFailsFast(t *testing.T) {
	t.Parallel()
	cloud := enginetest.NewCloud()
	cloud.Fail = func(op, id string) error {
		return fmt.Errorf("dial tcp 127.0.0.1:1: connection refused: %w", resource.ErrUnreachable)
	}
	values := map[string]string{}
	for i := range 8 {
		values[fmt.Sprintf("R%d", i)] = "v"
	}
	res, _ := deployWith(t, mkAssembly(values), openBackend(t), engine.NewRegistry(cloud), engine.Options{Concurrency: 1, NoRollback: true})
	if got := cloud.Calls(); got != 1 {
		t.Errorf("provider called %d times, want 1", got)
	}
	if len(res.Failures) != 8 {
		t.Fatalf("%d failures, want 8", len(res.Failures))
	}
	for _, f := range res.Failures[1:] {
		var pd *engine.ProviderDownError
		if !errors.As(f.Err, &pd) || !errors.Is(f.Err, resource.ErrUnreachable) {
			t.Errorf("%s: %v, want a ProviderDownError naming the first failure", f.LogicalID, f.Err)
		}
	}
}

// TestCrossStack: a stack reads another's output through {stackRef}; the output flows at deploy, and a
// failure in the first stack skips the second stack's resources, naming the stack, while an independent
// stack completes.
func TestCrossStack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	mk := func(netValue string) *assembly.Assembly {
		net := &assembly.Stack{ID: "Net", Outputs: map[string]*assembly.Output{
			"NetID": {Key: "NetID", Value: map[string]any{"ref": "N", "attr": "id"}, Path: "outputs.NetID"}},
			Resources: []*assembly.Resource{{LogicalID: "N", Type: enginetest.CloudType, Provider: "fake", Path: "resources.N",
				Properties: resource.Properties{"key": "n", "value": netValue}}}}
		app := &assembly.Stack{ID: "App", Dependencies: []string{"Net"}, Outputs: map[string]*assembly.Output{},
			Resources: []*assembly.Resource{{LogicalID: "S", Type: enginetest.CloudType, Provider: "fake", Path: "resources.S",
				Properties: resource.Properties{"key": "s", "value": map[string]any{"stackRef": "Net", "outputKey": "NetID"}}}}}
		other := &assembly.Stack{ID: "Other", Outputs: map[string]*assembly.Output{},
			Resources: []*assembly.Resource{{LogicalID: "O", Type: enginetest.CloudType, Provider: "fake", Path: "resources.O",
				Properties: resource.Properties{"key": "o", "value": "o"}}}}
		return &assembly.Assembly{Stacks: []*assembly.Stack{net, app, other}}
	}
	cloud := enginetest.NewCloud()
	reg := engine.NewRegistry(cloud)
	b := openBackend(t)
	res, rec := deploy(t, mk("v1"), b, reg, 4)
	if res.Err() != nil {
		t.Fatal(res.Err())
	}
	netSt, _ := b.GetStack(ctx, "Net")
	appSt, _ := b.GetStack(ctx, "App")
	if got, want := appSt.Resources["S"].Inputs["value"], netSt.Outputs["NetID"]; got != want || want == nil {
		t.Errorf("App/S value = %v, want Net's output NetID %v", got, want)
	}
	// The Net stack's completion comes before App's resources start.
	netDone, appStart := -1, -1
	for i, e := range rec.events {
		if e.Stack == "Net" && e.LogicalID == "N" && e.Status == engine.CreateComplete {
			netDone = i
		}
		if e.Stack == "App" && e.LogicalID == "S" && e.Status == engine.CreateInProgress && appStart < 0 {
			appStart = i
		}
	}
	if netDone < 0 || appStart < netDone {
		t.Errorf("App/S started (event %d) before Net/N completed (event %d)", appStart, netDone)
	}

	// Net fails on update: App's resource is skipped naming the stack, Other completes.
	netID := netSt.Resources["N"].PhysicalID
	cloud.Fail = func(op, id string) error {
		if op == "update" && id == netID {
			return enginetest.ErrInjected
		}
		return nil
	}
	a := mk("v2")
	a.Stacks[2].Resources[0].Properties["value"] = "o2"
	res, rec = deployWith(t, a, b, reg, engine.Options{NoRollback: true})
	var skipped, otherDone bool
	for _, e := range rec.events {
		if e.Stack == "App" && e.LogicalID == "S" && e.Status == engine.Skipped && strings.Contains(e.Reason, "stack Net did not complete") {
			skipped = true
		}
		if e.Stack == "Other" && e.LogicalID == "O" && e.Status == engine.UpdateComplete {
			otherDone = true
		}
	}
	if !skipped {
		t.Errorf("App/S was not skipped naming stack Net")
	}
	if !otherDone {
		t.Errorf("the independent stack Other did not complete its update")
	}
	if len(res.Failures) != 1 || res.Failures[0].Stack != "Net" {
		t.Errorf("failures = %+v, want exactly Net's", res.Failures)
	}
}

// TestSkippedStackDoesNotComplete deploys two stacks for the first time where the first one's only
// resource fails (a wrong API key): the second stack, all of whose resources were skipped, ends
// CREATE_FAILED naming the cause, in its events, its state and its deployment record. It used to end
// CREATE_COMPLETE with nothing deployed.
func TestSkippedStackDoesNotComplete(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	zones := &assembly.Stack{ID: "Zones", Outputs: map[string]*assembly.Output{
		"ZoneID": {Key: "ZoneID", Value: map[string]any{"ref": "Z", "attr": "id"}, Path: "outputs.ZoneID"}},
		Resources: []*assembly.Resource{fakeRes("Z", enginetest.CloudType, "z", "z")}}
	app := &assembly.Stack{ID: "App", Dependencies: []string{"Zones"}, Outputs: map[string]*assembly.Output{},
		Resources: []*assembly.Resource{{LogicalID: "W", Type: enginetest.CloudType, Provider: "fake", Path: "resources.W",
			Properties: resource.Properties{"key": "w", "value": map[string]any{"stackRef": "Zones", "outputKey": "ZoneID"}}}}}
	cloud := enginetest.NewCloud()
	cloud.Fail = func(op, id string) error { return fmt.Errorf("401 Unauthorized: %w", enginetest.ErrInjected) }
	b := openBackend(t)
	res, rec := deploy(t, &assembly.Assembly{Stacks: []*assembly.Stack{zones, app}}, b, engine.NewRegistry(cloud), 4)
	var appStatus engine.Status
	var appReason string
	for _, e := range rec.events {
		if e.Stack == "App" && e.Type == engine.StackType {
			appStatus, appReason = e.Status, e.Reason
		}
	}
	if appStatus != engine.CreateFailed || !strings.Contains(appReason, "stack Zones did not complete") {
		t.Errorf("App's last stack event = %s %q, want CREATE_FAILED naming stack Zones", appStatus, appReason)
	}
	st, _ := b.GetStack(ctx, "App")
	if st.Status != string(engine.CreateFailed) {
		t.Errorf("App's recorded status = %s, want CREATE_FAILED", st.Status)
	}
	if d := res.Deployments["App"]; d.Status != state.StatusFailed {
		t.Errorf("App's deployment = %s, want FAILED", d.Status)
	}
	if res.Counts[engine.Skipped] != 1 || res.Counts[engine.CreateComplete] != 0 {
		t.Errorf("counts = %v, want 1 skipped and nothing created", res.Counts)
	}
}

// TestSerialKeys declares that changes of objects with the same "group" run one at a time (as Hetzner
// Cloud accepts one action at a time per network): 20 resources in two groups, at concurrency 10, never
// have more than one call in flight per group, and the two groups still run side by side.
func TestSerialKeys(t *testing.T) {
	t.Parallel()
	cloud := enginetest.NewCloud()
	cloud.Latency = 3 * time.Millisecond
	cloud.Serialize = []resource.SerialKey{{Group: "net", Property: "group"}}
	var mu sync.Mutex
	inGroup, maxInGroup := map[string]int{}, map[string]int{}
	groupOf := map[string]string{}
	var rs []*assembly.Resource
	for i := range 20 {
		id, g := fmt.Sprintf("R%02d", i), []string{"g1", "g2"}[i%2]
		r := fakeRes(id, enginetest.CloudType, "k"+id, "v")
		r.Properties["group"] = g
		groupOf[id] = g
		rs = append(rs, r)
	}
	cloud.Fail = func(op, id string) error {
		g := groupOf[id]
		mu.Lock()
		inGroup[g]++
		maxInGroup[g] = max(maxInGroup[g], inGroup[g])
		mu.Unlock()
		time.Sleep(2 * time.Millisecond)
		mu.Lock()
		inGroup[g]--
		mu.Unlock()
		return nil
	}
	res, _ := deploy(t, oneStack(rs...), openBackend(t), engine.NewRegistry(cloud), 10)
	if res.Err() != nil {
		t.Fatal(res.Err())
	}
	if diff := cmp.Diff(map[string]int{"g1": 1, "g2": 1}, maxInGroup); diff != "" {
		t.Errorf("most calls in flight per group (-want +got):\n%s", diff)
	}
	if got := cloud.MaxInFlight(); got != 2 {
		t.Errorf("most calls in flight = %d, want 2 (one per group)", got)
	}
}

// TestStateOnlyProvider deploys 2,000 independent resources of a provider that declares StateOnly (its
// objects exist only in state, like Cdkx::Core::Data) at --concurrency 1: its calls take no concurrency
// slot, so more than one runs at once, but never more than the walker's cap on visits (8 × 1 + 256), and
// no pending record (CREATE_IN_PROGRESS) is written before them.
func TestStateOnlyProvider(t *testing.T) {
	t.Parallel()
	var inFlight, most atomic.Int64
	p := &enginetest.Provider{
		InfoValue: resource.ProviderInfo{Name: "local", StateOnly: true,
			Schemas: []resource.Schema{{Type: "Local::Test::Value", Properties: map[string]resource.PropertySchema{"v": {Kind: resource.KindAny}}}}},
		CreateFunc: func(_ context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
			n := inFlight.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(2 * time.Millisecond)
			inFlight.Add(-1)
			return resource.CreateResult{PhysicalID: req.LogicalID}, nil
		},
	}
	st := &assembly.Stack{ID: "S", Outputs: map[string]*assembly.Output{}}
	for i := range 2000 {
		id := fmt.Sprintf("V%04d", i)
		st.Resources = append(st.Resources, &assembly.Resource{LogicalID: id, Type: "Local::Test::Value", Provider: "local",
			Path: "resources." + id, Properties: resource.Properties{"v": i}})
	}
	res, rec := deploy(t, &assembly.Assembly{Stacks: []*assembly.Stack{st}}, openBackend(t), engine.NewRegistry(p), 1)
	if res.Err() != nil {
		t.Fatal(res.Err())
	}
	t.Logf("most calls at once: %d", most.Load())
	if got := most.Load(); got <= 1 || got > 8*1+256 {
		t.Errorf("most calls at once = %d, want more than 1 (no slot) and at most 264 (the walker's cap)", got)
	}
	for _, e := range rec.events {
		if e.LogicalID != "" && e.Status == engine.CreateInProgress {
			t.Fatalf("%s: a pending record (CREATE_IN_PROGRESS) was written for a state-only provider", e.LogicalID)
		}
	}
	if res.Counts[engine.CreateComplete] != 2000 {
		t.Errorf("created %d, want 2000", res.Counts[engine.CreateComplete])
	}
}

// TestPartialCreateIsNeverOrphaned: a create that made its object but could not finish it (a server whose
// start failed) returns the object's physical ID with the error; state keeps the object, and the next
// deploy deletes it and creates a new one, so the provider ends with exactly the objects state records.
func TestPartialCreateIsNeverOrphaned(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	live := map[string]bool{}
	n := 0
	failNext := true
	p := &enginetest.Provider{
		InfoValue: resource.ProviderInfo{Name: "p", CanLocate: true,
			Schemas: []resource.Schema{{Type: "P::Test::Server", Properties: map[string]resource.PropertySchema{"v": {Kind: resource.KindAny}}}}},
		CreateFunc: func(_ context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
			mu.Lock()
			defer mu.Unlock()
			n++
			id := fmt.Sprintf("srv-%d", n)
			live[id] = true
			if failNext {
				failNext = false
				return resource.CreateResult{PhysicalID: id}, errors.New("start action failed")
			}
			return resource.CreateResult{PhysicalID: id, Outputs: resource.Properties{}}, nil
		},
		DeleteFunc: func(_ context.Context, req resource.DeleteRequest) error {
			mu.Lock()
			defer mu.Unlock()
			delete(live, req.PhysicalID)
			return nil
		},
	}
	reg := engine.NewRegistry(p)
	b := openBackend(t)
	a := oneStack(&assembly.Resource{LogicalID: "S", Type: "P::Test::Server", Provider: "p", Path: "resources.S",
		Properties: resource.Properties{"v": 1}})
	res, rec := deploy(t, a, b, reg, 1)
	if res.Err() == nil {
		t.Fatal("first deploy succeeded, want the create to fail")
	}
	failed := false
	for _, e := range rec.events {
		failed = failed || (e.Status == engine.CreateFailed && e.PhysicalID == "srv-1")
	}
	if !failed {
		t.Errorf("no CREATE_FAILED event names srv-1: %v", rec.events)
	}
	if got := objectsInState(t, b, "S"); len(got) != 1 || got["srv-1"] == nil {
		t.Errorf("after the failed create, state records %v, want srv-1 (to delete)", got)
	}
	validState(t, b, "S")
	res, _ = deploy(t, a, b, reg, 1)
	if res.Err() != nil {
		t.Fatal(res.Err())
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(map[string]bool{"srv-2": true}, live); diff != "" {
		t.Errorf("objects at the provider after the second deploy (-want +got):\n%s", diff)
	}
	if got := objectsInState(t, b, "S"); len(got) != 1 || got["srv-2"] == nil {
		t.Errorf("state records %v, want only srv-2", got)
	}
}
