package storage

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// StackState is what storing a checkpoint needs of a stack's row, read under its lock: its version and
// the bytes of its last whole version (snapshot) and of the deltas stored since.
type StackState struct {
	Version, SnapshotBytes, DeltaBytes int64
}

// Version is one stored version of a stack's checkpoint: its whole text (Data) or, after the stack's
// first version, the edits from the version before (Delta, encoded by the caller).
type Version struct {
	Version     int64
	Data, Delta []byte
}

// Chain returns the stored versions of the stack (row ID) from the last whole one at or before version
// up to version, in order.
func (c Conn) Chain(ctx context.Context, stackID, version int64) ([]Version, error) {
	rows, err := c.q.Query(ctx, `SELECT version, data, delta FROM svc_checkpoints WHERE stack_id = $1 AND version <= $2
AND version >= (SELECT max(version) FROM svc_checkpoints WHERE stack_id = $1 AND version <= $2 AND data IS NOT NULL)
ORDER BY version`, stackID, version)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Version, error) {
		var v Version
		err := row.Scan(&v.Version, &v.Data, &v.Delta)
		return v, err
	})
}

// Deltas returns the stored versions of the stack after from up to to, in order, without their whole
// texts (Data is nil).
func (c Conn) Deltas(ctx context.Context, stackID, from, to int64) ([]Version, error) {
	rows, err := c.q.Query(ctx, `SELECT version, delta FROM svc_checkpoints WHERE stack_id = $1 AND version > $2 AND version <= $3 ORDER BY version`,
		stackID, from, to)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Version, error) {
		var v Version
		err := row.Scan(&v.Version, &v.Delta)
		return v, err
	})
}

// LockStack locks the stack's row and reads it.
func (t *Tx) LockStack(ctx context.Context, stackID int64) (StackState, error) {
	var st StackState
	err := t.q.QueryRow(ctx, `SELECT version, snapshot_bytes, delta_bytes FROM svc_stacks WHERE id = $1 FOR UPDATE`, stackID).
		Scan(&st.Version, &st.SnapshotBytes, &st.DeltaBytes)
	return st, err
}

// LockForCheckpoint is LockStack that also reads, in the same round trip, the version of the checkpoint
// update stored with sequence number seq (nil when none: not a retry) and the update's last checkpoint
// version (nil when none).
func (t *Tx) LockForCheckpoint(ctx context.Context, stackID int64, update string, seq int64) (st StackState, seen, last *int64, err error) {
	err = t.q.QueryRow(ctx, `SELECT version, snapshot_bytes, delta_bytes,
 (SELECT c.version FROM svc_checkpoints c WHERE c.update_id = $2 AND c.sequence_number = $3),
 (SELECT max(c.version) FROM svc_checkpoints c WHERE c.update_id = $2)
FROM svc_stacks WHERE id = $1 FOR UPDATE`, stackID, update, seq).Scan(&st.Version, &st.SnapshotBytes, &st.DeltaBytes, &seen, &last)
	return st, seen, last, err
}

// StoreVersion stores v (whole or a delta) as the stack's version st.Version, written by update with
// sequence number seq (nil: none) at at, and records st's byte counts and resourceCount on the stack's
// row; one round trip.
func (t *Tx) StoreVersion(ctx context.Context, stackID int64, st StackState, resourceCount int, update string, seq *int64, v Version, at time.Time) error {
	batch := &pgx.Batch{}
	batch.Queue(`UPDATE svc_stacks SET version = $2, resource_count = $3, snapshot_bytes = $4, delta_bytes = $5 WHERE id = $1`,
		stackID, st.Version, resourceCount, st.SnapshotBytes, st.DeltaBytes)
	batch.Queue(`INSERT INTO svc_checkpoints (stack_id, version, update_id, sequence_number, data, delta, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		stackID, st.Version, update, seq, v.Data, v.Delta, at)
	return t.q.SendBatch(ctx, batch).Close()
}
