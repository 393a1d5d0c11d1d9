package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/cdkx-dev/cdkx/planner"
)

// outcome is how one node of a walk ended.
type outcome int

const (
	outcomePending    outcome = iota
	outcomeDone               // visit returned nil
	outcomeFailed             // visit returned an error
	outcomeSkipped            // a dependency failed or was skipped
	outcomeNotStarted         // the walk was cancelled before the node became ready or while it was ready
)

// walkResult records the outcome of every node and, for skipped nodes, the failed node that caused it.
type walkResult struct {
	outcomes []outcome
	errs     []error
	root     []int // for skipped nodes: the ID of the failed node upstream; -1 otherwise
}

// walk visits every node of g after all of its dependencies are done — by dependency, not in waves: a node
// starts the moment its own dependencies are done. Independent nodes run concurrently, each in its own
// goroutine, at most limit at once (0: no limit; ready nodes beyond it wait in order, costing no goroutine);
// limiting provider calls is the visitor's business (a semaphore), not the walker's.
//
// When visit fails, every node downstream is skipped at once (skip is called for each, with the ID of the
// failed node), and independent branches go on. When ctx is cancelled, no new node starts; running visits
// finish, and a visit that returns errNotStarted (it was still waiting for a concurrency slot) counts as
// not started. A panic in visit becomes that node's error. walk returns when no visit is running; visit and skip
// are never called after that. skip is called from walk's own goroutine, never concurrently with itself.
func walk(ctx context.Context, g *planner.Graph, limit int, visit func(id int) error, skip func(id, root int)) *walkResult {
	n := len(g.Nodes)
	res := &walkResult{outcomes: make([]outcome, n), errs: make([]error, n), root: make([]int, n)}
	remaining := make([]int, n)
	var ready []int
	for id := range n {
		res.root[id] = -1
		remaining[id] = len(g.Dependencies(id))
		if remaining[id] == 0 {
			ready = append(ready, id)
		}
	}
	type done struct {
		id  int
		err error
	}
	results := make(chan done)
	running := 0
	start := func(id int) {
		running++
		go func() {
			var err error
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("internal error: panic: %v\n%s", r, debug.Stack())
				}
				results <- done{id, err}
			}()
			err = visit(id)
		}()
	}
	var skipDown func(id, root int)
	skipDown = func(id, root int) {
		for _, d := range g.Dependents(id) {
			if res.outcomes[d] != outcomePending {
				continue
			}
			res.outcomes[d], res.root[d] = outcomeSkipped, root
			skip(d, root)
			skipDown(d, root)
		}
	}
	for len(ready) > 0 || running > 0 {
		next := 0 // ready[next:] wait for a free visit
		for ; next < len(ready) && (limit <= 0 || running < limit); next++ {
			id := ready[next]
			if res.outcomes[id] != outcomePending {
				continue
			}
			if ctx.Err() != nil {
				res.outcomes[id] = outcomeNotStarted
				continue
			}
			start(id)
		}
		ready = ready[next:] // not copied down: 10,000 chains keep ~10,000 ready, and one starts per result
		if ctx.Err() != nil {
			for _, id := range ready {
				if res.outcomes[id] == outcomePending {
					res.outcomes[id] = outcomeNotStarted
				}
			}
			ready = ready[:0]
		}
		if running == 0 {
			break
		}
		r := <-results
		running--
		if errors.Is(r.err, errNotStarted) {
			res.outcomes[r.id] = outcomeNotStarted // interrupted while it waited for a slot
			continue
		}
		if r.err != nil {
			res.outcomes[r.id], res.errs[r.id] = outcomeFailed, r.err
			skipDown(r.id, r.id)
			continue
		}
		res.outcomes[r.id] = outcomeDone
		for _, d := range g.Dependents(r.id) {
			remaining[d]--
			if remaining[d] == 0 && res.outcomes[d] == outcomePending {
				ready = append(ready, d)
			}
		}
	}
	for id := range n {
		if res.outcomes[id] == outcomePending {
			res.outcomes[id] = outcomeNotStarted
		}
	}
	return res
}

// count returns how many nodes ended with o.
func (res *walkResult) count(o outcome) int {
	n := 0
	for _, x := range res.outcomes {
		if x == o {
			n++
		}
	}
	return n
}

// visitLimit is the number of visits a walk runs at once for a run of concurrency provider calls: enough
// that every slot stays busy while other visits resolve inputs, record results or wait for a per-provider
// or serial-key slot, and bounded, so that 10,000 ready resources do not hold 10,000 goroutines.
func visitLimit(concurrency int) int { return 8*concurrency + 256 }
