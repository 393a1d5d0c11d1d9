package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/backend/sqlschema"

	"github.com/cdkx-dev/cdkx/pkg/state"
	sqlite3 "modernc.org/sqlite/lib"
)

// The deployment queue. Every change is one transaction on the write connection (BEGIN IMMEDIATE), which
// serializes it with every other write of this process and, through SQLite's write lock, of every other
// process on the file: a claim reads the queue and writes its decision with no writer in between. The
// unique index deployments_one_running is the database's own guard of one RUNNING deployment per stack.
// These transactions are small and rare next to Commits, which they queue with on the connection.

// CreateDeployments stores ds in one transaction, numbered after the highest Seq stored, and then sets
// their Seq (and CreatedAt, to now, where it was zero). Snapshots are stored as text (they are JSON), an
// empty one as absent; the plan as JSON. It fails, storing nothing, on an invalid deployment (see
// state.PrepareCreate under the backend's policy: *state.ForbiddenError for a direct deploy under the
// second-person rule) or an ID already stored. SnapshotHash is computed here (state.BindSnapshot).
func (b *Backend) CreateDeployments(ctx context.Context, ds []*state.Deployment) error {
	if err := state.PrepareCreate(ds, b.policy); err != nil {
		return err
	}
	if len(ds) == 0 {
		return nil
	}
	var rows []state.Deployment
	err := b.wr.inTx(ctx, func(conn *sql.Conn) error {
		var last int64
		if err := conn.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM deployments`).Scan(&last); err != nil {
			return err
		}
		rows = state.Numbered(ds, last, b.now())
		for i := range rows {
			args, payload, err := sqlschema.DeploymentArgs(&rows[i])
			if err != nil {
				return err
			}
			if _, err := conn.ExecContext(ctx, sqlschema.InsertDeployment, args...); err != nil {
				if sqliteCode(err) == sqlite3.SQLITE_CONSTRAINT {
					return fmt.Errorf("a deployment with id %s already exists: %w", rows[i].ID, err)
				}
				return err
			}
			if payload != nil {
				if _, err := conn.ExecContext(ctx, sqlschema.InsertPayload, payload...); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return dbError(b.path, fmt.Sprintf("create deployments %s", idList(ds)), err)
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
		ids[i] = d.ID
	}
	return strings.Join(ids, ", ")
}

// UpdateDeployment applies t to deployment id (see state.ApplyTransition, under the backend's policy)
// and returns the record after it, without its snapshot. Errors: *state.TransitionError when id is
// terminal, not in a status of t.From or the change does not exist; *state.ForbiddenError when the state
// machine refuses t.By or t.Runner; state.ErrNotFound (wrapped) when absent; an error when t.To is not
// APPROVED, REJECTED or ABORTED.
func (b *Backend) UpdateDeployment(ctx context.Context, id string, t state.Transition) (*state.Deployment, error) {
	var out state.Deployment
	err := b.wr.inTx(ctx, func(conn *sql.Conn) error {
		d, err := readDeployment(ctx, conn, id)
		if err != nil {
			return err
		}
		if out, err = state.ApplyTransition(d, t, b.policy); err != nil {
			return err
		}
		_, err = conn.ExecContext(ctx, sqlschema.SQLTransition, id, string(d.Status), string(out.Status),
			out.ApprovedBy, out.RejectedBy, out.AbortedBy, out.Error, sqlschema.Nanos(out.FinishedAt))
		return err
	})
	if err != nil {
		return nil, b.queueError(fmt.Sprintf("update deployment %s", id), err)
	}
	return &out, nil
}

// RequestAbort records by as AbortedBy of RUNNING deployment id and returns the record, without its
// snapshot; at is not stored. *state.TransitionError when it is not RUNNING, state.ErrNotFound (wrapped)
// when absent.
func (b *Backend) RequestAbort(ctx context.Context, id, by string, at time.Time) (*state.Deployment, error) {
	var out state.Deployment
	err := b.wr.inTx(ctx, func(conn *sql.Conn) error {
		d, err := readDeployment(ctx, conn, id)
		if err != nil {
			return err
		}
		if out, err = state.ApplyAbortRequest(d, by); err != nil {
			return err
		}
		_, err = conn.ExecContext(ctx, sqlschema.SQLRequestAbort, id, by)
		return err
	})
	if err != nil {
		return nil, b.queueError(fmt.Sprintf("request the abort of deployment %s", id), err)
	}
	return &out, nil
}

// ClaimDeployments claims ids all or none (see state.PlanClaims) in one transaction, after aborting the
// dead waiters of their stacks. The aborts are committed even when the claim fails, so that a waiter
// behind a dead one sees its place move up.
func (b *Backend) ClaimDeployments(ctx context.Context, ids []string, runner string, now time.Time) error {
	var claimErr error
	err := b.wr.inTx(ctx, func(conn *sql.Conn) error {
		found, err := readDeployments(ctx, conn, `WHERE id IN `+placeholders(1, len(ids)), anys(ids)...)
		if err != nil {
			return err
		}
		byID := make(map[string]state.Deployment, len(found))
		var stacks []string
		for _, d := range found {
			byID[d.ID] = d
			if !slices.Contains(stacks, d.Stack) {
				stacks = append(stacks, d.Stack)
			}
		}
		var queue []state.Deployment
		if len(stacks) > 0 {
			if queue, err = readQueue(ctx, conn, stacks); err != nil {
				return err
			}
		}
		c := state.PlanClaims(ids, byID, queue, now)
		claimErr = c.Err
		return sqlschema.WriteClaims(c, execer(ctx, conn), runner, now)
	})
	if err != nil {
		return b.queueError(fmt.Sprintf("claim deployments %s", strings.Join(ids, ", ")), err)
	}
	return claimErr
}

// ClaimNext claims, in one transaction, the deployment state.PlanNext picks among the queues of stacks
// (of all stacks when empty), after aborting their dead waiters, and returns it with its snapshot; nil
// when there is none.
func (b *Backend) ClaimNext(ctx context.Context, stacks []string, runner string, now time.Time) (*state.Deployment, error) {
	var out *state.Deployment
	err := b.wr.inTx(ctx, func(conn *sql.Conn) error {
		queue, err := readQueue(ctx, conn, stacks)
		if err != nil {
			return err
		}
		c := state.PlanNext(queue, now)
		if err := sqlschema.WriteClaims(c, execer(ctx, conn), runner, now); err != nil || len(c.Claim) == 0 {
			return err
		}
		out, err = getDeployment(ctx, conn, c.Claim[0].ID)
		return err
	})
	if err != nil {
		return nil, b.queueError("claim the next deployment", err)
	}
	return out, nil
}

// HeartbeatDeployments sets HeartbeatAt to at on the PENDING, APPROVED and RUNNING deployments among ids
// and returns those of ids that are stored, in the order of ids, without snapshots.
func (b *Backend) HeartbeatDeployments(ctx context.Context, ids []string, at time.Time) ([]state.Deployment, error) {
	var out []state.Deployment
	err := b.wr.inTx(ctx, func(conn *sql.Conn) error {
		args := append([]any{sqlschema.Nanos(at)}, anys(ids)...)
		if _, err := conn.ExecContext(ctx, `UPDATE deployments SET heartbeat_at = $1 WHERE id IN `+placeholders(2, len(ids))+
			` AND status IN `+sqlschema.QueuedStatuses, args...); err != nil {
			return err
		}
		found, err := readDeployments(ctx, conn, `WHERE id IN `+placeholders(1, len(ids)), anys(ids)...)
		out = inOrder(ids, found)
		return err
	})
	if err != nil {
		return nil, b.queueError("heartbeat deployments", err)
	}
	return out, nil
}

// FinishDeployment ends RUNNING deployment id with status (COMPLETED, FAILED or ABORTED), its finish
// time, the stack's resulting version and errMsg, keeping the rest (AbortedBy included), for runner.
// *state.TransitionError when it is not RUNNING, *state.ForbiddenError when runner did not claim it,
// state.ErrNotFound (wrapped) when absent.
func (b *Backend) FinishDeployment(ctx context.Context, id, runner string, status state.DeploymentStatus, finishedAt time.Time, version int64, errMsg string) error {
	err := b.wr.inTx(ctx, func(conn *sql.Conn) error {
		d, err := readDeployment(ctx, conn, id)
		if err != nil {
			return err
		}
		if err := state.CheckFinish(d, runner, status); err != nil {
			return err
		}
		_, err = conn.ExecContext(ctx, sqlschema.SQLFinish, id, string(status), sqlschema.Nanos(finishedAt), version, errMsg)
		return err
	})
	if err != nil {
		return b.queueError(fmt.Sprintf("finish deployment %s", id), err)
	}
	return nil
}

// ListDeployments returns the deployments f selects, newest (highest Seq) first, without snapshots.
func (b *Backend) ListDeployments(ctx context.Context, f state.DeploymentFilter) ([]state.Deployment, error) {
	var where []string
	var args []any
	if f.Stack != "" {
		args = append(args, f.Stack)
		where = append(where, fmt.Sprintf("stack = $%d", len(args)))
	}
	if len(f.Statuses) > 0 {
		where = append(where, "status IN "+placeholders(len(args)+1, len(f.Statuses)))
		for _, s := range f.Statuses {
			args = append(args, string(s))
		}
	}
	if f.IDPrefix != "" {
		args = append(args, len(f.IDPrefix), f.IDPrefix)
		where = append(where, fmt.Sprintf("substr(id, 1, $%d) = $%d", len(args)-1, len(args)))
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
	rows, err := b.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, dbError(b.path, "list deployments", err)
	}
	defer rows.Close()
	out, err := sqlschema.ScanDeployments(rows)
	if err != nil {
		return nil, dbError(b.path, "list deployments", err)
	}
	return out, nil
}

// GetDeployment returns deployment id with its snapshot; an unknown id is an error wrapping
// state.ErrNotFound.
func (b *Backend) GetDeployment(ctx context.Context, id string) (*state.Deployment, error) {
	d, err := getDeployment(ctx, b.r, id)
	if err != nil {
		return nil, b.queueError(fmt.Sprintf("read deployment %s", id), err)
	}
	return d, nil
}

// Events returns deployment id's events ordered by Seq; none (and no error) for an unknown deployment.
func (b *Backend) Events(ctx context.Context, deploymentID string) ([]state.Event, error) {
	op := fmt.Sprintf("read events of deployment %q", deploymentID)
	rows, err := b.r.QueryContext(ctx, `SELECT `+sqlschema.EventColumns+` FROM events WHERE deployment_id = $1 ORDER BY seq`, deploymentID)
	if err != nil {
		return nil, dbError(b.path, op, err)
	}
	defer rows.Close()
	out, err := sqlschema.ScanEvents(rows, deploymentID)
	if err != nil {
		return nil, dbError(b.path, op, err)
	}
	return out, nil
}

// queueError returns the queue's own errors as they are and wraps any other failure of op with the
// database's hints (sqlschema.QueueError).
func (b *Backend) queueError(op string, err error) error {
	return sqlschema.QueueError(op, err, func(op string, err error) error { return dbError(b.path, op, err) })
}

// querier is what deployments are read with: the write connection inside a transaction, or the read pool.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// readDeployment reads deployment id without its snapshot; state.ErrNotFound (wrapped) when absent.
func readDeployment(ctx context.Context, q querier, id string) (state.Deployment, error) {
	d, err := sqlschema.ScanDeployment(q.QueryRowContext(ctx, `SELECT `+sqlschema.DeploymentColumns+` FROM deployments WHERE id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return d, fmt.Errorf("deployment %s: %w", id, state.ErrNotFound)
	}
	return d, err
}

// getDeployment reads deployment id with its snapshot; state.ErrNotFound (wrapped) when absent.
func getDeployment(ctx context.Context, q querier, id string) (*state.Deployment, error) {
	var snapshot sql.NullString
	d, err := sqlschema.ScanDeployment(q.QueryRowContext(ctx,
		`SELECT `+sqlschema.DeploymentColumns+`, `+sqlschema.SnapshotColumn+` FROM deployments WHERE id = $1`, id), &snapshot)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("deployment %s: %w", id, state.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	if snapshot.Valid && snapshot.String != "" {
		d.Snapshot = []byte(snapshot.String)
	}
	return &d, nil
}

// readDeployments reads the deployments that where (a WHERE clause, or "") selects, without snapshots
// or plans (sqlschema.QueueColumns).
func readDeployments(ctx context.Context, q querier, where string, args ...any) ([]state.Deployment, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+sqlschema.QueueColumns+` FROM deployments `+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return sqlschema.ScanDeployments(rows)
}

// readQueue reads the queued deployments of stacks (of every stack when stacks is nil or empty) in Seq
// order.
func readQueue(ctx context.Context, q querier, stacks []string) ([]state.Deployment, error) {
	where := `WHERE status IN ` + sqlschema.QueuedStatuses
	if len(stacks) > 0 {
		where += ` AND stack IN ` + placeholders(1, len(stacks))
	}
	return readDeployments(ctx, q, where+` ORDER BY seq`, anys(stacks)...)
}

// execer runs statements on conn for state.Claims.Write.
func execer(ctx context.Context, conn *sql.Conn) sqlschema.Exec {
	return func(query string, args ...any) (int64, error) {
		res, err := conn.ExecContext(ctx, query, args...)
		if err != nil {
			return 0, err
		}
		return res.RowsAffected()
	}
}

// placeholders returns "($from, …, $from+n-1)"; "(NULL)" when n is 0, which matches nothing.
func placeholders(from, n int) string {
	if n == 0 {
		return "(NULL)"
	}
	var sb strings.Builder
	sb.WriteByte('(')
	for i := range n {
		if i > 0 {
			sb.WriteString(", ")
		}
		fmt.Fprintf(&sb, "$%d", from+i)
	}
	sb.WriteByte(')')
	return sb.String()
}

// anys returns ss as query arguments.
func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
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
