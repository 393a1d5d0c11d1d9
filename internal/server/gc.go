package server

import (
	"context"
	"time"

	"github.com/cdkx-dev/cdkx/internal/server/storage"
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

// Collect cancels, in one statement, the running updates whose lease expired more than the lease grace
// (Options.LeaseGrace) ago and the updates not started for NotStartedTimeout, which unlocks their
// stacks; it returns how many it cancelled. (A create on the stack does not wait for it: it takes over an
// expired lease at once, and a not-started update after NotStartedTakeover; updates.go.) It also deletes the idempotency keys older than
// IdempotencyTTL.
func (s *Server) Collect(ctx context.Context) (int64, error) {
	now := s.now()
	return s.db.Collect(ctx, now, now.Add(-s.grace), now.Add(-NotStartedTimeout), now.Add(-IdempotencyTTL))
}

// RunCollector collects at once and then every interval (GCInterval when 0) until ctx is done. Each
// cycle takes pg_try_advisory_lock on one connection pinned across cycles, so that of several replicas
// only one collects per cycle; the others skip it. A connection that fails (PostgreSQL restarted) is
// dropped and a new one taken on the next cycle.
func (s *Server) RunCollector(ctx context.Context, interval time.Duration) error {
	if interval <= 0 {
		interval = GCInterval
	}
	var conn *storage.Pinned
	defer func() {
		if conn != nil {
			conn.Release()
		}
	}()
	drop := func() {
		conn.Drop(context.WithoutCancel(ctx)) // a closed connection is destroyed on release
		conn = nil
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if conn == nil {
			c, err := s.db.Pin(ctx)
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
func (s *Server) collectOnce(ctx context.Context, conn *storage.Pinned, drop func()) {
	got, err := conn.TryCollectorLock(ctx)
	if err != nil {
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
	if err := conn.UnlockCollector(context.WithoutCancel(ctx)); err != nil {
		s.log.ErrorContext(ctx, "collector: release the lock", "error", err)
		drop()
	}
}
