package statetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

// Option adapts the suite to a backend that fills in some deployment values itself.
type Option func(*config)

// config is what the options set.
type config struct {
	// serverClock: the backend stamps deployment times with its own clock (ServerClock).
	serverClock bool
	// user: the backend records this name as who did what (RecordsUser); "" when it keeps the caller's.
	user string
}

// ServerClock tells the suite that the backend stamps deployment times (CreatedAt, StartedAt, HeartbeatAt,
// FinishedAt) with its own clock instead of the times the caller passes: such times are then only checked
// to be set or unset, and a heartbeat is made dead by waiting state.DeadAfter (about 11 s) instead of by
// passing an old time.
func ServerClock() Option { return func(c *config) { c.serverClock = true } }

// RecordsUser tells the suite that the backend records name as who created, approved, rejected or
// aborted a deployment (a state service records its API token's name), whatever the caller sent.
func RecordsUser(name string) Option { return func(c *config) { c.user = name } }

// cmp returns the options that compare deployments as the backend promises to keep them.
func (c *config) cmp() cmp.Options {
	if c.serverClock {
		return cmp.Options{cmpopts.EquateEmpty(), cmp.Comparer(func(a, b time.Time) bool { return a.IsZero() == b.IsZero() })}
	}
	return cmpOpts
}

// expect returns d as the backend records it: with the backend's user as who did what, when it records
// its own.
func (c *config) expect(d state.Deployment) state.Deployment {
	if c.user == "" {
		return d
	}
	for _, who := range []*string{&d.CreatedBy, &d.ApprovedBy, &d.RejectedBy, &d.AbortedBy} {
		if *who != "" {
			*who = c.user
		}
	}
	return d
}

// newDeployment returns a deployment of stack to create, with every field a caller sets filled in; ms
// varies its creation time.
func newDeployment(id, stack string, status state.DeploymentStatus, ms int) *state.Deployment {
	snapshot := fmt.Appendf(nil, `{"manifest":{"stacks":[%q]},"templates":{%q:{"id":%q}}}`, stack, stack, id)
	return &state.Deployment{
		ID: id, Stack: stack, Kind: state.KindDeploy, Status: status,
		Message: "change " + id, CreatedBy: "alice@ci-7", CdkxVersion: "0.1.0",
		Snapshot:     snapshot,
		SnapshotHash: state.SnapshotHash(snapshot),
		Plan: &state.Plan{Create: 1, Update: 1, Same: 3, Steps: []state.PlanStep{
			{Resource: stack + "/A", Type: "Cdkx::Test::Thing", Op: "create", Digest: "da-" + id},
			{Resource: stack + "/B", Type: "Cdkx::Test::Thing", Op: "update", Paths: []string{"properties.size", "properties.ttl"}, Digest: "db-" + id},
		}, SnapshotHash: state.SnapshotHash(snapshot)},
		StateVersion: 4,
		CreatedAt:    at(ms),
	}
}

// waiting returns d with a process attached (a heartbeat at ms).
func waiting(d *state.Deployment, ms int) *state.Deployment {
	d.HeartbeatAt = at(ms)
	return d
}

// listed returns d as lists return it: without its snapshot.
func listed(d state.Deployment) state.Deployment {
	d.Snapshot = nil
	return d
}

// queued is d as the queue's frequent reads return it (HeartbeatDeployments, QueuedError.Ahead):
// without snapshot, plan or message.
func queued(d state.Deployment) state.Deployment {
	d.Snapshot, d.Plan, d.Message = nil, nil, ""
	return d
}

func mustCreate(t *testing.T, b state.Backend, ds ...*state.Deployment) {
	t.Helper()
	if err := b.CreateDeployments(t.Context(), ds); err != nil {
		t.Fatalf("CreateDeployments(%s) = %v", ids(ds), err)
	}
}

// ids names deployments in messages.
func ids(ds []*state.Deployment) string {
	var out []string
	for _, d := range ds {
		out = append(out, d.ID)
	}
	return strings.Join(out, ", ")
}

func mustGetDeployment(t *testing.T, b state.Backend, id string) *state.Deployment {
	t.Helper()
	d, err := b.GetDeployment(t.Context(), id)
	if err != nil {
		t.Fatalf("GetDeployment(%s) = %v", id, err)
	}
	return d
}

// check compares the stored deployment want.ID with want (snapshot included).
func (c *config) check(t *testing.T, b state.Backend, want state.Deployment) {
	t.Helper()
	want = c.expect(want)
	if diff := cmp.Diff(&want, mustGetDeployment(t, b, want.ID), c.cmp()); diff != "" {
		t.Errorf("GetDeployment(%s) (-want +got):\n%s", want.ID, diff)
	}
}

// checkReturned compares a deployment a method returned with want, its snapshot aside.
func (c *config) checkReturned(t *testing.T, call string, want state.Deployment, got *state.Deployment) {
	t.Helper()
	want = c.expect(want)
	if got == nil {
		t.Errorf("%s = nil deployment, want %s", call, want.ID)
		return
	}
	if diff := cmp.Diff(&want, got, c.cmp(), cmpopts.IgnoreFields(state.Deployment{}, "Snapshot")); diff != "" {
		t.Errorf("%s (-want +got):\n%s", call, diff)
	}
}

func mustClaim(t *testing.T, b state.Backend, runner string, now time.Time, ids ...string) {
	t.Helper()
	if err := b.ClaimDeployments(t.Context(), ids, runner, now); err != nil {
		t.Fatalf("ClaimDeployments(%q) = %v", ids, err)
	}
}

func mustFinish(t *testing.T, b state.Backend, id, runner string, status state.DeploymentStatus, finishedAt time.Time, version int64, errMsg string) {
	t.Helper()
	if err := b.FinishDeployment(t.Context(), id, runner, status, finishedAt, version, errMsg); err != nil {
		t.Fatalf("FinishDeployment(%s, %s) = %v", id, status, err)
	}
}

// running returns d as ClaimDeployments or ClaimNext leaves it.
func running(d state.Deployment, runner string, now time.Time) state.Deployment {
	d.Status, d.Runner, d.StartedAt, d.HeartbeatAt = state.StatusRunning, runner, now, now
	return d
}

// finished returns d as FinishDeployment leaves it.
func finished(d state.Deployment, status state.DeploymentStatus, at time.Time, version int64, errMsg string) state.Deployment {
	d.Status, d.FinishedAt, d.Version, d.Error = status, at, version, errMsg
	return d
}

// wantTransitionError checks that err is a *state.TransitionError for deployment id in status from, asked
// to become to.
func wantTransitionError(t *testing.T, call string, err error, id string, from, to state.DeploymentStatus) {
	t.Helper()
	var te *state.TransitionError
	if !errors.As(err, &te) {
		t.Errorf("%s = %v, want a *state.TransitionError (%s is %s)", call, err, id, from)
		return
	}
	want := state.TransitionError{ID: id, Status: from, To: to}
	if diff := cmp.Diff(want, *te); diff != "" {
		t.Errorf("%s: TransitionError (-want +got):\n%s", call, diff)
	}
}

// wantQueuedError checks that err is a *state.QueuedError for deployment id of stack at position, with
// ahead (without its snapshot) first in the queue.
func (c *config) wantQueuedError(t *testing.T, call string, err error, id, stack string, position int, ahead state.Deployment) {
	t.Helper()
	var qe *state.QueuedError
	if !errors.As(err, &qe) {
		t.Errorf("%s = %v, want a *state.QueuedError (%s at position %d)", call, err, id, position)
		return
	}
	want := state.QueuedError{ID: id, Stack: stack, Position: position, Ahead: c.expect(queued(ahead))}
	if diff := cmp.Diff(want, *qe, c.cmp()); diff != "" {
		t.Errorf("%s: QueuedError (-want +got):\n%s", call, diff)
	}
}

// testDeployments: creation (Seq in creation order across stacks, CreatedAt, refused creations that store
// nothing), reading back and filtered lists.
func (c *config) testDeployments(t *testing.T, b state.Backend) {
	ctx := t.Context()
	w1 := waiting(newDeployment("w1", "web", state.StatusPending, 1), 2)
	a1 := newDeployment("a1", "api", state.StatusProposed, 3)
	a1.Kind, a1.Plan, a1.StateVersion = state.KindRefresh, nil, 0
	w2 := newDeployment("w2", "web", state.StatusApproved, 4)
	w2.Plan.Steps = nil
	mustCreate(t, b, w1, a1, w2)
	if w1.Seq < 1 || a1.Seq <= w1.Seq || w2.Seq <= a1.Seq {
		t.Errorf("CreateDeployments(w1, a1, w2) set Seq %d, %d, %d; want increasing from 1 or more", w1.Seq, a1.Seq, w2.Seq)
	}
	a2 := newDeployment("a2", "api", state.StatusPending, 0)
	a2.CreatedAt = time.Time{}
	before := time.Now()
	mustCreate(t, b, a2)
	after := time.Now()
	if a2.Seq <= w2.Seq {
		t.Errorf("CreateDeployments(a2) set Seq %d, want more than %d (w2's, created before)", a2.Seq, w2.Seq)
	}
	if a2.CreatedAt.Before(before.Add(-time.Minute)) || a2.CreatedAt.After(after.Add(time.Minute)) {
		t.Errorf("CreateDeployments(a2 without CreatedAt) set CreatedAt %v, want about %v", a2.CreatedAt, before)
	}
	all := []state.Deployment{*w1, *a1, *w2, *a2}

	refused := []struct {
		name string
		ds   []*state.Deployment
	}{
		{"existing id", []*state.Deployment{newDeployment("x1", "web", state.StatusPending, 5), newDeployment("w1", "web", state.StatusPending, 5)}},
		{"one id twice", []*state.Deployment{newDeployment("x2", "web", state.StatusPending, 5), newDeployment("x2", "api", state.StatusPending, 5)}},
		{"running", []*state.Deployment{newDeployment("x3", "web", state.StatusPending, 5), newDeployment("x4", "web", state.StatusRunning, 5)}},
		{"completed", []*state.Deployment{newDeployment("x5", "web", state.StatusCompleted, 5)}},
		{"aborted", []*state.Deployment{newDeployment("x6", "web", state.StatusAborted, 5)}},
		{"empty id", []*state.Deployment{newDeployment("x7", "web", state.StatusPending, 5), newDeployment("", "web", state.StatusPending, 5)}},
		{"empty stack", []*state.Deployment{newDeployment("x8", "", state.StatusPending, 5)}},
		{"message over 4 KiB", []*state.Deployment{newDeployment("x9", "web", state.StatusPending, 5), withMessage(newDeployment("x10", "web", state.StatusProposed, 5), strings.Repeat("m", state.MaxMessageBytes+1))}},
	}
	for _, tt := range refused {
		t.Run("refused "+tt.name, func(t *testing.T) {
			if err := b.CreateDeployments(ctx, tt.ds); err == nil {
				t.Errorf("CreateDeployments(%s) = nil, want an error", ids(tt.ds))
			}
			for _, d := range tt.ds {
				if d.ID == "" || d.ID == "w1" {
					continue
				}
				if _, err := b.GetDeployment(ctx, d.ID); !errors.Is(err, state.ErrNotFound) {
					t.Errorf("GetDeployment(%s) after a refused CreateDeployments = %v, want ErrNotFound", d.ID, err)
				}
			}
		})
	}

	t.Run("get", func(t *testing.T) {
		for _, d := range all {
			c.check(t, b, d)
		}
		if _, err := b.GetDeployment(ctx, "nope"); !errors.Is(err, state.ErrNotFound) {
			t.Errorf("GetDeployment(nope) = %v, want ErrNotFound", err)
		}
	})
	t.Run("list", func(t *testing.T) {
		byID := map[string]state.Deployment{}
		for _, d := range all {
			byID[d.ID] = c.expect(listed(d))
		}
		list := func(ids ...string) []state.Deployment {
			out := []state.Deployment{}
			for _, id := range ids {
				out = append(out, byID[id])
			}
			return out
		}
		pending, proposed, approved, running := state.StatusPending, state.StatusProposed, state.StatusApproved, state.StatusRunning
		tests := []struct {
			f    state.DeploymentFilter
			want []state.Deployment
		}{
			{state.DeploymentFilter{}, list("a2", "w2", "a1", "w1")},
			{state.DeploymentFilter{Limit: 2}, list("a2", "w2")},
			{state.DeploymentFilter{Limit: 10}, list("a2", "w2", "a1", "w1")},
			{state.DeploymentFilter{Stack: "web"}, list("w2", "w1")},
			{state.DeploymentFilter{Stack: "web", Limit: 1}, list("w2")},
			{state.DeploymentFilter{Stack: "api"}, list("a2", "a1")},
			{state.DeploymentFilter{Statuses: []state.DeploymentStatus{pending}}, list("a2", "w1")},
			{state.DeploymentFilter{Statuses: []state.DeploymentStatus{proposed, approved}}, list("w2", "a1")},
			{state.DeploymentFilter{Statuses: []state.DeploymentStatus{pending}, Limit: 1}, list("a2")},
			{state.DeploymentFilter{Stack: "api", Statuses: []state.DeploymentStatus{pending}}, list("a2")},
			{state.DeploymentFilter{Stack: "api", Statuses: []state.DeploymentStatus{running}}, nil},
			{state.DeploymentFilter{Stack: "none"}, nil},
			{state.DeploymentFilter{IDPrefix: "w"}, list("w2", "w1")},
			{state.DeploymentFilter{IDPrefix: "a2"}, list("a2")},
			{state.DeploymentFilter{IDPrefix: "a2x"}, nil},
			{state.DeploymentFilter{IDPrefix: "%"}, nil},
			{state.DeploymentFilter{IDPrefix: "_1"}, nil},
			{state.DeploymentFilter{IDPrefix: "w", Stack: "api"}, nil},
			{state.DeploymentFilter{IDPrefix: "w", Limit: 1}, list("w2")},
		}
		for _, tt := range tests {
			got, err := b.ListDeployments(ctx, tt.f)
			if err != nil {
				t.Fatalf("ListDeployments(%+v) = %v", tt.f, err)
			}
			if diff := cmp.Diff(tt.want, got, c.cmp()); diff != "" {
				t.Errorf("ListDeployments(%+v) (-want +got):\n%s", tt.f, diff)
			}
			for _, d := range got {
				if d.Snapshot != nil {
					t.Errorf("ListDeployments(%+v): %s has a snapshot, want none", tt.f, d.ID)
				}
			}
			// NoPlans: the same records without their plans.
			f := tt.f
			f.NoPlans = true
			bare, err := b.ListDeployments(ctx, f)
			if err != nil {
				t.Fatalf("ListDeployments(%+v) = %v", f, err)
			}
			want := slices.Clone(tt.want)
			for i := range want {
				want[i].Plan = nil
			}
			if diff := cmp.Diff(want, bare, c.cmp()); diff != "" {
				t.Errorf("ListDeployments(%+v) (-want +got):\n%s", f, diff)
			}
		}
	})
}

// testResolveDeploymentID: a unique prefix of state.MinIDPrefix or more characters names one deployment;
// an ambiguous one lists the matches, a short one is refused.
func (c *config) testResolveDeploymentID(t *testing.T, b state.Backend) {
	mustCreate(t, b, newDeployment("3f2a9c01-aaaa", "web", state.StatusProposed, 1), newDeployment("3f2a9c02-bbbb", "web", state.StatusProposed, 2),
		newDeployment("3f2a9d03-cccc", "api", state.StatusProposed, 3), withMessage(newDeployment("3f2a9d04-dddd", "api", state.StatusProposed, 4), strings.Repeat("m", state.MaxMessageBytes)))
	full := "0123456789abcdef0123456789abcdef0123"
	tests := []struct {
		id        string
		want      string
		ambiguous []string
		notFound  bool
		short     bool
	}{
		{id: "3f2a9c01", want: "3f2a9c01-aaaa"},
		{id: "3f2a9c01-aaaa", want: "3f2a9c01-aaaa"},
		{id: "3f2a9d03", want: "3f2a9d03-cccc"},
		{id: "3f2a9c", ambiguous: []string{"3f2a9c02-bbbb", "3f2a9c01-aaaa"}},
		{id: "3f2a9d", ambiguous: []string{"3f2a9d04-dddd", "3f2a9d03-cccc"}},
		{id: "3f2a9e", notFound: true},
		{id: "3f2a9", short: true},
		{id: "", short: true},
		{id: full, want: full}, // a full ID is taken as it is; reading it says whether it exists
	}
	for _, tt := range tests {
		got, err := state.ResolveDeploymentID(t.Context(), b, tt.id)
		var ae *state.AmbiguousIDError
		switch {
		case tt.ambiguous != nil:
			if !errors.As(err, &ae) {
				t.Errorf("ResolveDeploymentID(%q) = %q, %v; want an *AmbiguousIDError", tt.id, got, err)
				continue
			}
			var ids []string
			for _, d := range ae.Matches {
				ids = append(ids, d.ID)
			}
			if diff := cmp.Diff(tt.ambiguous, ids); diff != "" {
				t.Errorf("ResolveDeploymentID(%q) matches (-want +got):\n%s", tt.id, diff)
			}
		case tt.notFound:
			if !errors.Is(err, state.ErrNotFound) {
				t.Errorf("ResolveDeploymentID(%q) = %q, %v; want ErrNotFound", tt.id, got, err)
			}
		case tt.short:
			if err == nil || !strings.Contains(err.Error(), "at least 6 characters") {
				t.Errorf("ResolveDeploymentID(%q) = %q, %v; want an error saying at least 6 characters", tt.id, got, err)
			}
		default:
			if err != nil || got != tt.want {
				t.Errorf("ResolveDeploymentID(%q) = %q, %v; want %q", tt.id, got, err, tt.want)
			}
		}
	}
	// A message of exactly 4 KiB is kept whole.
	if d := mustGetDeployment(t, b, "3f2a9d04-dddd"); len(d.Message) != state.MaxMessageBytes {
		t.Errorf("GetDeployment(3f2a9d04-dddd).Message has %d bytes, want %d", len(d.Message), state.MaxMessageBytes)
	}
}

// withMessage returns d with message msg.
func withMessage(d *state.Deployment, msg string) *state.Deployment {
	d.Message = msg
	return d
}

// testDeploymentTransitions: UpdateDeployment is a compare-and-set that records who and when, and a
// terminal deployment never changes again.
func (c *config) testDeploymentTransitions(t *testing.T, b state.Backend) {
	ctx := t.Context()
	p := newDeployment("p", "web", state.StatusProposed, 1)
	r := newDeployment("r", "web", state.StatusProposed, 2)
	q := waiting(newDeployment("q", "api", state.StatusPending, 3), 4)
	a := newDeployment("a", "api", state.StatusApproved, 5)
	mustCreate(t, b, p, r, q, a)
	proposed := []state.DeploymentStatus{state.StatusProposed}
	queued := []state.DeploymentStatus{state.StatusPending, state.StatusApproved}

	approve := state.Transition{From: proposed, To: state.StatusApproved, By: "bob@laptop", At: at(10)}
	got, err := b.UpdateDeployment(ctx, "p", approve)
	if err != nil {
		t.Fatalf("UpdateDeployment(p, approve) = %v", err)
	}
	wantP := *p
	wantP.Status, wantP.ApprovedBy, wantP.ApprovedAt = state.StatusApproved, "bob@laptop", at(10)
	c.checkReturned(t, "UpdateDeployment(p, approve)", wantP, got)
	c.check(t, b, wantP)
	_, err = b.UpdateDeployment(ctx, "p", approve)
	wantTransitionError(t, "UpdateDeployment(p, approve) again", err, "p", state.StatusApproved, state.StatusApproved)

	reject := state.Transition{From: proposed, To: state.StatusRejected, By: "carol@desk", Error: "not on a Friday", At: at(11)}
	got, err = b.UpdateDeployment(ctx, "r", reject)
	if err != nil {
		t.Fatalf("UpdateDeployment(r, reject) = %v", err)
	}
	wantR := *r
	wantR.Status, wantR.RejectedBy, wantR.Error, wantR.FinishedAt = state.StatusRejected, "carol@desk", "not on a Friday", at(11)
	c.checkReturned(t, "UpdateDeployment(r, reject)", wantR, got)
	c.check(t, b, wantR)
	// A rejected proposal is never approved, even by a caller that allows it.
	_, err = b.UpdateDeployment(ctx, "r", approve)
	wantTransitionError(t, "UpdateDeployment(r, approve) after reject", err, "r", state.StatusRejected, state.StatusApproved)
	_, err = b.UpdateDeployment(ctx, "r", state.Transition{From: []state.DeploymentStatus{state.StatusProposed, state.StatusRejected},
		To: state.StatusApproved, By: "bob@laptop", At: at(12)})
	wantTransitionError(t, "UpdateDeployment(r, REJECTED → APPROVED)", err, "r", state.StatusRejected, state.StatusApproved)
	c.check(t, b, wantR)

	// Aborting a queued deployment keeps its heartbeat.
	abort := state.Transition{From: queued, To: state.StatusAborted, By: "dave@ci-9", At: at(13)}
	_, err = b.UpdateDeployment(ctx, "p", state.Transition{From: proposed, To: state.StatusAborted, By: "dave@ci-9", At: at(13)})
	wantTransitionError(t, "UpdateDeployment(p, abort from PROPOSED)", err, "p", state.StatusApproved, state.StatusAborted)
	got, err = b.UpdateDeployment(ctx, "q", abort)
	if err != nil {
		t.Fatalf("UpdateDeployment(q, abort) = %v", err)
	}
	wantQ := *q
	wantQ.Status, wantQ.AbortedBy, wantQ.FinishedAt = state.StatusAborted, "dave@ci-9", at(13)
	c.checkReturned(t, "UpdateDeployment(q, abort)", wantQ, got)
	c.check(t, b, wantQ)
	_, err = b.UpdateDeployment(ctx, "q", state.Transition{From: []state.DeploymentStatus{state.StatusAborted}, To: state.StatusAborted, At: at(14)})
	wantTransitionError(t, "UpdateDeployment(q, ABORTED → ABORTED)", err, "q", state.StatusAborted, state.StatusAborted)

	if _, err := b.UpdateDeployment(ctx, "nope", approve); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("UpdateDeployment(nope) = %v, want ErrNotFound", err)
	}

	// Racing changes: exactly one wins.
	x := newDeployment("x", "web", state.StatusProposed, 20)
	mustCreate(t, b, x)
	var mu sync.Mutex // guards winners
	var winners []state.DeploymentStatus
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			to := []state.DeploymentStatus{state.StatusApproved, state.StatusRejected}[i%2]
			_, err := b.UpdateDeployment(ctx, "x", state.Transition{From: proposed, To: to, By: fmt.Sprintf("user%d@host", i), At: at(21)})
			var te *state.TransitionError
			switch {
			case err == nil:
				mu.Lock()
				winners = append(winners, to)
				mu.Unlock()
			case !errors.As(err, &te):
				t.Errorf("racing UpdateDeployment(x, %s) = %v, want nil or a *state.TransitionError", to, err)
			}
		})
	}
	wg.Wait()
	if len(winners) != 1 {
		t.Fatalf("racing UpdateDeployment(x): %d won (%v), want exactly 1", len(winners), winners)
	}
	if got := mustGetDeployment(t, b, "x").Status; got != winners[0] {
		t.Errorf("after racing changes, x is %s, want the winner's %s", got, winners[0])
	}
}

// testDeploymentClaims: ClaimDeployments takes the head of each stack's queue, all or none; PROPOSED holds
// no place; APPROVED and PENDING drain together in Seq order.
func (c *config) testDeploymentClaims(t *testing.T, b state.Backend) {
	ctx := t.Context()
	p0 := newDeployment("p0", "web", state.StatusProposed, 1)
	w1 := waiting(newDeployment("w1", "web", state.StatusPending, 2), 2)
	w2 := newDeployment("w2", "web", state.StatusApproved, 3)
	ap := newDeployment("ap", "api", state.StatusProposed, 4)
	a1 := waiting(newDeployment("a1", "api", state.StatusPending, 4), 4)
	w3 := waiting(newDeployment("w3", "web", state.StatusPending, 5), 5)
	mustCreate(t, b, p0, w1, w2, ap, a1, w3)
	wantW1 := *w1

	err := b.ClaimDeployments(ctx, []string{"w2"}, "ci-7 pid 42", at(100))
	c.wantQueuedError(t, "ClaimDeployments(w2)", err, "w2", "web", 1, wantW1)
	err = b.ClaimDeployments(ctx, []string{"p0"}, "ci-7 pid 42", at(100))
	wantTransitionError(t, "ClaimDeployments(p0)", err, "p0", state.StatusProposed, state.StatusRunning)
	if err := b.ClaimDeployments(ctx, []string{"nope"}, "ci-7 pid 42", at(100)); err == nil {
		t.Errorf("ClaimDeployments(nope) = nil, want an error")
	}
	// All or none: a1 could run, w3 cannot, so neither does.
	err = b.ClaimDeployments(ctx, []string{"a1", "w3"}, "ci-7 pid 42", at(100))
	c.wantQueuedError(t, "ClaimDeployments(a1, w3)", err, "w3", "web", 2, wantW1)
	c.check(t, b, *a1)
	c.check(t, b, *w3)

	// PROPOSED p0 holds no place: w1 is the head.
	mustClaim(t, b, "ci-7 pid 42", at(100), "a1", "w1")
	wantW1 = running(*w1, "ci-7 pid 42", at(100))
	c.check(t, b, wantW1)
	c.check(t, b, running(*a1, "ci-7 pid 42", at(100)))
	err = b.ClaimDeployments(ctx, []string{"w2"}, "agent", at(101))
	c.wantQueuedError(t, "ClaimDeployments(w2) while w1 runs", err, "w2", "web", 1, wantW1)
	err = b.ClaimDeployments(ctx, []string{"w1"}, "agent", at(101))
	wantTransitionError(t, "ClaimDeployments(w1) while it runs", err, "w1", state.StatusRunning, state.StatusRunning)
	// A proposal approved while a newer deployment runs comes first in the queue, after the running one.
	if _, err := b.UpdateDeployment(ctx, "ap", state.Transition{From: []state.DeploymentStatus{state.StatusProposed},
		To: state.StatusApproved, By: "bob@laptop", At: at(101)}); err != nil {
		t.Fatalf("UpdateDeployment(ap, approve) = %v", err)
	}
	err = b.ClaimDeployments(ctx, []string{"ap"}, "agent", at(102))
	c.wantQueuedError(t, "ClaimDeployments(ap) while a1, created after it, runs", err, "ap", "api", 1, running(*a1, "ci-7 pid 42", at(100)))
	if d, err := b.ClaimNext(ctx, []string{"api"}, "agent", at(102)); err != nil || d != nil {
		t.Errorf("ClaimNext(api) while a1 runs = %v, %v; want nil, nil", d, err)
	}

	mustFinish(t, b, "w1", "ci-7 pid 42", state.StatusCompleted, at(200), 5, "")
	mustClaim(t, b, "agent", at(201), "w2")
	c.check(t, b, running(*w2, "agent", at(201)))
	mustFinish(t, b, "w2", "agent", state.StatusFailed, at(300), 6, "boom")
	err = b.ClaimDeployments(ctx, []string{"w1"}, "agent", at(301))
	wantTransitionError(t, "ClaimDeployments(w1) once COMPLETED", err, "w1", state.StatusCompleted, state.StatusRunning)

	// Approval gives no priority but keeps creation order: p0 was created before w3.
	if _, err := b.UpdateDeployment(ctx, "p0", state.Transition{From: []state.DeploymentStatus{state.StatusProposed},
		To: state.StatusApproved, By: "bob@laptop", At: at(302)}); err != nil {
		t.Fatalf("UpdateDeployment(p0, approve) = %v", err)
	}
	wantP0 := *p0
	wantP0.Status, wantP0.ApprovedBy, wantP0.ApprovedAt = state.StatusApproved, "bob@laptop", at(302)
	err = b.ClaimDeployments(ctx, []string{"w3"}, "ci-8", at(303))
	c.wantQueuedError(t, "ClaimDeployments(w3) behind approved p0", err, "w3", "web", 1, wantP0)
	mustClaim(t, b, "ci-8", at(304), "p0")
	mustFinish(t, b, "p0", "ci-8", state.StatusCompleted, at(305), 7, "")
	mustClaim(t, b, "ci-8", at(306), "w3")
	c.check(t, b, running(*w3, "ci-8", at(306)))
}

// testFinishDeployment: only a RUNNING deployment finishes, once.
func (c *config) testFinishDeployment(t *testing.T, b state.Backend) {
	ctx := t.Context()
	f1 := newDeployment("f1", "web", state.StatusPending, 1)
	f2 := newDeployment("f2", "web", state.StatusPending, 2)
	mustCreate(t, b, f1, f2)

	err := b.FinishDeployment(ctx, "f1", "runner", state.StatusCompleted, at(50), 1, "")
	wantTransitionError(t, "FinishDeployment(f1) while PENDING", err, "f1", state.StatusPending, state.StatusCompleted)
	if err := b.FinishDeployment(ctx, "nope", "runner", state.StatusFailed, at(50), 7, ""); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("FinishDeployment(nope) = %v, want ErrNotFound", err)
	}

	mustClaim(t, b, "runner", at(100), "f1")
	if err := b.FinishDeployment(ctx, "f1", "runner", state.StatusPending, at(150), 1, ""); err == nil {
		t.Errorf("FinishDeployment(f1, PENDING) = nil, want an error")
	}
	mustFinish(t, b, "f1", "runner", state.StatusFailed, at(200), 7, "quota exceeded")
	c.check(t, b, finished(running(*f1, "runner", at(100)), state.StatusFailed, at(200), 7, "quota exceeded"))
	err = b.FinishDeployment(ctx, "f1", "runner", state.StatusCompleted, at(250), 8, "")
	wantTransitionError(t, "FinishDeployment(f1) once FAILED", err, "f1", state.StatusFailed, state.StatusCompleted)
	c.check(t, b, finished(running(*f1, "runner", at(100)), state.StatusFailed, at(200), 7, "quota exceeded"))

	// The stack's queue moves on.
	mustClaim(t, b, "runner", at(300), "f2")
	mustFinish(t, b, "f2", "runner", state.StatusCompleted, at(400), 8, "")
	c.check(t, b, finished(running(*f2, "runner", at(300)), state.StatusCompleted, at(400), 8, ""))
}

// testAbortRequest: RequestAbort marks a RUNNING deployment, and its runner sees it in
// HeartbeatDeployments, which renews only queued deployments.
func (c *config) testAbortRequest(t *testing.T, b state.Backend) {
	ctx := t.Context()
	r := newDeployment("r", "web", state.StatusPending, 1)
	q := waiting(newDeployment("q", "web", state.StatusPending, 2), 2)
	x := newDeployment("x", "web", state.StatusProposed, 3)
	mustCreate(t, b, r, q, x)
	mustClaim(t, b, "runner", at(100), "r")
	wantR := running(*r, "runner", at(100))

	_, err := b.RequestAbort(ctx, "q", "erin@desk", at(150))
	wantTransitionError(t, "RequestAbort(q) while PENDING", err, "q", state.StatusPending, state.StatusAborted)
	if _, err := b.RequestAbort(ctx, "nope", "erin@desk", at(150)); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("RequestAbort(nope) = %v, want ErrNotFound", err)
	}

	heartbeat := func(at time.Time, ids ...string) []state.Deployment {
		t.Helper()
		got, err := b.HeartbeatDeployments(ctx, ids, at)
		if err != nil {
			t.Fatalf("HeartbeatDeployments(%q) = %v", ids, err)
		}
		slices.SortFunc(got, func(a, b state.Deployment) int { return strings.Compare(a.ID, b.ID) })
		return got
	}
	wantR.HeartbeatAt = at(500)
	wantQ := *q
	wantQ.HeartbeatAt = at(500)
	want := []state.Deployment{c.expect(queued(wantQ)), c.expect(queued(wantR)), c.expect(queued(*x))}
	if diff := cmp.Diff(want, heartbeat(at(500), "r", "q", "x", "nope"), c.cmp()); diff != "" {
		t.Errorf("HeartbeatDeployments(r, q, x, nope), sorted by ID (-want +got):\n%s", diff)
	}
	c.check(t, b, *x)

	got, err := b.RequestAbort(ctx, "r", "erin@desk", at(600))
	if err != nil {
		t.Fatalf("RequestAbort(r) = %v", err)
	}
	wantR.AbortedBy = "erin@desk"
	c.checkReturned(t, "RequestAbort(r)", wantR, got)
	c.check(t, b, wantR)

	wantR.HeartbeatAt = at(700)
	if diff := cmp.Diff([]state.Deployment{c.expect(queued(wantR))}, heartbeat(at(700), "r"), c.cmp()); diff != "" {
		t.Errorf("HeartbeatDeployments(r) after RequestAbort (-want +got):\n%s", diff)
	}

	mustFinish(t, b, "r", "runner", state.StatusAborted, at(800), 3, "aborted by erin@desk")
	wantR = finished(wantR, state.StatusAborted, at(800), 3, "aborted by erin@desk")
	c.check(t, b, wantR)
	_, err = b.RequestAbort(ctx, "r", "erin@desk", at(850))
	wantTransitionError(t, "RequestAbort(r) once ABORTED", err, "r", state.StatusAborted, state.StatusAborted)
	// A finished deployment's heartbeat no longer changes.
	if diff := cmp.Diff([]state.Deployment{c.expect(queued(wantR))}, heartbeat(at(900), "r"), c.cmp()); diff != "" {
		t.Errorf("HeartbeatDeployments(r) once ABORTED (-want +got):\n%s", diff)
	}
}

// testDeadWaiters: a PENDING or RUNNING deployment whose process stopped heartbeating is ABORTED by the
// next claim of its stack; one with no process attached never is.
func (c *config) testDeadWaiters(t *testing.T, b state.Backend) {
	ctx := t.Context()
	t0 := at(0)
	d1 := waiting(newDeployment("d1", "web", state.StatusPending, 1), 0)
	d2 := waiting(newDeployment("d2", "web", state.StatusPending, 2), 0)
	d3 := waiting(newDeployment("d3", "web", state.StatusPending, 3), 0)
	d4 := newDeployment("d4", "web", state.StatusPending, 4)
	e1 := waiting(newDeployment("e1", "api", state.StatusPending, 5), 0)
	e2 := newDeployment("e2", "api", state.StatusApproved, 6)
	mustCreate(t, b, d1, d2, d3, d4, e1, e2)
	mustClaim(t, b, "runner-1", t0, "d1")

	t1 := t0.Add(state.DeadAfter + time.Second)
	if c.serverClock {
		time.Sleep(state.DeadAfter + time.Second)
	}
	if _, err := b.HeartbeatDeployments(ctx, []string{"d3"}, t1); err != nil {
		t.Fatalf("HeartbeatDeployments(d3) = %v", err)
	}
	// d3 is third in line, behind a dead runner and a dead waiter.
	mustClaim(t, b, "runner-3", t1, "d3")

	why := "its process stopped: no heartbeat since " + t0.Format(time.RFC3339)
	for _, id := range []string{"d1", "d2"} {
		d := mustGetDeployment(t, b, id)
		ok := strings.HasPrefix(d.Error, "its process stopped: no heartbeat since ")
		if !c.serverClock {
			ok = d.Error == why && d.FinishedAt.Equal(t1)
		}
		if d.Status != state.StatusAborted || !ok || d.FinishedAt.IsZero() {
			t.Errorf("GetDeployment(%s) after a claim of its stack = %s at %v (%q), want ABORTED at %v (%q)",
				id, d.Status, d.FinishedAt, d.Error, t1, why)
		}
	}
	c.check(t, b, running(*d3, "runner-3", t1))
	c.check(t, b, *d4)

	got, err := b.ClaimNext(ctx, []string{"api"}, "agent", t1)
	if err != nil {
		t.Fatalf("ClaimNext(api) = %v", err)
	}
	if got == nil || got.ID != "e2" {
		t.Fatalf("ClaimNext(api) = %v, want e2 (behind e1, whose waiter is dead)", got)
	}
	if d := mustGetDeployment(t, b, "e1"); d.Status != state.StatusAborted || !strings.HasPrefix(d.Error, "its process stopped") {
		t.Errorf("GetDeployment(e1) after ClaimNext(api) = %s (%q), want ABORTED, its process stopped", d.Status, d.Error)
	}
}

// testClaimNext: an agent claims the oldest head of a queue that is APPROVED, or PENDING with no process
// attached; it never takes a waiter's turn.
func (c *config) testClaimNext(t *testing.T, b state.Backend) {
	ctx := t.Context()
	claimNext := func(stacks []string, now time.Time) *state.Deployment {
		t.Helper()
		d, err := b.ClaimNext(ctx, stacks, "agent-1", now)
		if err != nil {
			t.Fatalf("ClaimNext(%q) = %v", stacks, err)
		}
		return d
	}
	if d := claimNext(nil, at(1)); d != nil {
		t.Fatalf("ClaimNext() on an empty backend = %s, want nil", d.ID)
	}

	w1 := waiting(newDeployment("w1", "web", state.StatusPending, 1), 1) // its waiter runs it
	w2 := newDeployment("w2", "web", state.StatusApproved, 2)
	a1 := newDeployment("a1", "api", state.StatusProposed, 3)
	a2 := newDeployment("a2", "api", state.StatusPending, 4) // queued with --no-wait
	a3 := newDeployment("a3", "api", state.StatusApproved, 5)
	o1 := newDeployment("o1", "ops", state.StatusPending, 6)
	o2 := newDeployment("o2", "ops", state.StatusApproved, 7)
	mustCreate(t, b, w1, w2, a1, a2, a3, o1, o2)
	mustClaim(t, b, "ci-7", at(10), "o1")

	got := claimNext(nil, at(100))
	want := running(*a2, "agent-1", at(100))
	if got == nil || got.ID != "a2" {
		t.Fatalf("ClaimNext() = %v, want a2", got)
	}
	want = c.expect(want)
	if diff := cmp.Diff(&want, got, c.cmp()); diff != "" {
		t.Errorf("ClaimNext() (-want +got), with its snapshot:\n%s", diff)
	}
	c.check(t, b, want)
	if d := claimNext(nil, at(101)); d != nil {
		t.Fatalf("ClaimNext() with every head running or waited for = %s, want nil", d.ID)
	}

	mustFinish(t, b, "a2", "agent-1", state.StatusCompleted, at(110), 1, "")
	if d := claimNext([]string{"web"}, at(111)); d != nil {
		t.Errorf("ClaimNext(web) = %s, want nil (w1's waiter runs it)", d.ID)
	}
	if d := claimNext([]string{"web", "api"}, at(112)); d == nil || d.ID != "a3" {
		t.Errorf("ClaimNext(web, api) = %v, want a3", d)
	}
	mustFinish(t, b, "o1", "ci-7", state.StatusCompleted, at(120), 1, "")
	if d := claimNext([]string{"ops"}, at(121)); d == nil || d.ID != "o2" {
		t.Errorf("ClaimNext(ops) = %v, want o2", d)
	}
	mustClaim(t, b, "ci-9", at(130), "w1")
	mustFinish(t, b, "w1", "ci-9", state.StatusCompleted, at(131), 1, "")
	if d := claimNext(nil, at(132)); d == nil || d.ID != "w2" {
		t.Errorf("ClaimNext() = %v, want w2", d)
	}
	if d := claimNext(nil, at(133)); d != nil {
		t.Errorf("ClaimNext() with every queue running = %s, want nil", d.ID)
	}
	c.check(t, b, *a1)
}

// testConcurrentClaims: agents racing for the queues claim each deployment exactly once, in Seq order per
// stack, never two RUNNING in one stack; racing claims of one deployment have one winner.
func (c *config) testConcurrentClaims(t *testing.T, b state.Backend) {
	ctx := t.Context()
	const n, claimers = 20, 8
	stacks := []string{"web", "api"}
	var ds []*state.Deployment
	for i := range n {
		status := []state.DeploymentStatus{state.StatusPending, state.StatusApproved}[i%3%2]
		ds = append(ds, newDeployment(fmt.Sprintf("d%02d", i), stacks[i%2], status, i))
	}
	// Created in batches of one to three, as several CI jobs would.
	for i := 0; i < n; i += 1 + i%3 {
		mustCreate(t, b, ds[i:min(n, i+1+i%3)]...)
	}

	var mu sync.Mutex // guards claimed and done
	claimed := map[string][]*state.Deployment{}
	done := 0
	deadline := time.Now().Add(time.Minute)
	var wg sync.WaitGroup
	for g := range claimers {
		wg.Go(func() {
			runner := fmt.Sprintf("agent-%d", g)
			for time.Now().Before(deadline) {
				d, err := b.ClaimNext(ctx, nil, runner, at(1000))
				if err != nil {
					t.Errorf("ClaimNext() by %s = %v", runner, err)
					return
				}
				if d == nil {
					mu.Lock()
					finishedAll := done == n
					mu.Unlock()
					if finishedAll {
						return
					}
					time.Sleep(time.Millisecond)
					continue
				}
				runningNow, err := b.ListDeployments(ctx, state.DeploymentFilter{Stack: d.Stack, Statuses: []state.DeploymentStatus{state.StatusRunning}})
				if err != nil {
					t.Errorf("ListDeployments(%s, RUNNING) = %v", d.Stack, err)
					return
				}
				if len(runningNow) != 1 || runningNow[0].ID != d.ID {
					t.Errorf("%s claimed %s; RUNNING in stack %s: %v, want only it", runner, d.ID, d.Stack, runningNow)
				}
				mu.Lock()
				claimed[d.Stack] = append(claimed[d.Stack], d)
				mu.Unlock()
				if err := b.FinishDeployment(ctx, d.ID, runner, state.StatusCompleted, at(2000), 1, ""); err != nil {
					t.Errorf("FinishDeployment(%s) = %v", d.ID, err)
					return
				}
				mu.Lock()
				done++
				mu.Unlock()
			}
			t.Errorf("%s: the queues did not drain within a minute", runner)
		})
	}
	wg.Wait()

	for _, stack := range stacks {
		var want, got []string
		for _, d := range ds {
			if d.Stack == stack {
				want = append(want, d.ID)
			}
		}
		var seqs []int64
		for _, d := range claimed[stack] {
			got = append(got, d.ID)
			seqs = append(seqs, d.Seq)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("deployments of stack %s in claim order (-want +got):\n%s", stack, diff)
		}
		if !slices.IsSorted(seqs) {
			t.Errorf("Seq of stack %s's deployments in claim order = %v, want increasing", stack, seqs)
		}
	}

	// Racing ClaimDeployments of one deployment: one wins.
	solo := newDeployment("solo", "solo", state.StatusPending, 1)
	mustCreate(t, b, solo)
	var wins int
	for g := range claimers {
		wg.Go(func() {
			err := b.ClaimDeployments(ctx, []string{"solo"}, fmt.Sprintf("ci-%d", g), at(3000))
			var te *state.TransitionError
			var qe *state.QueuedError
			switch {
			case err == nil:
				mu.Lock()
				wins++
				mu.Unlock()
			case !errors.As(err, &te) && !errors.As(err, &qe):
				t.Errorf("racing ClaimDeployments(solo) = %v, want nil, a *state.TransitionError or a *state.QueuedError", err)
			}
		})
	}
	wg.Wait()
	if wins != 1 {
		t.Errorf("racing ClaimDeployments(solo): %d won, want exactly 1", wins)
	}
}
