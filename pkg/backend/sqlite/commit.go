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
	err := b.wr.inTx(ctx, func(conn *sql.Conn) error {
		// Stamped under the write lock, so that times follow versions even across processes.
		tx := txWriter{ctx: ctx, w: &b.wr, conn: conn, now: sqlschema.Nanos(b.now())}
		for _, r := range reqs {
			var err error
			if r.Version, err = tx.write(r); err != nil {
				return err
			}
		}
		return nil
	})
	return err
}

// txWriter writes requests inside one transaction of the write connection. Consecutive PutResource
// changes and consecutive events numbered by the store go out as multi-row INSERTs (writer.many), a few
// statements per request instead of one per row: each statement costs the driver and SQLite's VM a few
// microseconds of its own, as much as the row it writes.
type txWriter struct {
	ctx  context.Context
	w    *writer
	conn *sql.Conn
	now  int64
	// seqs holds each deployment's highest event Seq, read once per transaction (nothing else writes
	// while it holds the write lock) and advanced by every event this transaction inserts; a
	// transaction seldom sees more than one deployment.
	seqs []deploymentSeq
	// args is the reused argument list of a multi-row statement.
	args []any
}

// deploymentSeq is a deployment's highest event Seq.
type deploymentSeq struct {
	id   string
	last int64
}

// seq returns the highest event Seq of deployment id that the transaction knows, nil before it read it.
func (t *txWriter) seq(id string) *int64 {
	for i := range t.seqs {
		if t.seqs[i].id == id {
			return &t.seqs[i].last
		}
	}
	return nil
}

// lastSeq returns the highest event Seq of deployment id, reading it the first time.
func (t *txWriter) lastSeq(id string) (*int64, error) {
	if last := t.seq(id); last != nil {
		return last, nil
	}
	var last int64
	if err := t.w.stmts.lastSeq.QueryRowContext(t.ctx, id).Scan(&last); err != nil {
		return nil, err
	}
	t.seqs = append(t.seqs, deploymentSeq{id, last})
	return &t.seqs[len(t.seqs)-1].last, nil
}

// write applies one request and returns the stack's new version.
func (t *txWriter) write(r *commitqueue.Request) (version int64, err error) {
	s := &t.w.stmts
	if err := s.bumpVersion.QueryRowContext(t.ctx, r.Stack, t.now).Scan(&version); err != nil {
		return 0, fmt.Errorf("increment version: %w", err)
	}
	for i := 0; i < len(r.Changes); {
		c := r.Changes[i]
		switch c.Kind {
		case state.PutResource:
			j := i + 1
			for j < len(r.Changes) && r.Changes[j].Kind == state.PutResource {
				j++
			}
			if err := t.putResources(r.Stack, r.Changes[i:j]); err != nil {
				return 0, err
			}
			i = j
			continue
		case state.DeleteResource:
			_, err = s.deleteResource.ExecContext(t.ctx, r.Stack, c.LogicalID)
		case state.PutStack:
			_, err = s.putStack.ExecContext(t.ctx, r.Stack, c.Status, c.Data, c.Deps)
		}
		if err != nil {
			return 0, fmt.Errorf("%s %q: %w", c.Kind, c.LogicalID, err)
		}
		i++
	}
	if _, err := s.insertJournal.ExecContext(t.ctx, r.Stack, version, r.DeploymentID, r.Journal, t.now); err != nil {
		return 0, fmt.Errorf("append journal version %d: %w", version, err)
	}
	if err := t.insertEvents(r.Events); err != nil {
		return 0, err
	}
	return version, nil
}

// putResources upserts the resources rows of changes, all PutResource, of stack.
func (t *txWriter) putResources(stack string, changes []commitqueue.Change) error {
	for len(changes) > 0 {
		stmt, n, err := t.w.many(t.ctx, t.conn, putResources, len(changes))
		if err != nil {
			return err
		}
		args := t.args[:0]
		for _, c := range changes[:n] {
			args = append(args, stack, c.LogicalID, c.Data)
		}
		t.args = args
		if _, err := stmt.ExecContext(t.ctx, args...); err != nil {
			if n == 1 {
				return fmt.Errorf("%s %q: %w", state.PutResource, changes[0].LogicalID, err)
			}
			return fmt.Errorf("%s %q … %q: %w", state.PutResource, changes[0].LogicalID, changes[n-1].LogicalID, err)
		}
		changes = changes[n:]
	}
	return nil
}

// insertEvents inserts events in order: those with Seq 0 numbered after their deployment's highest Seq,
// consecutive ones in multi-row statements; those with an explicit Seq one by one, failing on a Seq
// already stored.
func (t *txWriter) insertEvents(events []state.Event) error {
	for i := 0; i < len(events); {
		e := events[i]
		if e.Seq == 0 && t.seq(e.DeploymentID) == nil && (i+1 == len(events) || events[i+1].DeploymentID != e.DeploymentID) {
			// A lone event of a deployment not seen yet (a Commit of one step): numbered by the
			// statement itself, one statement instead of two. The Seq stays unknown: a later event of
			// the deployment in this transaction reads it (lastSeq), this one included.
			if _, err := t.w.stmts.appendEvent.ExecContext(t.ctx,
				e.DeploymentID, sqlschema.Nanos(e.Time), e.Stack, e.LogicalID, e.Type, e.Status, e.Reason); err != nil {
				return fmt.Errorf("insert event of deployment %q: %w", e.DeploymentID, err)
			}
			i++
			continue
		}
		last, err := t.lastSeq(e.DeploymentID)
		if err != nil {
			return fmt.Errorf("insert event of deployment %q: %w", e.DeploymentID, err)
		}
		if e.Seq != 0 {
			_, err := t.w.stmts.insertEvent.ExecContext(t.ctx,
				e.DeploymentID, e.Seq, sqlschema.Nanos(e.Time), e.Stack, e.LogicalID, e.Type, e.Status, e.Reason)
			if sqliteCode(err) == sqlite3.SQLITE_CONSTRAINT {
				return fmt.Errorf("event seq %d of deployment %q is already stored: %w", e.Seq, e.DeploymentID, err)
			}
			if err != nil {
				return fmt.Errorf("insert event of deployment %q: %w", e.DeploymentID, err)
			}
			*last = max(*last, e.Seq)
			i++
			continue
		}
		// The run of events of this deployment numbered by the store.
		j := i + 1
		for j < len(events) && events[j].Seq == 0 && events[j].DeploymentID == e.DeploymentID {
			j++
		}
		stmt, n, err := t.w.many(t.ctx, t.conn, insertEvents, j-i)
		if err != nil {
			return err
		}
		args := t.args[:0]
		for _, e := range events[i : i+n] {
			*last++
			args = append(args, e.DeploymentID, *last, sqlschema.Nanos(e.Time), e.Stack, e.LogicalID, e.Type, e.Status, e.Reason)
		}
		t.args = args
		if _, err := stmt.ExecContext(t.ctx, args...); err != nil {
			return fmt.Errorf("insert event of deployment %q: %w", e.DeploymentID, err)
		}
		i += n
	}
	return nil
}
