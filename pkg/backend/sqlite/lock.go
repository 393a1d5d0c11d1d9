package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/backend/sqlschema"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

// Lock takes info.Stack's lock for info.ID in one transaction: with no lock row it inserts one; with a row
// of the same ID it refreshes the holder's operation, user, host, PID and heartbeat (keeping StartedAt);
// with another holder's row it returns *state.LockedError carrying the stored LockInfo. It never waits and
// never takes over a lock. A zero StartedAt is set to now, a zero HeartbeatAt to StartedAt.
func (b *Backend) Lock(ctx context.Context, info state.LockInfo) error {
	if info.Stack == "" || info.ID == "" {
		return fmt.Errorf("lock stack %q: empty stack name or lock id", info.Stack)
	}
	if info.StartedAt.IsZero() {
		info.StartedAt = b.now()
	}
	if info.HeartbeatAt.IsZero() {
		info.HeartbeatAt = info.StartedAt
	}
	op := fmt.Sprintf("lock stack %q", info.Stack)
	err := b.wr.inTx(ctx, func(conn *sql.Conn) error {
		res, err := conn.ExecContext(ctx, `INSERT INTO locks
(stack, id, operation, username, host, pid, started_at, heartbeat_at, machine)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (stack) DO UPDATE SET operation = excluded.operation, username = excluded.username,
  host = excluded.host, pid = excluded.pid, heartbeat_at = excluded.heartbeat_at, machine = excluded.machine
WHERE locks.id = excluded.id`,
			info.Stack, info.ID, info.Operation, info.User, info.Host, info.PID,
			sqlschema.Nanos(info.StartedAt), sqlschema.Nanos(info.HeartbeatAt), info.Machine)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		return lockedBy(ctx, conn, info.Stack)
	})
	var le *state.LockedError
	if err != nil && !errors.As(err, &le) {
		return dbError(b.path, op, err)
	}
	return err
}

// lockedBy returns the *state.LockedError naming stack's holder, or a state.ErrNotFound error when the
// stack is not locked.
func lockedBy(ctx context.Context, conn *sql.Conn, stack string) error {
	h, err := sqlschema.ScanLock(conn.QueryRowContext(ctx, `SELECT `+sqlschema.LockColumns+` FROM locks WHERE stack = $1`, stack), stack)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("stack %q is not locked: %w", stack, state.ErrNotFound)
	}
	if err != nil {
		return err
	}
	return &state.LockedError{Holder: h}
}

// Unlock deletes stack's lock row if id holds it; otherwise it does nothing and returns nil.
func (b *Backend) Unlock(ctx context.Context, stack, id string) error {
	err := b.wr.do(func(conn *sql.Conn) error {
		_, err := conn.ExecContext(ctx, `DELETE FROM locks WHERE stack = $1 AND id = $2`, stack, id)
		return err
	})
	if err != nil {
		return dbError(b.path, fmt.Sprintf("unlock stack %q", stack), err)
	}
	return nil
}

// Heartbeat sets the heartbeat time of stack's lock to at if id holds it. When another holder has the
// lock it returns *state.LockedError naming that holder; when nobody does, an error wrapping
// state.ErrNotFound. Either way the caller has lost its lock.
func (b *Backend) Heartbeat(ctx context.Context, stack, id string, at time.Time) error {
	err := b.wr.inTx(ctx, func(conn *sql.Conn) error {
		res, err := conn.ExecContext(ctx, `UPDATE locks SET heartbeat_at = $3 WHERE stack = $1 AND id = $2`,
			stack, id, sqlschema.Nanos(at))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		return lockedBy(ctx, conn, stack)
	})
	var le *state.LockedError
	if err != nil && !errors.As(err, &le) && !errors.Is(err, state.ErrNotFound) {
		return dbError(b.path, fmt.Sprintf("heartbeat lock %s of stack %q", id, stack), err)
	}
	if errors.Is(err, state.ErrNotFound) {
		return fmt.Errorf("heartbeat lock %s: %w", id, err)
	}
	return err
}

// Locks returns every held lock, ordered by stack.
func (b *Backend) Locks(ctx context.Context) ([]state.LockInfo, error) {
	rows, err := b.r.QueryContext(ctx, `SELECT stack, `+sqlschema.LockColumns+` FROM locks ORDER BY stack`)
	if err != nil {
		return nil, dbError(b.path, "list locks", err)
	}
	defer rows.Close()
	out, err := sqlschema.ScanLocks(rows)
	if err != nil {
		return nil, dbError(b.path, "list locks", err)
	}
	return out, nil
}

// Abilities declares none beyond the contract: locks are rows that stay until their holder unlocks them
// (or a client takes over a stale one), and nobody cancels another's run.
func (b *Backend) Abilities() state.Abilities { return state.Abilities{} }
