package commitqueue_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/pkg/backend/internal/commitqueue"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// fakeDB is a Write function over an in-memory version counter: a transaction with a request whose stack
// is "bad" fails whole; others get consecutive versions.
type fakeDB struct {
	mu      sync.Mutex
	version int64
	txs     [][]string // the stacks of each committed transaction
	err     error      // the error of a failed transaction
}

func (f *fakeDB) write(reqs []*commitqueue.Request) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var stacks []string
	for _, r := range reqs {
		if r.Stack == "bad" {
			return f.err
		}
		stacks = append(stacks, r.Stack)
	}
	for _, r := range reqs {
		f.version++
		r.Version = f.version
	}
	f.txs = append(f.txs, stacks)
	return nil
}

func prepare(t *testing.T, stack string) *commitqueue.Request {
	t.Helper()
	r, err := commitqueue.Prepare(context.Background(), "d", stack, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestConcurrentCommitsShareTransactions submits from many goroutines: every request is written exactly
// once with its own version, in fewer transactions than requests, and a failing one fails only itself.
func TestConcurrentCommitsShareTransactions(t *testing.T) {
	t.Parallel()
	db := &fakeDB{err: errors.New("constraint")}
	q := &commitqueue.Queue{Write: db.write}
	reqs := make([]*commitqueue.Request, 200)
	var wg sync.WaitGroup
	for i := range reqs {
		stack := "ok"
		if i == 17 {
			stack = "bad"
		}
		reqs[i] = prepare(t, stack)
		wg.Go(func() { q.Submit(reqs[i]) })
	}
	wg.Wait()
	q.Close()
	var versions []int64
	for i, r := range reqs {
		switch {
		case i == 17 && r.Err == nil:
			t.Errorf("the bad request did not fail")
		case i != 17 && r.Err != nil:
			t.Errorf("request %d failed: %v", i, r.Err)
		case i != 17:
			versions = append(versions, r.Version)
		}
	}
	slices.Sort(versions)
	for i, v := range versions {
		if v != int64(i+1) {
			t.Fatalf("versions are not 1..%d: %v", len(versions), versions)
		}
	}
	if len(db.txs) >= len(reqs) {
		t.Logf("no grouping happened (%d transactions); scheduling allowed it", len(db.txs))
	}
	if err := func() error { r := prepare(t, "ok"); q.Submit(r); return r.Err }(); !errors.Is(err, commitqueue.ErrClosed) {
		t.Errorf("Submit after Close: %v, want ErrClosed", err)
	}
}

// TestNoReplayWhenMaybeCommitted: a group whose failure is not Replayable fails whole, no request is
// written again.
func TestNoReplayWhenMaybeCommitted(t *testing.T) {
	t.Parallel()
	lost := errors.New("connection lost")
	calls := 0
	q := &commitqueue.Queue{Write: func(reqs []*commitqueue.Request) error { calls++; return lost },
		Replayable: func(err error) bool { return !errors.Is(err, lost) }}
	r := prepare(t, "a")
	q.Submit(r)
	if !errors.Is(r.Err, lost) || calls != 1 {
		t.Errorf("err %v after %d writes, want the lost connection after 1", r.Err, calls)
	}
}

func TestPrepareRejects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	tests := []struct {
		name    string
		ctx     context.Context
		stack   string
		changes []state.Change
		events  []state.Event
	}{
		{"empty stack", ctx, "", nil, nil},
		{"invalid change", ctx, "s", []state.Change{{Kind: state.PutResource}}, nil},
		{"other deployment's event", ctx, "s", nil, []state.Event{{DeploymentID: "other"}}},
		{"negative seq", ctx, "s", nil, []state.Event{{Seq: -1}}},
		{"cancelled", cancelled, "s", nil, nil},
	}
	for _, tt := range tests {
		if _, err := commitqueue.Prepare(tt.ctx, "d", tt.stack, tt.changes, tt.events); err == nil {
			t.Errorf("%s: Prepare() = nil error", tt.name)
		}
	}
	events := []state.Event{{Status: "X"}}
	r, err := commitqueue.Prepare(ctx, "d", "s", nil, events)
	if err != nil || r.Events[0].DeploymentID != "d" || r.Events[0].Stack != "s" || events[0].DeploymentID != "" {
		t.Errorf("Prepare events = %+v (%v); caller's slice %+v must stay as it was", r.Events, err, events)
	}
}

// TestJournalEncoding: the journal bytes are json.Marshal's of the changes, and each resource row's value
// json.Marshal's of the resource, whichever path encodes them; a later encoding (which reuses the journal
// buffer) leaves earlier results as they were.
func TestJournalEncoding(t *testing.T) {
	t.Parallel()
	r := &state.Resource{LogicalID: "a", Type: "T", Inputs: resource.Properties{"n": json.Number("1"), "h": "<&>"}}
	replaced := &state.Resource{LogicalID: "r", Replaced: []state.Object{{Type: "T", PhysicalID: "old"}}, Status: "S"}
	type result struct {
		changes []state.Change
		enc     []commitqueue.Change
		journal string
	}
	var results []result
	for range 2 {
		for _, changes := range [][]state.Change{
			nil,
			{{Kind: state.PutResource, Resource: r}},
			{{Kind: state.PutResource, Resource: r, LogicalID: "x", Status: "S", Outputs: resource.Properties{"o": "v"}, Dependencies: []string{"d"}}},
			{{Kind: state.PutResource, Resource: replaced}, {Kind: state.PutResource, Resource: r}},
			{{Kind: state.PutResource, Resource: r}, {Kind: state.DeleteResource, LogicalID: "b"},
				{Kind: state.PutStack, Status: "UPDATE_COMPLETE", Outputs: resource.Properties{"u": "v"}, Dependencies: []string{"x"}}, {Kind: state.PutStack}},
		} {
			enc, journal, err := commitqueue.EncodeChanges(changes)
			if err != nil {
				t.Fatal(err)
			}
			results = append(results, result{changes, enc, journal})
		}
	}
	for _, res := range results {
		want, _ := json.Marshal(append([]state.Change{}, res.changes...))
		if diff := cmp.Diff(string(want), res.journal); diff != "" {
			t.Errorf("journal (-json.Marshal +EncodeChanges):\n%s", diff)
		}
		for i, c := range res.changes {
			var want []byte
			switch c.Kind {
			case state.PutResource:
				want, _ = json.Marshal(c.Resource)
			case state.PutStack:
				if want, _ = json.Marshal(c.Outputs); c.Outputs == nil {
					want = []byte("{}")
				}
			}
			if diff := cmp.Diff(string(want), res.enc[i].Data); diff != "" {
				t.Errorf("change %d's row value (-json.Marshal +EncodeChanges):\n%s", i, diff)
			}
		}
	}
}
