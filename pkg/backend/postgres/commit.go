package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

// maxBatch bounds how many Commits share one transaction.
const maxBatch = 64

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
	if stack == "" {
		return 0, errors.New("commit: empty stack name")
	}
	if err := state.ValidateChanges(changes); err != nil {
		return 0, fmt.Errorf("commit to stack %q: %w", stack, err)
	}
	req := &commitRequest{ctx: ctx, deploymentID: deploymentID, stack: stack}
	var err error
	if req.changes, req.journal, err = encodeChanges(changes); err != nil {
		return 0, fmt.Errorf("commit to stack %q: %w", stack, err)
	}
	req.events = make([]state.Event, len(events))
	for i, e := range events {
		if e.DeploymentID == "" {
			e.DeploymentID = deploymentID
		} else if e.DeploymentID != deploymentID {
			return 0, fmt.Errorf("commit to stack %q: event %d belongs to deployment %q, not %q", stack, i, e.DeploymentID, deploymentID)
		}
		if e.Stack == "" {
			e.Stack = stack
		}
		if e.Seq < 0 {
			return 0, fmt.Errorf("commit to stack %q: event %d has negative seq %d", stack, i, e.Seq)
		}
		req.events[i] = e
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("commit to stack %q: %w", stack, err)
	}

	b.submit(req)
	if req.err != nil {
		return 0, dbError(b.where, fmt.Sprintf("commit to stack %q", stack), req.err)
	}
	return req.version, nil
}

// commitRequest is one Commit, encoded, on its way through the group-commit queue.
type commitRequest struct {
	ctx          context.Context
	deploymentID string
	stack        string
	changes      []encodedChange
	journal      string
	events       []state.Event

	// version and err are the result, set by the leader that wrote the request.
	version int64
	err     error
	// wake receives true when the request's goroutine must lead the next group, false when the request
	// is done.
	wake chan bool
}

// committer is the group-commit queue. At most one goroutine, the leader, writes at a time; it writes its
// own request together with those queued, then hands leadership to the oldest queued request, if any.
type committer struct {
	// mu guards all fields.
	mu      sync.Mutex
	leading bool
	closed  bool
	queue   []*commitRequest
	// idle is closed and replaced when a leader finds the queue empty; Close waits on it.
	idle chan struct{}
}

// close refuses new requests and waits until the queued ones are written.
func (c *committer) close() {
	c.mu.Lock()
	c.closed = true
	if !c.leading {
		c.mu.Unlock()
		return
	}
	idle := c.idle
	c.mu.Unlock()
	<-idle
}

// submit writes req, alone or in a group, and returns when req.version or req.err is set.
func (b *Backend) submit(req *commitRequest) {
	c := &b.committer
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		req.err = errClosed
		return
	}
	if c.leading {
		req.wake = make(chan bool, 1)
		c.queue = append(c.queue, req)
		c.mu.Unlock()
		if lead := <-req.wake; !lead {
			return
		}
	} else {
		c.leading = true
		c.mu.Unlock()
	}
	b.lead(req)
}

// lead writes first and the queued requests (at most maxBatch in all), wakes them, and passes leadership
// on to the oldest request still queued. A panic while writing fails the group's requests and still
// passes leadership on before it propagates, so that a caller recovering from it leaves no Commit stuck.
func (b *Backend) lead(first *commitRequest) {
	c := &b.committer
	c.mu.Lock()
	n := min(len(c.queue), maxBatch-1)
	batch := make([]*commitRequest, 0, n+1)
	batch = append(batch, first)
	batch = append(batch, c.queue[:n]...)
	c.queue = c.queue[n:]
	c.mu.Unlock()

	defer func() {
		if p := recover(); p != nil {
			for _, r := range batch {
				r.version, r.err = 0, fmt.Errorf("commit panicked: %v", p)
			}
			b.handOff(batch)
			panic(p)
		}
	}()
	b.writeBatch(batch)
	b.handOff(batch)
}

// handOff wakes the requests of a written group, except the leader's own, and passes leadership on to the
// oldest queued request, or releases it.
func (b *Backend) handOff(batch []*commitRequest) {
	for _, r := range batch[1:] {
		r.wake <- false
	}
	c := &b.committer
	c.mu.Lock()
	if len(c.queue) == 0 {
		c.leading = false
		close(c.idle)
		c.idle = make(chan struct{})
		c.mu.Unlock()
		return
	}
	next := c.queue[0]
	c.queue = c.queue[1:]
	c.mu.Unlock()
	next.wake <- true
}

// writeBatch writes the requests in one transaction, or, when that fails and there are several, each in
// a transaction of its own.
func (b *Backend) writeBatch(batch []*commitRequest) {
	live := batch[:0:0]
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.err = err
			continue
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	// A group is replayed one Commit at a time only when it certainly was rolled back: after a lost
	// connection or a timeout it may have been committed, and replaying it would apply it twice.
	if err := b.writeTx(live); err == nil || len(live) == 1 || !rolledBack(err) {
		for _, r := range live {
			r.err = err
		}
		return
	}
	for _, r := range live {
		r.err = b.writeTx([]*commitRequest{r})
	}
}

// writeTx writes the requests in one transaction and sets their versions, trying again (with jittered
// exponential backoff) when the transaction was aborted to resolve a conflict or could not be sent. The
// transaction is not tied to any request's context: once sent, it completes, within CommitTimeout.
func (b *Backend) writeTx(reqs []*commitRequest) error {
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
func (b *Backend) sendTx(ctx context.Context, reqs []*commitRequest) error {
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
	slices.SortStableFunc(reqs, func(a, b *commitRequest) int { return strings.Compare(a.stack, b.stack) })
	versions := make([]int64, len(reqs))
	var deployments []string
	for i, r := range reqs {
		queue(step{version: &versions[i], what: wrapf("increment version of stack %q", r.stack)},
			sqlBumpVersion, r.stack, r.deploymentID, r.journal)
		if len(r.events) > 0 {
			deployments = append(deployments, r.deploymentID)
		}
	}
	slices.Sort(deployments)
	for _, d := range slices.Compact(deployments) {
		queue(step{what: wrapf("lock events of deployment %q", d)}, sqlLockEvents, eventLockClass, d)
	}
	for _, r := range reqs {
		for _, c := range r.changes {
			what := wrapf("%s %q", c.kind, c.logicalID)
			switch c.kind {
			case state.PutResource:
				queue(step{what: what}, sqlPutResource, r.stack, c.logicalID, c.data)
			case state.DeleteResource:
				queue(step{what: what}, sqlDeleteResource, r.stack, c.logicalID)
			case state.PutStack:
				queue(step{what: what}, sqlPutStack, r.stack, c.status, c.data, c.deps)
			}
		}
		for _, e := range r.events {
			if e.Seq == 0 {
				queue(step{what: wrapf("insert event of deployment %q", e.DeploymentID)}, sqlAppendEvent,
					e.DeploymentID, nanos(e.Time), e.Stack, e.LogicalID, e.Type, e.Status, e.Reason)
				continue
			}
			seq, dep := e.Seq, e.DeploymentID
			queue(step{what: func(err error) error {
				if pgCode(err) == codeUniqueViolation {
					return fmt.Errorf("event seq %d of deployment %q is already stored: %w", seq, dep, err)
				}
				return fmt.Errorf("insert event of deployment %q: %w", dep, err)
			}}, sqlInsertEvent, e.DeploymentID, e.Seq, nanos(e.Time), e.Stack, e.LogicalID, e.Type, e.Status, e.Reason)
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
		r.version = versions[i]
	}
	return nil
}

// wrapf returns a function that prefixes an error with the formatted description.
func wrapf(format string, args ...any) func(error) error {
	return func(err error) error {
		return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), err)
	}
}
