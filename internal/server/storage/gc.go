package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// gcLockKey is the advisory lock that elects the one replica collecting in a cycle ("cdkxsvgc").
const gcLockKey int64 = 0x63646b7873766763

// Collect cancels, at now, the running updates whose lease expired before leaseBefore and the updates
// not started since before notStartedBefore, in one statement, and returns how many it cancelled; then
// it deletes the idempotency keys created before keysBefore.
func (c Conn) Collect(ctx context.Context, now, leaseBefore, notStartedBefore, keysBefore time.Time) (int64, error) {
	tag, err := c.q.Exec(ctx, `UPDATE svc_updates SET status = 'cancelled', completed_at = $1, lease_expires_at = NULL
WHERE (status = 'running' AND lease_expires_at < $2) OR (status IN ('not started', 'requested') AND created_at < $3)`,
		now, leaseBefore, notStartedBefore)
	if err != nil {
		return 0, fmt.Errorf("collect expired updates: %w", err)
	}
	if _, err := c.q.Exec(ctx, `DELETE FROM svc_idempotency WHERE created_at < $1`, keysBefore); err != nil {
		return tag.RowsAffected(), fmt.Errorf("collect idempotency keys: %w", err)
	}
	return tag.RowsAffected(), nil
}

// Pinned is one connection of the pool held across calls, for the session-level lock that elects the
// replica that collects.
type Pinned struct {
	conn *pgxpool.Conn
}

// Pin takes a connection of the pool until Release or Drop.
func (s *Store) Pin(ctx context.Context) (*Pinned, error) {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return &Pinned{conn: c}, nil
}

// TryCollectorLock takes the collector's lock on the connection if no other session holds it.
func (p *Pinned) TryCollectorLock(ctx context.Context) (bool, error) {
	var got bool
	err := p.conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, gcLockKey).Scan(&got)
	return got, err
}

// UnlockCollector releases the collector's lock.
func (p *Pinned) UnlockCollector(ctx context.Context) error {
	_, err := p.conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, gcLockKey)
	return err
}

// Release gives the connection back to the pool.
func (p *Pinned) Release() { p.conn.Release() }

// Drop closes the connection (it failed) and gives it back to the pool, which destroys it.
func (p *Pinned) Drop(ctx context.Context) {
	_ = p.conn.Conn().Close(ctx)
	p.conn.Release()
}
