package engine

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/groupcommit"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// commitPipeline is the ledger's write-behind: it persists state changes and events, grouping the requests
// that arrive while a commit is running into the next one (group commit, pkg/groupcommit): one Commit per
// stack per batch, batches one at a time. A request's changes are durable when its wait returns nil;
// requests are committed in the order they were enqueued, so two changes to one resource never swap, and
// when a request is durable every request queued before it is too. After a failed commit every later
// request fails as well (the error sticks), so that nothing recorded after a lost change is ever taken as
// durable. Events are handed to onEvent after they are durable, from one batch at a time.
type commitPipeline struct {
	backend     state.Backend
	deployments map[string]string // stack → deployment ID; written before start, read-only after
	onEvent     func(Event)

	group groupcommit.Queue[*commitReq]
	err   error // the first failed commit; only the batch being written touches it
	// failed is err for other goroutines: set once, when the first commit fails.
	failed atomic.Pointer[error]
	// dryRun makes every commit succeed without writing: events still reach onEvent (diff --refresh).
	dryRun bool
	// versions holds each stack's version after the pipeline's last commit to it; read it after close.
	versions map[string]int64
}

type commitReq struct {
	stack   string
	changes []state.Change
	events  []Event
	err     chan error
}

func newCommitPipeline(b state.Backend, deployments map[string]string, onEvent func(Event)) *commitPipeline {
	p := &commitPipeline{backend: b, deployments: deployments, onEvent: onEvent, versions: map[string]int64{}}
	p.group.MaxBatch, p.group.Write = 512, p.flush
	return p
}

// enqueue queues changes and events for stack and returns a channel that yields the commit's result.
func (p *commitPipeline) enqueue(stack string, changes []state.Change, events ...Event) <-chan error {
	r := &commitReq{stack: stack, changes: changes, events: events, err: make(chan error, 1)}
	if !p.group.Add(r) {
		r.err <- errPipelineClosed
	}
	return r.err
}

// send queues changes and events for stack without a way to wait for them: a failure to write them is
// the pipeline's sticky error (failure), which fails every later request.
func (p *commitPipeline) send(stack string, changes []state.Change, events ...Event) {
	p.group.Add(&commitReq{stack: stack, changes: changes, events: events})
}

// errPipelineClosed is the result of a request enqueued after close.
var errPipelineClosed = errors.New("the state commit pipeline is closed")

// failure returns the first failed commit's error, or nil; safe from any goroutine.
func (p *commitPipeline) failure() error {
	if e := p.failed.Load(); e != nil {
		return *e
	}
	return nil
}

// close stops the pipeline after every queued request is committed.
func (p *commitPipeline) close() {
	p.group.Close()
}

// flush commits a batch: one Commit per stack, stacks in order of first appearance. Commits are not
// cancelled by the caller's context: a change that reached the pipeline is recorded.
func (p *commitPipeline) flush(batch []*commitReq) {
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
				events = append(events, state.Event{DeploymentID: p.deployments[stack], Time: e.Time, Stack: e.Stack,
					LogicalID: e.LogicalID, Type: e.Type, Status: string(e.Status), Reason: e.Reason})
			}
		}
		err := p.err
		if err == nil && !p.dryRun {
			err = p.commitWithRetry(stack, changes, events)
			p.err = err
			if err != nil {
				p.failed.Store(&err)
			}
		}
		for _, r := range reqs {
			if err == nil && p.onEvent != nil {
				for _, e := range r.events {
					p.onEvent(e)
				}
			}
			if r.err != nil {
				r.err <- err
			}
		}
	}
}

// commitWithRetry retries a failed commit a few times (a busy database), then gives up.
func (p *commitPipeline) commitWithRetry(stack string, changes []state.Change, events []state.Event) error {
	var err error
	for attempt := range 3 {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * 50 * time.Millisecond)
		}
		var v int64
		v, err = p.backend.Commit(context.Background(), p.deployments[stack], stack, changes, events)
		if err == nil {
			p.versions[stack] = v
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
