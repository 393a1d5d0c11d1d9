package engine

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

// gatedBackend commits nothing until gate is closed, then counts its commits.
type gatedBackend struct {
	state.Backend
	gate    chan struct{}
	commits atomic.Int64
}

func (b *gatedBackend) Commit(context.Context, string, string, []state.Change, []state.Event) (int64, error) {
	<-b.gate
	return b.commits.Add(1), nil
}

// TestApplyAsyncBoundsChangesAhead: applyAsync queues maxAhead changes without waiting, and the next one
// waits until the oldest is durable.
func TestApplyAsyncBoundsChangesAhead(t *testing.T) {
	t.Parallel()
	b := &gatedBackend{gate: make(chan struct{})}
	l := newLedger(time.Now)
	l.stacks["S"] = state.NewStack("S")
	l.commits = newCommitPipeline(b, map[string]string{"S": "d"}, nil)
	put := func() {
		l.applyAsync("S", "R", &state.Resource{LogicalID: "R", Type: "T", Provider: "p"}, false, Event{Stack: "S", LogicalID: "R"})
	}
	for range maxAhead {
		put() // none waits: nothing is committed while the gate is shut
	}
	if n := b.commits.Load(); n != 0 {
		t.Fatalf("%d commits before the gate opened", n)
	}
	seen := make(chan int64)
	go func() {
		put()
		seen <- b.commits.Load()
	}()
	close(b.gate)
	if n := <-seen; n < 1 {
		t.Errorf("the change past maxAhead returned before any commit (%d)", n)
	}
	if err := l.close(); err != nil {
		t.Fatal(err)
	}
}
