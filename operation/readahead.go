package operation

import (
	"context"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

// ReadAhead opens a state backend and reads stacks' state in the background while the caller loads the
// assembly: the two are independent, and on two cores a no-op diff of 100,000 resources then takes the
// longer of the two instead of their sum (docs/performance.md). Start it, load, then Wait (or Abandon when
// the assembly did not load, so that a backend error never hides the assembly's diagnostics).
type ReadAhead struct {
	done   chan struct{}
	cancel context.CancelFunc
	b      state.Backend
	stacks map[string]*state.Stack
	err    error
}

// StartReadAhead calls open and reads the state of the stacks named, or of every stack with state
// (Backend.ListStacks) when names is empty. Errors reading a stack are not kept: LoadState reads a stack
// missing from Wait's map again and reports them.
func StartReadAhead(ctx context.Context, open func(context.Context) (state.Backend, error), names []string) *ReadAhead {
	ctx, cancel := context.WithCancel(ctx)
	r := &ReadAhead{done: make(chan struct{}), cancel: cancel, stacks: map[string]*state.Stack{}}
	go func() {
		defer close(r.done)
		b, err := open(ctx)
		if err != nil { // b may be a typed nil
			r.err = err
			return
		}
		r.b = b
		if len(names) == 0 {
			var err error
			if names, err = r.b.ListStacks(ctx); err != nil {
				return
			}
		}
		for _, n := range names {
			st, err := r.b.GetStack(ctx, n)
			if err != nil {
				return
			}
			r.stacks[n] = st
		}
	}()
	return r
}

// Wait returns the open backend (the caller closes it) and the stacks read by name, or open's error.
func (r *ReadAhead) Wait() (state.Backend, map[string]*state.Stack, error) {
	<-r.done // the backend keeps r's context: it is cancelled only by Abandon
	return r.b, r.stacks, r.err
}

// Abandon stops reading, waits for the reader and closes the backend.
func (r *ReadAhead) Abandon() {
	r.cancel()
	<-r.done
	if r.b != nil {
		_ = r.b.Close()
	}
}
