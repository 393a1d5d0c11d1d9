package engine

import (
	"container/heap"
	"context"
	"sync"
)

// slots is a counting semaphore that hands a freed slot to the waiting step of highest rank (then the
// earliest), so that under a concurrency limit the steps on the longest remaining chain run first
// (planner.Step.Rank). Equal ranks are served first come, first served.
type slots struct {
	mu      sync.Mutex
	free    int
	seq     uint64
	waiting waiters
}

func newSlots(n int) *slots { return &slots{free: n} }

// waiter is one step waiting for a slot; granted is closed when it gets one.
type waiter struct {
	rank    int
	seq     uint64
	index   int // in the heap; -1 once removed
	granted chan struct{}
}

// acquire takes a slot, waiting for one; ok is false, with nothing held, when ctx ends first.
func (s *slots) acquire(ctx context.Context, rank int) (ok bool) {
	s.mu.Lock()
	if s.free > 0 && len(s.waiting) == 0 {
		s.free--
		s.mu.Unlock()
		return true
	}
	s.seq++
	w := &waiter{rank: rank, seq: s.seq, granted: make(chan struct{})}
	heap.Push(&s.waiting, w)
	s.mu.Unlock()
	select {
	case <-w.granted:
		return true
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		if w.index < 0 { // granted meanwhile: pass it on
			s.releaseLocked()
			return false
		}
		heap.Remove(&s.waiting, w.index)
		return false
	}
}

// release frees a slot: the best waiter gets it.
func (s *slots) release() {
	s.mu.Lock()
	s.releaseLocked()
	s.mu.Unlock()
}

func (s *slots) releaseLocked() {
	if len(s.waiting) == 0 {
		s.free++
		return
	}
	w := heap.Pop(&s.waiting).(*waiter)
	close(w.granted)
}

// waiters is a heap: highest rank first, then lowest sequence number.
type waiters []*waiter

func (h waiters) Len() int { return len(h) }
func (h waiters) Less(i, j int) bool {
	if h[i].rank != h[j].rank {
		return h[i].rank > h[j].rank
	}
	return h[i].seq < h[j].seq
}
func (h waiters) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *waiters) Push(x any) {
	w := x.(*waiter)
	w.index = len(*h)
	*h = append(*h, w)
}
func (h *waiters) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	w.index = -1
	return w
}
