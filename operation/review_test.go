package operation_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/pkg/backend/sqlite"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// TestReviewApprove: under the second-person rule the proposer cannot approve their proposal
// (*state.ForbiddenError, it stays PROPOSED) and someone else can; approving again is a transition error.
func TestReviewApprove(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, 0)
	ctx := context.Background()
	fx.env.CreatedBy = "alice@h"
	fx.env.Backend.(*sqlite.Backend).SetPolicy(state.Policy{RequireSecondPerson: true})
	p := record(t, fx, writeAssembly(t, fx, 1, "a", ""), state.StatusProposed, "")
	at := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { return at }

	var fe *state.ForbiddenError
	if _, err := (operation.Review{Backend: fx.env.Backend, By: "alice@h", Now: clock}).Approve(ctx, p.ID, ""); !errors.As(err, &fe) {
		t.Fatalf("Approve() by the proposer = %v, want *state.ForbiddenError", err)
	}
	if got, _ := fx.env.Backend.GetDeployment(ctx, p.ID); got.Status != state.StatusProposed {
		t.Errorf("after a refused approval: %s, want PROPOSED", got.Status)
	}
	if _, err := (operation.Review{Backend: fx.env.Backend, By: "bob@h", Now: clock}).Approve(ctx, p.ID, strings.Repeat("x", state.MaxMessageBytes+1)); err == nil || !strings.HasPrefix(err.Error(), "comment: ") {
		t.Errorf("Approve(a comment too long) = %v, want a comment error", err)
	}
	d, err := operation.Review{Backend: fx.env.Backend, By: "bob@h", Now: clock}.Approve(ctx, p.ID, "ship it")
	if err != nil || d.Status != state.StatusApproved || d.ApprovedBy != "bob@h" || d.ApprovalComment != "ship it" {
		t.Fatalf("Approve() by bob = %+v, %v; want APPROVED by bob@h with the comment", d, err)
	}
	if got, _ := fx.env.Backend.GetDeployment(ctx, p.ID); got.ApprovalComment != "ship it" {
		t.Errorf("stored ApprovalComment = %q, want %q", got.ApprovalComment, "ship it")
	}
	var te *state.TransitionError
	if _, err := (operation.Review{Backend: fx.env.Backend, By: "bob@h"}).Approve(ctx, p.ID, ""); !errors.As(err, &te) {
		t.Errorf("Approve() of an APPROVED deployment = %v, want *state.TransitionError", err)
	}
}

// TestReviewReject: a rejection records who and why (with or without a message); a message that cannot
// be stored changes nothing.
func TestReviewReject(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, 0)
	ctx := context.Background()
	a := writeAssembly(t, fx, 1, "a", "")
	r := operation.Review{Backend: fx.env.Backend, By: "carol@h"}
	for _, tc := range []struct{ message, why string }{{"", "rejected"}, {"wrong zone", "rejected: wrong zone"}} {
		p := record(t, fx, a, state.StatusProposed, "")
		d, err := r.Reject(ctx, p.ID, tc.message)
		if err != nil || d.Status != state.StatusRejected || d.RejectedBy != "carol@h" || d.Error != tc.why || d.RejectionComment != tc.message {
			t.Errorf("Reject(%q) = %+v, %v; want REJECTED by carol@h, %q, with the comment", tc.message, d, err, tc.why)
		}
	}
	p := record(t, fx, a, state.StatusProposed, "")
	if _, err := r.Reject(ctx, p.ID, strings.Repeat("x", state.MaxMessageBytes+1)); err == nil || !strings.HasPrefix(err.Error(), "comment: ") {
		t.Errorf("Reject(too long) = %v, want a comment error", err)
	}
	if got, _ := fx.env.Backend.GetDeployment(ctx, p.ID); got.Status != state.StatusProposed {
		t.Errorf("after a refused rejection: %s, want PROPOSED", got.Status)
	}
}

// TestReviewAbort: a queued deployment ends ABORTED at once; a RUNNING one is asked to stop and stays
// RUNNING with the request recorded; a terminal one cannot be aborted.
func TestReviewAbort(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, 0)
	ctx := context.Background()
	a := writeAssembly(t, fx, 1, "a", "")
	r := operation.Review{Backend: fx.env.Backend, By: "dave@h"}
	running := record(t, fx, a, state.StatusPending, "")
	queued := record(t, fx, a, state.StatusPending, "")
	if d, err := fx.env.Backend.ClaimNext(ctx, nil, "agent pid 1 on elsewhere", time.Now().UTC()); err != nil || d.ID != running.ID {
		t.Fatalf("ClaimNext() = %+v, %v", d, err)
	}

	d, asked, err := r.Abort(ctx, queued.ID)
	if err != nil || asked || d.Status != state.StatusAborted || d.AbortedBy != "dave@h" || d.Error != "aborted by dave@h" {
		t.Errorf("Abort(queued) = %+v, %t, %v; want ABORTED by dave@h, not asked", d, asked, err)
	}
	d, asked, err = r.Abort(ctx, running.ID)
	if err != nil || !asked || d.Status != state.StatusRunning || d.AbortedBy != "dave@h" {
		t.Errorf("Abort(running) = %+v, %t, %v; want still RUNNING, asked by dave@h", d, asked, err)
	}
	var te *state.TransitionError
	if _, asked, err := r.Abort(ctx, queued.ID); !errors.As(err, &te) || asked {
		t.Errorf("Abort(ABORTED) = %t, %v; want *state.TransitionError", asked, err)
	}
}
