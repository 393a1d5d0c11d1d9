package sqlschema

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

// The rules of the deployment queue (state.Deployments) that both backends apply to the rows they read
// inside their transactions; the backends only read, lock and write.

// QueuedStatuses is the SQL list of the statuses that hold a place in a queue, as the partial index
// deployments_queued is declared: use it as `status IN ` + QueuedStatuses.
const QueuedStatuses = `('PENDING', 'APPROVED', 'RUNNING')`

// CheckCreate returns an error when ds cannot be created under policy p: a nil deployment, an empty ID
// or stack, an ID given twice, a message state.CheckMessage refuses, a deployment state.CheckCreate
// refuses (a status other than PROPOSED, PENDING or APPROVED; a deploy not PROPOSED under the
// second-person rule: *state.ForbiddenError), or a given SnapshotHash that is not its snapshot's. It sets
// each SnapshotHash to the hash of its snapshot (state.BindSnapshot): the store records the hash it
// computed, never the caller's. IDs already stored are the database's to refuse.
func CheckCreate(ds []*state.Deployment, p state.Policy) error {
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
		if err := state.CheckMessage(d.Message); err != nil {
			return fmt.Errorf("create deployment %s: %w", d.ID, err)
		}
		if err := state.CheckCreate(*d, p); err != nil {
			return err
		}
	}
	for _, d := range ds {
		if err := state.BindSnapshot(d); err != nil {
			return err
		}
	}
	return nil
}

// Numbered returns copies of ds to store: Seq from after+1 on, in order, and CreatedAt now (UTC) where it
// is zero.
func Numbered(ds []*state.Deployment, after int64, now time.Time) []state.Deployment {
	out := make([]state.Deployment, len(ds))
	for i, d := range ds {
		out[i] = *d
		out[i].Seq = after + int64(i) + 1
		if out[i].CreatedAt.IsZero() {
			out[i].CreatedAt = now.UTC()
		}
	}
	return out
}

// ApplyAbortRequest returns d with by as AbortedBy (what SQLRequestAbort stores), or a
// *state.TransitionError when d is not RUNNING: only a run can be asked to stop.
func ApplyAbortRequest(d state.Deployment, by string) (state.Deployment, error) {
	if d.Status != state.StatusRunning {
		return d, &state.TransitionError{ID: d.ID, Status: d.Status, To: state.StatusAborted}
	}
	d.AbortedBy = by
	return d, nil
}

// ApplyTransition returns d after t under policy p, or the error of the state machine: a
// *state.TransitionError when d is not in a status of t.From or state.CheckTransition knows no such
// change (a terminal deployment never changes), a *state.ForbiddenError when it refuses t.By or
// t.Runner, an error when t.To is RUNNING, COMPLETED or FAILED (a claim or FinishDeployment makes those).
func ApplyTransition(d state.Deployment, t state.Transition, p state.Policy) (state.Deployment, error) {
	if !slices.Contains(t.From, d.Status) {
		return d, &state.TransitionError{ID: d.ID, Status: d.Status, To: t.To}
	}
	if err := state.CheckTransition(d, t.To, state.Actor{Name: t.By, Runner: t.Runner}, p); err != nil {
		return d, err
	}
	switch t.To {
	case state.StatusApproved, state.StatusRejected, state.StatusAborted:
	default:
		return d, fmt.Errorf("update deployment %s: cannot make it %s here: a claim makes it RUNNING, FinishDeployment ends a run", d.ID, t.To)
	}
	d.Status = t.To
	switch t.To {
	case state.StatusApproved:
		d.ApprovedBy = t.By
	case state.StatusRejected:
		d.RejectedBy = t.By
	case state.StatusAborted:
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
// status is not COMPLETED, FAILED or ABORTED, a *state.TransitionError when d is not RUNNING, else
// state.CheckTransition's (*state.ForbiddenError when another runner claimed it).
func CheckFinish(d state.Deployment, runner string, status state.DeploymentStatus) error {
	switch status {
	case state.StatusCompleted, state.StatusFailed, state.StatusAborted:
	default:
		return fmt.Errorf("finish deployment %s: status %q; a run ends COMPLETED, FAILED or ABORTED", d.ID, status)
	}
	if d.Status != state.StatusRunning {
		return &state.TransitionError{ID: d.ID, Status: d.Status, To: status}
	}
	return state.CheckTransition(d, status, state.Actor{Runner: runner}, state.Policy{})
}

// Dead reports whether the process attached to d is taken for dead at now: d is PENDING or RUNNING and its
// heartbeat, set, is older than now - state.DeadAfter.
func Dead(d *state.Deployment, now time.Time) bool {
	return (d.Status == state.StatusPending || d.Status == state.StatusRunning) &&
		!d.HeartbeatAt.IsZero() && d.HeartbeatAt.Before(now.Add(-state.DeadAfter))
}

// DeadError is the error recorded on a deployment aborted because its process stopped heartbeating.
func DeadError(heartbeat time.Time) string {
	return "its process stopped: no heartbeat since " + heartbeat.UTC().Format(time.RFC3339)
}

// Claims is what a claim decides from the rows its transaction read.
type Claims struct {
	// Abort are the dead waiters and runners to make ABORTED (FinishedAt now, DeadError), as read.
	Abort []state.Deployment
	// Claim are the deployments to make RUNNING, as read.
	Claim []state.Deployment
	// Err is why ClaimDeployments claims nothing; the aborts stand all the same.
	Err error
}

// PlanClaims decides ClaimDeployments(ids, now). queue holds the queued deployments of the stacks of ids
// in Seq order, found the stored deployments among ids by ID. Dead waiters of the queue are aborted; then
// every id (in order, duplicates ignored) must be stored (else an error wrapping state.ErrNotFound),
// PENDING or APPROVED (else *state.TransitionError) and have nothing ahead of it in its stack's queue (else
// *state.QueuedError): then all of them are claimed.
func PlanClaims(ids []string, found map[string]state.Deployment, queue []state.Deployment, now time.Time) Claims {
	var c Claims
	live := make([]state.Deployment, 0, len(queue))
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
			c.Err = fmt.Errorf("claim deployment %s: %w", id, state.ErrNotFound)
			break
		}
		if aborted[id] {
			d.Status = state.StatusAborted
		}
		if err := state.CheckTransition(d, state.StatusRunning, state.Actor{}, state.Policy{}); err != nil {
			c.Err = err // only PENDING and APPROVED deployments are claimed, by anyone
			break
		}
		if ahead := Ahead(live, d); len(ahead) > 0 {
			c.Err = &state.QueuedError{ID: id, Stack: d.Stack, Position: len(ahead), Ahead: ahead[0]}
			break
		}
		c.Claim = append(c.Claim, d)
		// What is claimed runs: the next id of the same stack is behind it.
		d.Status = state.StatusRunning
		live = append(live, d)
	}
	if c.Err != nil {
		c.Claim = nil
	}
	return c
}

// Ahead returns the deployments of queue (queued, in Seq order) that run before d in its stack: the
// stack's RUNNING deployment first (whatever its Seq), then those with a lower Seq than d's, in Seq order.
func Ahead(queue []state.Deployment, d state.Deployment) []state.Deployment {
	var running, before []state.Deployment
	for _, q := range queue {
		switch {
		case q.Stack != d.Stack || q.ID == d.ID:
		case q.Status == state.StatusRunning:
			running = append(running, q)
		case q.Seq < d.Seq:
			before = append(before, q)
		}
	}
	return append(running, before...)
}

// PlanNext decides ClaimNext(now): queue holds the queued deployments of the stacks in scope in Seq order.
// Dead waiters are aborted; then the claim is the lowest Seq among the heads of the stacks with no
// RUNNING deployment that are APPROVED, or PENDING with no process attached (zero HeartbeatAt); none
// when no head is.
func PlanNext(queue []state.Deployment, now time.Time) Claims {
	var c Claims
	decided := map[string]bool{} // stacks whose head is seen, or that have a RUNNING deployment
	for _, d := range queue {
		if d.Status == state.StatusRunning && !Dead(&d, now) {
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
			if len(c.Claim) == 0 && (d.Status == state.StatusApproved || d.Status == state.StatusPending && d.HeartbeatAt.IsZero()) {
				c.Claim = []state.Deployment{d}
			}
		}
	}
	return c
}

// ErrLostRace is returned by a claim whose compare-and-set found a row changed since it was read: a
// concurrent transaction won, and the claim is tried again from the start.
var ErrLostRace = errors.New("a concurrent change won the race")

// SQL of the queue's writes (portable, $N placeholders). Each is a compare-and-set on what was read: no
// row changed means that a concurrent transaction changed it first.
const (
	// SQLAbortDead aborts a dead waiter or runner: $1 id, $2 status and $3 heartbeat_at as read, $4
	// finished_at, $5 error.
	SQLAbortDead = `UPDATE deployments SET status = 'ABORTED', finished_at = $4, error = $5
WHERE id = $1 AND status = $2 AND heartbeat_at = $3`
	// SQLClaim makes a deployment RUNNING: $1 id, $2 status as read, $3 started_at and heartbeat_at, $4
	// runner.
	SQLClaim = `UPDATE deployments SET status = 'RUNNING', started_at = $3, heartbeat_at = $3, runner = $4
WHERE id = $1 AND status = $2`
	// SQLTransition writes what ApplyTransition changed: $1 id, $2 status as read, then the new status,
	// approved_by, rejected_by, aborted_by, error and finished_at.
	SQLTransition = `UPDATE deployments SET status = $3, approved_by = $4, rejected_by = $5, aborted_by = $6, error = $7,
  finished_at = $8
WHERE id = $1 AND status = $2`
	// SQLRequestAbort records who asks a RUNNING deployment to stop: $1 id, $2 aborted_by.
	SQLRequestAbort = `UPDATE deployments SET aborted_by = $2 WHERE id = $1 AND status = 'RUNNING'`
	// SQLFinish ends a run: $1 id, then status, finished_at, version and error.
	SQLFinish = `UPDATE deployments SET status = $2, finished_at = $3, version = $4, error = $5
WHERE id = $1 AND status = 'RUNNING'`
)

// Exec runs one statement in the caller's transaction and returns the number of rows it changed.
type Exec func(query string, args ...any) (int64, error)

// Write applies c in the caller's transaction: the aborts (FinishedAt now, DeadError), then the claims
// (RUNNING, StartedAt and HeartbeatAt now, Runner runner). It returns ErrLostRace when a row changed since
// it was read; the caller rolls back and starts again.
func (c Claims) Write(exec Exec, runner string, now time.Time) error {
	for _, d := range c.Abort {
		n, err := exec(SQLAbortDead, d.ID, string(d.Status), Nanos(d.HeartbeatAt), Nanos(now), DeadError(d.HeartbeatAt))
		if err != nil {
			return fmt.Errorf("abort deployment %s: %w", d.ID, err)
		}
		if n != 1 {
			return fmt.Errorf("abort deployment %s: %w", d.ID, ErrLostRace)
		}
	}
	for _, d := range c.Claim {
		n, err := exec(SQLClaim, d.ID, string(d.Status), Nanos(now), runner)
		if err != nil {
			return fmt.Errorf("claim deployment %s: %w", d.ID, err)
		}
		if n != 1 {
			return fmt.Errorf("claim deployment %s: %w", d.ID, ErrLostRace)
		}
	}
	return nil
}

// Claimed returns d as Write leaves a claimed deployment.
func Claimed(d state.Deployment, runner string, now time.Time) state.Deployment {
	d.Status, d.StartedAt, d.HeartbeatAt, d.Runner = state.StatusRunning, now, now, runner
	return d
}

// QueueError is how both backends report a failed queue operation op: the queue's own errors
// (*state.TransitionError, *state.QueuedError, *state.ForbiddenError) as they are, state.ErrNotFound wrapped with op, and any
// other failure through dbError, which adds the database's hints.
func QueueError(op string, err error, dbError func(op string, err error) error) error {
	var te *state.TransitionError
	var qe *state.QueuedError
	var fe *state.ForbiddenError
	if errors.As(err, &te) || errors.As(err, &qe) || errors.As(err, &fe) {
		return err
	}
	if errors.Is(err, state.ErrNotFound) {
		return fmt.Errorf("%s: %w", op, err)
	}
	return dbError(op, err)
}
