package statetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

// Stores opens a fresh store that enforces policy p and returns, for a person's or token's name, a
// backend through which that name acts: on a state service a client with an API token of that name (the
// service records the token's name), on SQLite and PostgreSQL the one backend (names travel in
// Transition.By, CreatedBy and the runner identities).
type Stores func(t *testing.T, p state.Policy) func(name string) state.Backend

// actor is one "who" of the state machine's table: a person (name) and, when it runs deployments, its
// runner identity.
type actor struct {
	role, name, runner string
}

// The cast: alice creates every deployment, bob approves, rejects and aborts them, carol's runner claims
// them (and so is the runner that may end them), dave runs another runner.
var cast = []actor{
	{"creator", "alice", ""},
	{"other", "bob", ""},
	{"runner", "carol", "carol pid 1 on m1"},
	{"other runner", "dave", "dave pid 2 on m2"},
}

var everyStatus = []state.DeploymentStatus{state.StatusProposed, state.StatusApproved, state.StatusRejected, state.StatusPending,
	state.StatusRunning, state.StatusCompleted, state.StatusFailed, state.StatusAborted}

// verdict is how a store answered a change: allowed, forbidden (*state.ForbiddenError) or refused as no
// such transition (*state.TransitionError).
func verdict(err error) string {
	switch {
	case err == nil:
		return "allowed"
	case errors.As(err, new(*state.ForbiddenError)):
		return "forbidden"
	case errors.As(err, new(*state.TransitionError)):
		return "no such transition"
	}
	return "other error: " + err.Error()
}

// RunStateMachine checks, with and without the second-person rule, every (from, to, who) triple of the
// deployment state machine on the stores open returns: a deployment is brought to status from by its
// documented path (propose, approve, reject, claim, finish, abort), then who asks for status to through
// the call that makes it (ClaimDeployments for RUNNING, FinishDeployment to end a RUNNING deployment or
// make it COMPLETED or FAILED, UpdateDeployment otherwise). The store must answer as state.CheckTransition
// does: allowed, *state.ForbiddenError or *state.TransitionError. It also checks what CreateDeployments
// accepts under the policy, and that the store records the snapshot hash it computes.
func RunStateMachine(t *testing.T, open Stores) {
	t.Helper()
	for _, second := range []bool{false, true} {
		p := state.Policy{RequireSecondPerson: second}
		t.Run(fmt.Sprintf("secondPerson=%v", second), func(t *testing.T) {
			as := open(t, p)
			testCreatePolicy(t, as, p)
			testSnapshotHash(t, as("alice"))
			n := 0
			for _, from := range everyStatus {
				for _, to := range everyStatus {
					for _, who := range cast {
						n++
						id, stack := fmt.Sprintf("sm-%d", n), fmt.Sprintf("sm%d", n)
						t.Run(fmt.Sprintf("%s->%s by %s", from, to, who.role), func(t *testing.T) {
							d := bringTo(t, as, id, stack, from)
							want := verdict(state.CheckTransition(d, to, state.Actor{Name: who.name, Runner: who.runner}, p))
							got := verdict(ask(t, as(who.name), d, to, who))
							if got != want {
								t.Errorf("%s -> %s by %s (%s) = %s, want %s", from, to, who.role, who.name, got, want)
							}
						})
					}
				}
			}
		})
	}
}

// bringTo creates deployment id of stack (alice proposes it, or queues it PENDING as a plan, which the
// second-person rule allows) and walks it to status from by the documented transitions; it returns it
// as the state machine sees it.
func bringTo(t *testing.T, as func(string) state.Backend, id, stack string, from state.DeploymentStatus) state.Deployment {
	t.Helper()
	ctx := t.Context()
	d := &state.Deployment{ID: id, Stack: stack, Kind: state.KindDeploy, Status: state.StatusProposed, CreatedBy: "alice", CreatedAt: time.Now()}
	if from == state.StatusPending {
		d.Kind, d.Status = state.KindPlan, state.StatusPending
	}
	if err := as("alice").CreateDeployments(ctx, []*state.Deployment{d}); err != nil {
		t.Fatalf("create %s: %v", id, err)
	}
	update := func(who string, from, to state.DeploymentStatus) {
		t.Helper()
		if _, err := as(who).UpdateDeployment(ctx, id, state.Transition{From: []state.DeploymentStatus{from}, To: to, By: who, At: time.Now()}); err != nil {
			t.Fatalf("make %s %s by %s: %v", id, to, who, err)
		}
	}
	switch from {
	case state.StatusApproved, state.StatusRunning, state.StatusCompleted, state.StatusFailed:
		update("bob", state.StatusProposed, state.StatusApproved)
	case state.StatusRejected:
		update("bob", state.StatusProposed, state.StatusRejected)
	case state.StatusAborted:
		update("bob", state.StatusProposed, state.StatusAborted)
	}
	switch from {
	case state.StatusRunning, state.StatusCompleted, state.StatusFailed:
		if err := as("carol").ClaimDeployments(ctx, []string{id}, cast[2].runner, time.Now()); err != nil {
			t.Fatalf("claim %s: %v", id, err)
		}
	}
	if from == state.StatusCompleted || from == state.StatusFailed {
		if err := as("carol").FinishDeployment(ctx, id, cast[2].runner, from, time.Now(), 1, ""); err != nil {
			t.Fatalf("finish %s %s: %v", id, from, err)
		}
	}
	got, err := as("alice").GetDeployment(ctx, id)
	if err != nil {
		t.Fatalf("read %s: %v", id, err)
	}
	if got.Status != from {
		t.Fatalf("deployment %s is %s, want %s", id, got.Status, from)
	}
	return state.Deployment{ID: id, Stack: stack, Status: from, CreatedBy: "alice", Runner: got.Runner}
}

// ask asks b, as who, to make d to through the call that makes that status.
func ask(t *testing.T, b state.Backend, d state.Deployment, to state.DeploymentStatus, who actor) error {
	t.Helper()
	ctx := t.Context()
	runner := who.runner
	switch {
	case to == state.StatusRunning:
		if runner == "" {
			runner = who.name
		}
		return b.ClaimDeployments(ctx, []string{d.ID}, runner, time.Now())
	case to == state.StatusCompleted || to == state.StatusFailed || to == state.StatusAborted && d.Status == state.StatusRunning:
		return b.FinishDeployment(ctx, d.ID, runner, to, time.Now(), 1, "")
	}
	_, err := b.UpdateDeployment(ctx, d.ID, state.Transition{From: []state.DeploymentStatus{d.Status}, To: to, By: who.name, Runner: runner, At: time.Now()})
	return err
}

// testCreatePolicy: a deploy enters PENDING or APPROVED only without the second-person rule; a proposal,
// and a deployment of another kind, always.
func testCreatePolicy(t *testing.T, as func(string) state.Backend, p state.Policy) {
	t.Helper()
	for i, kind := range []state.DeploymentKind{state.KindDeploy, state.KindPlan} {
		for j, st := range []state.DeploymentStatus{state.StatusProposed, state.StatusPending, state.StatusApproved} {
			d := &state.Deployment{ID: fmt.Sprintf("cp-%d-%d", i, j), Stack: fmt.Sprintf("cp%d%d", i, j), Kind: kind, Status: st, CreatedBy: "alice", CreatedAt: time.Now()}
			want := verdict(state.CheckCreate(*d, p))
			if got := verdict(as("alice").CreateDeployments(t.Context(), []*state.Deployment{d})); got != want {
				t.Errorf("CreateDeployments(%s %s, second person %v) = %s, want %s", kind, st, p.RequireSecondPerson, got, want)
			}
		}
	}
}

// testSnapshotHash: the store records the hash it computes of the snapshot; it refuses a hash or a plan
// that names another snapshot.
func testSnapshotHash(t *testing.T, b state.Backend) {
	t.Helper()
	ctx := t.Context()
	snapshot := []byte(`{"files":{"manifest.json":{}},"format":1}`)
	hash := state.SnapshotHash(snapshot)
	tests := []struct {
		name          string
		hash, planFor string
		wantErr       string
	}{
		{name: "no hash given", planFor: hash},
		{name: "its own hash", hash: hash, planFor: hash},
		{name: "another hash", hash: strings.Repeat("0", 64), planFor: hash, wantErr: "is not the SHA-256 of its snapshot"},
		{name: "a plan of another snapshot", hash: hash, planFor: strings.Repeat("1", 64), wantErr: "its plan was made from snapshot"},
	}
	for i, tt := range tests {
		d := &state.Deployment{ID: fmt.Sprintf("sh-%d", i), Stack: "sh", Kind: state.KindDeploy, Status: state.StatusProposed, CreatedBy: "alice",
			Snapshot: snapshot, SnapshotHash: tt.hash, Plan: &state.Plan{Steps: []state.PlanStep{}, SnapshotHash: tt.planFor}, CreatedAt: time.Now()}
		err := b.CreateDeployments(ctx, []*state.Deployment{d})
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: CreateDeployments() = %v, want an error saying %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: CreateDeployments() = %v", tt.name, err)
			continue
		}
		got, err := b.GetDeployment(ctx, d.ID)
		if err != nil || got.SnapshotHash != hash {
			t.Errorf("%s: stored snapshotHash = %v, %v; want %s", tt.name, got, err, hash)
		}
	}
}
