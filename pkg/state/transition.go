package state

import (
	"fmt"
	"slices"
)

// The deployment state machine: the one set of rules every store (SQLite, PostgreSQL, the state service)
// applies, in the transaction that reads the record, before it writes a new status. The documented
// transitions, and who may make each:
//
//	from                         to                           through          who
//	PROPOSED                     APPROVED                     approve          anyone; not the creator under Policy.RequireSecondPerson
//	PROPOSED                     REJECTED                     reject           anyone
//	PENDING, APPROVED            RUNNING                      claim            the claiming runner (queue order: the store)
//	RUNNING                      COMPLETED, FAILED, ABORTED   finish           only the runner that claimed it
//	PROPOSED, PENDING, APPROVED  ABORTED                      abort            anyone
//
// Besides these, a store itself aborts a PENDING or RUNNING deployment whose process stopped heartbeating
// (DeadAfter), and asks a RUNNING one to stop (RequestAbort: it stays RUNNING). A terminal status never
// changes. Every other (from, to) pair does not exist: *TransitionError.

// Policy is what the owner of a store decides about approvals: cdkx.json's "approval" on SQLite and
// PostgreSQL, the server's flags on a state service.
type Policy struct {
	// RequireSecondPerson makes approval a second person's act: a proposal's creator cannot approve it, and
	// a deploy enters only as a proposal (CheckCreate refuses one created PENDING or APPROVED).
	RequireSecondPerson bool
}

// Actor is who asks for a change of a deployment's status.
type Actor struct {
	// Name is the person or token: "user@host" on SQLite and PostgreSQL, the API token's name on a state
	// service. The second-person rule compares it with the deployment's CreatedBy.
	Name string
	// Runner is the runner identity of the asking process (what its claim recorded as Deployment.Runner),
	// or "" when it runs nothing. Only the runner that claimed a RUNNING deployment may end it.
	Runner string
}

// ForbiddenError is returned when a transition exists but the actor may not make it (the second-person
// rule, a run ended by another runner), or when a deployment may not be created as asked (a direct deploy
// under the second-person rule). A state service answers it with 403.
type ForbiddenError struct {
	ID string
	// Reason says what is refused and what to do instead.
	Reason string
}

// Error names the deployment and the reason.
func (e *ForbiddenError) Error() string {
	return fmt.Sprintf("deployment %s: %s", e.ID, e.Reason)
}

// CheckTransition returns nil when actor by may move d from its status to to under policy p (see the
// table above): *TransitionError when no such transition exists (d is terminal, or the pair is not
// documented), *ForbiddenError when it exists but not for by.
func CheckTransition(d Deployment, to DeploymentStatus, by Actor, p Policy) error {
	from := d.Status
	switch {
	case from.Terminal():
	case from == StatusProposed && to == StatusApproved:
		if p.RequireSecondPerson && by.Name == d.CreatedBy {
			return &ForbiddenError{ID: d.ID, Reason: fmt.Sprintf(
				"%s proposed it and cannot approve it: a second person's approval is required; ask someone else to approve it", by.Name)}
		}
		return nil
	case from == StatusProposed && to == StatusRejected:
		return nil
	case (from == StatusPending || from == StatusApproved) && to == StatusRunning:
		return nil
	case from == StatusRunning && (to == StatusCompleted || to == StatusFailed || to == StatusAborted):
		if by.Runner != d.Runner {
			who := by.Runner
			if who == "" {
				who = by.Name
			}
			return &ForbiddenError{ID: d.ID, Reason: fmt.Sprintf(
				"it is RUNNING for %s; %s may not make it %s: only its runner ends a run; ask it to stop with cdkx deployments abort %s, or wait: the queue aborts it once its heartbeats stop",
				d.Runner, who, to, d.ID)}
		}
		return nil
	case slices.Contains([]DeploymentStatus{StatusProposed, StatusPending, StatusApproved}, from) && to == StatusAborted:
		return nil
	}
	return &TransitionError{ID: d.ID, Status: from, To: to}
}

// CheckCreate returns nil when d may be created under policy p: created PROPOSED, PENDING or APPROVED
// (else an error), and under p.RequireSecondPerson a deploy only PROPOSED (else *ForbiddenError: it must
// be proposed and approved by someone else). Deployments of other kinds (plan, destroy, import,
// refresh) cannot be proposed and are created as asked.
func CheckCreate(d Deployment, p Policy) error {
	switch d.Status {
	case StatusProposed, StatusPending, StatusApproved:
	default:
		return fmt.Errorf("create deployment %s: status %q; a deployment is created PROPOSED, PENDING or APPROVED", d.ID, d.Status)
	}
	if p.RequireSecondPerson && d.Kind == KindDeploy && d.Status != StatusProposed {
		return &ForbiddenError{ID: d.ID, Reason: fmt.Sprintf(
			"a deploy of stack %s cannot be created %s: a second person's approval is required, so a change enters only as a proposal; propose it with cdkx deploy --propose and have someone else approve it",
			d.Stack, d.Status)}
	}
	return nil
}
