package server

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Garbage collection policy.
const (
	// GCInterval is how often the collector runs.
	GCInterval = 60 * time.Second
	// LeaseGrace is the default of Options.LeaseGrace: how long after its lease expired a running update
	// is cancelled.
	LeaseGrace = 30 * time.Second
	// NotStartedTimeout is how long an update may stay not started.
	NotStartedTimeout = time.Hour
)

// gcLockKey is the advisory lock that elects the one replica collecting in a cycle ("cdkxsvgc").
const gcLockKey int64 = 0x63646b7873766763

// Collect cancels, in one statement, the running updates whose lease expired more than the lease grace
// (Options.LeaseGrace) ago and the updates not started for NotStartedTimeout, which unlocks their
// stacks; it returns how many it cancelled. (A create on the stack does not wait for it: it takes over an
// expired lease at once, and a not-started update after NotStartedTakeover; updates.go.) It also deletes the idempotency keys older than
// IdempotencyTTL.
func (s *Server) Collect(ctx context.Context) (int64, error) {
	now := s.now()
	tag, err := s.pool.Exec(ctx, `UPDATE svc_updates SET status = 'cancelled', completed_at = $1, lease_expires_at = NULL
WHERE (status = 'running' AND lease_expires_at < $2) OR (status IN ('not started', 'requested') AND created_at < $3)`,
		now, now.Add(-s.grace), now.Add(-NotStartedTimeout))
	if err != nil {
		return 0, fmt.Errorf("collect expired updates: %w", err)
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM svc_idempotency WHERE created_at < $1`, now.Add(-IdempotencyTTL)); err != nil {
		return tag.RowsAffected(), fmt.Errorf("collect idempotency keys: %w", err)
	}
	return tag.RowsAffected(), nil
}

// RunCollector collects at once and then every interval (GCInterval when 0) until ctx is done. Each
// cycle takes pg_try_advisory_lock on one connection pinned across cycles, so that of several replicas
// only one collects per cycle; the others skip it. A connection that fails (PostgreSQL restarted) is
// dropped and a new one taken on the next cycle.
func (s *Server) RunCollector(ctx context.Context, interval time.Duration) error {
	if interval <= 0 {
		interval = GCInterval
	}
	var conn *pgxpool.Conn
	defer func() {
		if conn != nil {
			conn.Release()
		}
	}()
	drop := func() {
		_ = conn.Conn().Close(context.WithoutCancel(ctx)) // a closed connection is destroyed on release
		conn.Release()
		conn = nil
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if conn == nil {
			c, err := s.pool.Acquire(ctx)
			if err != nil && ctx.Err() == nil {
				s.log.ErrorContext(ctx, "collector: acquire a connection", "error", err)
			}
			conn = c
		}
		if conn != nil {
			s.collectOnce(ctx, conn, drop)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// collectOnce runs one cycle on conn, calling drop when the connection failed.
func (s *Server) collectOnce(ctx context.Context, conn *pgxpool.Conn, drop func()) {
	var got bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, gcLockKey).Scan(&got); err != nil {
		if ctx.Err() == nil {
			s.log.ErrorContext(ctx, "collector: take the lock", "error", err)
			drop()
		}
		return
	}
	if !got {
		return
	}
	n, err := s.Collect(ctx)
	if err != nil {
		s.log.ErrorContext(ctx, "collector", "error", err)
	} else if n > 0 {
		s.log.InfoContext(ctx, "collector cancelled expired updates", "count", n)
	}
	if _, err := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, gcLockKey); err != nil {
		s.log.ErrorContext(ctx, "collector: release the lock", "error", err)
		drop()
	}
}
