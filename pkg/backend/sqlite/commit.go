package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
	sqlite3 "modernc.org/sqlite/lib"
)

// maxBatch bounds how many Commits share one transaction.
const maxBatch = 64

// errClosed is returned by methods called after Close.
var errClosed = errors.New("state database is closed")

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
		if errors.Is(req.err, errClosed) || errors.Is(req.err, context.Canceled) || errors.Is(req.err, context.DeadlineExceeded) {
			return 0, fmt.Errorf("commit to stack %q: %w", stack, req.err)
		}
		return 0, dbError(b.path, fmt.Sprintf("commit to stack %q", stack), req.err)
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

// encodedChange is a change with its row values encoded before any transaction starts.
type encodedChange struct {
	kind      state.ChangeKind
	logicalID string
	// data is the resource JSON (PutResource) or the outputs JSON (PutStack).
	data, deps string
	status     string
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
	if err := b.writeTx(live); err == nil || len(live) == 1 {
		for _, r := range live {
			r.err = err
		}
		return
	}
	for _, r := range live {
		r.err = b.writeTx([]*commitRequest{r})
	}
}

// writeTx writes the requests in one transaction and sets their versions. The transaction is not tied
// to any request's context: once begun, it completes (it waits at most BusyTimeout for the write lock).
func (b *Backend) writeTx(reqs []*commitRequest) error {
	ctx := context.Background()
	err := b.wr.inTx(ctx, func(*sql.Conn) error {
		// Stamped under the write lock, so that times follow versions even across processes.
		now := nanos(b.now())
		for _, r := range reqs {
			var err error
			if r.version, err = b.wr.stmts.write(ctx, r, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		for _, r := range reqs {
			r.version = 0
		}
	}
	return err
}

// write applies one request inside the caller's transaction and returns the stack's new version.
func (s *statements) write(ctx context.Context, r *commitRequest, now int64) (version int64, err error) {
	if err := s.bumpVersion.QueryRowContext(ctx, r.stack, now).Scan(&version); err != nil {
		return 0, fmt.Errorf("increment version: %w", err)
	}
	for _, c := range r.changes {
		switch c.kind {
		case state.PutResource:
			_, err = s.putResource.ExecContext(ctx, r.stack, c.logicalID, c.data)
		case state.DeleteResource:
			_, err = s.deleteResource.ExecContext(ctx, r.stack, c.logicalID)
		case state.PutStack:
			_, err = s.putStack.ExecContext(ctx, r.stack, c.status, c.data, c.deps)
		}
		if err != nil {
			return 0, fmt.Errorf("%s %q: %w", c.kind, c.logicalID, err)
		}
	}
	if _, err := s.insertJournal.ExecContext(ctx, r.stack, version, r.deploymentID, r.journal, now); err != nil {
		return 0, fmt.Errorf("append journal version %d: %w", version, err)
	}
	for _, e := range r.events {
		if e.Seq == 0 {
			_, err = s.appendEvent.ExecContext(ctx,
				e.DeploymentID, nanos(e.Time), e.Stack, e.LogicalID, e.Type, e.Status, e.Reason)
		} else {
			_, err = s.insertEvent.ExecContext(ctx,
				e.DeploymentID, e.Seq, nanos(e.Time), e.Stack, e.LogicalID, e.Type, e.Status, e.Reason)
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

// encodeChanges encodes each change's row values, and the journal entry of all of them: the JSON of
// changes as a []state.Change. The JSON of a resource is encoded once and used for both.
func encodeChanges(changes []state.Change) ([]encodedChange, string, error) {
	enc := make([]encodedChange, len(changes))
	var journal strings.Builder
	journal.WriteByte('[')
	for i, c := range changes {
		if i > 0 {
			journal.WriteByte(',')
		}
		e := encodedChange{kind: c.Kind, logicalID: c.LogicalID, status: c.Status}
		var plain bool // the journal entry can be built around the resource's JSON
		switch c.Kind {
		case state.PutResource:
			data, err := json.Marshal(c.Resource)
			if err != nil {
				return nil, "", fmt.Errorf("change %d: encode resource %q: %w", i, c.Resource.LogicalID, err)
			}
			e.logicalID, e.data = c.Resource.LogicalID, string(data)
			plain = c.LogicalID == "" && c.Status == "" && len(c.Outputs) == 0 && len(c.Dependencies) == 0
			if plain {
				// What json.Marshal(c) returns when only Kind and Resource are set.
				journal.WriteString(`{"kind":"put","resource":`)
				journal.WriteString(e.data)
				journal.WriteByte('}')
			}
		case state.PutStack:
			outputs := c.Outputs
			if outputs == nil {
				outputs = resource.Properties{}
			}
			data, err := json.Marshal(outputs)
			if err != nil {
				return nil, "", fmt.Errorf("change %d: encode stack outputs: %w", i, err)
			}
			e.data = string(data)
			if e.deps, err = encodeDependencies(c.Dependencies); err != nil {
				return nil, "", fmt.Errorf("change %d: encode stack dependencies: %w", i, err)
			}
		}
		if !plain {
			data, err := json.Marshal(c)
			if err != nil {
				return nil, "", fmt.Errorf("change %d: encode: %w", i, err)
			}
			journal.Write(data)
		}
		enc[i] = e
	}
	journal.WriteByte(']')
	return enc, journal.String(), nil
}
