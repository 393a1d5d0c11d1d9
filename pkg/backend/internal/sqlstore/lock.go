package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/backend/internal/sqlschema"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// sqlLock inserts the lock row, or refreshes it when the same ID holds it. When another ID holds it, no
// row is affected (on PostgreSQL, ON CONFLICT DO UPDATE still locks the conflicting row until the
// transaction ends, so the holder read next is the one that blocked the insert).
const sqlLock = `INSERT INTO locks (stack, id, operation, username, host, pid, started_at, heartbeat_at, machine)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (stack) DO UPDATE SET operation = excluded.operation, username = excluded.username,
  host = excluded.host, pid = excluded.pid, heartbeat_at = excluded.heartbeat_at, machine = excluded.machine
WHERE locks.id = excluded.id`

// Lock takes info.Stack's lock for info.ID in one transaction: with no lock row it inserts one; with a row
// of the same ID it refreshes the holder's operation, user, host, PID and heartbeat (keeping StartedAt);
// with another holder's row it returns *state.LockedError carrying the stored LockInfo. It never waits
// (beyond another Lock's transaction on the same stack) and never takes over a lock. A zero StartedAt is
// set to now, a zero HeartbeatAt to StartedAt. The lock is a row: it outlives the process that took it,
// until Unlock.
func (s *Store) Lock(ctx context.Context, info state.LockInfo) error {
	if info.Stack == "" || info.ID == "" {
		return fmt.Errorf("lock stack %q: empty stack name or lock id", info.Stack)
	}
	op := fmt.Sprintf("lock stack %q", info.Stack)
	if err := s.D.Closed(op); err != nil {
		return err
	}
	if info.StartedAt.IsZero() {
		info.StartedAt = s.Now()
	}
	if info.HeartbeatAt.IsZero() {
		info.HeartbeatAt = info.StartedAt
	}
	err := s.D.Tx(ctx, func(q Querier) error {
		n, err := q.Exec(ctx, sqlLock, info.Stack, info.ID, info.Operation, info.User, info.Host, info.PID,
			sqlschema.Nanos(info.StartedAt), sqlschema.Nanos(info.HeartbeatAt), info.Machine)
		if err != nil || n == 1 {
			return err
		}
		return s.lockedBy(ctx, q, info.Stack)
	})
	var le *state.LockedError
	if err != nil && !errors.As(err, &le) {
		return s.D.Error(op, err)
	}
	return err
}

// lockedBy returns the *state.LockedError naming stack's holder, or a state.ErrNotFound error when the
// stack is not locked.
func (s *Store) lockedBy(ctx context.Context, q Querier, stack string) error {
	h, err := sqlschema.ScanLock(q.QueryRow(ctx, `SELECT `+sqlschema.LockColumns+` FROM locks WHERE stack = $1`, stack), stack)
	if s.D.NoRows(err) {
		return fmt.Errorf("stack %q is not locked: %w", stack, state.ErrNotFound)
	}
	if err != nil {
		return err
	}
	return &state.LockedError{Holder: h}
}

// Unlock deletes stack's lock row if id holds it (a compare-and-delete); otherwise it does nothing and
// returns nil.
func (s *Store) Unlock(ctx context.Context, stack, id string) error {
	op := fmt.Sprintf("unlock stack %q", stack)
	if err := s.D.Closed(op); err != nil {
		return err
	}
	err := s.D.Tx(ctx, func(q Querier) error {
		_, err := q.Exec(ctx, `DELETE FROM locks WHERE stack = $1 AND id = $2`, stack, id)
		return err
	})
	if err != nil {
		return s.D.Error(op, err)
	}
	return nil
}

// Heartbeat sets the heartbeat time of stack's lock to at if id holds it. When another holder has the
// lock it returns *state.LockedError naming that holder; when nobody does, an error wrapping
// state.ErrNotFound. Either way the caller has lost its lock.
func (s *Store) Heartbeat(ctx context.Context, stack, id string, at time.Time) error {
	op := fmt.Sprintf("heartbeat lock %s of stack %q", id, stack)
	if err := s.D.Closed(op); err != nil {
		return err
	}
	err := s.D.Tx(ctx, func(q Querier) error {
		n, err := q.Exec(ctx, `UPDATE locks SET heartbeat_at = $3 WHERE stack = $1 AND id = $2`, stack, id, sqlschema.Nanos(at))
		if err != nil || n == 1 {
			return err
		}
		return s.lockedBy(ctx, q, stack)
	})
	var le *state.LockedError
	switch {
	case err == nil, errors.As(err, &le):
		return err
	case errors.Is(err, state.ErrNotFound):
		return fmt.Errorf("heartbeat lock %s: %w", id, err)
	}
	return s.D.Error(op, err)
}

// Locks returns every held lock, ordered by stack (bytewise).
func (s *Store) Locks(ctx context.Context) ([]state.LockInfo, error) {
	const op = "list locks"
	if err := s.D.Closed(op); err != nil {
		return nil, err
	}
	rows, err := s.D.Read().Query(ctx, `SELECT stack, `+sqlschema.LockColumns+` FROM locks`)
	if err != nil {
		return nil, s.D.Error(op, err)
	}
	defer rows.Close()
	out, err := sqlschema.ScanLocks(rows)
	if err != nil {
		return nil, s.D.Error(op, err)
	}
	return sortedLocks(out), nil
}
