package engine

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestSlotsServeHighestRankFirst: with one slot held, waiters are served by rank, then in arrival order;
// a waiter whose context ends leaves the queue without taking a slot.
func TestSlotsServeHighestRankFirst(t *testing.T) {
	t.Parallel()
	s := newSlots(1)
	if !s.acquire(t.Context(), 0) {
		t.Fatal("first acquire failed")
	}
	got := make(chan int, 10)
	waitQueued := func(n int) {
		t.Helper()
		for range 1000 {
			s.mu.Lock()
			l := len(s.waiting)
			s.mu.Unlock()
			if l == n {
				return
			}
			time.Sleep(time.Millisecond)
		}
		t.Fatalf("queue never reached %d waiters", n)
	}
	cancelled, cancel := context.WithCancel(t.Context())
	for i, rank := range []int{1, 5, 3, 5, 0} {
		ctx := t.Context()
		if i == 4 {
			ctx = cancelled
		}
		go func() {
			if s.acquire(ctx, rank) {
				got <- i
				s.release()
			} else {
				got <- -1
			}
		}()
		waitQueued(i + 1)
	}
	cancel()
	if g := <-got; g != -1 {
		t.Fatalf("the cancelled waiter got a slot (waiter %d)", g)
	}
	s.release()
	var order []int
	for range 4 {
		order = append(order, <-got)
	}
	// ranks 5 (waiter 1), 5 (waiter 3), 3 (waiter 2), 1 (waiter 0)
	if diff := cmp.Diff([]int{1, 3, 2, 0}, order); diff != "" {
		t.Errorf("service order (-want +got):\n%s", diff)
	}
	for range 1000 { // the last waiter releases after it reported
		s.mu.Lock()
		free, waiting := s.free, len(s.waiting)
		s.mu.Unlock()
		if free == 1 && waiting == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Error("after every waiter released, the slot is not free")
}
