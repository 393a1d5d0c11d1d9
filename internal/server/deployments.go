package server

// The deployment queue of the cdkx extension (the endpoints are listed in cdkx.go): state.Deployments
// served from svc_deployments, every rule enforced in PostgreSQL transactions so that any number of
// replicas and clients may share one database.
//
// Concurrency: claims of a stack's queue are serialised by a transaction-level advisory lock on the stack
// (queueLockClass, the stack's row ID), taken in ascending order when a claim spans several stacks;
// under it the claim locks every queued row of those stacks (in ID order, in one statement) before it
// changes any. Every other statement that locks several deployment rows locks them in ID order, and no
// statement waits for an advisory lock while holding a row lock, so the queue's statements do not
// deadlock each other (a deadlock PostgreSQL still reported would be a 503 that the client retries). The
// unique index svc_deployments_one_running is the last word on one RUNNING deployment per stack. Creates
// are serialised by createLockKey, so that a deployment becomes visible only after every one with a
// lower seq.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/pkg/stateapi"
)

// queueLockClass is the first key of the two-key advisory lock on a stack's queue ("cdxq"); the second is
// the stack's row ID (modulo 2^31-1: two stacks sharing a key only serialise more).
const queueLockClass int32 = 0x63647871

// createLockKey is the advisory lock (one bigint key: another key space than queueLockClass's) that
// serialises CreateDeployments ("cdkxsvdc").
const createLockKey int64 = 0x63646b7873766463

// maxClaimRounds bounds how often ClaimNext looks again after losing every candidate to racing claims.
const maxClaimRounds = 50

// queuedSQL is the SQL list of the statuses that hold a place in a stack's queue.
const queuedSQL = `('PENDING', 'APPROVED', 'RUNNING')`

// errNotClaimable rolls back a ClaimNext attempt whose candidate was taken or changed meanwhile.
var errNotClaimable = errors.New("the candidate is no longer claimable")

// transitionConflict is the "transition" field of a 409 (the name the package's tests compare with).
type transitionConflict = stateapi.TransitionConflict

// queuedError is the 409 of e, with its "queued" field (stateapi.QueuedConflict).
func queuedError(e *state.QueuedError) error {
	e.Ahead.Snapshot = nil
	return &apiError{code: http.StatusConflict, msg: "Conflict: " + e.Error(),
		queued: &stateapi.QueuedConflict{ID: e.ID, Stack: e.Stack, Position: e.Position, Ahead: e.Ahead}}
}

// transitionError is the 409 of e, with its "transition" field (stateapi.TransitionConflict).
func transitionError(e *state.TransitionError) error {
	return &apiError{code: http.StatusConflict, msg: "Conflict: " + e.Error(),
		transition: &stateapi.TransitionConflict{ID: e.ID, Status: e.Status, To: e.To}}
}

// knownStatus reports whether st is one of the state.Status constants.
func knownStatus(st state.DeploymentStatus) bool {
	switch st {
	case state.StatusProposed, state.StatusApproved, state.StatusRejected, state.StatusPending,
		state.StatusRunning, state.StatusCompleted, state.StatusFailed, state.StatusAborted:
		return true
	}
	return false
}

// clockNow is the server's time for the queue: UTC, microseconds (what PostgreSQL keeps), so that the
// record and the columns hold the same instant.
func (s *Server) clockNow() time.Time {
	return s.now().UTC().Truncate(time.Microsecond)
}

// deploymentsBody is stateapi.DeploymentList under the name the package's tests send (a defined type,
// not an alias, so that their unkeyed literals stay local to the package for go vet).
type deploymentsBody stateapi.DeploymentList

// rawDeployments is a stateapi.DeploymentList as the server answers it: the stored records as they are,
// never parsed (a heartbeat every 0.5 s must not decode and encode megabytes of plans).
type rawDeployments struct {
	Deployments []json.RawMessage `json:"deployments"`
}

func (s *Server) createDeployments(r *http.Request, c *call) (any, error) {
	var req stateapi.DeploymentList
	if _, err := s.decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	if len(req.Deployments) == 0 {
		return nil, errorf(http.StatusBadRequest, "Bad Request: send at least one deployment")
	}
	ids := make([]string, len(req.Deployments))
	names := []string{}
	for i := range req.Deployments {
		d := &req.Deployments[i]
		if d.ID == "" || d.Stack == "" || d.Kind == "" {
			return nil, errorf(http.StatusBadRequest, "Bad Request: deployment %d needs an id, a stack and a kind", i)
		}
		if !validStackName(d.Stack) {
			return nil, badName("stack", d.Stack, stackRule, fmt.Sprintf("in deployment %d", i))
		}
		if err := state.CheckMessage(d.Message); err != nil {
			return nil, errorf(http.StatusBadRequest, "Bad Request: deployment %s: %v", d.ID, err)
		}
		switch d.Status {
		case state.StatusProposed, state.StatusPending, state.StatusApproved:
		default:
			return nil, errorf(http.StatusBadRequest, "Bad Request: deployment %s: a deployment is created PROPOSED, PENDING or APPROVED, not %q", d.ID, d.Status)
		}
		if err := state.CheckCreate(*d, s.policy()); err != nil {
			return nil, stateError(err)
		}
		// The hash recorded is the one computed here, of the bytes stored; a record whose hash or plan
		// names another snapshot is refused (state.BindSnapshot).
		if err := state.BindSnapshot(d); err != nil {
			return nil, errorf(http.StatusBadRequest, "Bad Request: %v", err)
		}
		if slices.Contains(ids[:i], d.ID) {
			return nil, errorf(http.StatusBadRequest, "Bad Request: deployment %s appears twice", d.ID)
		}
		ids[i] = d.ID
		if !slices.Contains(names, d.Stack) {
			names = append(names, d.Stack)
		}
	}
	return s.once(r, func(ctx context.Context, tx pgx.Tx) (any, error) {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, createLockKey); err != nil {
			return nil, err
		}
		var existing string
		err := tx.QueryRow(ctx, `SELECT id FROM svc_deployments WHERE id = ANY($1) LIMIT 1`, ids).Scan(&existing)
		if err == nil {
			return nil, errorf(http.StatusConflict, "Conflict: deployment %s already exists", existing)
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return nil, err
		}
		// Events stored under an ID the queue did not know (owner.go) are not a record's: a record created
		// with that ID would show them.
		err = tx.QueryRow(ctx, `SELECT deployment_id FROM svc_deployment_events WHERE deployment_id = ANY($1) LIMIT 1`, ids).Scan(&existing)
		if err == nil {
			return nil, errorf(http.StatusConflict, "Conflict: events of a deployment %s exist already; choose another ID", existing)
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return nil, err
		}
		stackIDs, err := stackIDs(ctx, tx, r, names)
		if err != nil {
			return nil, err
		}
		for _, name := range names {
			if _, ok := stackIDs[name]; !ok {
				return nil, errorf(http.StatusNotFound, "Not Found: stack '%s/%s/%s' not found; create it first", r.PathValue("org"), r.PathValue("project"), name)
			}
		}
		rows, err := tx.Query(ctx, `SELECT nextval('svc_deployment_seq') FROM generate_series(1, $1)`, len(ids))
		if err != nil {
			return nil, err
		}
		seqs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return nil, err
		}
		slices.Sort(seqs)
		now := s.clockNow()
		batch := &pgx.Batch{}
		out := rawDeployments{Deployments: make([]json.RawMessage, len(ids))}
		for i := range req.Deployments {
			d := req.Deployments[i]
			snapshot := d.Snapshot
			d.Snapshot = nil
			d.Seq = seqs[i]
			d.CreatedBy = c.user
			if d.ApprovedBy != "" {
				d.ApprovedBy = c.user
			}
			d.CreatedAt = d.CreatedAt.UTC()
			if d.CreatedAt.IsZero() {
				d.CreatedAt = now
			}
			var heartbeat *time.Time
			if !d.HeartbeatAt.IsZero() {
				d.HeartbeatAt, heartbeat = now, &now
			}
			record, err := json.Marshal(d)
			if err != nil {
				return nil, err
			}
			out.Deployments[i] = record
			batch.Queue(`INSERT INTO svc_deployments (id, stack_id, record, snapshot, status, seq, heartbeat_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
				d.ID, stackIDs[d.Stack], record, snapshot, d.Status, d.Seq, heartbeat)
		}
		err = tx.SendBatch(ctx, batch).Close()
		if pgCode(err) == codeUniqueViolation {
			return nil, errorf(http.StatusConflict, "Conflict: a deployment of %s already exists", strings.Join(ids, ", "))
		}
		if err != nil {
			return nil, err
		}
		return out, nil
	})
}

// stackIDs returns the row IDs of the stacks of names that exist in the request's org and project.
func stackIDs(ctx context.Context, q pgxQuerier, r *http.Request, names []string) (map[string]int64, error) {
	if names == nil {
		names = []string{} // not NULL: every stack
	}
	rows, err := q.Query(ctx, `SELECT name, id FROM svc_stacks WHERE org = $1 AND project = $2 AND (cardinality($3::text[]) = 0 OR name = ANY($3))`,
		r.PathValue("org"), r.PathValue("project"), names)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	ids := map[string]int64{}
	for rows.Next() {
		var name string
		var id int64
		if err := rows.Scan(&name, &id); err != nil {
			return nil, err
		}
		ids[name] = id
	}
	return ids, rows.Err()
}

// pgxQuerier is what a pool and a transaction share.
type pgxQuerier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// abortDead makes ABORTED the PENDING and RUNNING deployments of stacks whose heartbeat is older than
// now-DeadAfter (their process stopped), locking them in ID order, and returns their IDs.
func abortDead(ctx context.Context, q pgxQuerier, stacks []int64, now time.Time) ([]string, error) {
	rows, err := q.Query(ctx, `WITH dead AS (
  SELECT id FROM svc_deployments WHERE stack_id = ANY($1) AND status IN ('PENDING', 'RUNNING') AND heartbeat_at < $2
  ORDER BY id FOR UPDATE)
UPDATE svc_deployments d SET status = 'ABORTED', record = d.record || jsonb_build_object('status', 'ABORTED', 'finishedAt', $3::text,
  'error', 'its process stopped: no heartbeat since ' || to_char(d.heartbeat_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))
FROM dead WHERE d.id = dead.id AND d.status IN ('PENDING', 'RUNNING') AND d.heartbeat_at < $2 RETURNING d.id`,
		stacks, now.Add(-state.DeadAfter), now.Format(time.RFC3339Nano))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// lockQueue takes the queue lock of each of stacks, locks their queued deployments and aborts the dead
// waiters among them; it returns each stack's queue as it is then (lockQueues, readQueues, abortDead).
// Every queued row is locked, in ID order, before any is changed.
func lockQueue(ctx context.Context, tx pgx.Tx, stacks []int64, now time.Time) (map[int64][]state.Deployment, error) {
	if err := lockQueues(ctx, tx, stacks); err != nil {
		return nil, err
	}
	queues, err := readQueues(ctx, tx, stacks)
	if err != nil {
		return nil, err
	}
	dead, err := abortDead(ctx, tx, stacks, now)
	if err != nil {
		return nil, err
	}
	for stack, q := range queues {
		queues[stack] = slices.DeleteFunc(q, func(d state.Deployment) bool { return slices.Contains(dead, d.ID) })
	}
	return queues, nil
}

// queueRecordSQL selects the record of deployment d as the queue's frequent reads need it: without the
// plan and the message, with the heartbeat column (which heartbeats write alone) overlaid.
const queueRecordSQL = `(d.record - 'plan' - 'message') || jsonb_build_object('heartbeatAt', d.heartbeat_at)`

// lockQueues takes the advisory locks of the stacks' queues, in ascending key order.
func lockQueues(ctx context.Context, tx pgx.Tx, stacks []int64) error {
	keys := make([]int32, 0, len(stacks))
	for _, id := range stacks {
		keys = append(keys, int32(id%(1<<31-1)))
	}
	slices.Sort(keys)
	for _, k := range slices.Compact(keys) {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, $2)`, queueLockClass, k); err != nil {
			return err
		}
	}
	return nil
}

// readQueues locks (in ID order) and returns the queued deployments of stacks, by stack row ID, each
// queue in seq order, without snapshots.
func readQueues(ctx context.Context, tx pgx.Tx, stacks []int64) (map[int64][]state.Deployment, error) {
	rows, err := tx.Query(ctx, `SELECT d.stack_id, `+queueRecordSQL+` FROM svc_deployments d WHERE d.stack_id = ANY($1) AND d.status IN `+queuedSQL+` ORDER BY d.id FOR UPDATE`, stacks)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	queues := map[int64][]state.Deployment{}
	for rows.Next() {
		var stack int64
		var record []byte
		if err := rows.Scan(&stack, &record); err != nil {
			return nil, err
		}
		var d state.Deployment
		if err := json.Unmarshal(record, &d); err != nil {
			return nil, err
		}
		queues[stack] = append(queues[stack], d)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, q := range queues {
		sort.Slice(q, func(i, j int) bool { return q[i].Seq < q[j].Seq })
	}
	return queues, nil
}

// aheadOf returns what is ahead of deployment d in its stack's queue q (seq order): the RUNNING
// deployment first, whatever its seq, then the others with a lower seq.
func aheadOf(q []state.Deployment, d *state.Deployment) []state.Deployment {
	var ahead []state.Deployment
	for _, o := range q {
		if o.ID != d.ID && o.Status == state.StatusRunning {
			ahead = append(ahead, o)
		}
	}
	for _, o := range q {
		if o.ID != d.ID && o.Status != state.StatusRunning && o.Seq < d.Seq {
			ahead = append(ahead, o)
		}
	}
	return ahead
}

// claimDeployments answers POST …/deployments/claim (stateapi.ClaimRequest).
func (s *Server) claimDeployments(r *http.Request, c *call) (any, error) {
	var req stateapi.ClaimRequest
	if _, err := s.decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	if len(req.IDs) == 0 {
		return nil, errorf(http.StatusBadRequest, "Bad Request: name at least one deployment in ids")
	}
	for i, id := range req.IDs {
		if slices.Contains(req.IDs[:i], id) {
			return nil, errorf(http.StatusBadRequest, "Bad Request: deployment %s appears twice in ids", id)
		}
	}
	// Dead waiters are aborted in a statement of their own: the claim's transaction is rolled back when it
	// answers "still queued", and their abort must stick (a killed waiter must not keep its place).
	var stacks []int64
	if err := s.pool.QueryRow(r.Context(), `SELECT coalesce(array_agg(DISTINCT d.stack_id), '{}') FROM svc_deployments d JOIN svc_stacks s ON s.id = d.stack_id
WHERE d.id = ANY($3) AND s.org = $1 AND s.project = $2`, r.PathValue("org"), r.PathValue("project"), req.IDs).Scan(&stacks); err != nil {
		return nil, err
	}
	if len(stacks) > 0 {
		if _, err := abortDead(r.Context(), s.pool, stacks, s.clockNow()); err != nil {
			return nil, err
		}
	}
	return s.once(r, func(ctx context.Context, tx pgx.Tx) (any, error) {
		now := s.clockNow()
		rows, err := tx.Query(ctx, `SELECT d.id, d.stack_id, s.name FROM svc_deployments d JOIN svc_stacks s ON s.id = d.stack_id
WHERE d.id = ANY($3) AND s.org = $1 AND s.project = $2`, r.PathValue("org"), r.PathValue("project"), req.IDs)
		if err != nil {
			return nil, err
		}
		type where struct {
			stackID int64
			stack   string
		}
		at := map[string]where{}
		var stacks []int64
		for rows.Next() {
			var id string
			var w where
			if err := rows.Scan(&id, &w.stackID, &w.stack); err != nil {
				return nil, err
			}
			at[id] = w
			stacks = append(stacks, w.stackID)
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
		for _, id := range req.IDs {
			if _, ok := at[id]; !ok {
				return nil, errorf(http.StatusNotFound, "Not Found: deployment %s not found", id)
			}
		}
		queues, err := lockQueue(ctx, tx, stacks, now)
		if err != nil {
			return nil, err
		}
		for _, id := range req.IDs {
			w := at[id]
			i := slices.IndexFunc(queues[w.stackID], func(d state.Deployment) bool { return d.ID == id })
			if i < 0 || queues[w.stackID][i].Status == state.StatusRunning {
				var status state.DeploymentStatus
				if err := tx.QueryRow(ctx, `SELECT status FROM svc_deployments WHERE id = $1`, id).Scan(&status); err != nil {
					return nil, err
				}
				return nil, transitionError(&state.TransitionError{ID: id, Status: status, To: state.StatusRunning})
			}
			if ahead := aheadOf(queues[w.stackID], &queues[w.stackID][i]); len(ahead) > 0 {
				return nil, queuedError(&state.QueuedError{ID: id, Stack: w.stack, Position: len(ahead), Ahead: ahead[0]})
			}
		}
		records, err := claim(ctx, tx, req.IDs, req.Runner, c.user, now)
		if err != nil {
			return nil, err
		}
		return rawDeployments{Deployments: records}, nil
	})
}

// claim makes ids RUNNING for runner at now, claimed by the API token named by (their rows are locked,
// each the head of its queue) and returns their records in seq order.
func claim(ctx context.Context, tx pgx.Tx, ids []string, runner, by string, now time.Time) ([]json.RawMessage, error) {
	patch, err := json.Marshal(map[string]any{"status": state.StatusRunning, "startedAt": now, "heartbeatAt": now, "runner": runner})
	if err != nil {
		return nil, err
	}
	rows, err := tx.Query(ctx, `UPDATE svc_deployments SET status = 'RUNNING', started_at = $2, heartbeat_at = $2, record = record || $3::jsonb, claimed_by = $4
WHERE id = ANY($1) AND status IN ('PENDING', 'APPROVED') RETURNING seq, record`, ids, now, patch, by)
	if err != nil {
		return nil, err
	}
	type claimed struct {
		seq    int64
		record json.RawMessage
	}
	got, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (claimed, error) {
		var c claimed
		err := row.Scan(&c.seq, &c.record)
		return c, err
	})
	if pgCode(err) == codeUniqueViolation {
		return nil, errorf(http.StatusConflict, "Conflict: another deployment of the stack is RUNNING")
	}
	if err != nil {
		return nil, err
	}
	if len(got) != len(ids) {
		return nil, fmt.Errorf("claim %v: %d of %d deployments changed under the queue lock", ids, len(got), len(ids))
	}
	sort.Slice(got, func(i, j int) bool { return got[i].seq < got[j].seq })
	records := make([]json.RawMessage, len(got))
	for i, c := range got {
		records[i] = c.record
	}
	return records, nil
}

// claimNext answers POST …/deployments/claim-next (stateapi.ClaimNextRequest): it claims the oldest claimable head of the project's queues. It aborts dead waiters, lists the
// candidates (heads that are APPROVED, or PENDING with no heartbeat, on stacks with nothing RUNNING) in
// seq order, and tries them one at a time, each in a transaction of its own under its stack's queue
// lock, where the head is read again; a candidate taken meanwhile passes to the next, and when all were,
// it looks again.
func (s *Server) claimNext(r *http.Request, c *call) (any, error) {
	var req stateapi.ClaimNextRequest
	if _, err := s.decodeBody(r, &req, true); err != nil {
		return nil, err
	}
	for _, st := range req.Stacks {
		if !validStackName(st) {
			return nil, badName("stack", st, stackRule, "in stacks")
		}
	}
	ctx := r.Context()
	for range maxClaimRounds {
		// A retry whose first attempt claimed the last candidate finds none: its answer is stored.
		if res, ok, err := s.storedAnswer(ctx, r); ok || err != nil {
			return res, err
		}
		ids, err := stackIDs(ctx, s.pool, r, req.Stacks)
		if err != nil || len(ids) == 0 {
			return noContent{}, err
		}
		scope := make([]int64, 0, len(ids))
		for _, id := range ids {
			scope = append(scope, id)
		}
		if _, err := abortDead(ctx, s.pool, scope, s.clockNow()); err != nil {
			return nil, err
		}
		rows, err := s.pool.Query(ctx, `SELECT h.stack_id FROM (
  SELECT DISTINCT ON (d.stack_id) d.stack_id, d.status, d.heartbeat_at, d.seq FROM svc_deployments d
  WHERE d.stack_id = ANY($1) AND d.status IN `+queuedSQL+` ORDER BY d.stack_id, d.seq) h
WHERE (h.status = 'APPROVED' OR (h.status = 'PENDING' AND h.heartbeat_at IS NULL))
  AND NOT EXISTS (SELECT 1 FROM svc_deployments x WHERE x.stack_id = h.stack_id AND x.status = 'RUNNING')
ORDER BY h.seq`, scope)
		if err != nil {
			return nil, err
		}
		candidates, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return nil, err
		}
		if len(candidates) == 0 {
			if res, ok, err := s.storedAnswer(ctx, r); ok || err != nil {
				return res, err
			}
			return noContent{}, nil
		}
		for _, stack := range candidates {
			res, err := s.once(r, func(ctx context.Context, tx pgx.Tx) (any, error) {
				return s.claimHead(ctx, tx, stack, req.Runner, c.user)
			})
			if !errors.Is(err, errNotClaimable) {
				return res, err
			}
		}
	}
	return noContent{}, nil
}

// claimHead claims the head of stack's queue for runner, by the API token named by, when an agent may
// run it, else returns errNotClaimable; the answer is the deployment with its snapshot.
func (s *Server) claimHead(ctx context.Context, tx pgx.Tx, stack int64, runner, by string) (any, error) {
	now := s.clockNow()
	queues, err := lockQueue(ctx, tx, []int64{stack}, now)
	if err != nil {
		return nil, err
	}
	q := queues[stack]
	if len(q) == 0 || slices.ContainsFunc(q, func(d state.Deployment) bool { return d.Status == state.StatusRunning }) {
		return nil, errNotClaimable
	}
	if head := q[0]; head.Status != state.StatusApproved && (head.Status != state.StatusPending || !head.HeartbeatAt.IsZero()) {
		return nil, errNotClaimable
	}
	records, err := claim(ctx, tx, []string{q[0].ID}, runner, by, now)
	if err != nil {
		return nil, err
	}
	var snapshot []byte
	if err := tx.QueryRow(ctx, `SELECT snapshot FROM svc_deployments WHERE id = $1`, q[0].ID).Scan(&snapshot); err != nil {
		return nil, err
	}
	return withSnapshot(records[0], snapshot)
}

// storedAnswer returns the stored answer of the request's Idempotency-Key, if it has one.
func (s *Server) storedAnswer(ctx context.Context, r *http.Request) (any, bool, error) {
	key := r.Header.Get(IdempotencyHeader)
	if key == "" {
		return nil, false, nil
	}
	var st storedAnswer
	err := s.pool.QueryRow(ctx, `SELECT path, status, body FROM svc_idempotency WHERE key = $1 AND status IS NOT NULL`, key).Scan(&st.path, &st.status, &st.body)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	res, err := st.answer(key, r)
	return res, true, err
}

// withSnapshot returns the record with its snapshot, as a state.Deployment.
func withSnapshot(record, snapshot []byte) (*state.Deployment, error) {
	var d state.Deployment
	if err := json.Unmarshal(record, &d); err != nil {
		return nil, err
	}
	d.Snapshot = snapshot
	return &d, nil
}

// heartbeatDeployments answers POST …/deployments/heartbeat (stateapi.HeartbeatRequest).
func (s *Server) heartbeatDeployments(r *http.Request, c *call) (any, error) {
	var req stateapi.HeartbeatRequest
	if _, err := s.decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	out := rawDeployments{Deployments: []json.RawMessage{}}
	if len(req.IDs) == 0 {
		return out, nil
	}
	err := s.inTx(r.Context(), func(tx pgx.Tx) error {
		ctx := r.Context()
		now := s.clockNow()
		// Only the column is written, and the answer leaves the plan out: a heartbeat comes every 0.5 s and a
		// large stack's plan is megabytes of JSON. Reads of the record overlay heartbeat_at (queueRecordSQL).
		// A RUNNING deployment beats only for the token that claimed it (another token's beats would keep a
		// dead run's stack taken); a waiting one for any token (approve --run waits for another's).
		if _, err := tx.Exec(ctx, `WITH l AS (
  SELECT d.id FROM svc_deployments d JOIN svc_stacks s ON s.id = d.stack_id
  WHERE d.id = ANY($3) AND s.org = $1 AND s.project = $2 AND d.status IN `+queuedSQL+` ORDER BY d.id FOR UPDATE OF d)
UPDATE svc_deployments d SET heartbeat_at = $4 FROM l WHERE d.id = l.id AND d.status IN `+queuedSQL+`
  AND (d.status <> 'RUNNING' OR d.claimed_by IS NULL OR d.claimed_by = $5)`,
			r.PathValue("org"), r.PathValue("project"), req.IDs, now, c.user); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT `+queueRecordSQL+` FROM svc_deployments d JOIN svc_stacks s ON s.id = d.stack_id
WHERE d.id = ANY($3) AND s.org = $1 AND s.project = $2 ORDER BY d.seq`, r.PathValue("org"), r.PathValue("project"), req.IDs)
		if err != nil {
			return err
		}
		records, err := pgx.CollectRows(rows, pgx.RowTo[json.RawMessage])
		if err != nil {
			return err
		}
		out.Deployments = append(out.Deployments, records...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// lockDeployment locks deployment id of the request's project and returns its record and the name of
// the token that claimed it ("" when none or unknown); 404 when absent.
func lockDeployment(ctx context.Context, tx pgx.Tx, r *http.Request, id string) (*state.Deployment, string, error) {
	var record []byte
	var claimer *string
	err := tx.QueryRow(ctx, `SELECT d.record, d.claimed_by FROM svc_deployments d JOIN svc_stacks s ON s.id = d.stack_id
WHERE d.id = $3 AND s.org = $1 AND s.project = $2 FOR UPDATE OF d`, r.PathValue("org"), r.PathValue("project"), id).Scan(&record, &claimer)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, "", errorf(http.StatusNotFound, "Not Found: deployment %s not found", id)
	}
	if err != nil {
		return nil, "", err
	}
	var d state.Deployment
	if err := json.Unmarshal(record, &d); err != nil {
		return nil, "", err
	}
	if claimer == nil {
		return &d, "", nil
	}
	return &d, *claimer, nil
}

// tokenView returns deployment d and the caller c as the state machine (state.CheckTransition) sees them
// on a state service: people and runners are API tokens. The runner of a RUNNING deployment is the token
// that claimed it (claimer; "" before claims were recorded: any token is taken for it), and the caller
// runs as its own token; only the claimer may end a run. Anyone else may ask it to stop (requestAbort),
// and the queue aborts it by itself once its heartbeats stop.
func tokenView(d *state.Deployment, claimer string, c *call) (state.Deployment, state.Actor) {
	v := *d
	if claimer == "" {
		claimer = c.user
	}
	v.Runner = "token " + claimer + " (runner " + d.Runner + ")"
	runner := "token " + c.user
	if claimer == c.user {
		runner = v.Runner
	}
	return v, state.Actor{Name: c.user, Runner: runner}
}

// policy is the server's approval policy (Options.RequireSecondPerson).
func (s *Server) policy() state.Policy {
	return state.Policy{RequireSecondPerson: s.secondPerson}
}

// stateError is the answer of an error of the state machine: 409 with "transition" for a
// *state.TransitionError, 403 with "forbidden" for a *state.ForbiddenError (the message of a direct
// deploy under --require-second-person says to propose it with cdkx deploy --propose).
func stateError(err error) error {
	var te *state.TransitionError
	var fe *state.ForbiddenError
	switch {
	case errors.As(err, &te):
		return transitionError(te)
	case errors.As(err, &fe):
		return &apiError{code: http.StatusForbidden, msg: "Forbidden: " + fe.Error(),
			forbidden: &stateapi.ForbiddenRefusal{ID: fe.ID, Reason: fe.Reason}}
	}
	return err
}

// setRecord sets deployment id's status and merges fields into its record; it returns the record.
func setRecord(ctx context.Context, tx pgx.Tx, id string, status state.DeploymentStatus, fields map[string]any) (json.RawMessage, error) {
	fields["status"] = status
	patch, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	var record json.RawMessage
	err = tx.QueryRow(ctx, `UPDATE svc_deployments SET status = $2, record = record || $3::jsonb WHERE id = $1 RETURNING record`, id, status, patch).Scan(&record)
	if pgCode(err) == codeUniqueViolation {
		return nil, errorf(http.StatusConflict, "Conflict: another deployment of the stack is RUNNING")
	}
	return record, err
}

// transitionDeployment answers POST …/deployments/{id}/transition (stateapi.TransitionRequest).
func (s *Server) transitionDeployment(r *http.Request, c *call) (any, error) {
	var req stateapi.TransitionRequest
	if _, err := s.decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	switch {
	case !knownStatus(req.To):
		return nil, errorf(http.StatusBadRequest, "Bad Request: %q is not a deployment status", req.To)
	case req.To == state.StatusRunning:
		return nil, errorf(http.StatusBadRequest, "Bad Request: a deployment becomes RUNNING only by a claim (POST …/deployments/claim)")
	case len(req.From) == 0:
		return nil, errorf(http.StatusBadRequest, "Bad Request: name the statuses the deployment may be in (from)")
	}
	id := r.PathValue("id")
	return s.once(r, func(ctx context.Context, tx pgx.Tx) (any, error) {
		d, claimer, err := lockDeployment(ctx, tx, r, id)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(req.From, d.Status) {
			return nil, transitionError(&state.TransitionError{ID: id, Status: d.Status, To: req.To})
		}
		view, actor := tokenView(d, claimer, c)
		if err := state.CheckTransition(view, req.To, actor, s.policy()); err != nil {
			return nil, stateError(err)
		}
		switch req.To {
		case state.StatusApproved, state.StatusRejected, state.StatusAborted:
		default:
			return nil, errorf(http.StatusBadRequest, "Bad Request: a deployment becomes %s only by a claim or a finish (POST …/deployments/claim, PATCH …/deployments/{id})", req.To)
		}
		fields := map[string]any{}
		switch req.To {
		case state.StatusApproved:
			fields["approvedBy"] = c.user
		case state.StatusRejected:
			fields["rejectedBy"] = c.user
		case state.StatusAborted:
			fields["abortedBy"] = c.user
		}
		if req.Error != "" {
			fields["error"] = req.Error
		}
		if req.To.Terminal() {
			at := req.At.UTC()
			if at.IsZero() {
				at = s.clockNow()
			}
			fields["finishedAt"] = at
		}
		return setRecord(ctx, tx, id, req.To, fields)
	})
}

// requestAbort answers POST …/deployments/{id}/abort (stateapi.AbortRequest).
func (s *Server) requestAbort(r *http.Request, c *call) (any, error) {
	var req stateapi.AbortRequest
	if _, err := s.decodeBody(r, &req, true); err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	return s.once(r, func(ctx context.Context, tx pgx.Tx) (any, error) {
		d, _, err := lockDeployment(ctx, tx, r, id)
		if err != nil {
			return nil, err
		}
		if d.Status != state.StatusRunning {
			return nil, transitionError(&state.TransitionError{ID: id, Status: d.Status, To: state.StatusAborted})
		}
		return setRecord(ctx, tx, id, state.StatusRunning, map[string]any{"abortedBy": c.user})
	})
}

// finishDeployment answers PATCH …/deployments/{id} (stateapi.FinishRequest).
func (s *Server) finishDeployment(r *http.Request, c *call) (any, error) {
	var req stateapi.FinishRequest
	if _, err := s.decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	switch req.Status {
	case state.StatusCompleted, state.StatusFailed, state.StatusAborted:
	default:
		return nil, errorf(http.StatusBadRequest, "Bad Request: a deployment finishes COMPLETED, FAILED or ABORTED, not %q", req.Status)
	}
	id := r.PathValue("id")
	return s.once(r, func(ctx context.Context, tx pgx.Tx) (any, error) {
		d, claimer, err := lockDeployment(ctx, tx, r, id)
		if err != nil {
			return nil, err
		}
		if d.Status != state.StatusRunning {
			return nil, transitionError(&state.TransitionError{ID: id, Status: d.Status, To: req.Status})
		}
		view, actor := tokenView(d, claimer, c)
		if err := state.CheckTransition(view, req.Status, actor, s.policy()); err != nil {
			return nil, stateError(err)
		}
		at := req.FinishedAt.UTC()
		if at.IsZero() {
			at = s.clockNow()
		}
		return setRecord(ctx, tx, id, req.Status, map[string]any{"finishedAt": at, "version": req.Version, "error": req.Error})
	})
}

// listDeployments answers GET …/deployments[?stack=S&status=A,B&idPrefix=P&limit=N] (a
// stateapi.DeploymentList).
func (s *Server) listDeployments(r *http.Request, c *call) (any, error) {
	q := r.URL.Query()
	limit := 0
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 0 {
			return nil, errorf(http.StatusBadRequest, "Bad Request: limit %q is not a number of 0 or more", l)
		}
		limit = n
	}
	statuses := []string{}
	if st := q.Get("status"); st != "" {
		for _, one := range strings.Split(st, ",") {
			if !knownStatus(state.DeploymentStatus(one)) {
				return nil, errorf(http.StatusBadRequest, "Bad Request: status %q is not a deployment status", one)
			}
			statuses = append(statuses, one)
		}
	}
	rows, err := s.pool.Query(r.Context(), `SELECT d.record FROM svc_deployments d JOIN svc_stacks s ON s.id = d.stack_id
WHERE s.org = $1 AND s.project = $2 AND ($3 = '' OR s.name = $3) AND (cardinality($4::text[]) = 0 OR d.status = ANY($4))
  AND left(d.id, length($6::text)) = $6::text
ORDER BY d.seq DESC LIMIT CASE WHEN $5 > 0 THEN $5 END`, r.PathValue("org"), r.PathValue("project"), q.Get("stack"), statuses, limit, q.Get("idPrefix"))
	if err != nil {
		return nil, err
	}
	records, err := pgx.CollectRows(rows, pgx.RowTo[json.RawMessage])
	if err != nil {
		return nil, err
	}
	if records == nil {
		records = []json.RawMessage{}
	}
	return rawDeployments{Deployments: records}, nil
}

// getDeployment answers GET …/deployments/{id}: the state.Deployment with its snapshot.
func (s *Server) getDeployment(r *http.Request, c *call) (any, error) {
	var record, snapshot []byte
	err := s.pool.QueryRow(r.Context(), `SELECT d.record, d.snapshot FROM svc_deployments d JOIN svc_stacks s ON s.id = d.stack_id
WHERE d.id = $3 AND s.org = $1 AND s.project = $2`, r.PathValue("org"), r.PathValue("project"), r.PathValue("id")).Scan(&record, &snapshot)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errorf(http.StatusNotFound, "Not Found: deployment %s not found", r.PathValue("id"))
	}
	if err != nil {
		return nil, err
	}
	return withSnapshot(record, snapshot)
}

// deploymentEvents answers GET …/deployments/{id}/events: a stateapi.DeploymentEvents, the stored events
// as they are.
func (s *Server) deploymentEvents(r *http.Request, c *call) (any, error) {
	rows, err := s.pool.Query(r.Context(), `SELECT e.data FROM svc_deployment_events e JOIN svc_stacks s ON s.id = e.stack_id
WHERE e.deployment_id = $3 AND s.org = $1 AND s.project = $2 ORDER BY e.seq`, r.PathValue("org"), r.PathValue("project"), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	events, err := pgx.CollectRows(rows, pgx.RowTo[json.RawMessage])
	if err != nil {
		return nil, err
	}
	if events == nil {
		events = []json.RawMessage{}
	}
	return map[string]any{"events": events}, nil
}
