package sqlstore

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/backend/internal/sqlschema"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// Store implements the deployment queue, the locks and the reads of stacks' versions of state.Backend
// over a Dialect. Its backend adds Commit, GetStack, Abilities and Close.
type Store struct {
	D Dialect
	// Now is the clock of times the store stamps itself (CreatedAt, lock defaults).
	Now func() time.Time
	// Policy is the approval policy the queue enforces (state.CheckCreate, state.CheckTransition).
	Policy state.Policy
}

// queueError returns the queue's own errors as they are and wraps any other failure of op with the
// database's hints (sqlschema.QueueError).
func (s *Store) queueError(op string, err error) error {
	return sqlschema.QueueError(op, err, s.D.Error)
}

// CreateDeployments stores ds in one transaction, numbered after the highest Seq stored, and then sets
// their Seq (and CreatedAt, to now, where it was zero). Snapshots and plans go to deployment_payloads. It
// fails, storing nothing, on a deployment state.PrepareCreate refuses under the store's policy
// (*state.ForbiddenError for a direct deploy under the second-person rule) or an ID already stored.
// SnapshotHash is computed here (state.BindSnapshot).
func (s *Store) CreateDeployments(ctx context.Context, ds []*state.Deployment) error {
	if err := state.PrepareCreate(ds, s.Policy); err != nil {
		return err
	}
	if len(ds) == 0 {
		return nil
	}
	op := "create deployments " + idList(ds)
	if err := s.D.Closed(op); err != nil {
		return err
	}
	var rows []state.Deployment
	err := s.D.Tx(ctx, func(q Querier) error {
		if err := s.D.LockSeq(ctx, q); err != nil {
			return err
		}
		var last int64
		if err := q.QueryRow(ctx, `SELECT COALESCE(MAX(seq), 0) FROM deployments`).Scan(&last); err != nil {
			return err
		}
		rows = state.Numbered(ds, last, s.Now())
		for i := range rows {
			args, payload, err := sqlschema.DeploymentArgs(&rows[i])
			if err != nil {
				return err
			}
			if _, err := q.Exec(ctx, sqlschema.InsertDeployment, args...); err != nil {
				if s.D.Duplicate(err) {
					return fmt.Errorf("a deployment with id %s already exists: %w", rows[i].ID, err)
				}
				return err
			}
			if payload != nil {
				if _, err := q.Exec(ctx, sqlschema.InsertPayload, payload...); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return s.queueError(op, err)
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

// UpdateDeployment applies t to deployment id (state.ApplyTransition, under the store's policy) and
// returns the record after it, without its snapshot. Errors: *state.TransitionError when id is terminal,
// not in a status of t.From or the change does not exist; *state.ForbiddenError when the state machine
// refuses t.By or t.Runner; state.ErrNotFound (wrapped) when absent; an error when t.To is not APPROVED,
// REJECTED or ABORTED.
func (s *Store) UpdateDeployment(ctx context.Context, id string, t state.Transition) (*state.Deployment, error) {
	op := fmt.Sprintf("update deployment %s", id)
	var out state.Deployment
	err := s.change(ctx, op, id, sqlschema.DeploymentColumns, func(q Querier, d state.Deployment) error {
		var err error
		if out, err = state.ApplyTransition(d, t, s.Policy); err != nil {
			return err
		}
		_, err = q.Exec(ctx, sqlschema.SQLTransition, id, string(d.Status), string(out.Status),
			out.ApprovedBy, out.RejectedBy, out.AbortedBy, out.Error, sqlschema.Nanos(out.FinishedAt),
			out.ApprovalComment, out.RejectionComment, sqlschema.Nanos(out.ApprovedAt))
		return err
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// RequestAbort records by as AbortedBy of RUNNING deployment id and returns the record, without its
// snapshot; at is not stored. *state.TransitionError when it is not RUNNING, state.ErrNotFound (wrapped)
// when absent.
func (s *Store) RequestAbort(ctx context.Context, id, by string, at time.Time) (*state.Deployment, error) {
	var out state.Deployment
	err := s.change(ctx, fmt.Sprintf("request the abort of deployment %s", id), id, sqlschema.DeploymentColumns, func(q Querier, d state.Deployment) error {
		var err error
		if out, err = state.ApplyAbortRequest(d, by); err != nil {
			return err
		}
		_, err = q.Exec(ctx, sqlschema.SQLRequestAbort, id, by)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// FinishDeployment ends RUNNING deployment id with status (COMPLETED, FAILED or ABORTED), its finish
// time, the stack's resulting version and errMsg, keeping the rest (AbortedBy included), for runner.
// *state.TransitionError when it is not RUNNING, *state.ForbiddenError when runner did not claim it,
// state.ErrNotFound (wrapped) when absent.
func (s *Store) FinishDeployment(ctx context.Context, id, runner string, status state.DeploymentStatus, finishedAt time.Time, version int64, errMsg string) error {
	// The queue's columns: the finish checks the status and the runner, and a plan is megabytes to decode.
	return s.change(ctx, fmt.Sprintf("finish deployment %s", id), id, sqlschema.QueueColumns, func(q Querier, d state.Deployment) error {
		if err := state.CheckFinish(d, runner, status); err != nil {
			return err
		}
		_, err := q.Exec(ctx, sqlschema.SQLFinish, id, string(status), sqlschema.Nanos(finishedAt), version, errMsg)
		return err
	})
}

// change runs f in a transaction on deployment id, read (columns: sqlschema.DeploymentColumns, or
// QueueColumns when f needs neither the plan nor the texts) and locked (Dialect.RowLock); state.ErrNotFound
// (wrapped) when absent. Errors are op's (queueError).
func (s *Store) change(ctx context.Context, op, id, columns string, f func(q Querier, d state.Deployment) error) error {
	if err := s.D.Closed(op); err != nil {
		return err
	}
	err := s.D.Tx(ctx, func(q Querier) error {
		d, err := sqlschema.ScanDeployment(q.QueryRow(ctx,
			`SELECT `+columns+` FROM deployments WHERE id = $1`+s.D.RowLock(), id))
		if s.D.NoRows(err) {
			return fmt.Errorf("deployment %s: %w", id, state.ErrNotFound)
		}
		if err != nil {
			return err
		}
		return f(q, d)
	})
	if err != nil {
		return s.queueError(op, err)
	}
	return nil
}

// ClaimDeployments claims ids all or none (state.PlanClaims) in one transaction, holding the queues of
// their stacks (Dialect.LockQueues), after aborting the dead waiters of those stacks. The aborts are
// committed even when the claim fails, so that a waiter behind a dead one sees its place move up.
func (s *Store) ClaimDeployments(ctx context.Context, ids []string, runner string, now time.Time) error {
	op := "claim deployments " + strings.Join(ids, ", ")
	if err := s.D.Closed(op); err != nil {
		return err
	}
	var claimErr error
	err := s.D.Tx(ctx, func(q Querier) error {
		found, err := s.byIDs(ctx, q, ids)
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
			if queue, err = s.lockQueues(ctx, q, stacks); err != nil {
				return err
			}
			// Read again under the locks: a claimer that held them may have changed these.
			if found, err = s.byIDs(ctx, q, ids); err != nil {
				return err
			}
		}
		byID := make(map[string]state.Deployment, len(found))
		for _, d := range found {
			byID[d.ID] = d
		}
		c := state.PlanClaims(ids, byID, queue, now)
		claimErr = c.Err
		return sqlschema.WriteClaims(c, execer(ctx, q), runner, now)
	})
	if err != nil {
		return s.queueError(op, err)
	}
	return claimErr
}

// ClaimNext claims, in one transaction, the deployment state.PlanNext picks among the queues of stacks
// (of all stacks when empty), after aborting their dead waiters, and returns it with its snapshot; nil
// when there is none.
func (s *Store) ClaimNext(ctx context.Context, stacks []string, runner string, now time.Time) (*state.Deployment, error) {
	const op = "claim the next deployment"
	if err := s.D.Closed(op); err != nil {
		return nil, err
	}
	var out *state.Deployment
	err := s.D.Tx(ctx, func(q Querier) error {
		out = nil
		queue, err := s.lockQueues(ctx, q, stacks)
		if err != nil {
			return err
		}
		c := state.PlanNext(queue, now)
		if err := sqlschema.WriteClaims(c, execer(ctx, q), runner, now); err != nil || len(c.Claim) == 0 {
			return err
		}
		out, err = s.getDeployment(ctx, q, c.Claim[0].ID)
		return err
	})
	if err != nil {
		return nil, s.queueError(op, err)
	}
	return out, nil
}

// HeartbeatDeployments sets HeartbeatAt to at on the PENDING, APPROVED and RUNNING deployments among ids
// and returns those of ids that are stored, in the order of ids, without snapshots.
func (s *Store) HeartbeatDeployments(ctx context.Context, ids []string, at time.Time) ([]state.Deployment, error) {
	const op = "heartbeat deployments"
	if err := s.D.Closed(op); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return []state.Deployment{}, nil
	}
	var out []state.Deployment
	err := s.D.Tx(ctx, func(q Querier) error {
		in, args := s.D.In("id", 2, ids)
		if _, err := q.Exec(ctx, `UPDATE deployments SET heartbeat_at = $1 WHERE `+in+` AND status IN `+sqlschema.QueuedStatuses,
			append([]any{sqlschema.Nanos(at)}, args...)...); err != nil {
			return err
		}
		found, err := s.byIDs(ctx, q, ids)
		out = inOrder(ids, found)
		return err
	})
	if err != nil {
		return nil, s.queueError(op, err)
	}
	return out, nil
}

// ListDeployments returns the deployments f selects (Kinds and the cursor Before included), newest
// (highest Seq) first, without snapshots.
func (s *Store) ListDeployments(ctx context.Context, f state.DeploymentFilter) ([]state.Deployment, error) {
	const op = "list deployments"
	if err := s.D.Closed(op); err != nil {
		return nil, err
	}
	var where []string
	var args []any
	if f.Stack != "" {
		args = append(args, f.Stack)
		where = append(where, fmt.Sprintf("stack = $%d", len(args)))
	}
	in := func(column string, values []string) {
		if len(values) > 0 {
			cond, inArgs := s.D.In(column, len(args)+1, values)
			where = append(where, cond)
			args = append(args, inArgs...)
		}
	}
	in("status", strs(f.Statuses))
	in("kind", strs(f.Kinds))
	if f.IDPrefix != "" {
		args = append(args, len(f.IDPrefix), f.IDPrefix)
		where = append(where, fmt.Sprintf("substr(id, 1, $%d) = $%d", len(args)-1, len(args)))
	}
	if f.Before != 0 {
		// The cursor: a page starts below the last (lowest) seq of the page before, on the indexes
		// deployments_stack_seq and deployments_stack_kind_seq.
		args = append(args, f.Before)
		where = append(where, fmt.Sprintf("seq < $%d", len(args)))
	}
	columns := sqlschema.DeploymentColumns
	if f.NoPlans {
		columns = sqlschema.ListColumns
	}
	query := `SELECT ` + columns + ` FROM deployments`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	query += ` ORDER BY seq DESC`
	if f.Limit > 0 {
		args = append(args, f.Limit)
		query += fmt.Sprintf(` LIMIT $%d`, len(args))
	}
	out, err := readDeployments(ctx, s.D.Read(), query, args...)
	if err != nil {
		return nil, s.D.Error(op, err)
	}
	return out, nil
}

// GetDeployment returns deployment id with its snapshot; an unknown id is an error wrapping
// state.ErrNotFound.
func (s *Store) GetDeployment(ctx context.Context, id string) (*state.Deployment, error) {
	op := fmt.Sprintf("read deployment %s", id)
	if err := s.D.Closed(op); err != nil {
		return nil, err
	}
	d, err := s.getDeployment(ctx, s.D.Read(), id)
	if err != nil {
		return nil, s.queueError(op, err)
	}
	return d, nil
}

// Events returns deployment id's events ordered by Seq; none (and no error) for an unknown deployment.
func (s *Store) Events(ctx context.Context, deploymentID string) ([]state.Event, error) {
	op := fmt.Sprintf("read events of deployment %q", deploymentID)
	if err := s.D.Closed(op); err != nil {
		return nil, err
	}
	rows, err := s.D.Read().Query(ctx, `SELECT `+sqlschema.EventColumns+` FROM events WHERE deployment_id = $1 ORDER BY seq`, deploymentID)
	if err != nil {
		return nil, s.D.Error(op, err)
	}
	defer rows.Close()
	out, err := sqlschema.ScanEvents(rows, deploymentID)
	if err != nil {
		return nil, s.D.Error(op, err)
	}
	return out, nil
}

// getDeployment reads deployment id with its snapshot; state.ErrNotFound (wrapped) when absent.
func (s *Store) getDeployment(ctx context.Context, q Querier, id string) (*state.Deployment, error) {
	var snapshot *string
	d, err := sqlschema.ScanDeployment(q.QueryRow(ctx,
		`SELECT `+sqlschema.DeploymentColumns+`, `+sqlschema.SnapshotColumn+` FROM deployments WHERE id = $1`, id), &snapshot)
	if s.D.NoRows(err) {
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

// byIDs reads the stored deployments among ids, without plans or snapshots (sqlschema.QueueColumns).
func (s *Store) byIDs(ctx context.Context, q Querier, ids []string) ([]state.Deployment, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	in, args := s.D.In("id", 1, ids)
	return readDeployments(ctx, q, `SELECT `+sqlschema.QueueColumns+` FROM deployments WHERE `+in, args...)
}

// lockQueues locks the queued deployments of stacks (of every stack when empty) until the transaction
// ends (Dialect.LockQueues), then reads them in Seq order, as the last transaction that held the locks
// left them.
func (s *Store) lockQueues(ctx context.Context, q Querier, stacks []string) ([]state.Deployment, error) {
	if err := s.D.LockQueues(ctx, q, stacks); err != nil {
		return nil, fmt.Errorf("lock the queues: %w", err)
	}
	query := `SELECT ` + sqlschema.QueueColumns + ` FROM deployments WHERE status IN ` + sqlschema.QueuedStatuses
	var args []any
	if len(stacks) > 0 {
		var in string
		in, args = s.D.In("stack", 1, stacks)
		query += ` AND ` + in
	}
	return readDeployments(ctx, q, query+` ORDER BY seq`, args...)
}

// strs returns the strings of vs (statuses, kinds).
func strs[S ~string](vs []S) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// readDeployments reads the deployments query selects.
func readDeployments(ctx context.Context, q Querier, query string, args ...any) ([]state.Deployment, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return sqlschema.ScanDeployments(rows)
}

// execer runs statements with q for sqlschema.WriteClaims.
func execer(ctx context.Context, q Querier) sqlschema.Exec {
	return func(query string, args ...any) (int64, error) { return q.Exec(ctx, query, args...) }
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

// sortedLocks orders locks by stack, bytewise (SQL collations differ between databases).
func sortedLocks(ls []state.LockInfo) []state.LockInfo {
	sort.SliceStable(ls, func(i, j int) bool { return ls[i].Stack < ls[j].Stack })
	return ls
}
