package storage

// The deployment queue's rows (svc_deployments, svc_deployment_events): what the queue reads, locks and
// writes. The rules that decide (who is dead, what is ahead, what may be claimed) are the caller's, from
// pkg/state's rules; nothing here decides.
//
// Concurrency: claims of a stack's queue are serialised by a transaction-level advisory lock on the stack
// (queueLockClass, the stack's row ID), taken in ascending order when a claim spans several stacks
// (LockQueues); under it the claim locks every queued row of those stacks (in ID order, in one statement:
// Queues with lock) before it changes any. Every other statement that locks several deployment rows
// locks them in ID order, and no statement waits for an advisory lock while holding a row lock, so the
// queue's statements do not deadlock each other. The unique index svc_deployments_one_running is the
// last word on one RUNNING deployment per stack (ErrRunning). Creates are serialised by createLockKey
// (LockCreates), so that a deployment becomes visible only after every one with a lower seq.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

// queueLockClass is the first key of the two-key advisory lock on a stack's queue ("cdxq"); the second is
// the stack's row ID (modulo 2^31-1: two stacks sharing a key only serialise more).
const queueLockClass int32 = 0x63647871

// createLockKey is the advisory lock (one bigint key: another key space than queueLockClass's) that
// serialises creates ("cdkxsvdc").
const createLockKey int64 = 0x63646b7873766463

// queuedSQL is the SQL list of the statuses that hold a place in a stack's queue.
const queuedSQL = `('PENDING', 'APPROVED', 'RUNNING')`

// queueRecordSQL selects the record of deployment d as the queue's frequent reads need it: without the
// plan and the message, with the heartbeat column (which heartbeats write alone) overlaid.
const queueRecordSQL = `(d.record - 'plan' - 'message') || jsonb_build_object('heartbeatAt', d.heartbeat_at)`

// ErrRunning is returned by a write that would make a second deployment of a stack RUNNING.
var ErrRunning = errors.New("another deployment of the stack is RUNNING")

// NewDeployment is a deployment row to insert.
type NewDeployment struct {
	ID string
	// StackID is the row ID of its stack.
	StackID int64
	// Record is the state.Deployment as JSON, without its snapshot.
	Record   []byte
	Snapshot []byte
	Status   state.DeploymentStatus
	Seq      int64
	// HeartbeatAt is the heartbeat column; nil for none.
	HeartbeatAt *time.Time
}

// LockCreates takes the transaction's lock that serialises creates of deployments.
func (t *Tx) LockCreates(ctx context.Context) error {
	_, err := t.q.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, createLockKey)
	return err
}

// FirstDeployment returns one of ids that names a stored deployment, or "" when none does.
func (c Conn) FirstDeployment(ctx context.Context, ids []string) (string, error) {
	return c.first(ctx, `SELECT id FROM svc_deployments WHERE id = ANY($1) LIMIT 1`, ids)
}

// FirstWithEvents returns one of ids under which deployment events are stored, or "" when none.
func (c Conn) FirstWithEvents(ctx context.Context, ids []string) (string, error) {
	return c.first(ctx, `SELECT deployment_id FROM svc_deployment_events WHERE deployment_id = ANY($1) LIMIT 1`, ids)
}

func (c Conn) first(ctx context.Context, query string, ids []string) (string, error) {
	var id string
	err := c.q.QueryRow(ctx, query, ids).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return id, err
}

// StackIDs returns the row IDs of the stacks of names that exist in org and project, by name; every
// stack of the project when names is empty.
func (c Conn) StackIDs(ctx context.Context, org, project string, names []string) (map[string]int64, error) {
	if names == nil {
		names = []string{} // not NULL: every stack
	}
	rows, err := c.q.Query(ctx, `SELECT name, id FROM svc_stacks WHERE org = $1 AND project = $2 AND (cardinality($3::text[]) = 0 OR name = ANY($3))`,
		org, project, names)
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

// NextSeqs draws n numbers of the deployments' sequence, ascending.
func (c Conn) NextSeqs(ctx context.Context, n int) ([]int64, error) {
	rows, err := c.q.Query(ctx, `SELECT nextval('svc_deployment_seq') FROM generate_series(1, $1)`, n)
	if err != nil {
		return nil, err
	}
	seqs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	slices.Sort(seqs)
	return seqs, err
}

// InsertDeployments inserts ds; ErrExists when one of their IDs is taken.
func (c Conn) InsertDeployments(ctx context.Context, ds []NewDeployment) error {
	batch := &pgx.Batch{}
	for _, d := range ds {
		batch.Queue(`INSERT INTO svc_deployments (id, stack_id, record, snapshot, status, seq, heartbeat_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			d.ID, d.StackID, d.Record, d.Snapshot, d.Status, d.Seq, d.HeartbeatAt)
	}
	err := c.q.SendBatch(ctx, batch).Close()
	if UniqueViolation(err) {
		return ErrExists
	}
	return err
}

// StackRef is the stack of a deployment: its row ID and name.
type StackRef struct {
	ID   int64
	Name string
}

// DeploymentStacks returns the stacks of the deployments of ids stored in org and project, by
// deployment ID (those of other projects are absent).
func (c Conn) DeploymentStacks(ctx context.Context, org, project string, ids []string) (map[string]StackRef, error) {
	rows, err := c.q.Query(ctx, `SELECT d.id, d.stack_id, s.name FROM svc_deployments d JOIN svc_stacks s ON s.id = d.stack_id
WHERE d.id = ANY($3) AND s.org = $1 AND s.project = $2`, org, project, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	at := map[string]StackRef{}
	for rows.Next() {
		var id string
		var w StackRef
		if err := rows.Scan(&id, &w.ID, &w.Name); err != nil {
			return nil, err
		}
		at[id] = w
	}
	return at, rows.Err()
}

// LockQueues takes the advisory locks of the stacks' queues (row IDs), in ascending key order.
func (t *Tx) LockQueues(ctx context.Context, stacks []int64) error {
	keys := make([]int32, 0, len(stacks))
	for _, id := range stacks {
		keys = append(keys, int32(id%(1<<31-1)))
	}
	slices.Sort(keys)
	for _, k := range slices.Compact(keys) {
		if _, err := t.q.Exec(ctx, `SELECT pg_advisory_xact_lock($1, $2)`, queueLockClass, k); err != nil {
			return err
		}
	}
	return nil
}

// Queues returns the queued (PENDING, APPROVED, RUNNING) deployments of stacks, by stack row ID, each
// queue in seq order, without plans, messages and snapshots; lock locks their rows, in ID order.
func (c Conn) Queues(ctx context.Context, stacks []int64, lock bool) (map[int64][]state.Deployment, error) {
	query := `SELECT d.stack_id, ` + queueRecordSQL + ` FROM svc_deployments d WHERE d.stack_id = ANY($1) AND d.status IN ` + queuedSQL + ` ORDER BY d.id`
	if lock {
		query += ` FOR UPDATE`
	}
	rows, err := c.q.Query(ctx, query, stacks)
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

// Abort is a deployment to make ABORTED, compared and set: it changes only while its status and heartbeat
// are still Status and HeartbeatAt (as read).
type Abort struct {
	ID          string
	Status      state.DeploymentStatus
	HeartbeatAt time.Time
	// FinishedAt and Error are recorded.
	FinishedAt time.Time
	Error      string
}

// AbortDeployments makes ABORTED those of as still as read and returns their IDs; the others, changed
// meanwhile, are left as they are.
func (c Conn) AbortDeployments(ctx context.Context, as []Abort) ([]string, error) {
	if len(as) == 0 {
		return nil, nil
	}
	slices.SortFunc(as, func(a, b Abort) int { return strings.Compare(a.ID, b.ID) }) // rows locked in ID order
	batch := &pgx.Batch{}
	for _, a := range as {
		patch, err := json.Marshal(map[string]any{"status": state.StatusAborted, "finishedAt": a.FinishedAt, "error": a.Error})
		if err != nil {
			return nil, err
		}
		batch.Queue(`UPDATE svc_deployments SET status = 'ABORTED', record = record || $4::jsonb
WHERE id = $1 AND status = $2 AND heartbeat_at = $3 RETURNING id`, a.ID, a.Status, a.HeartbeatAt, patch)
	}
	br := c.q.SendBatch(ctx, batch)
	var done []string
	for range as {
		var id string
		err := br.QueryRow().Scan(&id)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			_ = br.Close()
			return nil, err
		default:
			done = append(done, id)
		}
	}
	return done, br.Close()
}

// DeploymentStatus returns the status of deployment id; ErrNotFound when there is none.
func (c Conn) DeploymentStatus(ctx context.Context, id string) (state.DeploymentStatus, error) {
	var status state.DeploymentStatus
	err := c.q.QueryRow(ctx, `SELECT status FROM svc_deployments WHERE id = $1`, id).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		return status, ErrNotFound
	}
	return status, err
}

// Claim makes ids (PENDING or APPROVED, their rows locked) RUNNING, started and beating at now, claimed
// by the API token named by, with patch (a JSON object: the claimed record's fields) merged into their
// records, and returns the records in seq order; ErrRunning when one's stack has a RUNNING deployment
// already.
func (c Conn) Claim(ctx context.Context, ids []string, patch []byte, by string, now time.Time) ([]json.RawMessage, error) {
	rows, err := c.q.Query(ctx, `UPDATE svc_deployments SET status = 'RUNNING', started_at = $2, heartbeat_at = $2, record = record || $3::jsonb, claimed_by = $4
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
	if UniqueViolation(err) {
		return nil, ErrRunning
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

// Snapshot returns the snapshot of deployment id.
func (c Conn) Snapshot(ctx context.Context, id string) ([]byte, error) {
	var snapshot []byte
	err := c.q.QueryRow(ctx, `SELECT snapshot FROM svc_deployments WHERE id = $1`, id).Scan(&snapshot)
	return snapshot, err
}

// Heartbeat sets the heartbeat of the queued deployments of ids in org and project to now and returns
// the records of all of ids found there, in seq order, without plans and messages. Only the column is
// written: a heartbeat comes every 0.5 s and a large stack's plan is megabytes of JSON. A RUNNING
// deployment beats only for the token named by that claimed it; a waiting one for any token.
func (t *Tx) Heartbeat(ctx context.Context, org, project string, ids []string, now time.Time, by string) ([]json.RawMessage, error) {
	if _, err := t.q.Exec(ctx, `WITH l AS (
  SELECT d.id FROM svc_deployments d JOIN svc_stacks s ON s.id = d.stack_id
  WHERE d.id = ANY($3) AND s.org = $1 AND s.project = $2 AND d.status IN `+queuedSQL+` ORDER BY d.id FOR UPDATE OF d)
UPDATE svc_deployments d SET heartbeat_at = $4 FROM l WHERE d.id = l.id AND d.status IN `+queuedSQL+`
  AND (d.status <> 'RUNNING' OR d.claimed_by IS NULL OR d.claimed_by = $5)`,
		org, project, ids, now, by); err != nil {
		return nil, err
	}
	rows, err := t.q.Query(ctx, `SELECT `+queueRecordSQL+` FROM svc_deployments d JOIN svc_stacks s ON s.id = d.stack_id
WHERE d.id = ANY($3) AND s.org = $1 AND s.project = $2 ORDER BY d.seq`, org, project, ids)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[json.RawMessage])
}

// LockDeployment locks deployment id of org and project and returns its record and the name of the token
// that claimed it ("" when none or unknown); ErrNotFound when absent.
func (t *Tx) LockDeployment(ctx context.Context, org, project, id string) (*state.Deployment, string, error) {
	var record []byte
	var claimer *string
	err := t.q.QueryRow(ctx, `SELECT d.record, d.claimed_by FROM svc_deployments d JOIN svc_stacks s ON s.id = d.stack_id
WHERE d.id = $3 AND s.org = $1 AND s.project = $2 FOR UPDATE OF d`, org, project, id).Scan(&record, &claimer)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, "", ErrNotFound
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

// SetRecord sets deployment id's status and merges patch (a JSON object) into its record; it returns
// the record. ErrRunning when that makes a second deployment of its stack RUNNING.
func (c Conn) SetRecord(ctx context.Context, id string, status state.DeploymentStatus, patch []byte) (json.RawMessage, error) {
	var record json.RawMessage
	err := c.q.QueryRow(ctx, `UPDATE svc_deployments SET status = $2, record = record || $3::jsonb WHERE id = $1 RETURNING record`, id, status, patch).Scan(&record)
	if UniqueViolation(err) {
		return nil, ErrRunning
	}
	return record, err
}

// DeploymentFilter selects deployments of a project: all when zero.
type DeploymentFilter struct {
	// Stack is a stack's name; Statuses the statuses wanted; Kinds the kinds wanted; IDPrefix how IDs
	// start.
	Stack    string
	Statuses []string
	Kinds    []string
	IDPrefix string
	// Before keeps those of a lower seq (0: all): the cursor of a page.
	Before int64
	// Limit caps the number answered (0: no cap).
	Limit int
	// NoPlans leaves the plans out of the records (lists that show no plan: the console's pages).
	NoPlans bool
}

// Deployments returns the records of the deployments of org and project that f selects, newest (highest
// seq) first.
func (c Conn) Deployments(ctx context.Context, org, project string, f DeploymentFilter) ([]json.RawMessage, error) {
	statuses, kinds := f.Statuses, f.Kinds
	if statuses == nil {
		statuses = []string{}
	}
	if kinds == nil {
		kinds = []string{}
	}
	// Pages of a stack's history walk svc_deployments_stack_seq (svc_deployments_stack_kind_seq with
	// kinds) backwards from the cursor.
	rows, err := c.q.Query(ctx, `SELECT CASE WHEN $9 THEN d.record - 'plan' ELSE d.record END FROM svc_deployments d JOIN svc_stacks s ON s.id = d.stack_id
WHERE s.org = $1 AND s.project = $2 AND ($3 = '' OR s.name = $3) AND (cardinality($4::text[]) = 0 OR d.status = ANY($4))
  AND (cardinality($7::text[]) = 0 OR d.kind = ANY($7)) AND ($8 = 0 OR d.seq < $8)
  AND left(d.id, length($6::text)) = $6::text
ORDER BY d.seq DESC LIMIT CASE WHEN $5 > 0 THEN $5 END`, org, project, f.Stack, statuses, f.Limit, f.IDPrefix, kinds, f.Before, f.NoPlans)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[json.RawMessage])
}

// Deployment returns the record and the snapshot of deployment id of org and project; ErrNotFound when
// absent.
func (c Conn) Deployment(ctx context.Context, org, project, id string) (record, snapshot []byte, err error) {
	err = c.q.QueryRow(ctx, `SELECT d.record, d.snapshot FROM svc_deployments d JOIN svc_stacks s ON s.id = d.stack_id
WHERE d.id = $3 AND s.org = $1 AND s.project = $2`, org, project, id).Scan(&record, &snapshot)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil, ErrNotFound
	}
	return record, snapshot, err
}

// DeploymentEvents returns the stored events of deployment id of org and project, in order.
func (c Conn) DeploymentEvents(ctx context.Context, org, project, id string) ([]json.RawMessage, error) {
	rows, err := c.q.Query(ctx, `SELECT e.data FROM svc_deployment_events e JOIN svc_stacks s ON s.id = e.stack_id
WHERE e.deployment_id = $3 AND s.org = $1 AND s.project = $2 ORDER BY e.seq`, org, project, id)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[json.RawMessage])
}

// LastEventSeq returns the highest sequence number of deployment's stored events (0: none).
func (c Conn) LastEventSeq(ctx context.Context, deployment string) (int64, error) {
	var last int64
	err := c.q.QueryRow(ctx, `SELECT coalesce(max(seq), 0) FROM svc_deployment_events WHERE deployment_id = $1`, deployment).Scan(&last)
	return last, err
}

// Event is a deployment event to store: its sequence number and its JSON.
type Event struct {
	Seq  int64
	Data []byte
}

// InsertEvents stores events of deployment, of the stack (row ID); an event whose sequence number is
// stored already is left as it is.
func (c Conn) InsertEvents(ctx context.Context, stackID int64, deployment string, events []Event) error {
	batch := &pgx.Batch{}
	for _, e := range events {
		batch.Queue(`INSERT INTO svc_deployment_events (deployment_id, seq, stack_id, data) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
			deployment, e.Seq, stackID, e.Data)
	}
	return c.q.SendBatch(ctx, batch).Close()
}

// Writer is what deciding who may write a deployment's records and events needs of its row.
type Writer struct {
	// StackID is the row ID of its stack; Status its status.
	StackID int64
	Status  state.DeploymentStatus
	// Update is the ID of the update bound to it ("" when none); ClaimedBy the token that claimed it and
	// Creator the token that created the asking update ("" when not recorded).
	Update, ClaimedBy, Creator string
}

// WriterOf returns what Writer says of deployment id, asked by update; ErrNotFound when the queue has no
// such deployment.
func (c Conn) WriterOf(ctx context.Context, id, update string) (Writer, error) {
	var w Writer
	var owner, claimer, creator *string
	err := c.q.QueryRow(ctx, `SELECT d.stack_id, d.status, d.update_id, d.claimed_by, u.created_by
FROM svc_deployments d LEFT JOIN svc_updates u ON u.id = $2 WHERE d.id = $1`, id, update).Scan(&w.StackID, &w.Status, &owner, &claimer, &creator)
	if errors.Is(err, pgx.ErrNoRows) {
		return w, ErrNotFound
	}
	w.Update, w.ClaimedBy, w.Creator = deref(owner), deref(claimer), deref(creator)
	return w, err
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Bind binds deployment id, of the stack (row ID), RUNNING and bound to no update, to update; false when
// it is no longer so.
func (c Conn) Bind(ctx context.Context, id, update string, stackID int64) (bool, error) {
	tag, err := c.q.Exec(ctx, `UPDATE svc_deployments SET update_id = $2 WHERE id = $1 AND stack_id = $3 AND update_id IS NULL AND status = 'RUNNING'`,
		id, update, stackID)
	return err == nil && tag.RowsAffected() == 1, err
}

// EventsStack returns the stack (row ID) of the first event stored under deployment ID id; ErrNotFound
// when none is.
func (c Conn) EventsStack(ctx context.Context, id string) (int64, error) {
	var stackID int64
	err := c.q.QueryRow(ctx, `SELECT stack_id FROM svc_deployment_events WHERE deployment_id = $1 ORDER BY seq LIMIT 1`, id).Scan(&stackID)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, ErrNotFound
	}
	return stackID, err
}
