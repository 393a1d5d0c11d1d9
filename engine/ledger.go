package engine

import (
	"fmt"
	"sync"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

// ledger is a run's view of state: each stack as it is now, in memory, and the commit pipeline that makes
// every change durable in the order it was made. A change is visible in memory at once and durable when
// its wait returns nil. After a failed write every later one fails too (the pipeline's error sticks) and the
// run starts no new step.
type ledger struct {
	commits *commitPipeline
	now     func() time.Time

	mu       sync.Mutex
	stacks   map[string]*state.Stack // guarded by mu, and so is every record in them
	stateErr error                   // the first failed write; guarded by mu

	aheadMu sync.Mutex
	ahead   []<-chan error // results of applyAsync's changes not yet seen durable, oldest first; guarded by aheadMu
}

// maxAhead is how many changes applyAsync lets wait for their commit before it waits for the oldest: the
// engine outruns the commit pipeline on steps that call nothing (100k Cdkx::Core::Data), and each change
// queued holds its record change, its event and its request (~300 B: 25 MB at 90k queued) until it is
// written. At 4,096 the pipeline's batches (512 changes) stay full.
const maxAhead = 4096

func newLedger(now func() time.Time) *ledger {
	return &ledger{now: now, stacks: map[string]*state.Stack{}}
}

// current returns a resource's record (nil when there is none). Records are never changed in place, so
// the caller may read it without the lock.
func (l *ledger) current(stack, logicalID string) *state.Resource {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stacks[stack].Resources[logicalID]
}

// failed returns the first failed state write, or nil: one a caller waited for, or one the pipeline met
// with a change nobody waits for (applyAsync).
func (l *ledger) failed() error {
	l.mu.Lock()
	err := l.stateErr
	l.mu.Unlock()
	if err == nil && l.commits != nil {
		err = l.commits.failure()
	}
	return err
}

// enqueue makes a resource's change visible in memory and queues it with its event: next replaces the
// record, drop removes it, neither leaves it as it is (only the event is recorded). The channel yields
// the commit's result.
func (l *ledger) enqueue(stack, logicalID string, next *state.Resource, drop bool, e Event) <-chan error {
	now := l.now().UTC()
	e.Time = now
	l.mu.Lock()
	defer l.mu.Unlock()
	var changes []state.Change
	switch {
	case drop:
		delete(l.stacks[stack].Resources, logicalID)
		changes = []state.Change{{Kind: state.DeleteResource, LogicalID: logicalID}}
	case next != nil:
		next.UpdatedAt = now
		l.stacks[stack].Resources[logicalID] = next
		changes = []state.Change{{Kind: state.PutResource, Resource: next}}
	}
	return l.commits.enqueue(stack, changes, e)
}

// apply records a change and waits until it is durable.
func (l *ledger) apply(stack, logicalID string, next *state.Resource, drop bool, e Event) error {
	return l.wait(l.enqueue(stack, logicalID, next, drop, e))
}

// applyAsync records a change without waiting for it: a failure to write it is the pipeline's sticky error,
// which fails every later write and stops the run (failed). No goroutine waits for each change (a large run
// of instant steps would otherwise hold one per step queued behind the pipeline); the caller waits only
// when more than maxAhead changes are queued ahead of it, for the oldest, so that what waits for the
// pipeline stays bounded.
func (l *ledger) applyAsync(stack, logicalID string, next *state.Resource, drop bool, e Event) {
	ch := l.enqueue(stack, logicalID, next, drop, e)
	var oldest <-chan error
	l.aheadMu.Lock()
	l.ahead = append(l.ahead, ch)
	if len(l.ahead) > maxAhead {
		oldest = l.ahead[0]
		l.ahead[0] = nil
		l.ahead = l.ahead[1:]
	}
	l.aheadMu.Unlock()
	if oldest != nil {
		_ = l.wait(oldest) // a failure is the ledger's from now on (failed)
	}
}

// put records a resource's new record and waits until it is durable.
func (l *ledger) put(stack string, rec *state.Resource, e Event) error {
	return l.apply(stack, rec.LogicalID, rec, false, e)
}

// record commits stack-level changes and events and waits until they are durable.
func (l *ledger) record(stack string, changes []state.Change, events ...Event) error {
	now := l.now().UTC()
	for i := range events {
		events[i].Time = now
	}
	return l.wait(l.commits.enqueue(stack, changes, events...))
}

// event queues an event without waiting (the walker must not block on state; the pipeline keeps the order).
func (l *ledger) event(stack string, e Event) {
	e.Time = l.now().UTC()
	l.commits.send(stack, nil, e)
}

// putStack applies a stack-level change in memory and records it with its events.
func (l *ledger) putStack(stack string, change state.Change, events ...Event) error {
	l.mu.Lock()
	_ = l.stacks[stack].Apply(change)
	l.mu.Unlock()
	return l.record(stack, []state.Change{change}, events...)
}

func (l *ledger) wait(ch <-chan error) error {
	err := <-ch
	if err != nil {
		l.mu.Lock()
		if l.stateErr == nil {
			l.stateErr = err
		}
		l.mu.Unlock()
	}
	return err
}

// close stops the pipeline once everything queued is committed and returns the first failed write.
func (l *ledger) close() error {
	l.commits.close()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.commits.err != nil && l.stateErr == nil { // the pipeline's goroutine is done: reading its err is safe
		l.stateErr = l.commits.err
	}
	return l.stateErr
}

// tally counts what a run did: final statuses and failures in the order they happened.
type tally struct {
	mu       sync.Mutex
	counts   map[Status]int // guarded by mu
	failures []Failure      // guarded by mu
	replaced int            // guarded by mu
}

func newTally() *tally { return &tally{counts: map[Status]int{}} }

func (t *tally) done(s Status) {
	if s == "" {
		return
	}
	t.mu.Lock()
	t.counts[s]++
	t.mu.Unlock()
}

func (t *tally) fail(f Failure) {
	t.mu.Lock()
	t.failures = append(t.failures, f)
	t.counts[f.Status]++
	t.mu.Unlock()
}

func (t *tally) replacedOne() {
	t.mu.Lock()
	t.replaced++
	t.mu.Unlock()
}

// failedStacks returns, per stack with a failure, the first failure's message.
func (t *tally) failedStacks() map[string]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]string{}
	for _, f := range t.failures {
		if _, ok := out[f.Stack]; !ok {
			out[f.Stack] = fmt.Sprintf("%s failed: %v", f.LogicalID, f.Err)
		}
	}
	return out
}

func (t *tally) failureCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.failures)
}
