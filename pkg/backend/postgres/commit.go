package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/backend/internal/sqlschema"

	"github.com/cdkx-dev/cdkx/pkg/backend/internal/commitqueue"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

// maxAttempts bounds how often a transaction that PostgreSQL aborted to resolve a conflict (deadlock,
// serialization failure), or that could not be sent at all, is tried.
const maxAttempts = 5

// eventLockClass is the first key of the transaction-level advisory locks that serialize the numbering
// of a deployment's events ("CDKX" in ASCII); the second is a hash of the schema and deployment ID.
const eventLockClass int32 = 0x43444b58

// SQL of Commit's statements. pgx prepares each once per connection.
const (
	// sqlNowNanos is the server's clock, in Unix nanoseconds (microsecond precision).
	sqlNowNanos = `(extract(epoch FROM clock_timestamp()) * 1000000)::bigint * 1000`
	// sqlBumpVersion creates the stack's row at version 1 or increments its version, appends the journal
	// row of that version, and returns the version. It takes the stack row's lock, which serializes
	// Commits to one stack until their transaction ends; the time is read after the lock is granted and
	// never goes back, so times follow versions.
	sqlBumpVersion = `WITH bumped AS (
  INSERT INTO stacks (name, version, updated_at) VALUES ($1, 1, ` + sqlNowNanos + `)
  ON CONFLICT (name) DO UPDATE SET version = stacks.version + 1,
    updated_at = GREATEST(` + sqlNowNanos + `, stacks.updated_at)
  RETURNING name, version, updated_at)
INSERT INTO journal (stack, version, deployment_id, data, created_at)
SELECT name, version, $2, $3, updated_at FROM bumped
RETURNING version`
	sqlPutResource = `INSERT INTO resources (stack, logical_id, data) VALUES ($1, $2, $3)
ON CONFLICT (stack, logical_id) DO UPDATE SET data = excluded.data`
	sqlDeleteResource = `DELETE FROM resources WHERE stack = $1 AND logical_id = $2`
	sqlPutStack       = `UPDATE stacks SET status = $2, outputs = $3, dependencies = $4 WHERE name = $1`
	// sqlLockEvents serializes, until the transaction ends, the transactions that number events of one
	// deployment (whatever their stack), so that two never compute the same next Seq.
	sqlLockEvents = `SELECT pg_advisory_xact_lock($1::integer, hashtext(coalesce(current_schema(), '') || '/' || $2::text))`
	// sqlInsertEvent stores an event with the Seq the caller chose.
	sqlInsertEvent = `INSERT INTO events (deployment_id, seq, time, stack, logical_id, type, status, reason)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`
	// sqlAppendEvent stores an event numbered after the deployment's highest stored Seq (from 1).
	sqlAppendEvent = `INSERT INTO events (deployment_id, seq, time, stack, logical_id, type, status, reason)
SELECT $1::text, COALESCE(MAX(seq), 0) + 1, $2::bigint, $3::text, $4::text, $5::text, $6::text, $7::text
FROM events WHERE deployment_id = $1::text`
)

// Commit applies changes to stack and stores events atomically, and returns the stack's new version.
//
// Its transaction increments the stacks row (creating it at version 1), appends one journal row with the
// changes' JSON, upserts or deletes one resources row per change, updates the stacks row for PutStack and
// inserts the events: bytes written are proportional to the changed resources, never to the stack. The
// stack row's lock serializes Commits to one stack, from this process or any other, so versions are
// contiguous and no update is lost.
//
// Group commit: Commits that arrive while another is being written queue up and are then written together
// in one transaction (each with its own version and journal row, in arrival order), sent as one pipelined
// batch, and all of them return once it is committed. A failure in a group rolls it back and replays its
// Commits one per transaction, so that one Commit's failure never fails another. A transaction that
// PostgreSQL aborts to break a deadlock or a serialization conflict is retried with backoff, up to
// maxAttempts times.
//
// Events are copied, not modified. An event with Seq 0 is numbered after the highest Seq stored for its
// deployment (from 1); an explicit Seq is kept, and one already stored fails the commit. An empty
// DeploymentID or Stack on an event is set to deploymentID or stack; an event naming another deployment
// is an error. An invalid change (see state.Change.Validate) fails the commit before anything is written.
// A ctx cancelled before the commit is written fails it; once its transaction has been sent it completes
// (within CommitTimeout). When the connection is lost (or CommitTimeout passes) after the transaction was
// sent, Commit fails although PostgreSQL may have committed it, as with any database; state is consistent
// either way, and GetStack tells which.
func (b *Backend) Commit(ctx context.Context, deploymentID, stack string, changes []state.Change, events []state.Event) (int64, error) {
	return b.queue.Commit(ctx, deploymentID, stack, changes, events, b.D.Error)
}

// writeTx writes the requests in one transaction and sets their versions, trying again (with jittered
// exponential backoff) when the transaction was aborted to resolve a conflict or could not be sent. The
// transaction is not tied to any request's context: once sent, it completes, within CommitTimeout.
func (b *Backend) writeTx(reqs []*commitqueue.Request) error {
	ctx, cancel := context.WithTimeout(context.Background(), CommitTimeout)
	defer cancel()
	var err error
	for attempt := 1; ; attempt++ {
		if err = b.sendTx(ctx, reqs); err == nil || attempt == maxAttempts || !retryable(err) {
			break
		}
		backoff := time.Duration(5<<attempt)*time.Millisecond + rand.N(10*time.Millisecond)
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(backoff):
		}
	}
	return err
}

// retryable reports whether a failed transaction changed nothing and may succeed when tried again.
func retryable(err error) bool {
	switch pgCode(err) {
	case codeSerializationFailure, codeDeadlockDetected:
		return true
	}
	return pgconn.SafeToRetry(err)
}

// rolledBack reports whether a failed transaction certainly left nothing behind: the server refused one
// of its statements (which aborts it), or nothing was sent.
func rolledBack(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) || pgconn.SafeToRetry(err)
}

// step is one queued statement of a batch: what reading its result means. Results are only read: the
// batch is committed at its Sync whatever the client thinks of them, so every check that must fail the
// transaction is the server's (constraints).
type step struct {
	// version receives the stack's new version (sqlBumpVersion); nil for statements read with Exec.
	version *int64
	// what describes the statement in errors.
	what func(err error) error
}

// sendTx sends the requests as one pipelined batch on one connection. The batch runs as one implicit
// transaction (PostgreSQL commits it at the batch's Sync, or rolls all of it back at its first error), so
// the group costs one round trip and one WAL flush. The requests' versions are set only once it is
// committed.
func (b *Backend) sendTx(ctx context.Context, reqs []*commitqueue.Request) error {
	batch := &pgx.Batch{}
	var steps []step
	queue := func(s step, sql string, args ...any) {
		batch.Queue(sql, args...)
		steps = append(steps, s)
	}
	// Locks are taken in one order by every transaction, so that two groups (of two processes) never wait
	// for each other in a cycle: first the stack rows, by stack name (a stable sort keeps each stack's
	// Commits in arrival order), then the event locks, by deployment ID; only then the writes, which touch
	// nothing that another transaction could hold without holding one of those locks.
	reqs = slices.Clone(reqs)
	slices.SortStableFunc(reqs, func(a, b *commitqueue.Request) int { return strings.Compare(a.Stack, b.Stack) })
	versions := make([]int64, len(reqs))
	var deployments []string
	for i, r := range reqs {
		queue(step{version: &versions[i], what: wrapf("increment version of stack %q", r.Stack)},
			sqlBumpVersion, r.Stack, r.DeploymentID, r.Journal)
		if len(r.Events) > 0 {
			deployments = append(deployments, r.DeploymentID)
		}
	}
	slices.Sort(deployments)
	for _, d := range slices.Compact(deployments) {
		queue(step{what: wrapf("lock events of deployment %q", d)}, sqlLockEvents, eventLockClass, d)
	}
	for _, r := range reqs {
		for _, c := range r.Changes {
			what := wrapf("%s %q", c.Kind, c.LogicalID)
			switch c.Kind {
			case state.PutResource:
				queue(step{what: what}, sqlPutResource, r.Stack, c.LogicalID, c.Data)
			case state.DeleteResource:
				queue(step{what: what}, sqlDeleteResource, r.Stack, c.LogicalID)
			case state.PutStack:
				queue(step{what: what}, sqlPutStack, r.Stack, c.Status, c.Data, c.Deps)
			}
		}
		for _, e := range r.Events {
			if e.Seq == 0 {
				queue(step{what: wrapf("insert event of deployment %q", e.DeploymentID)}, sqlAppendEvent,
					e.DeploymentID, sqlschema.Nanos(e.Time), e.Stack, e.LogicalID, e.Type, e.Status, e.Reason)
				continue
			}
			seq, dep := e.Seq, e.DeploymentID
			queue(step{what: func(err error) error {
				if pgCode(err) == codeUniqueViolation {
					return fmt.Errorf("event seq %d of deployment %q is already stored: %w", seq, dep, err)
				}
				return fmt.Errorf("insert event of deployment %q: %w", dep, err)
			}}, sqlInsertEvent, e.DeploymentID, e.Seq, sqlschema.Nanos(e.Time), e.Stack, e.LogicalID, e.Type, e.Status, e.Reason)
		}
	}

	conn, err := b.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	br := conn.SendBatch(ctx, batch)
	for _, s := range steps {
		if s.version != nil {
			err = br.QueryRow().Scan(s.version)
		} else {
			_, err = br.Exec()
		}
		if err != nil {
			_ = br.Close()
			return s.what(err)
		}
	}
	// Close reads the result of the Sync, where PostgreSQL commits.
	if err := br.Close(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	for i, r := range reqs {
		r.Version = versions[i]
	}
	return nil
}

// wrapf returns a function that prefixes an error with the formatted description.
func wrapf(format string, args ...any) func(error) error {
	return func(err error) error {
		return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), err)
	}
}
