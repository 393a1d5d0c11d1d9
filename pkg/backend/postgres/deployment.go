package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/backend/sqlschema"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

// The deployment queue. Every change runs in a READ COMMITTED transaction that first locks the rows it
// decides on (SELECT … FOR UPDATE): a claim locks the queued rows of the stacks it looks at, in (stack,
// seq) order, so that claimers of one stack, in this process or any other, take turns and each reads the
// queue as the previous one left it. The unique index deployments_one_running is the final guard: should
// two claims of one stack ever both get through (a deployment that joined the queue after the locks were
// taken), the second fails on it, rolls back and starts again. Transactions that PostgreSQL aborts to
// break a deadlock (row locks taken in another order by a heartbeat, say) are retried too.

// seqLockClass is the first key of the transaction-level advisory lock that serializes the numbering of
// new deployments ("CDKQ" in ASCII); the second is a hash of the schema. Held until the creating
// transaction commits, it makes deployments become visible in Seq order: a claimer never sees a
// deployment while one with a lower Seq is still to appear.
const seqLockClass int32 = 0x43444b51

// queueAttempts bounds how often a queue transaction that lost a race, or that PostgreSQL aborted to
// resolve a conflict, is tried.
const queueAttempts = 10

// SQL of the queue's reads.
const (
	sqlLockSeq = `SELECT pg_advisory_xact_lock($1::integer, hashtext(coalesce(current_schema(), '') || '/deployments'))`
	sqlMaxSeq  = `SELECT COALESCE(MAX(seq), 0) FROM deployments`
	// sqlLockQueues locks the queued deployments of the stacks $1 (all stacks when $1 is empty), in one
	// order for every transaction, so that claimers never wait for each other in a cycle.
	sqlLockQueues = `SELECT id FROM deployments WHERE status IN ` + sqlschema.QueuedStatuses + `
  AND (cardinality($1::text[]) = 0 OR stack = ANY($1::text[]))
ORDER BY stack, seq FOR UPDATE`
	// sqlReadQueues reads the same deployments, in Seq order.
	sqlReadQueues = `SELECT ` + sqlschema.QueueColumns + ` FROM deployments WHERE status IN ` + sqlschema.QueuedStatuses + `
  AND (cardinality($1::text[]) = 0 OR stack = ANY($1::text[]))
ORDER BY seq`
	sqlReadByIDs      = `SELECT ` + sqlschema.QueueColumns + ` FROM deployments WHERE id = ANY($1::text[])`
	sqlReadForUpdate  = `SELECT ` + sqlschema.DeploymentColumns + ` FROM deployments WHERE id = $1 FOR UPDATE`
	sqlReadWithSnap   = `SELECT ` + sqlschema.DeploymentColumns + `, ` + sqlschema.SnapshotColumn + ` FROM deployments WHERE id = $1`
	sqlHeartbeat      = `UPDATE deployments SET heartbeat_at = $2 WHERE id = ANY($1::text[]) AND status IN ` + sqlschema.QueuedStatuses
	constraintRunning = "deployments_one_running"
)

// CreateDeployments stores ds in one transaction, numbered after the highest Seq stored, and then sets
// their Seq (and CreatedAt, to now, where it was zero). Snapshots are stored as text (they are JSON), an
// empty one as absent; the plan as JSON. It fails, storing nothing, on an invalid deployment (see
// state.PrepareCreate under the backend's policy: *state.ForbiddenError for a direct deploy under the
// second-person rule) or an ID already stored. SnapshotHash is computed here (state.BindSnapshot).
func (b *Backend) CreateDeployments(ctx context.Context, ds []*state.Deployment) error {
	if err := state.PrepareCreate(ds, b.policy); err != nil {
		return err
	}
	op := "create deployments " + idList(ds)
	if err := b.checkOpen(op); err != nil {
		return err
	}
	if len(ds) == 0 {
		return nil
	}
	var rows []state.Deployment
	err := b.queueTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, sqlLockSeq, seqLockClass); err != nil {
			return err
		}
		var last int64
		if err := tx.QueryRow(ctx, sqlMaxSeq).Scan(&last); err != nil {
			return err
		}
		rows = state.Numbered(ds, last, b.now())
		batch := &pgx.Batch{}
		var of []string // the deployment of each queued statement
		for i := range rows {
			args, payload, err := sqlschema.DeploymentArgs(&rows[i])
			if err != nil {
				return err
			}
			batch.Queue(sqlschema.InsertDeployment, args...)
			of = append(of, rows[i].ID)
			if payload != nil {
				batch.Queue(sqlschema.InsertPayload, payload...)
				of = append(of, rows[i].ID)
			}
		}
		br := tx.SendBatch(ctx, batch)
		for _, id := range of {
			if _, err := br.Exec(); err != nil {
				_ = br.Close()
				if pgCode(err) == codeUniqueViolation {
					return fmt.Errorf("a deployment with id %s already exists: %w", id, err)
				}
				return err
			}
		}
		return br.Close()
	})
	if err != nil {
		return b.queueError(op, err)
	}
	for i, d := range ds {
		d.Seq, d.CreatedAt = rows[i].Seq, rows[i].CreatedAt
	}
	return nil
}

// idList names deployments in errors.
func idList(ds []*state.Deployment) string {
	ids := make([]string, len(ds))
	for i, d := range ds {
		if d != nil {
			ids[i] = d.ID
		}
	}
	return strings.Join(ids, ", ")
}

// UpdateDeployment applies t to deployment id (see state.ApplyTransition, under the backend's policy)
// under its row lock and returns the record after it, without its snapshot. Errors:
// *state.TransitionError when id is terminal, not in a status of t.From or the change does not exist;
// *state.ForbiddenError when the state machine refuses t.By or t.Runner; state.ErrNotFound (wrapped) when
// absent; an error when t.To is not APPROVED, REJECTED or ABORTED.
func (b *Backend) UpdateDeployment(ctx context.Context, id string, t state.Transition) (*state.Deployment, error) {
	op := fmt.Sprintf("update deployment %s", id)
	if err := b.checkOpen(op); err != nil {
		return nil, err
	}
	var out state.Deployment
	err := b.queueTx(ctx, func(tx pgx.Tx) error {
		d, err := lockDeployment(ctx, tx, id)
		if err != nil {
			return err
		}
		if out, err = state.ApplyTransition(d, t, b.policy); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, sqlschema.SQLTransition, id, string(d.Status), string(out.Status),
			out.ApprovedBy, out.RejectedBy, out.AbortedBy, out.Error, sqlschema.Nanos(out.FinishedAt))
		return err
	})
	if err != nil {
		return nil, b.queueError(op, err)
	}
	return &out, nil
}

// RequestAbort records by as AbortedBy of RUNNING deployment id and returns the record, without its
// snapshot; at is not stored. *state.TransitionError when it is not RUNNING, state.ErrNotFound (wrapped)
// when absent.
func (b *Backend) RequestAbort(ctx context.Context, id, by string, at time.Time) (*state.Deployment, error) {
	op := fmt.Sprintf("request the abort of deployment %s", id)
	if err := b.checkOpen(op); err != nil {
		return nil, err
	}
	var out state.Deployment
	err := b.queueTx(ctx, func(tx pgx.Tx) error {
		d, err := lockDeployment(ctx, tx, id)
		if err != nil {
			return err
		}
		if out, err = state.ApplyAbortRequest(d, by); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, sqlschema.SQLRequestAbort, id, by)
		return err
	})
	if err != nil {
		return nil, b.queueError(op, err)
	}
	return &out, nil
}

// ClaimDeployments claims ids all or none (see state.PlanClaims) in one transaction, holding the row
// locks of their stacks' queues, after aborting the dead waiters of those stacks. The aborts are committed
// even when the claim fails, so that a waiter behind a dead one sees its place move up.
func (b *Backend) ClaimDeployments(ctx context.Context, ids []string, runner string, now time.Time) error {
	op := "claim deployments " + strings.Join(ids, ", ")
	if err := b.checkOpen(op); err != nil {
		return err
	}
	var claimErr error
	err := b.queueTx(ctx, func(tx pgx.Tx) error {
		found, err := readDeployments(ctx, tx, sqlReadByIDs, ids)
		if err != nil {
			return err
		}
		var stacks []string
		for _, d := range found {
			if !slices.Contains(stacks, d.Stack) {
				stacks = append(stacks, d.Stack)
			}
		}
		var queue []state.Deployment
		if len(stacks) > 0 {
			if queue, err = lockQueues(ctx, tx, stacks); err != nil {
				return err
			}
			// Read again under the locks: a claimer that held them may have changed these.
			if found, err = readDeployments(ctx, tx, sqlReadByIDs, ids); err != nil {
				return err
			}
		}
		byID := make(map[string]state.Deployment, len(found))
		for _, d := range found {
			byID[d.ID] = d
		}
		c := state.PlanClaims(ids, byID, queue, now)
		claimErr = c.Err
		return sqlschema.WriteClaims(c, execer(ctx, tx), runner, now)
	})
	if err != nil {
		return b.queueError(op, err)
	}
	return claimErr
}

// ClaimNext claims, in one transaction holding the row locks of the queues of stacks (of all stacks when
// empty), the deployment state.PlanNext picks after aborting their dead waiters, and returns it with
// its snapshot; nil when there is none.
func (b *Backend) ClaimNext(ctx context.Context, stacks []string, runner string, now time.Time) (*state.Deployment, error) {
	const op = "claim the next deployment"
	if err := b.checkOpen(op); err != nil {
		return nil, err
	}
	var out *state.Deployment
	err := b.queueTx(ctx, func(tx pgx.Tx) error {
		out = nil
		queue, err := lockQueues(ctx, tx, stacks)
		if err != nil {
			return err
		}
		c := state.PlanNext(queue, now)
		if err := sqlschema.WriteClaims(c, execer(ctx, tx), runner, now); err != nil || len(c.Claim) == 0 {
			return err
		}
		out, err = getDeployment(ctx, tx, c.Claim[0].ID)
		return err
	})
	if err != nil {
		return nil, b.queueError(op, err)
	}
	return out, nil
}

// HeartbeatDeployments sets HeartbeatAt to at on the PENDING, APPROVED and RUNNING deployments among ids
// and returns those of ids that are stored, in the order of ids, without snapshots.
func (b *Backend) HeartbeatDeployments(ctx context.Context, ids []string, at time.Time) ([]state.Deployment, error) {
	const op = "heartbeat deployments"
	if err := b.checkOpen(op); err != nil {
		return nil, err
	}
	var out []state.Deployment
	err := b.retry(ctx, func() error {
		if _, err := b.pool.Exec(ctx, sqlHeartbeat, ids, sqlschema.Nanos(at)); err != nil {
			return err
		}
		found, err := readDeployments(ctx, b.pool, sqlReadByIDs, ids)
		out = inOrder(ids, found)
		return err
	})
	if err != nil {
		return nil, b.queueError(op, err)
	}
	return out, nil
}

// FinishDeployment ends RUNNING deployment id with status (COMPLETED, FAILED or ABORTED), its finish
// time, the stack's resulting version and errMsg, keeping the rest (AbortedBy included), for runner.
// *state.TransitionError when it is not RUNNING, *state.ForbiddenError when runner did not claim it,
// state.ErrNotFound (wrapped) when absent.
func (b *Backend) FinishDeployment(ctx context.Context, id, runner string, status state.DeploymentStatus, finishedAt time.Time, version int64, errMsg string) error {
	op := fmt.Sprintf("finish deployment %s", id)
	if err := b.checkOpen(op); err != nil {
		return err
	}
	err := b.queueTx(ctx, func(tx pgx.Tx) error {
		d, err := lockDeployment(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := state.CheckFinish(d, runner, status); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, sqlschema.SQLFinish, id, string(status), sqlschema.Nanos(finishedAt), version, errMsg)
		return err
	})
	if err != nil {
		return b.queueError(op, err)
	}
	return nil
}

// ListDeployments returns the deployments f selects, newest (highest Seq) first, without snapshots.
func (b *Backend) ListDeployments(ctx context.Context, f state.DeploymentFilter) ([]state.Deployment, error) {
	const op = "list deployments"
	if err := b.checkOpen(op); err != nil {
		return nil, err
	}
	var where []string
	var args []any
	if f.Stack != "" {
		args = append(args, f.Stack)
		where = append(where, fmt.Sprintf("stack = $%d", len(args)))
	}
	if len(f.Statuses) > 0 {
		statuses := make([]string, len(f.Statuses))
		for i, s := range f.Statuses {
			statuses[i] = string(s)
		}
		args = append(args, statuses)
		where = append(where, fmt.Sprintf("status = ANY($%d::text[])", len(args)))
	}
	if f.IDPrefix != "" {
		args = append(args, f.IDPrefix)
		where = append(where, fmt.Sprintf("left(id, length($%d::text)) = $%d::text", len(args), len(args)))
	}
	q := `SELECT ` + sqlschema.DeploymentColumns + ` FROM deployments`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY seq DESC`
	if f.Limit > 0 {
		args = append(args, f.Limit)
		q += fmt.Sprintf(` LIMIT $%d`, len(args))
	}
	rows, err := b.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, dbError(b.where, op, err)
	}
	defer rows.Close()
	out, err := sqlschema.ScanDeployments(rows)
	if err != nil {
		return nil, dbError(b.where, op, err)
	}
	return out, nil
}

// GetDeployment returns deployment id with its snapshot; an unknown id is an error wrapping
// state.ErrNotFound.
func (b *Backend) GetDeployment(ctx context.Context, id string) (*state.Deployment, error) {
	op := fmt.Sprintf("read deployment %s", id)
	if err := b.checkOpen(op); err != nil {
		return nil, err
	}
	d, err := getDeployment(ctx, b.pool, id)
	if err != nil {
		return nil, b.queueError(op, err)
	}
	return d, nil
}

// Events returns deployment id's events ordered by Seq; none (and no error) for an unknown deployment.
func (b *Backend) Events(ctx context.Context, deploymentID string) ([]state.Event, error) {
	op := fmt.Sprintf("read events of deployment %q", deploymentID)
	if err := b.checkOpen(op); err != nil {
		return nil, err
	}
	rows, err := b.pool.Query(ctx, `SELECT `+sqlschema.EventColumns+` FROM events WHERE deployment_id = $1 ORDER BY seq`, deploymentID)
	if err != nil {
		return nil, dbError(b.where, op, err)
	}
	defer rows.Close()
	out, err := sqlschema.ScanEvents(rows, deploymentID)
	if err != nil {
		return nil, dbError(b.where, op, err)
	}
	return out, nil
}

// queueTx runs f in a transaction, committing when it returns nil, and tries again (see retry) when the
// transaction lost a race or PostgreSQL aborted it to resolve a conflict.
func (b *Backend) queueTx(ctx context.Context, f func(tx pgx.Tx) error) error {
	return b.retry(ctx, func() error { return pgx.BeginFunc(ctx, b.pool, f) })
}

// retry calls f until it succeeds, fails for good, or has been tried queueAttempts times, with a short
// jittered backoff in between. It tries again when f lost a race (sqlschema.ErrLostRace, or a second
// RUNNING deployment refused by deployments_one_running) or failed in a way that changed nothing
// (retryable).
func (b *Backend) retry(ctx context.Context, f func() error) error {
	for attempt := 1; ; attempt++ {
		err := f()
		if err == nil || attempt == queueAttempts || !lostRace(err) {
			return err
		}
		backoff := time.Duration(attempt)*time.Millisecond + rand.N(5*time.Millisecond)
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(backoff):
		}
	}
}

// lostRace reports whether a queue transaction failed only because of a concurrent one, and may succeed
// when tried again.
func lostRace(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == codeUniqueViolation && pe.ConstraintName == constraintRunning {
		return true
	}
	return errors.Is(err, sqlschema.ErrLostRace) || retryable(err)
}

// queueError returns the queue's own errors as they are and wraps any other failure of op with the
// database's hints (sqlschema.QueueError).
func (b *Backend) queueError(op string, err error) error {
	return sqlschema.QueueError(op, err, func(op string, err error) error { return dbError(b.where, op, err) })
}

// queryer is what deployments are read with: the pool or a transaction.
type queryer interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// lockDeployment reads deployment id, without its snapshot, and locks its row until the transaction
// ends; state.ErrNotFound (wrapped) when absent.
func lockDeployment(ctx context.Context, tx pgx.Tx, id string) (state.Deployment, error) {
	d, err := sqlschema.ScanDeployment(tx.QueryRow(ctx, sqlReadForUpdate, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return d, fmt.Errorf("deployment %s: %w", id, state.ErrNotFound)
	}
	return d, err
}

// getDeployment reads deployment id with its snapshot; state.ErrNotFound (wrapped) when absent.
func getDeployment(ctx context.Context, q queryer, id string) (*state.Deployment, error) {
	var snapshot *string
	d, err := sqlschema.ScanDeployment(q.QueryRow(ctx, sqlReadWithSnap, id), &snapshot)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("deployment %s: %w", id, state.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	if snapshot != nil && *snapshot != "" {
		d.Snapshot = []byte(*snapshot)
	}
	return &d, nil
}

// readDeployments reads the deployments query selects (QueueColumns: without plans or snapshots).
func readDeployments(ctx context.Context, q queryer, query string, args ...any) ([]state.Deployment, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return sqlschema.ScanDeployments(rows)
}

// lockQueues locks the queued deployments of stacks (of every stack when empty) until the transaction
// ends, then reads them, in Seq order, as the last transaction that held the locks left them.
func lockQueues(ctx context.Context, tx pgx.Tx, stacks []string) ([]state.Deployment, error) {
	if stacks == nil {
		stacks = []string{}
	}
	if _, err := tx.Exec(ctx, sqlLockQueues, stacks); err != nil {
		return nil, fmt.Errorf("lock the queues: %w", err)
	}
	return readDeployments(ctx, tx, sqlReadQueues, stacks)
}

// execer runs statements in tx for state.Claims.Write.
func execer(ctx context.Context, tx pgx.Tx) sqlschema.Exec {
	return func(query string, args ...any) (int64, error) {
		tag, err := tx.Exec(ctx, query, args...)
		return tag.RowsAffected(), err
	}
}

// inOrder returns the deployments of found in the order of ids (each once), skipping absent ones.
func inOrder(ids []string, found []state.Deployment) []state.Deployment {
	byID := make(map[string]state.Deployment, len(found))
	for _, d := range found {
		byID[d.ID] = d
	}
	out := make([]state.Deployment, 0, len(found))
	for _, id := range ids {
		if d, ok := byID[id]; ok {
			out = append(out, d)
			delete(byID, id)
		}
	}
	return out
}
