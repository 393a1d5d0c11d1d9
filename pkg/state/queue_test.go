package state_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// dep is a queued deployment of stack with seq and status; beat is its heartbeat's age at t0 (0: none).
func dep(id, stack string, seq int64, status state.DeploymentStatus, beat time.Duration) state.Deployment {
	d := state.Deployment{ID: id, Stack: stack, Seq: seq, Status: status, Kind: state.KindDeploy}
	if beat > 0 {
		d.HeartbeatAt = t0.Add(-beat)
	}
	return d
}

func ids(ds []state.Deployment) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.ID)
	}
	return out
}

// kindOf names the class of a queue error: "", "not found", "transition", "queued" or the message.
func kindOf(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, state.ErrNotFound):
		return "not found"
	case errors.As(err, new(*state.TransitionError)):
		return "transition"
	case errors.As(err, new(*state.QueuedError)):
		return "queued"
	case errors.As(err, new(*state.ForbiddenError)):
		return "forbidden"
	}
	return err.Error()
}

func TestPlanClaims(t *testing.T) {
	t.Parallel()
	const alive, dead = time.Second, state.DeadAfter + time.Second
	tests := []struct {
		name             string
		ids              []string
		queue, others    []state.Deployment // others: stored, not queued
		wantAbort        []string
		wantClaim        []string
		wantErr          string
		wantQueuedBehind string
	}{
		{name: "head of its stack", ids: []string{"a"},
			queue:     []state.Deployment{dep("a", "s", 1, state.StatusPending, alive), dep("b", "s", 2, state.StatusPending, alive)},
			wantClaim: []string{"a"}},
		{name: "behind a pending", ids: []string{"b"},
			queue:   []state.Deployment{dep("a", "s", 1, state.StatusPending, alive), dep("b", "s", 2, state.StatusApproved, 0)},
			wantErr: "queued", wantQueuedBehind: "a"},
		{name: "an approved never jumps a running, whatever the seq", ids: []string{"a"},
			queue:   []state.Deployment{dep("a", "s", 1, state.StatusApproved, 0), dep("r", "s", 5, state.StatusRunning, alive)},
			wantErr: "queued", wantQueuedBehind: "r"},
		{name: "a dead runner is aborted and no longer ahead", ids: []string{"b"},
			queue:     []state.Deployment{dep("r", "s", 1, state.StatusRunning, dead), dep("b", "s", 2, state.StatusPending, alive)},
			wantAbort: []string{"r"}, wantClaim: []string{"b"}},
		{name: "a dead waiter asked for is aborted, not claimed", ids: []string{"a"},
			queue:     []state.Deployment{dep("a", "s", 1, state.StatusPending, dead)},
			wantAbort: []string{"a"}, wantErr: "transition"},
		{name: "other stacks do not queue", ids: []string{"b"},
			queue:     []state.Deployment{dep("a", "s", 1, state.StatusPending, alive), dep("b", "t", 2, state.StatusPending, alive)},
			wantClaim: []string{"b"}},
		{name: "several stacks all or none", ids: []string{"a", "b"},
			queue:   []state.Deployment{dep("a", "s", 1, state.StatusPending, alive), dep("x", "t", 2, state.StatusPending, alive), dep("b", "t", 3, state.StatusPending, alive)},
			wantErr: "queued", wantQueuedBehind: "x"},
		{name: "two of one stack: the second is behind the first", ids: []string{"a", "b"},
			queue:   []state.Deployment{dep("a", "s", 1, state.StatusPending, alive), dep("b", "s", 2, state.StatusPending, alive)},
			wantErr: "queued", wantQueuedBehind: "a"},
		{name: "duplicates ignored", ids: []string{"a", "a"},
			queue:     []state.Deployment{dep("a", "s", 1, state.StatusPending, alive)},
			wantClaim: []string{"a"}},
		{name: "unknown id", ids: []string{"zz"}, wantErr: "not found"},
		{name: "proposed is not claimed", ids: []string{"p"},
			others:  []state.Deployment{dep("p", "s", 1, state.StatusProposed, 0)},
			wantErr: "transition"},
		{name: "terminal is not claimed", ids: []string{"c"},
			others:  []state.Deployment{dep("c", "s", 1, state.StatusCompleted, 0)},
			wantErr: "transition"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			found := map[string]state.Deployment{}
			for _, d := range append(slices.Clone(tt.queue), tt.others...) {
				if slices.Contains(tt.ids, d.ID) {
					found[d.ID] = d
				}
			}
			c := state.PlanClaims(tt.ids, found, tt.queue, t0)
			if diff := cmp.Diff(tt.wantAbort, ids(c.Abort)); diff != "" {
				t.Errorf("aborts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantClaim, ids(c.Claim)); diff != "" {
				t.Errorf("claims (-want +got):\n%s", diff)
			}
			if got := kindOf(c.Err); got != tt.wantErr {
				t.Errorf("error %v: kind %q, want %q", c.Err, got, tt.wantErr)
			}
			var qe *state.QueuedError
			if errors.As(c.Err, &qe) && qe.Ahead.ID != tt.wantQueuedBehind {
				t.Errorf("queued behind %s, want %s", qe.Ahead.ID, tt.wantQueuedBehind)
			}
		})
	}
}

func TestPlanNext(t *testing.T) {
	t.Parallel()
	const alive, dead = time.Second, state.DeadAfter + time.Second
	tests := []struct {
		name      string
		queue     []state.Deployment
		wantAbort []string
		wantClaim []string
	}{
		{name: "empty"},
		{name: "approved head", queue: []state.Deployment{dep("a", "s", 1, state.StatusApproved, 0)}, wantClaim: []string{"a"}},
		{name: "pending with a process attached is its process's",
			queue: []state.Deployment{dep("a", "s", 1, state.StatusPending, alive), dep("b", "s", 2, state.StatusApproved, 0)}},
		{name: "pending with no process", queue: []state.Deployment{dep("a", "s", 1, state.StatusPending, 0)}, wantClaim: []string{"a"}},
		{name: "a stack with a running one waits",
			queue:     []state.Deployment{dep("a", "s", 1, state.StatusApproved, 0), dep("r", "s", 2, state.StatusRunning, alive), dep("b", "t", 3, state.StatusApproved, 0)},
			wantClaim: []string{"b"}},
		{name: "a dead runner is aborted and its stack goes on",
			queue:     []state.Deployment{dep("r", "s", 1, state.StatusRunning, dead), dep("a", "s", 2, state.StatusApproved, 0)},
			wantAbort: []string{"r"}, wantClaim: []string{"a"}},
		{name: "lowest seq among the heads",
			queue:     []state.Deployment{dep("a", "s", 1, state.StatusPending, alive), dep("b", "t", 2, state.StatusApproved, 0), dep("c", "u", 3, state.StatusApproved, 0)},
			wantClaim: []string{"b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := state.PlanNext(tt.queue, t0)
			if diff := cmp.Diff(tt.wantAbort, ids(c.Abort)); diff != "" {
				t.Errorf("aborts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantClaim, ids(c.Claim)); diff != "" {
				t.Errorf("claims (-want +got):\n%s", diff)
			}
			if c.Err != nil {
				t.Errorf("error %v", c.Err)
			}
		})
	}
}

func TestApplyTransition(t *testing.T) {
	t.Parallel()
	at := t0.Add(time.Minute)
	tests := []struct {
		name    string
		d       state.Deployment
		tr      state.Transition
		p       state.Policy
		want    state.Deployment
		wantErr string
	}{
		{name: "approve", d: state.Deployment{ID: "a", Status: state.StatusProposed, CreatedBy: "x"},
			tr:   state.Transition{From: []state.DeploymentStatus{state.StatusProposed}, To: state.StatusApproved, By: "y", At: at},
			want: state.Deployment{ID: "a", Status: state.StatusApproved, CreatedBy: "x", ApprovedBy: "y", ApprovedAt: at}},
		{name: "own approval under the second-person rule", d: state.Deployment{ID: "a", Status: state.StatusProposed, CreatedBy: "x"},
			tr: state.Transition{From: []state.DeploymentStatus{state.StatusProposed}, To: state.StatusApproved, By: "x"},
			p:  state.Policy{RequireSecondPerson: true}, wantErr: "forbidden"},
		{name: "reject with a message", d: state.Deployment{ID: "a", Status: state.StatusProposed},
			tr:   state.Transition{From: []state.DeploymentStatus{state.StatusProposed}, To: state.StatusRejected, By: "y", Error: "no", At: at},
			want: state.Deployment{ID: "a", Status: state.StatusRejected, RejectedBy: "y", Error: "no", FinishedAt: at}},
		{name: "abort a pending", d: state.Deployment{ID: "a", Status: state.StatusPending},
			tr:   state.Transition{From: []state.DeploymentStatus{state.StatusPending}, To: state.StatusAborted, By: "y", At: at},
			want: state.Deployment{ID: "a", Status: state.StatusAborted, AbortedBy: "y", FinishedAt: at}},
		{name: "approve with a comment", d: state.Deployment{ID: "a", Status: state.StatusProposed, CreatedBy: "x"},
			tr:   state.Transition{From: []state.DeploymentStatus{state.StatusProposed}, To: state.StatusApproved, By: "y", Comment: "LGTM ✓", At: at},
			want: state.Deployment{ID: "a", Status: state.StatusApproved, CreatedBy: "x", ApprovedBy: "y", ApprovalComment: "LGTM ✓", ApprovedAt: at}},
		{name: "reject with a comment", d: state.Deployment{ID: "a", Status: state.StatusProposed},
			tr:   state.Transition{From: []state.DeploymentStatus{state.StatusProposed}, To: state.StatusRejected, By: "y", Error: "rejected: no", Comment: "no", At: at},
			want: state.Deployment{ID: "a", Status: state.StatusRejected, RejectedBy: "y", Error: "rejected: no", RejectionComment: "no", FinishedAt: at}},
		{name: "a comment longer than 4 KiB", d: state.Deployment{ID: "a", Status: state.StatusProposed},
			tr:      state.Transition{From: []state.DeploymentStatus{state.StatusProposed}, To: state.StatusApproved, By: "y", Comment: strings.Repeat("x", state.MaxMessageBytes+1)},
			wantErr: "update deployment a: comment: the message is 4097 bytes; at most 4096 (4 KiB) are allowed: shorten it, and link to details instead"},
		{name: "a comment not UTF-8", d: state.Deployment{ID: "a", Status: state.StatusProposed},
			tr:      state.Transition{From: []state.DeploymentStatus{state.StatusProposed}, To: state.StatusRejected, By: "y", Comment: "\xff"},
			wantErr: "update deployment a: comment: the message is not valid UTF-8"},
		{name: "no comment on an abort", d: state.Deployment{ID: "a", Status: state.StatusPending},
			tr:      state.Transition{From: []state.DeploymentStatus{state.StatusPending}, To: state.StatusAborted, By: "y", Comment: "why"},
			wantErr: "update deployment a: a comment is recorded with an approval or a rejection, not with an abort"},
		{name: "not in From", d: state.Deployment{ID: "a", Status: state.StatusPending},
			tr: state.Transition{From: []state.DeploymentStatus{state.StatusProposed}, To: state.StatusAborted}, wantErr: "transition"},
		{name: "a claim is not a transition", d: state.Deployment{ID: "a", Status: state.StatusPending},
			tr: state.Transition{From: []state.DeploymentStatus{state.StatusPending}, To: state.StatusRunning}, wantErr: "update deployment a: cannot make it RUNNING here: a claim makes it RUNNING, FinishDeployment ends a run"},
		{name: "terminal never changes", d: state.Deployment{ID: "a", Status: state.StatusCompleted},
			tr: state.Transition{From: []state.DeploymentStatus{state.StatusCompleted}, To: state.StatusAborted}, wantErr: "transition"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := state.ApplyTransition(tt.d, tt.tr, tt.p)
			if k := kindOf(err); k != tt.wantErr {
				t.Fatalf("error %v: kind %q, want %q", err, k, tt.wantErr)
			}
			if err == nil {
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestCheckFinish(t *testing.T) {
	t.Parallel()
	running := state.Deployment{ID: "a", Status: state.StatusRunning, Runner: "r1"}
	tests := []struct {
		name    string
		d       state.Deployment
		runner  string
		status  state.DeploymentStatus
		wantErr string
	}{
		{name: "its runner completes it", d: running, runner: "r1", status: state.StatusCompleted},
		{name: "its runner aborts it", d: running, runner: "r1", status: state.StatusAborted},
		{name: "another runner", d: running, runner: "r2", status: state.StatusFailed, wantErr: "forbidden"},
		{name: "not running", d: state.Deployment{ID: "a", Status: state.StatusPending}, runner: "r1", status: state.StatusCompleted, wantErr: "transition"},
		{name: "not an end", d: running, runner: "r1", status: state.StatusApproved,
			wantErr: `finish deployment a: status "APPROVED"; a run ends COMPLETED, FAILED or ABORTED`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if k := kindOf(state.CheckFinish(tt.d, tt.runner, tt.status)); k != tt.wantErr {
				t.Errorf("kind %q, want %q", k, tt.wantErr)
			}
		})
	}
}

func TestApplyAbortRequest(t *testing.T) {
	t.Parallel()
	got, err := state.ApplyAbortRequest(state.Deployment{ID: "a", Status: state.StatusRunning}, "bob")
	if err != nil || got.AbortedBy != "bob" || got.Status != state.StatusRunning {
		t.Errorf("running: %+v, %v; want AbortedBy bob and still RUNNING", got, err)
	}
	if _, err := state.ApplyAbortRequest(state.Deployment{ID: "a", Status: state.StatusPending}, "bob"); kindOf(err) != "transition" {
		t.Errorf("pending: %v, want a *TransitionError", err)
	}
}

func TestDead(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status state.DeploymentStatus
		beat   time.Duration
		want   bool
	}{
		{state.StatusPending, state.DeadAfter + time.Nanosecond, true},
		{state.StatusRunning, state.DeadAfter + time.Nanosecond, true},
		{state.StatusRunning, state.DeadAfter, false},
		{state.StatusRunning, 0, false}, // no heartbeat: no process attached
		{state.StatusApproved, time.Hour, false},
		{state.StatusProposed, time.Hour, false},
	}
	for _, tt := range tests {
		d := dep("a", "s", 1, tt.status, tt.beat)
		if got := state.Dead(&d, t0); got != tt.want {
			t.Errorf("Dead(%s, heartbeat %s ago) = %v, want %v", tt.status, tt.beat, got, tt.want)
		}
	}
}

func TestPrepareCreate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		ds      []*state.Deployment
		p       state.Policy
		wantErr string
	}{
		{name: "fine", ds: []*state.Deployment{{ID: "a", Stack: "s", Status: state.StatusPending, Kind: state.KindDeploy}}},
		{name: "nil", ds: []*state.Deployment{nil}, wantErr: "create deployments: deployment 0 is nil"},
		{name: "empty id", ds: []*state.Deployment{{Stack: "s", Status: state.StatusPending}}, wantErr: "create deployments: deployment 0 has an empty id"},
		{name: "empty stack", ds: []*state.Deployment{{ID: "a", Status: state.StatusPending}}, wantErr: "create deployment a: empty stack name"},
		{name: "twice", ds: []*state.Deployment{{ID: "a", Stack: "s", Status: state.StatusPending}, {ID: "a", Stack: "s", Status: state.StatusPending}},
			wantErr: "create deployments: id a is given twice"},
		{name: "direct deploy under the second-person rule", p: state.Policy{RequireSecondPerson: true},
			ds: []*state.Deployment{{ID: "a", Stack: "s", Status: state.StatusPending, Kind: state.KindDeploy}}, wantErr: "forbidden"},
		{name: "wrong snapshot hash", ds: []*state.Deployment{{ID: "a", Stack: "s", Status: state.StatusPending, SnapshotHash: "00"}},
			wantErr: "create deployment a: its snapshotHash 00 is not the SHA-256 of its snapshot (it has no snapshot); send the snapshot's own hash, or none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if k := kindOf(state.PrepareCreate(tt.ds, tt.p)); k != tt.wantErr {
				t.Errorf("kind %q, want %q", k, tt.wantErr)
			}
		})
	}
}

func TestStaleLock(t *testing.T) {
	t.Parallel()
	const limit = time.Minute
	exists := func(pid int) bool { return pid == 7 }
	tests := []struct {
		name    string
		holder  state.LockInfo
		machine string
		want    bool
	}{
		{name: "fresh, alive, same machine", holder: state.LockInfo{Machine: "m", PID: 7, HeartbeatAt: t0}, machine: "m"},
		{name: "gone on this machine", holder: state.LockInfo{Machine: "m", PID: 8, HeartbeatAt: t0}, machine: "m", want: true},
		{name: "gone PID on another machine decides nothing", holder: state.LockInfo{Machine: "m", PID: 8, HeartbeatAt: t0}, machine: "n"},
		{name: "unknown machines decide nothing", holder: state.LockInfo{PID: 8, HeartbeatAt: t0}},
		{name: "silent for longer than the limit", holder: state.LockInfo{Machine: "m", PID: 7, HeartbeatAt: t0.Add(-limit - time.Second)}, machine: "n", want: true},
		{name: "silent for exactly the limit", holder: state.LockInfo{HeartbeatAt: t0.Add(-limit)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, why := state.StaleLock(tt.holder, tt.machine, t0, limit, exists)
			if got != tt.want || (why != "") != got {
				t.Errorf("StaleLock = %v, %q; want %v with a reason when stale", got, why, tt.want)
			}
		})
	}
}

// model is an in-memory deployment queue driven only by the rules of pkg/state, as every store drives its
// rows: TestQueueProperties checks the queue's invariants over random sequences of its operations.
type model struct {
	ds   []state.Deployment // in Seq order
	seq  int64
	now  time.Time
	runs []state.Deployment // every claim, in order
	// jumped records the first claim made while another of its stack was ahead of it (RUNNING, or
	// queued with a lower Seq) after the claim's aborts: "" while none was.
	jumped string
}

func (m *model) queue() []state.Deployment {
	var q []state.Deployment
	for _, d := range m.ds {
		if d.Status.Queued() {
			q = append(q, d)
		}
	}
	return q
}

func (m *model) put(d state.Deployment) {
	for i := range m.ds {
		if m.ds[i].ID == d.ID {
			m.ds[i] = d
		}
	}
}

func (m *model) apply(c state.Claims, runner string) {
	for _, d := range c.Abort {
		m.put(state.AbortedDead(d, m.now))
	}
	for _, d := range c.Claim {
		for _, q := range m.queue() {
			if q.Stack == d.Stack && q.ID != d.ID && (q.Status == state.StatusRunning || q.Seq < d.Seq) && m.jumped == "" {
				m.jumped = fmt.Sprintf("%s (seq %d) claimed while %s (%s, seq %d) was ahead", d.ID, d.Seq, q.ID, q.Status, q.Seq)
			}
		}
		d = state.Claimed(d, runner, m.now)
		m.put(d)
		m.runs = append(m.runs, d)
	}
}

func TestQueueProperties(t *testing.T) {
	t.Parallel()
	stacks := []string{"s", "t", "u"}
	statuses := []state.DeploymentStatus{state.StatusProposed, state.StatusPending, state.StatusApproved}
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 22))
		m := &model{now: t0}
		pick := func() (state.Deployment, bool) {
			if len(m.ds) == 0 {
				return state.Deployment{}, false
			}
			return m.ds[r.IntN(len(m.ds))], true
		}
		for step := range 60 {
			m.now = m.now.Add(time.Duration(r.IntN(4000)) * time.Millisecond)
			switch op := r.IntN(7); op {
			case 0: // create one or two
				var ds []*state.Deployment
				for range 1 + r.IntN(2) {
					id := string(rune('a'+len(m.ds)%26)) + string(rune('0'+len(m.ds)/26))
					ds = append(ds, &state.Deployment{ID: id + "-" + string(rune('0'+len(ds))), Stack: stacks[r.IntN(len(stacks))],
						Status: statuses[r.IntN(len(statuses))], Kind: state.KindDeploy, CreatedBy: "x"})
				}
				if err := state.PrepareCreate(ds, state.Policy{}); err != nil {
					t.Fatalf("seed %d step %d: create: %v", seed, step, err)
				}
				for _, d := range state.Numbered(ds, m.seq, m.now) {
					if d.Status == state.StatusPending && r.IntN(2) == 0 {
						d.HeartbeatAt = m.now // a waiting process is attached
					}
					m.ds = append(m.ds, d)
				}
				m.seq += int64(len(ds))
			case 1: // claim one or two ids
				var want []string
				found := map[string]state.Deployment{}
				for range 1 + r.IntN(2) {
					if d, ok := pick(); ok {
						want = append(want, d.ID)
						found[d.ID] = d
					}
				}
				m.apply(state.PlanClaims(want, found, m.queue(), m.now), "r")
			case 2:
				m.apply(state.PlanNext(m.queue(), m.now), "agent")
			case 3: // approve or abort
				if d, ok := pick(); ok {
					to := []state.DeploymentStatus{state.StatusApproved, state.StatusAborted}[r.IntN(2)]
					if out, err := state.ApplyTransition(d, state.Transition{From: []state.DeploymentStatus{d.Status}, To: to, By: "y", At: m.now}, state.Policy{}); err == nil {
						m.put(out)
					}
				}
			case 4: // the runner finishes
				if d, ok := pick(); ok {
					end := []state.DeploymentStatus{state.StatusCompleted, state.StatusFailed, state.StatusAborted}[r.IntN(3)]
					if err := state.CheckFinish(d, d.Runner, end); err == nil {
						d.Status, d.FinishedAt = end, m.now
						m.put(d)
					}
				}
			case 5: // a live process heartbeats
				if d, ok := pick(); ok && !state.Dead(&d, m.now) && (d.Status == state.StatusRunning || d.Status == state.StatusPending && !d.HeartbeatAt.IsZero()) {
					d.HeartbeatAt = m.now
					m.put(d)
				}
			case 6: // time passes: processes may die
				m.now = m.now.Add(state.DeadAfter)
			}
			checkInvariants(t, seed, step, m)
		}
	}
}

func checkInvariants(t *testing.T, seed uint64, step int, m *model) {
	t.Helper()
	running := map[string]string{}
	for _, d := range m.ds {
		if d.Status != state.StatusRunning {
			continue
		}
		if other, ok := running[d.Stack]; ok {
			t.Fatalf("seed %d step %d: two RUNNING in stack %s: %s and %s", seed, step, d.Stack, other, d.ID)
		}
		running[d.Stack] = d.ID
	}
	// Queue order is stable: none was claimed while another of its stack was RUNNING or queued with a
	// lower Seq (an APPROVED never jumps a RUNNING). A proposal holds no place until approved, so claims of
	// one stack need not come in Seq order.
	if m.jumped != "" {
		t.Fatalf("seed %d step %d: %s", seed, step, m.jumped)
	}
}
