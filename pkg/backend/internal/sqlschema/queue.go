package sqlschema

import (
	"errors"
	"fmt"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

// The writes of the deployment queue (state.Deployments): both backends read the rows inside their
// transactions, ask the rules of pkg/state (state.PlanClaims, state.ApplyTransition, …) and write here.

// QueuedStatuses is the SQL list of the statuses that hold a place in a queue, as the partial index
// deployments_queued is declared: use it as `status IN ` + QueuedStatuses.
const QueuedStatuses = `('PENDING', 'APPROVED', 'RUNNING')`

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
	// approved_by, rejected_by, aborted_by, error, finished_at, approval_comment, rejection_comment and
	// approved_at.
	SQLTransition = `UPDATE deployments SET status = $3, approved_by = $4, rejected_by = $5, aborted_by = $6, error = $7,
  finished_at = $8, approval_comment = $9, rejection_comment = $10, approved_at = $11
WHERE id = $1 AND status = $2`
	// SQLRequestAbort records who asks a RUNNING deployment to stop: $1 id, $2 aborted_by.
	SQLRequestAbort = `UPDATE deployments SET aborted_by = $2 WHERE id = $1 AND status = 'RUNNING'`
	// SQLFinish ends a run: $1 id, then status, finished_at, version and error.
	SQLFinish = `UPDATE deployments SET status = $2, finished_at = $3, version = $4, error = $5
WHERE id = $1 AND status = 'RUNNING'`
)

// Exec runs one statement in the caller's transaction and returns the number of rows it changed.
type Exec func(query string, args ...any) (int64, error)

// WriteClaims applies c (state.PlanClaims, state.PlanNext) in the caller's transaction: the aborts (FinishedAt now, DeadError), then the claims
// (RUNNING, StartedAt and HeartbeatAt now, Runner runner). It returns ErrLostRace when a row changed since
// it was read; the caller rolls back and starts again.
func WriteClaims(c state.Claims, exec Exec, runner string, now time.Time) error {
	for _, d := range c.Abort {
		n, err := exec(SQLAbortDead, d.ID, string(d.Status), Nanos(d.HeartbeatAt), Nanos(now), state.DeadError(d.HeartbeatAt))
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
