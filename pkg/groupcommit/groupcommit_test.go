package groupcommit_test

import (
	"runtime"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/pkg/groupcommit"
)

// recorder is a Write that records its batches and checks that no two run at once.
type recorder struct {
	mu      sync.Mutex
	batches [][]int
	running bool
	overlap bool
	// gate, when not nil, holds every Write until it is closed.
	gate chan struct{}
}

func (r *recorder) write(batch []int) {
	r.mu.Lock()
	if r.running {
		r.overlap = true
	}
	r.running = true
	r.mu.Unlock()
	if r.gate != nil {
		<-r.gate
	}
	r.mu.Lock()
	r.batches = append(r.batches, slices.Clone(batch))
	r.running = false
	r.mu.Unlock()
}

func (r *recorder) written() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []int
	for _, b := range r.batches {
		out = append(out, b...)
	}
	return out
}

// TestBatchesQueuedItemsInOrder holds the first write while more items queue, then checks that they are
// written in the order queued, in batches of at most MaxBatch, never two writes at once, and that Close
// returns only once Add's items are written.
func TestBatchesQueuedItemsInOrder(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{gate: make(chan struct{})}
		q := &groupcommit.Queue[int]{Write: r.write, MaxBatch: 3}
		q.Add(0) // leads in a goroutine of its own, held by the gate
		synctest.Wait()
		var wg sync.WaitGroup
		for i := 1; i <= 4; i++ {
			q.Add(i)
		}
		wg.Go(func() { q.Submit(5) }) // waits behind them
		synctest.Wait()
		for i := 6; i <= 7; i++ {
			q.Add(i)
		}
		close(r.gate)
		wg.Wait()
		q.Close()
		if diff := cmp.Diff([]int{0, 1, 2, 3, 4, 5, 6, 7}, r.written()); diff != "" {
			t.Errorf("items written (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([][]int{{0}, {1, 2, 3}, {4, 5, 6}, {7}}, r.batches); diff != "" {
			t.Errorf("batches (-want +got):\n%s", diff)
		}
		if r.overlap {
			t.Error("two writes ran at once")
		}
	})
}

func TestClosedRefuses(t *testing.T) {
	t.Parallel()
	r := &recorder{}
	q := &groupcommit.Queue[int]{Write: r.write}
	if !q.Submit(1) {
		t.Fatal("Submit before Close = false")
	}
	q.Close()
	if q.Submit(2) || q.Add(3) {
		t.Error("Submit or Add after Close = true, want false")
	}
	if diff := cmp.Diff([]int{1}, r.written()); diff != "" {
		t.Errorf("items written (-want +got):\n%s", diff)
	}
}

// TestPanicReachesTheLeader checks that a panic of Write reaches the caller that led the batch, that the
// caller queued behind it leads next, and that the queue goes on.
func TestPanicReachesTheLeader(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		var mu sync.Mutex
		var written []int
		q := &groupcommit.Queue[int]{Write: func(batch []int) {
			if batch[0] == 0 {
				<-gate
				panic("boom")
			}
			mu.Lock()
			written = append(written, batch...)
			mu.Unlock()
		}}
		recovered := make(chan any, 1)
		go func() {
			defer func() { recovered <- recover() }()
			q.Submit(0)
		}()
		synctest.Wait()
		waited := make(chan bool, 1)
		go func() { waited <- q.Submit(1) }() // queued behind the panicking batch
		synctest.Wait()
		close(gate)
		if p := <-recovered; p != "boom" {
			t.Errorf("leader recovered %v, want the panic", p)
		}
		if !<-waited {
			t.Error("a caller behind the panicking batch: Submit = false")
		}
		q.Submit(2)
		q.Close()
		if diff := cmp.Diff([]int{1, 2}, written); diff != "" {
			t.Errorf("written after the panic (-want +got):\n%s", diff)
		}
	})
}

// BenchmarkSubmitAlone submits from one goroutine, one item at a time, as a backend's queue is fed by the
// engine's pipeline, while 8 other goroutines run (each computing for about 20 µs at a time, as steps
// do): the leader of such a queue, never contended, writes at once instead of yielding behind them.
func BenchmarkSubmitAlone(b *testing.B) {
	q := &groupcommit.Queue[int]{Write: func([]int) {}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			x := 0
			for {
				select {
				case <-stop:
					return
				default:
				}
				for i := range 20_000 {
					x += i ^ x
				}
				runtime.Gosched()
			}
		})
	}
	for b.Loop() {
		q.Submit(1)
	}
	close(stop)
	wg.Wait()
}
