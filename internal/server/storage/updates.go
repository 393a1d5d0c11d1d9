package storage

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// Update is an update (svc_updates) as the handlers see it, read under its row lock.
type Update struct {
	ID, Kind, Status string
	StackID          int64
	// LeaseExpires is when its lease expires; nil without a lease.
	LeaseExpires *time.Time
}

// StackPath names a stack: organization, project, name.
type StackPath struct {
	Org, Project, Stack string
}

// NewUpdate is an update to create.
type NewUpdate struct {
	ID      string
	StackID int64
	Kind    string
	Status  string
	// Request is the body of the request that created it (JSON).
	Request   []byte
	CreatedAt time.Time
	CreatedBy string
}

// TakeOver cancels, at now, the active updates of the stack (row ID) that are taken for gone: running
// with a lease expired before now, or not started and created before notStartedBefore. It locks their
// rows.
func (c Conn) TakeOver(ctx context.Context, stackID int64, now, notStartedBefore time.Time) error {
	_, err := c.q.Exec(ctx, `UPDATE svc_updates SET status = 'cancelled', completed_at = $2, lease_expires_at = NULL
WHERE stack_id = $1 AND ((status = 'running' AND lease_expires_at < $2) OR (status IN ('not started', 'requested') AND created_at < $3))`,
		stackID, now, notStartedBefore)
	return err
}

// InsertActiveUpdate creates u unless its stack has an active update (not started, requested, running):
// false then, and nothing is stored.
func (c Conn) InsertActiveUpdate(ctx context.Context, u NewUpdate) (bool, error) {
	tag, err := c.q.Exec(ctx, `INSERT INTO svc_updates (id, stack_id, kind, status, request, created_at, created_by) VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (stack_id) WHERE status IN ('not started', 'requested', 'running') DO NOTHING`,
		u.ID, u.StackID, u.Kind, u.Status, u.Request, u.CreatedAt, u.CreatedBy)
	return err == nil && tag.RowsAffected() == 1, err
}

// InsertDoneUpdate creates u ended (cancelled, succeeded…) at its creation, never started.
func (c Conn) InsertDoneUpdate(ctx context.Context, u NewUpdate) error {
	_, err := c.q.Exec(ctx, `INSERT INTO svc_updates (id, stack_id, kind, status, request, created_at, created_by, completed_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $6)`,
		u.ID, u.StackID, u.Kind, u.Status, u.Request, u.CreatedAt, u.CreatedBy)
	return err
}

// InsertStartedUpdate creates u (of a kind the server runs itself: rename, import) started at its
// creation.
func (c Conn) InsertStartedUpdate(ctx context.Context, u NewUpdate) error {
	_, err := c.q.Exec(ctx, `INSERT INTO svc_updates (id, stack_id, kind, status, created_at, started_at, created_by) VALUES ($1, $2, $3, $4, $5, $5, $6)`,
		u.ID, u.StackID, u.Kind, u.Status, u.CreatedAt, u.CreatedBy)
	return err
}

// LockUpdate reads and locks update id of the stack at p; ErrNotFound when it is not an update of that
// stack.
func (t *Tx) LockUpdate(ctx context.Context, p StackPath, id string) (Update, error) {
	var u Update
	err := t.q.QueryRow(ctx, `SELECT u.id, u.kind, u.status, u.stack_id, u.lease_expires_at FROM svc_updates u
JOIN svc_stacks s ON s.id = u.stack_id
WHERE u.id = $1 AND s.org = $2 AND s.project = $3 AND s.name = $4 FOR UPDATE OF u`,
		id, p.Org, p.Project, p.Stack).
		Scan(&u.ID, &u.Kind, &u.Status, &u.StackID, &u.LeaseExpires)
	if errors.Is(err, pgx.ErrNoRows) {
		return u, ErrNotFound
	}
	return u, err
}

// LockLease reads and locks the update whose lease token has the SHA-256 hash and returns it with its
// stack's path; ErrNotFound when no update has it.
func (t *Tx) LockLease(ctx context.Context, hash []byte) (Update, StackPath, error) {
	var u Update
	var p StackPath
	err := t.q.QueryRow(ctx, `SELECT u.id, u.kind, u.status, u.stack_id, u.lease_expires_at, s.org, s.project, s.name
FROM svc_updates u JOIN svc_stacks s ON s.id = u.stack_id WHERE u.lease_hash = $1 FOR UPDATE OF u`, hash).
		Scan(&u.ID, &u.Kind, &u.Status, &u.StackID, &u.LeaseExpires, &p.Org, &p.Project, &p.Stack)
	if errors.Is(err, pgx.ErrNoRows) {
		return u, p, ErrNotFound
	}
	return u, p, err
}

// NeverStarted reports whether update id was never started.
func (c Conn) NeverStarted(ctx context.Context, id string) (bool, error) {
	var never bool
	err := c.q.QueryRow(ctx, `SELECT started_at IS NULL FROM svc_updates WHERE id = $1`, id).Scan(&never)
	return never, err
}

// StartUpdate makes update id status (running) at now with the lease of the SHA-256 hash until exp.
func (c Conn) StartUpdate(ctx context.Context, id, status string, now time.Time, hash []byte, exp time.Time) error {
	_, err := c.q.Exec(ctx, `UPDATE svc_updates SET status = $2, started_at = $3, lease_hash = $4, lease_expires_at = $5 WHERE id = $1`,
		id, status, now, hash, exp)
	return err
}

// TouchStack records that the stack (row ID) was updated at now, sets its tags when tags (a JSON
// object) is not nil, and returns its version.
func (c Conn) TouchStack(ctx context.Context, stackID int64, now time.Time, tags []byte) (int64, error) {
	q := `UPDATE svc_stacks SET last_update = $2 WHERE id = $1 RETURNING version`
	args := []any{stackID, now}
	if tags != nil {
		q = `UPDATE svc_stacks SET last_update = $2, tags = $3 WHERE id = $1 RETURNING version`
		args = append(args, tags)
	}
	var version int64
	err := c.q.QueryRow(ctx, q, args...).Scan(&version)
	return version, err
}

// EndUpdate makes update id status (succeeded, failed, cancelled) at now and drops its lease.
func (c Conn) EndUpdate(ctx context.Context, id, status string, now time.Time) error {
	_, err := c.q.Exec(ctx, `UPDATE svc_updates SET status = $2, completed_at = $3, lease_expires_at = NULL WHERE id = $1`,
		id, status, now)
	return err
}

// CompleteUpdate makes update id status at now, keeping its lease (an update the server ran itself).
func (c Conn) CompleteUpdate(ctx context.Context, id, status string, now time.Time) error {
	_, err := c.q.Exec(ctx, `UPDATE svc_updates SET status = $2, completed_at = $3 WHERE id = $1`, id, status, now)
	return err
}

// UpdateEvent is an engine event of an update: its sequence number and JSON.
type UpdateEvent struct {
	Seq  int64
	Data json.RawMessage
}

// UpdateEvents returns at most limit events of update id after sequence number after, in order.
func (c Conn) UpdateEvents(ctx context.Context, id string, after int64, limit int) ([]UpdateEvent, error) {
	rows, err := c.q.Query(ctx, `SELECT seq, data FROM svc_events WHERE update_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
		id, after, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (UpdateEvent, error) {
		var e UpdateEvent
		err := row.Scan(&e.Seq, &e.Data)
		return e, err
	})
}

// InsertUpdateEvents stores events of update id (one already stored under its sequence number is left
// as it is) and, when changes is not nil, records them as its resource changes; one round trip.
func (c Conn) InsertUpdateEvents(ctx context.Context, id string, events []UpdateEvent, changes []byte) error {
	batch := &pgx.Batch{}
	for _, e := range events {
		batch.Queue(`INSERT INTO svc_events (update_id, seq, data) VALUES ($1, $2, $3) ON CONFLICT (update_id, seq) DO NOTHING`, id, e.Seq, []byte(e.Data))
	}
	if changes != nil {
		batch.Queue(`UPDATE svc_updates SET resource_changes = $2 WHERE id = $1`, id, changes)
	}
	return c.q.SendBatch(ctx, batch).Close()
}

// RenewLease extends the lease of update id to exp and records heartbeat when not nil.
func (c Conn) RenewLease(ctx context.Context, id string, exp time.Time, heartbeat *time.Time) error {
	_, err := c.q.Exec(ctx, `UPDATE svc_updates SET lease_expires_at = $2, heartbeat_at = coalesce($3, heartbeat_at) WHERE id = $1`, id, exp, heartbeat)
	return err
}
