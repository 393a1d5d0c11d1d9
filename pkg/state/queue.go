package state

import (
	"fmt"
	"slices"
	"time"
)

// The rules of the deployment queue (Deployments) as functions of plain values: every store (SQLite,
// PostgreSQL, the state service) reads the rows it needs inside its transaction, asks these functions what
// to do, and writes what they decide. None of them reads a clock or a database.

// PrepareCreate returns an error when ds cannot be created under policy p: a nil deployment, an empty ID
// or stack, an ID given twice, a message CheckMessage refuses, a deployment CheckCreate refuses (a status
// other than PROPOSED, PENDING or APPROVED; a deploy not PROPOSED under the second-person rule:
// *ForbiddenError), or a given SnapshotHash that is not its snapshot's. It sets each SnapshotHash to the
// hash of its snapshot (BindSnapshot): the store records the hash it computed, never the caller's. IDs
// already stored are the store's to refuse.
func PrepareCreate(ds []*Deployment, p Policy) error {
	seen := make(map[string]bool, len(ds))
	for i, d := range ds {
		switch {
		case d == nil:
			return fmt.Errorf("create deployments: deployment %d is nil", i)
		case d.ID == "":
			return fmt.Errorf("create deployments: deployment %d has an empty id", i)
		case d.Stack == "":
			return fmt.Errorf("create deployment %s: empty stack name", d.ID)
		case seen[d.ID]:
			return fmt.Errorf("create deployments: id %s is given twice", d.ID)
		}
		seen[d.ID] = true
		if err := CheckMessage(d.Message); err != nil {
			return fmt.Errorf("create deployment %s: %w", d.ID, err)
		}
		if err := CheckCreate(*d, p); err != nil {
			return err
		}
	}
	for _, d := range ds {
		if err := BindSnapshot(d); err != nil {
			return err
		}
	}
	return nil
}

// Numbered returns copies of ds to store: Seq from after+1 on, in order, and CreatedAt now (UTC) where it
// is zero.
func Numbered(ds []*Deployment, after int64, now time.Time) []Deployment {
	out := make([]Deployment, len(ds))
	for i, d := range ds {
		out[i] = *d
		out[i].Seq = after + int64(i) + 1
		if out[i].CreatedAt.IsZero() {
			out[i].CreatedAt = now.UTC()
		}
	}
	return out
}

// ApplyAbortRequest returns d with by as AbortedBy (what RequestAbort records), or a *TransitionError when
// d is not RUNNING: only a run can be asked to stop.
func ApplyAbortRequest(d Deployment, by string) (Deployment, error) {
	if d.Status != StatusRunning {
		return d, &TransitionError{ID: d.ID, Status: d.Status, To: StatusAborted}
	}
	d.AbortedBy = by
	return d, nil
}

// ApplyTransition returns d after t under policy p, or the error of the state machine: a *TransitionError
// when d is not in a status of t.From or CheckTransition knows no such change (a terminal deployment never
// changes), a *ForbiddenError when it refuses t.By or t.Runner, an error when t.To is RUNNING, COMPLETED
// or FAILED (a claim or FinishDeployment makes those), and an error for a comment CheckMessage refuses or
// one given with an abort.
func ApplyTransition(d Deployment, t Transition, p Policy) (Deployment, error) {
	if !slices.Contains(t.From, d.Status) {
		return d, &TransitionError{ID: d.ID, Status: d.Status, To: t.To}
	}
	if err := CheckTransition(d, t.To, Actor{Name: t.By, Runner: t.Runner}, p); err != nil {
		return d, err
	}
	switch t.To {
	case StatusApproved, StatusRejected, StatusAborted:
	default:
		return d, fmt.Errorf("update deployment %s: cannot make it %s here: a claim makes it RUNNING, FinishDeployment ends a run", d.ID, t.To)
	}
	if t.Comment != "" {
		if t.To == StatusAborted {
			return d, fmt.Errorf("update deployment %s: a comment is recorded with an approval or a rejection, not with an abort", d.ID)
		}
		if err := CheckMessage(t.Comment); err != nil {
			return d, fmt.Errorf("update deployment %s: comment: %w", d.ID, err)
		}
	}
	d.Status = t.To
	switch t.To {
	case StatusApproved:
		d.ApprovedBy, d.ApprovalComment, d.ApprovedAt = t.By, t.Comment, t.At
	case StatusRejected:
		d.RejectedBy, d.RejectionComment = t.By, t.Comment
	case StatusAborted:
		d.AbortedBy = t.By
	}
	if t.Error != "" {
		d.Error = t.Error
	}
	if t.To.Terminal() {
		d.FinishedAt = t.At
	}
	return d, nil
}

// CheckFinish returns an error when FinishDeployment may not end d with status for runner: an error when
// status is not COMPLETED, FAILED or ABORTED, a *TransitionError when d is not RUNNING, else
// CheckTransition's (*ForbiddenError when another runner claimed it).
func CheckFinish(d Deployment, runner string, status DeploymentStatus) error {
	switch status {
	case StatusCompleted, StatusFailed, StatusAborted:
	default:
		return fmt.Errorf("finish deployment %s: status %q; a run ends COMPLETED, FAILED or ABORTED", d.ID, status)
	}
	if d.Status != StatusRunning {
		return &TransitionError{ID: d.ID, Status: d.Status, To: status}
	}
	return CheckTransition(d, status, Actor{Runner: runner}, Policy{})
}

// Dead reports whether the process attached to d is taken for dead at now: d is PENDING or RUNNING and its
// heartbeat, set, is older than now - DeadAfter.
func Dead(d *Deployment, now time.Time) bool {
	return (d.Status == StatusPending || d.Status == StatusRunning) &&
		!d.HeartbeatAt.IsZero() && d.HeartbeatAt.Before(now.Add(-DeadAfter))
}

// DeadError is the error recorded on a deployment aborted because its process stopped heartbeating.
func DeadError(heartbeat time.Time) string {
	return "its process stopped: no heartbeat since " + heartbeat.UTC().Format(time.RFC3339)
}

// Claims is what a claim decides from the deployments its transaction read.
type Claims struct {
	// Abort are the dead waiters and runners to make ABORTED (FinishedAt now, DeadError), as read.
	Abort []Deployment
	// Claim are the deployments to make RUNNING (Claimed), as read.
	Claim []Deployment
	// Err is why ClaimDeployments claims nothing; the aborts stand all the same.
	Err error
}

// PlanClaims decides ClaimDeployments(ids, now). queue holds the queued deployments of the stacks of ids
// in Seq order, found the stored deployments among ids by ID. Dead waiters of the queue are aborted; then
// every id (in order, duplicates ignored) must be stored (else an error wrapping ErrNotFound), PENDING or
// APPROVED (else *TransitionError) and have nothing ahead of it in its stack's queue (else *QueuedError):
// then all of them are claimed.
func PlanClaims(ids []string, found map[string]Deployment, queue []Deployment, now time.Time) Claims {
	var c Claims
	live := make([]Deployment, 0, len(queue))
	aborted := map[string]bool{}
	for _, d := range queue {
		if Dead(&d, now) {
			c.Abort = append(c.Abort, d)
			aborted[d.ID] = true
		} else {
			live = append(live, d)
		}
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		d, ok := found[id]
		if !ok {
			c.Err = fmt.Errorf("claim deployment %s: %w", id, ErrNotFound)
			break
		}
		if aborted[id] {
			d.Status = StatusAborted
		}
		if err := CheckTransition(d, StatusRunning, Actor{}, Policy{}); err != nil {
			c.Err = err // only PENDING and APPROVED deployments are claimed, by anyone
			break
		}
		if ahead := Ahead(live, d); len(ahead) > 0 {
			c.Err = &QueuedError{ID: id, Stack: d.Stack, Position: len(ahead), Ahead: ahead[0]}
			break
		}
		c.Claim = append(c.Claim, d)
		// What is claimed runs: the next id of the same stack is behind it.
		d.Status = StatusRunning
		live = append(live, d)
	}
	if c.Err != nil {
		c.Claim = nil
	}
	return c
}

// Ahead returns the deployments of queue (queued, in Seq order) that run before d in its stack: the
// stack's RUNNING deployment first (whatever its Seq), then those with a lower Seq than d's, in Seq order.
func Ahead(queue []Deployment, d Deployment) []Deployment {
	var running, before []Deployment
	for _, q := range queue {
		switch {
		case q.Stack != d.Stack || q.ID == d.ID:
		case q.Status == StatusRunning:
			running = append(running, q)
		case q.Seq < d.Seq:
			before = append(before, q)
		}
	}
	return append(running, before...)
}

// PlanNext decides ClaimNext(now): queue holds the queued deployments of the stacks in scope in Seq order.
// Dead waiters are aborted; then the claim is the lowest Seq among the heads of the stacks with no RUNNING
// deployment that are APPROVED, or PENDING with no process attached (zero HeartbeatAt); none when no head
// is.
func PlanNext(queue []Deployment, now time.Time) Claims {
	var c Claims
	decided := map[string]bool{} // stacks whose head is seen, or that have a RUNNING deployment
	for _, d := range queue {
		if d.Status == StatusRunning && !Dead(&d, now) {
			decided[d.Stack] = true
		}
	}
	for _, d := range queue {
		switch {
		case Dead(&d, now):
			c.Abort = append(c.Abort, d)
		case decided[d.Stack]:
		default:
			decided[d.Stack] = true
			if len(c.Claim) == 0 && (d.Status == StatusApproved || d.Status == StatusPending && d.HeartbeatAt.IsZero()) {
				c.Claim = []Deployment{d}
			}
		}
	}
	return c
}

// Claimed returns d as a claim by runner at now leaves it: RUNNING, StartedAt and HeartbeatAt now.
func Claimed(d Deployment, runner string, now time.Time) Deployment {
	d.Status, d.StartedAt, d.HeartbeatAt, d.Runner = StatusRunning, now, now, runner
	return d
}

// AbortedDead returns d as the queue leaves a dead waiter or runner (Dead) at now: ABORTED, FinishedAt
// now, Error DeadError of its heartbeat.
func AbortedDead(d Deployment, now time.Time) Deployment {
	d.Status, d.FinishedAt, d.Error = StatusAborted, now, DeadError(d.HeartbeatAt)
	return d
}
