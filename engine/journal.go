package engine

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/groupcommit"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// journal persists state changes and events, grouping the requests that arrive while a commit is running
// into the next one (group commit, pkg/groupcommit): one Commit per stack per batch, batches one at a
// time. A
// request's changes are durable when its wait returns nil; requests are committed in the order they were
// enqueued, so two changes to one resource never swap, and when a request is durable every request queued
// before it is too. After a failed commit every later request fails as well (the error sticks), so that
// nothing recorded after a lost change is ever taken as durable. Events are handed to onEvent after they
// are durable, from the journal's goroutine only.
type journal struct {
	backend     state.Backend
	deployments map[string]string // stack → deployment ID; written before start, read-only after
	onEvent     func(Event)

	group groupcommit.Queue[*commitReq]
	err   error // the first failed commit; only the batch being written touches it
	// failed is err for other goroutines: set once, when the first commit fails.
	failed atomic.Pointer[error]
	// dryRun makes every commit succeed without writing: events still reach onEvent (diff --refresh).
	dryRun bool
	// versions holds each stack's version after the journal's last commit to it; read it after close.
	versions map[string]int64
}

type commitReq struct {
	stack   string
	changes []state.Change
	events  []Event
	err     chan error
}

func newJournal(b state.Backend, deployments map[string]string, onEvent func(Event)) *journal {
	j := &journal{backend: b, deployments: deployments, onEvent: onEvent, versions: map[string]int64{}}
	j.group.MaxBatch, j.group.Write = 512, j.flush
	return j
}

// enqueue queues changes and events for stack and returns a channel that yields the commit's result.
func (j *journal) enqueue(stack string, changes []state.Change, events ...Event) <-chan error {
	r := &commitReq{stack: stack, changes: changes, events: events, err: make(chan error, 1)}
	if !j.group.Add(r) {
		r.err <- errJournalClosed
	}
	return r.err
}

// send queues changes and events for stack without a way to wait for them: a failure to write them is
// the journal's sticky error (failure), which fails every later request.
func (j *journal) send(stack string, changes []state.Change, events ...Event) {
	j.group.Add(&commitReq{stack: stack, changes: changes, events: events})
}

// errJournalClosed is the result of a request enqueued after close.
var errJournalClosed = errors.New("the state journal is closed")

// failure returns the first failed commit's error, or nil; safe from any goroutine.
func (j *journal) failure() error {
	if e := j.failed.Load(); e != nil {
		return *e
	}
	return nil
}

// close stops the journal after every queued request is committed.
func (j *journal) close() {
	j.group.Close()
}

// flush commits a batch: one Commit per stack, stacks in order of first appearance. Commits are not
// cancelled by the caller's context: a change that reached the journal is recorded.
func (j *journal) flush(batch []*commitReq) {
	var order []string
	byStack := map[string][]*commitReq{}
	for _, r := range batch {
		if _, ok := byStack[r.stack]; !ok {
			order = append(order, r.stack)
		}
		byStack[r.stack] = append(byStack[r.stack], r)
	}
	for _, stack := range order {
		reqs := byStack[stack]
		var changes []state.Change
		var events []state.Event
		for _, r := range reqs {
			changes = append(changes, r.changes...)
			for _, e := range r.events {
				events = append(events, state.Event{DeploymentID: j.deployments[stack], Time: e.Time, Stack: e.Stack,
					LogicalID: e.LogicalID, Type: e.Type, Status: string(e.Status), Reason: e.Reason})
			}
		}
		err := j.err
		if err == nil && !j.dryRun {
			err = j.commitWithRetry(stack, changes, events)
			j.err = err
			if err != nil {
				j.failed.Store(&err)
			}
		}
		for _, r := range reqs {
			if err == nil && j.onEvent != nil {
				for _, e := range r.events {
					j.onEvent(e)
				}
			}
			if r.err != nil {
				r.err <- err
			}
		}
	}
}

// commitWithRetry retries a failed commit a few times (a busy database), then gives up.
func (j *journal) commitWithRetry(stack string, changes []state.Change, events []state.Event) error {
	var err error
	for attempt := range 3 {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * 50 * time.Millisecond)
		}
		var v int64
		v, err = j.backend.Commit(context.Background(), j.deployments[stack], stack, changes, events)
		if err == nil {
			j.versions[stack] = v
			return nil
		}
	}
	return &StateError{Err: err}
}

// StateError is a failure to persist state. The run stops scheduling new steps when it happens, because
// what exists at the provider can no longer be recorded.
type StateError struct {
	Err error
}

// Error says that state could not be written and why.
func (e *StateError) Error() string { return "write state: " + e.Err.Error() }

// Unwrap returns the backend's error.
func (e *StateError) Unwrap() error { return e.Err }

// IsStateError reports whether err is or wraps a *StateError.
func IsStateError(err error) bool {
	var se *StateError
	return errors.As(err, &se)
}
