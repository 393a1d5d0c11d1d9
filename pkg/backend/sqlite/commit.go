package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/cdkx-dev/cdkx/pkg/backend/internal/sqlschema"

	"github.com/cdkx-dev/cdkx/pkg/backend/internal/commitqueue"
	"github.com/cdkx-dev/cdkx/pkg/state"
	sqlite3 "modernc.org/sqlite/lib"
)

// errClosed is returned by methods called after Close.
var errClosed = commitqueue.ErrClosed

// Commit applies changes to stack and stores events atomically, and returns the stack's new version.
//
// Its transaction increments the stacks row (creating it at version 1), upserts or deletes one resources
// row per change, updates the stacks row for PutStack, appends one journal row with the changes' JSON and
// inserts the events: bytes written are proportional to the changed resources, never to the stack.
//
// Group commit: Commits that arrive while another is being written queue up and are then written together
// in one transaction (each with its own version and journal row, in arrival order), and all of them
// return once it is committed. A failure in a group rolls it back and replays its Commits one per
// transaction, so that one Commit's failure never fails another.
//
// Events are copied, not modified. An event with Seq 0 is numbered after the highest Seq stored for its
// deployment (from 1); an explicit Seq is kept, and one already stored fails the commit. An empty
// DeploymentID or Stack on an event is set to deploymentID or stack; an event naming another deployment
// is an error. An invalid change (see state.Change.Validate) fails the commit before anything is written.
// A ctx cancelled before the commit is written fails it; once its transaction has begun it completes.
func (b *Backend) Commit(ctx context.Context, deploymentID, stack string, changes []state.Change, events []state.Event) (int64, error) {
	return b.queue.Commit(ctx, deploymentID, stack, changes, events, b.D.Error)
}

// writeTx writes the requests in one transaction and sets their versions. The transaction is not tied
// to any request's context: once begun, it completes (it waits at most BusyTimeout for the write lock).
func (b *Backend) writeTx(reqs []*commitqueue.Request) error {
	ctx := context.Background()
	err := b.wr.inTx(ctx, func(*sql.Conn) error {
		// Stamped under the write lock, so that times follow versions even across processes.
		now := sqlschema.Nanos(b.now())
		for _, r := range reqs {
			var err error
			if r.Version, err = b.wr.stmts.write(ctx, r, now); err != nil {
				return err
			}
		}
		return nil
	})
	return err
}

// write applies one request inside the caller's transaction and returns the stack's new version.
func (s *statements) write(ctx context.Context, r *commitqueue.Request, now int64) (version int64, err error) {
	if err := s.bumpVersion.QueryRowContext(ctx, r.Stack, now).Scan(&version); err != nil {
		return 0, fmt.Errorf("increment version: %w", err)
	}
	for _, c := range r.Changes {
		switch c.Kind {
		case state.PutResource:
			_, err = s.putResource.ExecContext(ctx, r.Stack, c.LogicalID, c.Data)
		case state.DeleteResource:
			_, err = s.deleteResource.ExecContext(ctx, r.Stack, c.LogicalID)
		case state.PutStack:
			_, err = s.putStack.ExecContext(ctx, r.Stack, c.Status, c.Data, c.Deps)
		}
		if err != nil {
			return 0, fmt.Errorf("%s %q: %w", c.Kind, c.LogicalID, err)
		}
	}
	if _, err := s.insertJournal.ExecContext(ctx, r.Stack, version, r.DeploymentID, r.Journal, now); err != nil {
		return 0, fmt.Errorf("append journal version %d: %w", version, err)
	}
	for _, e := range r.Events {
		if e.Seq == 0 {
			_, err = s.appendEvent.ExecContext(ctx,
				e.DeploymentID, sqlschema.Nanos(e.Time), e.Stack, e.LogicalID, e.Type, e.Status, e.Reason)
		} else {
			_, err = s.insertEvent.ExecContext(ctx,
				e.DeploymentID, e.Seq, sqlschema.Nanos(e.Time), e.Stack, e.LogicalID, e.Type, e.Status, e.Reason)
			if sqliteCode(err) == sqlite3.SQLITE_CONSTRAINT {
				return 0, fmt.Errorf("event seq %d of deployment %q is already stored: %w", e.Seq, e.DeploymentID, err)
			}
		}
		if err != nil {
			return 0, fmt.Errorf("insert event of deployment %q: %w", e.DeploymentID, err)
		}
	}
	return version, nil
}
