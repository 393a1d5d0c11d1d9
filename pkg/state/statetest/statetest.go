// Package statetest is the contract test suite that every state.Backend implementation passes.
package statetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// Run runs the contract suite: one parallel subtest per behaviour, each against a backend of its own.
// newBackend must return a new, empty backend every time it is called; Run closes it when the subtest
// ends (so Close must tolerate a second call if newBackend also registers one). Options adapt the suite to
// a backend that fills in some values itself (a state service: ServerClock, RecordsUser).
//
// Times given to the backend have millisecond precision, and times are compared as instants
// (time.Time.Equal), so a backend may return them in any location. Empty and nil slices and maps are
// equal. Numbers in properties must come back as json.Number, as pkg/resource requires.
func Run(t *testing.T, newBackend func(t *testing.T) state.Backend, opts ...Option) {
	t.Helper()
	c := &config{}
	for _, o := range opts {
		o(c)
	}
	tests := []struct {
		name string
		run  func(t *testing.T, b state.Backend)
	}{
		{"EmptyStack", testEmptyStack},
		{"CommitAndReadBack", testCommitAndReadBack},
		{"VersionsPerStack", testVersionsPerStack},
		{"Events", testEvents},
		{"Deployments", c.testDeployments},
		{"ResolveDeploymentID", c.testResolveDeploymentID},
		{"ReviewComments", c.testReviewComments},
		{"DeploymentPages", c.testDeploymentPages},
		{"DeploymentTransitions", c.testDeploymentTransitions},
		{"DeploymentClaims", c.testDeploymentClaims},
		{"FinishDeployment", c.testFinishDeployment},
		{"AbortRequest", c.testAbortRequest},
		{"DeadWaiters", c.testDeadWaiters},
		{"ClaimNext", c.testClaimNext},
		{"ConcurrentClaims", c.testConcurrentClaims},
		{"Locks", testLocks},
		{"ConcurrentCommits", testConcurrentCommits},
		{"ConcurrentCommitsOfStacks", testConcurrentCommitsOfStacks},
		{"InvalidCommitIsAtomic", testInvalidCommitIsAtomic},
		{"CancelledContext", testCancelledContext},
		{"ReturnedStackIsACopy", testReturnedStackIsACopy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := newBackend(t)
			t.Cleanup(func() {
				if err := b.Close(); err != nil {
					t.Errorf("Close() = %v", err)
				}
			})
			tt.run(t, b)
		})
	}
}

// base is the time test fixtures start from.
var base = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// at returns base plus ms milliseconds.
func at(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }

// cmpOpts compare state values the way the contract promises to keep them.
var cmpOpts = cmp.Options{
	cmpopts.EquateEmpty(),
	cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) }),
}

// stackOpts also ignore Stack.UpdatedAt, which the backend stamps itself.
var stackOpts = cmp.Options{cmpOpts, cmpopts.IgnoreFields(state.Stack{}, "UpdatedAt")}

// fixture returns a resource with every kind of property value; n varies its content.
func fixture(id string, n int) *state.Resource {
	return &state.Resource{
		LogicalID:  id,
		Type:       "Cdkx::Test::Thing",
		Provider:   "test",
		PhysicalID: "phys-" + id + "-" + strconv.Itoa(n),
		Inputs: resource.Properties{
			"name":   id,
			"size":   json.Number(strconv.Itoa(n)),
			"ratio":  json.Number("1.5"),
			"flags":  []any{true, false, nil, "x", json.Number("-3")},
			"nested": map[string]any{"deep": map[string]any{"list": []any{json.Number("1"), "two"}}},
			"html":   "<a & b>",
		},
		Outputs: resource.Properties{"crn": "crn:test:" + id, "port": json.Number("8080")},
		Status:  "CREATE_COMPLETE",
		// Distinct per n, and in millisecond precision.
		UpdatedAt: at(n),
	}
}

// fullFixture returns a resource with dependencies, a pending operation and replaced objects too.
func fullFixture(id string, n int, deps ...string) *state.Resource {
	r := fixture(id, n)
	r.Dependencies = deps
	r.Pending = &state.PendingOperation{
		Op:         "updating",
		Inputs:     resource.Properties{"size": json.Number("99")},
		PhysicalID: "phys-" + id,
		StartedAt:  at(n + 1),
	}
	r.Replaced = []state.Object{{
		Type: "Cdkx::Test::Thing", Provider: "test", PhysicalID: "old-" + id,
		Inputs:  resource.Properties{"size": json.Number("1")},
		Outputs: resource.Properties{"crn": "crn:test:old"},
	}}
	return r
}

func put(r *state.Resource) state.Change { return state.Change{Kind: state.PutResource, Resource: r} }

func del(id string) state.Change { return state.Change{Kind: state.DeleteResource, LogicalID: id} }

func putStack(status string, outputs resource.Properties, deps ...string) state.Change {
	return state.Change{Kind: state.PutStack, Status: status, Outputs: outputs, Dependencies: deps}
}

// model is the expected state after changes: applied in memory with state.Stack.Apply, the reference rule.
func model(t *testing.T, s *state.Stack, changes []state.Change) *state.Stack {
	t.Helper()
	next := &state.Stack{
		Name: s.Name, Version: s.Version + 1, Status: s.Status, Outputs: s.Outputs,
		Dependencies: s.Dependencies, Resources: maps.Clone(s.Resources),
	}
	for _, c := range changes {
		if err := next.Apply(c); err != nil {
			t.Fatalf("model Apply(%+v) = %v", c, err)
		}
	}
	return next
}

func mustCommit(t *testing.T, b state.Backend, deploymentID, stack string, changes []state.Change, events []state.Event) int64 {
	t.Helper()
	v, err := b.Commit(t.Context(), deploymentID, stack, changes, events)
	if err != nil {
		t.Fatalf("Commit(%q, %q) = %v", deploymentID, stack, err)
	}
	return v
}

func mustGetStack(t *testing.T, b state.Backend, name string) *state.Stack {
	t.Helper()
	s, err := b.GetStack(t.Context(), name)
	if err != nil {
		t.Fatalf("GetStack(%q) = %v", name, err)
	}
	return s
}

func mustEvents(t *testing.T, b state.Backend, deploymentID string) []state.Event {
	t.Helper()
	evs, err := b.Events(t.Context(), deploymentID)
	if err != nil {
		t.Fatalf("Events(%q) = %v", deploymentID, err)
	}
	return evs
}

func testEmptyStack(t *testing.T, b state.Backend) {
	ctx := t.Context()
	if diff := cmp.Diff(state.NewStack("web"), mustGetStack(t, b, "web"), cmpOpts); diff != "" {
		t.Errorf("GetStack(web) of a new backend (-want +got):\n%s", diff)
	}
	names, err := b.ListStacks(ctx)
	if err != nil {
		t.Fatalf("ListStacks() = %v", err)
	}
	if len(names) != 0 {
		t.Errorf("ListStacks() = %q, want none", names)
	}
	got, err := b.GetStackVersion(ctx, "web", 0)
	if err != nil {
		t.Fatalf("GetStackVersion(web, 0) = %v", err)
	}
	if diff := cmp.Diff(state.NewStack("web"), got, cmpOpts); diff != "" {
		t.Errorf("GetStackVersion(web, 0) (-want +got):\n%s", diff)
	}
	if _, err := b.GetStackVersion(ctx, "web", 1); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("GetStackVersion(web, 1) = %v, want ErrNotFound", err)
	}
	if _, err := b.GetDeployment(ctx, "nope"); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("GetDeployment(nope) = %v, want ErrNotFound", err)
	}
	deps, err := b.ListDeployments(ctx, state.DeploymentFilter{})
	if err != nil {
		t.Fatalf("ListDeployments() = %v", err)
	}
	if len(deps) != 0 {
		t.Errorf("ListDeployments() = %v, want none", deps)
	}
	if evs := mustEvents(t, b, "nope"); len(evs) != 0 {
		t.Errorf("Events(nope) = %v, want none", evs)
	}
}

func testCommitAndReadBack(t *testing.T, b state.Backend) {
	ctx := t.Context()
	steps := []struct {
		name    string
		changes []state.Change
	}{
		{"put a", []state.Change{put(fixture("a", 1))}},
		{"put b", []state.Change{put(fixture("b", 2))}},
		{"put c with everything", []state.Change{put(fullFixture("c", 3, "a", "b"))}},
		{"delete b", []state.Change{del("b")}},
		{"put stack", []state.Change{putStack("UPDATE_IN_PROGRESS",
			resource.Properties{"url": "https://x", "n": json.Number("7")}, "net", "shared")}},
		{"update a", []state.Change{put(fullFixture("a", 6, "c"))}},
		{"no changes", nil},
		{"delete absent", []state.Change{del("zzz")}},
		{"several at once", []state.Change{
			put(fixture("d", 9)), del("c"), put(fixture("b", 10)), put(fixture("d", 11)),
			putStack("UPDATE_COMPLETE", nil),
		}},
		{"delete all", []state.Change{del("a"), del("b"), del("d")}},
	}

	want := state.NewStack("web")
	versions := []*state.Stack{want}
	start := time.Now().Add(-time.Minute)
	for i, step := range steps {
		v := mustCommit(t, b, "dep-1", "web", step.changes, nil)
		if v != int64(i+1) {
			t.Fatalf("step %q: Commit() = version %d, want %d", step.name, v, i+1)
		}
		want = model(t, want, step.changes)
		versions = append(versions, want)
		got := mustGetStack(t, b, "web")
		if diff := cmp.Diff(want, got, stackOpts); diff != "" {
			t.Fatalf("step %q: GetStack(web) (-want +got):\n%s", step.name, diff)
		}
		if got.UpdatedAt.Before(start) {
			t.Errorf("step %q: GetStack(web).UpdatedAt = %v, want a recent time", step.name, got.UpdatedAt)
		}
	}

	latest := mustGetStack(t, b, "web")
	for v, want := range versions {
		t.Run(fmt.Sprintf("version %d", v), func(t *testing.T) {
			got, err := b.GetStackVersion(ctx, "web", int64(v))
			if err != nil {
				t.Fatalf("GetStackVersion(web, %d) = %v", v, err)
			}
			if diff := cmp.Diff(want, got, stackOpts); diff != "" {
				t.Errorf("GetStackVersion(web, %d) (-want +got):\n%s", v, diff)
			}
		})
	}
	got, err := b.GetStackVersion(ctx, "web", latest.Version)
	if err != nil {
		t.Fatalf("GetStackVersion(web, %d) = %v", latest.Version, err)
	}
	if diff := cmp.Diff(latest, got, cmpOpts); diff != "" {
		t.Errorf("GetStackVersion(web, latest) differs from GetStack(web), UpdatedAt included (-want +got):\n%s", diff)
	}
	if _, err := b.GetStackVersion(ctx, "web", int64(len(steps)+1)); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("GetStackVersion(web, %d) = %v, want ErrNotFound", len(steps)+1, err)
	}
	names, err := b.ListStacks(ctx)
	if err != nil {
		t.Fatalf("ListStacks() = %v", err)
	}
	if diff := cmp.Diff([]string{"web"}, names); diff != "" {
		t.Errorf("ListStacks() (-want +got):\n%s", diff)
	}
}

func testVersionsPerStack(t *testing.T, b state.Backend) {
	ctx := t.Context()
	commits := []struct {
		stack   string
		changes []state.Change
		want    int64
	}{
		{"beta", []state.Change{put(fixture("x", 1))}, 1},
		{"alpha", nil, 1},
		{"beta", []state.Change{put(fixture("y", 2)), put(fixture("z", 3)), del("x")}, 2},
		{"beta", nil, 3},
		{"alpha", []state.Change{put(fixture("x", 4))}, 2},
		{"gamma", []state.Change{putStack("CREATE_COMPLETE", nil)}, 1},
	}
	for _, c := range commits {
		if got := mustCommit(t, b, "", c.stack, c.changes, nil); got != c.want {
			t.Errorf("Commit(%s, %d changes) = version %d, want %d", c.stack, len(c.changes), got, c.want)
		}
	}
	names, err := b.ListStacks(ctx)
	if err != nil {
		t.Fatalf("ListStacks() = %v", err)
	}
	if diff := cmp.Diff([]string{"alpha", "beta", "gamma"}, names); diff != "" {
		t.Errorf("ListStacks() (-want +got):\n%s", diff)
	}
	for name, want := range map[string]int64{"alpha": 2, "beta": 3, "gamma": 1, "delta": 0} {
		if got := mustGetStack(t, b, name).Version; got != want {
			t.Errorf("GetStack(%s).Version = %d, want %d", name, got, want)
		}
		if got, err := b.StackVersion(ctx, name); err != nil || got != want {
			t.Errorf("StackVersion(%s) = %d, %v; want %d", name, got, err, want)
		}
	}
}

func testEvents(t *testing.T, b state.Backend) {
	ev := func(seq int64, ms int, id, status string) state.Event {
		return state.Event{Seq: seq, Time: at(ms), LogicalID: id, Type: "Cdkx::Test::Thing", Status: status}
	}
	first := []state.Event{ev(0, 1, "a", "CREATE_IN_PROGRESS"), ev(0, 2, "b", "CREATE_IN_PROGRESS")}
	mustCommit(t, b, "d1", "web", []state.Change{put(fixture("a", 1))}, first)
	for i, e := range first {
		if e.Seq != 0 {
			t.Errorf("Commit changed the caller's event %d: Seq = %d, want 0", i, e.Seq)
		}
	}
	mustCommit(t, b, "d1", "web", nil, []state.Event{
		{Seq: 0, Time: at(3), LogicalID: "a", Status: "CREATE_FAILED", Reason: "boom: quota exceeded"},
		{Seq: 0, Time: at(4), Stack: "web", DeploymentID: "d1", Status: "UPDATE_ROLLBACK_IN_PROGRESS"},
	})
	// Explicit sequence numbers are kept; later zero ones continue after the highest.
	mustCommit(t, b, "d2", "web", nil, []state.Event{ev(10, 5, "a", "DELETE_IN_PROGRESS"), ev(11, 6, "a", "DELETE_COMPLETE")})
	mustCommit(t, b, "d2", "web", nil, []state.Event{ev(0, 7, "", "UPDATE_COMPLETE")})
	// Another stack's deployment numbers its own events.
	mustCommit(t, b, "d3", "api", nil, []state.Event{ev(0, 8, "", "UPDATE_COMPLETE")})

	full := func(e state.Event, dep, stack string, seq int64) state.Event {
		e.DeploymentID, e.Stack, e.Seq = dep, stack, seq
		return e
	}
	tests := []struct {
		deployment string
		want       []state.Event
	}{
		{"d1", []state.Event{
			full(first[0], "d1", "web", 1),
			full(first[1], "d1", "web", 2),
			{DeploymentID: "d1", Seq: 3, Time: at(3), Stack: "web", LogicalID: "a", Status: "CREATE_FAILED", Reason: "boom: quota exceeded"},
			{DeploymentID: "d1", Seq: 4, Time: at(4), Stack: "web", Status: "UPDATE_ROLLBACK_IN_PROGRESS"},
		}},
		{"d2", []state.Event{
			full(ev(10, 5, "a", "DELETE_IN_PROGRESS"), "d2", "web", 10),
			full(ev(11, 6, "a", "DELETE_COMPLETE"), "d2", "web", 11),
			full(ev(0, 7, "", "UPDATE_COMPLETE"), "d2", "web", 12),
		}},
		{"d3", []state.Event{full(ev(0, 8, "", "UPDATE_COMPLETE"), "d3", "api", 1)}},
		{"unknown", nil},
	}
	for _, tt := range tests {
		t.Run(tt.deployment, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, mustEvents(t, b, tt.deployment), cmpOpts); diff != "" {
				t.Errorf("Events(%q) (-want +got):\n%s", tt.deployment, diff)
			}
		})
	}
}

func testLocks(t *testing.T, b state.Backend) {
	ctx := t.Context()
	a := state.LockInfo{ID: "lock-a", Stack: "web", Operation: "deploy", User: "alice", Host: "ci-7", PID: 4242,
		StartedAt: at(1), HeartbeatAt: at(2)}
	bb := state.LockInfo{ID: "lock-b", Stack: "web", Operation: "destroy", User: "bob", Host: "laptop", PID: 7,
		StartedAt: at(3), HeartbeatAt: at(3)}

	wantLocked := func(t *testing.T, err error, holder state.LockInfo) {
		t.Helper()
		var le *state.LockedError
		if !errors.As(err, &le) {
			t.Fatalf("got error %v, want *state.LockedError", err)
		}
		if diff := cmp.Diff(holder, le.Holder, cmpOpts); diff != "" {
			t.Errorf("LockedError.Holder (-want +got):\n%s", diff)
		}
	}

	if err := b.Lock(ctx, a); err != nil {
		t.Fatalf("Lock(a) = %v", err)
	}
	if err := b.Lock(ctx, a); err != nil {
		t.Fatalf("Lock(a) again (refresh) = %v", err)
	}
	wantLocked(t, b.Lock(ctx, bb), a)

	// Another stack's lock is independent.
	other := bb
	other.Stack = "api"
	if err := b.Lock(ctx, other); err != nil {
		t.Fatalf("Lock(b on api) = %v", err)
	}

	if err := b.Heartbeat(ctx, "web", "lock-a", at(20)); err != nil {
		t.Fatalf("Heartbeat(web, a) = %v", err)
	}
	a.HeartbeatAt = at(20)
	wantLocked(t, b.Lock(ctx, bb), a)
	// A heartbeat from a non-holder changes nothing and tells the caller who holds the lock.
	wantLocked(t, b.Heartbeat(ctx, "web", "lock-b", at(30)), a)

	if err := b.Unlock(ctx, "web", "lock-b"); err != nil {
		t.Fatalf("Unlock(web, b) by a non-holder = %v, want nil (no-op)", err)
	}
	wantLocked(t, b.Lock(ctx, bb), a)

	if err := b.Unlock(ctx, "web", "lock-a"); err != nil {
		t.Fatalf("Unlock(web, a) = %v", err)
	}
	if err := b.Heartbeat(ctx, "web", "lock-a", at(40)); err == nil {
		t.Errorf("Heartbeat(web, a) after Unlock = nil, want an error")
	}
	if err := b.Unlock(ctx, "web", "lock-a"); err != nil {
		t.Errorf("Unlock(web, a) again = %v, want nil", err)
	}
	if err := b.Lock(ctx, bb); err != nil {
		t.Fatalf("Lock(b) after Unlock(a) = %v", err)
	}
	wantLocked(t, b.Lock(ctx, a), bb)

	m := state.LockInfo{ID: "lock-m", Stack: "zz", Operation: "deploy", User: "carol", Host: "h", PID: 9,
		Machine: "boot-1:pidns-2", StartedAt: at(5), HeartbeatAt: at(6)}
	if err := b.Lock(ctx, m); err != nil {
		t.Fatalf("Lock(m) = %v", err)
	}
	locks, err := b.Locks(ctx)
	if err != nil {
		t.Fatalf("Locks() = %v", err)
	}
	if diff := cmp.Diff([]state.LockInfo{other, bb, m}, locks, cmpOpts); diff != "" {
		t.Errorf("Locks() (-want +got):\n%s", diff)
	}
}

func testConcurrentCommits(t *testing.T, b state.Backend) {
	const workers, perWorker = 10, 10
	var mu sync.Mutex // guards versions
	var versions []int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				id := fmt.Sprintf("r-%d-%d", w, i)
				v, err := b.Commit(context.Background(), "d1", "web",
					[]state.Change{put(fixture(id, w*perWorker+i))},
					[]state.Event{{Time: at(i), LogicalID: id, Status: "CREATE_COMPLETE"}})
				if err != nil {
					t.Errorf("Commit(%s) = %v", id, err)
					return
				}
				mu.Lock()
				versions = append(versions, v)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	slices.Sort(versions)
	want := make([]int64, workers*perWorker)
	for i := range want {
		want[i] = int64(i + 1)
	}
	if diff := cmp.Diff(want, versions); diff != "" {
		t.Errorf("versions returned by concurrent Commits, sorted (-want +got):\n%s", diff)
	}
	s := mustGetStack(t, b, "web")
	if s.Version != workers*perWorker || len(s.Resources) != workers*perWorker {
		t.Errorf("GetStack(web) = version %d with %d resources, want %d and %d",
			s.Version, len(s.Resources), workers*perWorker, workers*perWorker)
	}
	replayed, err := b.GetStackVersion(t.Context(), "web", s.Version)
	if err != nil {
		t.Fatalf("GetStackVersion(web, %d) = %v", s.Version, err)
	}
	if diff := cmp.Diff(s, replayed, cmpOpts); diff != "" {
		t.Errorf("GetStackVersion(web, latest) (-want GetStack +got):\n%s", diff)
	}
	evs := mustEvents(t, b, "d1")
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("Events(d1)[%d].Seq = %d, want %d", i, e.Seq, i+1)
		}
	}
	if len(evs) != workers*perWorker {
		t.Errorf("len(Events(d1)) = %d, want %d", len(evs), workers*perWorker)
	}
}

// testConcurrentCommitsOfStacks commits to several stacks at once (a store that groups commits writes them
// in one transaction) beside a stack nobody touches: each stack's versions count its own commits, 1..n
// with none skipped, and the untouched stack keeps its version (README: a stack's version grows by one
// with every committed step of that stack, not of others).
func testConcurrentCommitsOfStacks(t *testing.T, b state.Backend) {
	const stacks, perStack = 4, 12
	mustCommit(t, b, "", "untouched", []state.Change{put(fixture("u", 1))}, nil)
	var mu sync.Mutex // guards got
	got := map[string][]int64{}
	var wg sync.WaitGroup
	for s := range stacks {
		name := fmt.Sprintf("s%d", s)
		for w := range 2 {
			wg.Go(func() {
				for i := range perStack / 2 {
					v, err := b.Commit(context.Background(), "", name, []state.Change{put(fixture(fmt.Sprintf("r%d-%d", w, i), i))}, nil)
					if err != nil {
						t.Errorf("Commit(%s) = %v", name, err)
						return
					}
					mu.Lock()
					got[name] = append(got[name], v)
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	want := make([]int64, perStack)
	for i := range want {
		want[i] = int64(i + 1)
	}
	for name, vs := range got {
		slices.Sort(vs)
		if diff := cmp.Diff(want, vs); diff != "" {
			t.Errorf("versions of stack %s returned by concurrent Commits, sorted (-want +got):\n%s", name, diff)
		}
		if v, err := b.StackVersion(t.Context(), name); err != nil || v != perStack {
			t.Errorf("StackVersion(%s) = %d, %v; want %d", name, v, err, perStack)
		}
	}
	for range 3 {
		mustCommit(t, b, "", "s0", nil, nil)
		if v, err := b.StackVersion(t.Context(), "untouched"); err != nil || v != 1 {
			t.Fatalf("StackVersion(untouched) = %d, %v after commits to other stacks; want 1", v, err)
		}
	}
	if s := mustGetStack(t, b, "untouched"); s.Version != 1 {
		t.Errorf("GetStack(untouched).Version = %d, want 1", s.Version)
	}
}

func testInvalidCommitIsAtomic(t *testing.T, b state.Backend) {
	ctx := t.Context()
	mustCommit(t, b, "d1", "web", []state.Change{put(fixture("a", 1)), putStack("CREATE_COMPLETE", nil)},
		[]state.Event{{Time: at(1), Status: "CREATE_COMPLETE"}})
	before := mustGetStack(t, b, "web")
	noID := fixture("", 2)

	tests := []struct {
		name    string
		stack   string
		changes []state.Change
	}{
		{"put without resource", "web", []state.Change{put(fixture("b", 2)), del("a"), {Kind: state.PutResource}}},
		{"put without logical id", "web", []state.Change{put(fixture("b", 2)), put(noID)}},
		{"delete without logical id", "web", []state.Change{del("a"), {Kind: state.DeleteResource}}},
		{"unknown kind", "web", []state.Change{putStack("X", nil), {Kind: "rename", LogicalID: "a"}}},
		{"empty stack name", "", []state.Change{put(fixture("b", 2))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := b.Commit(ctx, "d1", tt.stack, tt.changes, []state.Event{{Time: at(2), Status: "BAD"}})
			if err == nil {
				t.Fatalf("Commit(%s) = nil error, want one", tt.name)
			}
			if diff := cmp.Diff(before, mustGetStack(t, b, "web"), cmpOpts); diff != "" {
				t.Errorf("GetStack(web) after a failed Commit (-want +got):\n%s", diff)
			}
			if n := len(mustEvents(t, b, "d1")); n != 1 {
				t.Errorf("len(Events(d1)) after a failed Commit = %d, want 1", n)
			}
			if _, err := b.GetStackVersion(ctx, "web", 2); !errors.Is(err, state.ErrNotFound) {
				t.Errorf("GetStackVersion(web, 2) after a failed Commit = %v, want ErrNotFound", err)
			}
		})
	}
	if v := mustCommit(t, b, "d1", "web", []state.Change{put(fixture("b", 3))}, nil); v != 2 {
		t.Errorf("Commit() after failed Commits = version %d, want 2", v)
	}
}

func testCancelledContext(t *testing.T, b state.Backend) {
	mustCommit(t, b, "d1", "web", []state.Change{put(fixture("a", 1))}, nil)
	before := mustGetStack(t, b, "web")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := b.Commit(ctx, "d1", "web", []state.Change{put(fixture("b", 2))}, nil); err == nil {
		t.Errorf("Commit(cancelled context) = nil error, want one")
	}
	if diff := cmp.Diff(before, mustGetStack(t, b, "web"), cmpOpts); diff != "" {
		t.Errorf("GetStack(web) after a cancelled Commit (-want +got):\n%s", diff)
	}
}

func testReturnedStackIsACopy(t *testing.T, b state.Backend) {
	changes := func() []state.Change {
		return []state.Change{put(fixture("a", 1)), putStack("CREATE_COMPLETE", resource.Properties{"k": "v"})}
	}
	committed := changes()
	mustCommit(t, b, "d1", "web", committed, nil)
	// The expectation is built from fresh values, so that it shares nothing with the backend.
	want := model(t, state.NewStack("web"), changes())

	// Mutating what the caller committed or got back must not change what is stored.
	committed[0].Resource.Inputs["name"] = "changed"
	committed[1].Outputs["k"] = "changed"
	got := mustGetStack(t, b, "web")
	got.Resources["a"].Inputs["name"] = "changed"
	got.Outputs["k"] = "changed"
	delete(got.Resources, "a")

	if diff := cmp.Diff(want, mustGetStack(t, b, "web"), stackOpts); diff != "" {
		t.Errorf("GetStack(web) after mutating earlier results (-want +got):\n%s", diff)
	}
}
