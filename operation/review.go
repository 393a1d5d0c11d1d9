package operation

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

// Review changes the status of recorded deployments on a person's word: approve and reject a proposal,
// abort a queued or running deployment (cdkx deployments approve|reject|abort). The store applies the
// transition rules (state.CheckTransition) under its owner's policy: with "requireSecondPerson" the
// creator of a proposal cannot approve it (*state.ForbiddenError).
type Review struct {
	Backend state.Deployments
	// By is who acts ("user@host"), recorded as the approver, rejecter or aborter.
	By string
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

func (r Review) now() time.Time {
	if r.Now == nil {
		return time.Now().UTC()
	}
	return r.Now().UTC()
}

// Approve moves the PROPOSED deployment id to APPROVED: it joins its stack's queue. comment (optional)
// is recorded as its ApprovalComment. Errors: a comment state.CheckMessage refuses, *state.TransitionError
// when it is not PROPOSED, *state.ForbiddenError under the second-person rule, state.ErrNotFound
// (wrapped).
func (r Review) Approve(ctx context.Context, id, comment string) (*state.Deployment, error) {
	if err := state.CheckMessage(comment); err != nil {
		return nil, fmt.Errorf("comment: %w", err)
	}
	return r.Backend.UpdateDeployment(ctx, id, state.Transition{From: []state.DeploymentStatus{state.StatusProposed},
		To: state.StatusApproved, By: r.By, Comment: comment, At: r.now()})
}

// Reject moves the PROPOSED deployment id to REJECTED (final), recording comment (optional) as why: its
// RejectionComment, and its Error ("rejected: COMMENT", or "rejected"). Errors: a comment
// state.CheckMessage refuses, *state.TransitionError, state.ErrNotFound (wrapped).
func (r Review) Reject(ctx context.Context, id, comment string) (*state.Deployment, error) {
	if err := state.CheckMessage(comment); err != nil {
		return nil, fmt.Errorf("comment: %w", err)
	}
	why := "rejected"
	if comment != "" {
		why = "rejected: " + comment
	}
	return r.Backend.UpdateDeployment(ctx, id, state.Transition{From: []state.DeploymentStatus{state.StatusProposed},
		To: state.StatusRejected, By: r.By, Error: why, Comment: comment, At: r.now()})
}

// Abort ends the PENDING or APPROVED deployment id at once (ABORTED), or asks the runner of a RUNNING one to
// stop (it stays RUNNING until its runner records it ABORTED); asked reports the latter. Nothing is rolled
// back. Errors: *state.TransitionError for a terminal or PROPOSED deployment, state.ErrNotFound (wrapped).
func (r Review) Abort(ctx context.Context, id string) (d *state.Deployment, asked bool, err error) {
	d, err = r.Backend.UpdateDeployment(ctx, id, state.Transition{From: []state.DeploymentStatus{state.StatusPending, state.StatusApproved},
		To: state.StatusAborted, By: r.By, Error: "aborted by " + r.By, At: r.now()})
	var te *state.TransitionError
	if !errors.As(err, &te) || te.Status != state.StatusRunning {
		return d, false, err
	}
	d, err = r.Backend.RequestAbort(ctx, id, r.By, r.now())
	return d, err == nil, err
}
