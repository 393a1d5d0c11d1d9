// Package commitqueue groups concurrent state commits into shared transactions (group commit), for the
// SQL state backends.
//
// A backend prepares each Commit with Prepare (validation and encoding, before any transaction) and hands
// it to its Queue, which writes it through the backend's Write function: alone, or together with the
// Commits that queued up while the previous transaction was being written (pkg/groupcommit: the caller
// that leads writes, at most MaxBatch requests at a time). What this package adds: the encoding, a
// failed group replayed one request per transaction, requests whose context ended skipped.
package commitqueue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/cdkx-dev/cdkx/pkg/groupcommit"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// ErrClosed is the error of a Request submitted after Close.
var ErrClosed = errors.New("state database is closed")

// DefaultMaxBatch bounds how many Commits share one transaction when Queue.MaxBatch is 0.
const DefaultMaxBatch = 64

// Request is one Commit, encoded, on its way through the queue.
type Request struct {
	Ctx          context.Context
	DeploymentID string
	Stack        string
	Changes      []Change
	// Journal is the JSON of the []state.Change of the Commit, as journal rows keep it.
	Journal string
	// Events are normalised copies: DeploymentID and Stack set, Seq 0 meaning "next".
	Events []state.Event

	// Version and Err are the result, set by the writer of the request.
	Version int64
	Err     error
}

// Change is a change with its row values encoded before any transaction starts.
type Change struct {
	Kind      state.ChangeKind
	LogicalID string
	// Data is the resource JSON (PutResource) or the outputs JSON (PutStack); Deps the dependencies JSON
	// (PutStack).
	Data, Deps string
	Status     string
}

// Prepare validates and encodes one Commit: an empty stack, an invalid change (state.Change.Validate), an
// event of another deployment or with a negative Seq, or a ctx already cancelled is an error, and nothing
// is queued. Events are copied, never modified in place.
func Prepare(ctx context.Context, deploymentID, stack string, changes []state.Change, events []state.Event) (*Request, error) {
	if stack == "" {
		return nil, errors.New("commit: empty stack name")
	}
	if err := state.ValidateChanges(changes); err != nil {
		return nil, fmt.Errorf("commit to stack %q: %w", stack, err)
	}
	req := &Request{Ctx: ctx, DeploymentID: deploymentID, Stack: stack}
	var err error
	if req.Changes, req.Journal, err = EncodeChanges(changes); err != nil {
		return nil, fmt.Errorf("commit to stack %q: %w", stack, err)
	}
	req.Events = make([]state.Event, len(events))
	for i, e := range events {
		if e.DeploymentID == "" {
			e.DeploymentID = deploymentID
		} else if e.DeploymentID != deploymentID {
			return nil, fmt.Errorf("commit to stack %q: event %d belongs to deployment %q, not %q", stack, i, e.DeploymentID, deploymentID)
		}
		if e.Stack == "" {
			e.Stack = stack
		}
		if e.Seq < 0 {
			return nil, fmt.Errorf("commit to stack %q: event %d has negative seq %d", stack, i, e.Seq)
		}
		req.Events[i] = e
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("commit to stack %q: %w", stack, err)
	}
	return req, nil
}

// EncodeDependencies returns the JSON of a stack's dependencies ("[]" for none).
func EncodeDependencies(deps []string) (string, error) {
	if len(deps) == 0 {
		return "[]", nil
	}
	b, err := json.Marshal(deps)
	return string(b), err
}

// EncodeChanges encodes each change's row values, and the journal entry of all of them: the JSON of
// changes as a []state.Change. The JSON of a resource is encoded once and used for both (its row value is
// a substring of the journal entry), and the journal bytes are the same whichever backend writes them, so
// that either can replay the other's journal.
func EncodeChanges(changes []state.Change) ([]Change, string, error) {
	enc := make([]Change, len(changes))
	// Where each plain put's resource JSON lies in the journal: [2i, 2i+1), end 0 for the others.
	spans := make([]int, 2*len(changes))
	bp := journalBufs.Get().(*[]byte)
	journal := append((*bp)[:0], '[')
	for i, c := range changes {
		if i > 0 {
			journal = append(journal, ',')
		}
		e := Change{Kind: c.Kind, LogicalID: c.LogicalID, Status: c.Status}
		var plain bool // the journal entry is built around the resource's JSON
		switch c.Kind {
		case state.PutResource:
			e.LogicalID = c.Resource.LogicalID
			plain = c.LogicalID == "" && c.Status == "" && len(c.Outputs) == 0 && len(c.Dependencies) == 0
			if plain {
				// What json.Marshal(c) returns when only Kind and Resource are set.
				journal = append(journal, `{"kind":"put","resource":`...)
				start := len(journal)
				var err error
				if journal, err = appendResourceJSON(journal, c.Resource); err != nil {
					return nil, "", fmt.Errorf("change %d: encode resource %q: %w", i, c.Resource.LogicalID, err)
				}
				spans[2*i], spans[2*i+1] = start, len(journal)
				journal = append(journal, '}')
			} else {
				data, err := appendResourceJSON(nil, c.Resource)
				if err != nil {
					return nil, "", fmt.Errorf("change %d: encode resource %q: %w", i, c.Resource.LogicalID, err)
				}
				e.Data = string(data)
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
			e.Data = string(data)
			if e.Deps, err = EncodeDependencies(c.Dependencies); err != nil {
				return nil, "", fmt.Errorf("change %d: encode stack dependencies: %w", i, err)
			}
		}
		if !plain {
			data, err := json.Marshal(c)
			if err != nil {
				return nil, "", fmt.Errorf("change %d: encode: %w", i, err)
			}
			journal = append(journal, data...)
		}
		enc[i] = e
	}
	journal = append(journal, ']')
	out := string(journal)
	if cap(journal) <= maxPooledJournal {
		*bp = journal
		journalBufs.Put(bp)
	}
	for i := range enc {
		if end := spans[2*i+1]; end > 0 {
			enc[i].Data = out[spans[2*i]:end]
		}
	}
	return enc, out, nil
}

// journalBufs are the buffers journal entries are built in before their one copy to a string; a buffer
// grown past maxPooledJournal (a Commit of thousands of resources) is left to the collector.
var journalBufs = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledJournal = 1 << 20

// appendResourceJSON appends the JSON of r: appendResource's, or json.Marshal's where appendResource
// leaves it.
func appendResourceJSON(buf []byte, r *state.Resource) ([]byte, error) {
	start := len(buf)
	buf, ok := appendResource(buf, r)
	if ok {
		return buf, nil
	}
	data, err := json.Marshal(r)
	return append(buf[:start], data...), err
}

// Queue is the group-commit queue of one backend. Set Write (and Replayable, MaxBatch) before first use;
// the zero value is otherwise ready.
type Queue struct {
	// Write writes the requests in one transaction and sets their Version; its error fails them all.
	Write func(reqs []*Request) error
	// Replayable reports whether a group whose transaction failed with err certainly rolled back, so that
	// its requests may be written again one per transaction (nil: always). A group that may have been
	// committed (a lost connection) must not be replayed: that could apply it twice.
	Replayable func(err error) bool
	// MaxBatch bounds how many requests share a transaction (0: DefaultMaxBatch).
	MaxBatch int

	once  sync.Once
	group groupcommit.Queue[*Request]
}

// init binds the group-commit queue to q's settings, once.
func (q *Queue) init() {
	q.once.Do(func() {
		q.group.MaxBatch = q.MaxBatch
		if q.group.MaxBatch <= 0 {
			q.group.MaxBatch = DefaultMaxBatch
		}
		q.group.Write = q.writeGroup
	})
}

// Close refuses new requests and waits until the queued ones are written.
func (q *Queue) Close() {
	q.init()
	q.group.Close()
}

// Commit is a backend's state.Backend.Commit: it prepares the commit (Prepare: an invalid one fails
// before any transaction), submits it and returns the stack's new version, or the failure wrapped by
// dbError with the operation ("commit to stack \"web\"").
func (q *Queue) Commit(ctx context.Context, deploymentID, stack string, changes []state.Change, events []state.Event,
	dbError func(op string, err error) error) (int64, error) {
	req, err := Prepare(ctx, deploymentID, stack, changes, events)
	if err != nil {
		return 0, err
	}
	q.Submit(req)
	if req.Err != nil {
		return 0, dbError(fmt.Sprintf("commit to stack %q", stack), req.Err)
	}
	return req.Version, nil
}

// Submit writes req, alone or in a group, and returns when req.Version or req.Err is set (ErrClosed after
// Close). A panic while its group is written fails the group's requests and propagates to the caller
// that led it; no Commit is left stuck.
func (q *Queue) Submit(req *Request) {
	q.init()
	if !q.group.Submit(req) {
		req.Err = ErrClosed
	}
}

// writeGroup writes a group (writeBatch), failing its requests when that panics before the panic goes on.
func (q *Queue) writeGroup(batch []*Request) {
	defer func() {
		if p := recover(); p != nil {
			for _, r := range batch {
				r.Version, r.Err = 0, fmt.Errorf("commit panicked: %v", p)
			}
			panic(p)
		}
	}()
	q.writeBatch(batch)
}

// writeBatch writes the requests in one transaction or, when that fails, there are several and the group
// is Replayable, each in a transaction of its own, so that one Commit's failure never fails another.
// Requests whose context ended while queued fail without being written.
func (q *Queue) writeBatch(batch []*Request) {
	live := batch[:0:0]
	for _, r := range batch {
		if err := r.Ctx.Err(); err != nil {
			r.Err = err
			continue
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	err := q.Write(live)
	if err == nil || len(live) == 1 || (q.Replayable != nil && !q.Replayable(err)) {
		for _, r := range live {
			if r.Err = err; err != nil {
				r.Version = 0
			}
		}
		return
	}
	for _, r := range live {
		r.Err = q.Write([]*Request{r})
		if r.Err != nil {
			r.Version = 0
		}
	}
}
