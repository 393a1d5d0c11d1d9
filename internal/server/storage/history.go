package storage

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// historyColumns are the columns scanHistory reads, in its order.
const historyColumns = `kind, status, request, started_at, completed_at, history_version, resource_changes, resource_count`

// HistoryEntry is an update of a stack's history (one that is not a preview), as stored.
type HistoryEntry struct {
	Kind, Status string
	// Request is the body of the request that created it (JSON), as the client sent it.
	Request            []byte
	Started, Completed *time.Time
	// Version is its history version (1, 2, 3… per stack).
	Version int64
	// Changes is its summary's resourceChanges (JSON), or nil; Count the stack's resources when it ended.
	Changes []byte
	Count   *int64
}

func scanHistory(row pgx.Row) (HistoryEntry, error) {
	var h HistoryEntry
	err := row.Scan(&h.Kind, &h.Status, &h.Request, &h.Started, &h.Completed, &h.Version, &h.Changes, &h.Count)
	return h, err
}

// History returns the history of the stack (row ID), newest first: limit entries (nil: all) after
// skipping offset.
func (c Conn) History(ctx context.Context, stackID int64, limit *int64, offset int64) ([]HistoryEntry, error) {
	rows, err := c.q.Query(ctx, `SELECT `+historyColumns+` FROM svc_updates
WHERE stack_id = $1 AND history_version IS NOT NULL ORDER BY history_version DESC LIMIT $2 OFFSET $3`, stackID, limit, offset)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (HistoryEntry, error) { return scanHistory(row) })
}

// LatestHistory returns the newest entry of the stack's history; ErrNotFound when it has none.
func (c Conn) LatestHistory(ctx context.Context, stackID int64) (HistoryEntry, error) {
	h, err := scanHistory(c.q.QueryRow(ctx, `SELECT `+historyColumns+` FROM svc_updates
WHERE stack_id = $1 AND history_version IS NOT NULL ORDER BY history_version DESC LIMIT 1`, stackID))
	if errors.Is(err, pgx.ErrNoRows) {
		return h, ErrNotFound
	}
	return h, err
}

// LastHistoryVersion returns the stack's last history version (0: none).
func (c Conn) LastHistoryVersion(ctx context.Context, stackID int64) (int64, error) {
	var last int64
	err := c.q.QueryRow(ctx, `SELECT history_version FROM svc_stacks WHERE id = $1`, stackID).Scan(&last)
	return last, err
}

// CheckpointOfHistory returns the checkpoint version the stack had at the end of history version n: the
// last written by the last update up to n that wrote one (0: none did).
func (c Conn) CheckpointOfHistory(ctx context.Context, stackID, n int64) (int64, error) {
	var v int64
	err := c.q.QueryRow(ctx, `SELECT (SELECT max(c.version) FROM svc_checkpoints c WHERE c.update_id = u.id)
FROM svc_updates u
WHERE u.stack_id = $1 AND u.history_version <= $2 AND EXISTS (SELECT 1 FROM svc_checkpoints c WHERE c.update_id = u.id)
ORDER BY u.history_version DESC LIMIT 1`, stackID, n).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return v, err
}
