// Package groupcommit groups writes that arrive while another write runs into the next one (group
// commit): the engine's journal of state changes and the SQL backends' Commits both write through it.
//
// There is no writer goroutine of its own. At most one caller, the leader, writes at a time: it writes
// its own item with those queued behind it (at most MaxBatch in all), wakes the callers of those, and
// hands leadership to the oldest item still queued. Submit waits for its item to be written (and, as the
// leader, writes it itself: a panic of Write reaches its caller); Add only queues it, and when nobody
// leads starts a goroutine that does. Items are written in the order they were queued, in batches that
// never overlap.
//
// A leader yields once before it cuts its batch, so that the goroutines about to queue an item join it,
// but only on a queue that has seen an item queued behind a leader (contention): on a queue whose items
// come one at a time from one goroutine (a backend's queue behind the engine's own pipeline) nobody can
// join, and the yield would only put the write behind every runnable goroutine.
package groupcommit

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// DefaultMaxBatch bounds a batch when Queue.MaxBatch is 0.
const DefaultMaxBatch = 64

// Queue is one group-commit queue. Set Write (and MaxBatch) before first use; the zero value is otherwise
// ready. Its methods are safe for concurrent use.
type Queue[T any] struct {
	// Write writes a batch, in order; it reports each item's outcome through the item itself. It runs in
	// one goroutine at a time, and each call happens after the previous one returned.
	Write func(batch []T)
	// MaxBatch bounds how many items one Write gets (0: DefaultMaxBatch).
	MaxBatch int

	// contended is set once an item is queued while another is being written: from then on a leader
	// yields before it cuts its batch.
	contended atomic.Bool

	mu      sync.Mutex // guards the fields below
	leading bool
	closed  bool
	queue   []entry[T]
	idle    chan struct{} // closed and replaced when a leader finds the queue empty; Close waits on it
}

// entry is a queued item; wake is nil for an item of Add, else it is told whether to lead (true) or
// that its item is written (false).
type entry[T any] struct {
	item T
	wake chan bool
}

// Submit writes item, alone or in a batch, and returns true once it is written; false, writing nothing,
// after Close. A panic of the Write that the caller leads propagates to it (the waiting callers of that
// batch return as written: Write must record a failure in the items before it panics, if it wants them
// to know).
func (q *Queue[T]) Submit(item T) bool {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false
	}
	if q.leading {
		q.contended.Store(true)
		wake := make(chan bool, 1)
		q.queue = append(q.queue, entry[T]{item, wake})
		q.mu.Unlock()
		if lead := <-wake; !lead {
			return true
		}
	} else {
		q.leading = true
		q.mu.Unlock()
	}
	q.lead(entry[T]{item: item})
	return true
}

// Add queues item to be written without waiting for it, and returns false after Close. When nobody
// leads, a new goroutine leads; a panic of Write there ends the program.
func (q *Queue[T]) Add(item T) bool {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false
	}
	if q.leading {
		q.contended.Store(true)
		q.queue = append(q.queue, entry[T]{item: item})
		q.mu.Unlock()
		return true
	}
	q.leading = true
	q.mu.Unlock()
	go q.lead(entry[T]{item: item})
	return true
}

// Close refuses new items and waits until the queued ones are written.
func (q *Queue[T]) Close() {
	q.mu.Lock()
	q.closed = true
	if !q.leading {
		q.mu.Unlock()
		return
	}
	idle := q.idleChan()
	q.mu.Unlock()
	<-idle
}

// idleChan returns the channel closed when the current leader finds the queue empty; q.mu is held.
func (q *Queue[T]) idleChan() chan struct{} {
	if q.idle == nil {
		q.idle = make(chan struct{})
	}
	return q.idle
}

// lead writes first and the items queued behind it, then hands off, even when Write panics (the panic
// goes on after the hand-off).
func (q *Queue[T]) lead(first entry[T]) {
	maxBatch := q.MaxBatch
	if maxBatch <= 0 {
		maxBatch = DefaultMaxBatch
	}
	// Let the goroutines that are about to add an item (a wave of steps made ready at once) run first, so
	// that they join this batch instead of each waiting for the one before: a yield, not a wait.
	if q.contended.Load() {
		runtime.Gosched()
	}
	q.mu.Lock()
	n := min(len(q.queue), maxBatch-1)
	batch := make([]entry[T], 0, n+1)
	batch = append(batch, first)
	batch = append(batch, q.queue[:n]...)
	clear(q.queue[:n]) // the array outlives the batch: let its items go with it
	q.queue = q.queue[n:]
	q.mu.Unlock()

	items := make([]T, len(batch))
	for i, e := range batch {
		items[i] = e.item
	}
	defer q.handOff(batch)
	q.Write(items)
}

// handOff wakes the waiting callers of a written batch, except the leader, and passes leadership on to
// the oldest queued item (its caller, or a new goroutine for an item of Add), or releases it.
func (q *Queue[T]) handOff(batch []entry[T]) {
	for _, e := range batch[1:] {
		if e.wake != nil {
			e.wake <- false
		}
	}
	q.mu.Lock()
	if len(q.queue) == 0 {
		q.leading = false
		close(q.idleChan())
		q.idle = make(chan struct{})
		q.mu.Unlock()
		return
	}
	next := q.queue[0]
	q.queue[0] = entry[T]{}
	q.queue = q.queue[1:]
	q.mu.Unlock()
	if next.wake != nil {
		next.wake <- true
		return
	}
	go q.lead(next)
}
