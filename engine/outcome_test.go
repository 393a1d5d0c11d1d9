package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/engine/enginetest"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// lateCloud is a provider whose creates may lose their answer, as a create behind a transport whose
// response timeout ended before the API answered: the object is made (or not) and the call fails with
// resource.ErrOutcomeUnknown. Objects are named by "v" (unique), and Locate finds them by it.
type lateCloud struct {
	mu      sync.Mutex
	live    map[string]string // physical ID → name
	creates int
	// lost says, for the n-th create (from 1), whether its answer is lost and whether it made its object.
	lost func(n int) (lost, made bool)
}

func (c *lateCloud) provider(canLocate bool) *enginetest.Provider {
	p := &enginetest.Provider{
		InfoValue: resource.ProviderInfo{Name: "p", CanLocate: canLocate,
			Schemas: []resource.Schema{{Type: "P::Test::Zone", Outputs: []string{"serial"},
				Properties: map[string]resource.PropertySchema{"v": {Kind: resource.KindString, CreateOnly: true}}}}},
		CreateFunc: func(_ context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.creates++
			name := req.Properties["v"].(string)
			for _, n := range c.live {
				if n == name {
					return resource.CreateResult{}, fmt.Errorf("zone %s exists and is not in state: import it or delete it: %w", name, resource.ErrAlreadyExists)
				}
			}
			lost, made := c.lost(c.creates)
			id := fmt.Sprintf("zone-%d", c.creates)
			if made || !lost {
				c.live[id] = name
			}
			if lost {
				return resource.CreateResult{}, fmt.Errorf("p: POST /zones: no answer after the request was sent: %w", resource.ErrOutcomeUnknown)
			}
			return resource.CreateResult{PhysicalID: id, Outputs: resource.Properties{"serial": 1}}, nil
		},
		ReadFunc: func(_ context.Context, req resource.ReadRequest) (resource.ReadResult, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			name, ok := c.live[req.PhysicalID]
			if !ok {
				return resource.ReadResult{}, resource.ErrNotFound
			}
			return resource.ReadResult{Properties: resource.Properties{"v": name}, Outputs: resource.Properties{"serial": 1}}, nil
		},
	}
	if canLocate {
		p.LocateFunc = func(_ context.Context, req resource.CreateRequest) (string, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			for id, n := range c.live {
				if n == req.Properties["v"] {
					return id, nil
				}
			}
			return "", resource.ErrNotFound
		}
	}
	return p
}

// TestLostCreateAnswerIsLocatedNotRepeated: a create whose answer was lost (resource.ErrOutcomeUnknown) is
// settled by locating its object, never by sending it blindly again: found → recorded, absent → sent once
// more, no way to locate → the run stops with the create pending, and the next deploy stops there too.
func TestLostCreateAnswerIsLocatedNotRepeated(t *testing.T) {
	t.Parallel()
	never := func(int) (bool, bool) { return false, false }
	for _, tc := range []struct {
		name      string
		canLocate bool
		lost      func(n int) (lost, made bool)
		// wantCreates is how many creates reached the provider; wantLive what it holds after the run.
		wantCreates int
		wantLive    map[string]string
		// wantState is physical ID → name in state ("" key: a record without an object, still pending).
		wantState map[string]string
		wantErr   string // "" for success
	}{
		{name: "answer lost after the zone was made", canLocate: true,
			lost:        func(n int) (bool, bool) { return n == 1, true },
			wantCreates: 1, wantLive: map[string]string{"zone-1": "a.example."}, wantState: map[string]string{"zone-1": "a.example."}},
		{name: "answer lost before the zone was made", canLocate: true,
			lost:        func(n int) (bool, bool) { return n == 1, false },
			wantCreates: 2, wantLive: map[string]string{"zone-2": "a.example."}, wantState: map[string]string{"zone-2": "a.example."}},
		{name: "answer lost twice and the zone never made", canLocate: true,
			lost:        func(int) (bool, bool) { return true, false },
			wantCreates: 2, wantLive: map[string]string{}, wantState: map[string]string{},
			wantErr: "looked up and does not exist, so the create failed"},
		{name: "answer lost and the provider cannot locate", canLocate: false,
			lost:        func(n int) (bool, bool) { return n == 1, true },
			wantCreates: 1, wantLive: map[string]string{"zone-1": "a.example."}, wantState: map[string]string{"": "pending"},
			wantErr: "cannot look objects up by their inputs: check the provider for the object of Z"},
		{name: "answer not lost", canLocate: true, lost: never,
			wantCreates: 1, wantLive: map[string]string{"zone-1": "a.example."}, wantState: map[string]string{"zone-1": "a.example."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := &lateCloud{live: map[string]string{}, lost: tc.lost}
			reg := engine.NewRegistry(c.provider(tc.canLocate))
			b := openBackend(t)
			a := oneStack(&assembly.Resource{LogicalID: "Z", Type: "P::Test::Zone", Provider: "p", Path: "resources.Z",
				Properties: resource.Properties{"v": "a.example."}})
			res, rec := deploy(t, a, b, reg, 1)
			if err := res.Err(); (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("deploy error = %v, want one containing %q", err, tc.wantErr)
			}
			c.mu.Lock()
			if c.creates != tc.wantCreates {
				t.Errorf("creates sent = %d, want %d", c.creates, tc.wantCreates)
			}
			if diff := cmp.Diff(tc.wantLive, c.live); diff != "" {
				t.Errorf("zones at the provider (-want +got):\n%s", diff)
			}
			c.mu.Unlock()
			st, err := b.GetStack(t.Context(), "S")
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, r := range st.Resources {
				switch {
				case r.Pending != nil && r.PhysicalID == "" && r.Pending.Op == state.PendingCreate:
					got[""] = "pending"
				case r.Pending == nil:
					got[r.PhysicalID], _ = r.Inputs["v"].(string)
				default:
					t.Errorf("record %s: physical ID %q, pending %+v", r.LogicalID, r.PhysicalID, r.Pending)
				}
			}
			if diff := cmp.Diff(tc.wantState, got); diff != "" {
				t.Errorf("state (-want +got):\n%s", diff)
			}
			if _, pending := got[""]; !pending { // a kept pending create is unsettled on purpose
				validState(t, b, "S")
			}
			if tc.wantErr != "" {
				return
			}
			if lost, made := tc.lost(1); !lost || !made {
				return
			}
			located := false
			for _, e := range rec.events {
				located = located || (e.Status == engine.CreateComplete && strings.Contains(e.Reason, "looked up and recorded"))
			}
			if !located {
				t.Errorf("no CREATE_COMPLETE event says the zone was looked up: %v", rec.events)
			}
		})
	}
}

// TestLostCreateAnswerWithoutLocateStopsTheNextDeploy: the create left pending because the provider cannot
// locate stays pending: the next run's recovery stops and says what to check by hand, and creates nothing.
func TestLostCreateAnswerWithoutLocateStopsTheNextDeploy(t *testing.T) {
	t.Parallel()
	c := &lateCloud{live: map[string]string{}, lost: func(n int) (bool, bool) { return n == 1, true }}
	reg := engine.NewRegistry(c.provider(false))
	b := openBackend(t)
	a := oneStack(&assembly.Resource{LogicalID: "Z", Type: "P::Test::Zone", Provider: "p", Path: "resources.Z",
		Properties: resource.Properties{"v": "a.example."}})
	if res, _ := deploy(t, a, b, reg, 1); res.Err() == nil {
		t.Fatal("first deploy succeeded, want it to stop on the unsettled create")
	}
	st, err := b.GetStack(t.Context(), "S")
	if err != nil {
		t.Fatal(err)
	}
	res, err := engine.Refresh(t.Context(), []*state.Stack{st}, engine.Options{Backend: b, Providers: reg},
		engine.RefreshOptions{PendingOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Err(); err == nil || !strings.Contains(err.Error(), "cannot look objects up by their inputs") {
		t.Errorf("recovery = %v, want it to stop and say what to check by hand", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.creates != 1 {
		t.Errorf("creates sent = %d, want 1", c.creates)
	}
}

// TestLostCreateAnswerInAnInterruptedRun: when the run was interrupted while a create's answer was lost and
// its object is not found (the request may still be on its way), the create is not sent again: it stays
// pending for the next deploy, which locates the object once it exists and records it. The provider call
// itself sees the interrupt (resource.Interrupted) without its context being cancelled.
func TestLostCreateAnswerInAnInterruptedRun(t *testing.T) {
	t.Parallel()
	c := &lateCloud{live: map[string]string{}, lost: func(n int) (bool, bool) { return n == 1, false }}
	p := c.provider(true)
	ctx, interrupt := context.WithCancel(context.Background())
	create := p.CreateFunc
	var sawInterrupt, sawCancel bool
	p.CreateFunc = func(cctx context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
		interrupt() // Ctrl-C while the create is in flight
		<-resource.Interrupted(cctx)
		sawInterrupt, sawCancel = true, cctx.Err() != nil
		return create(cctx, req)
	}
	reg := engine.NewRegistry(p)
	b := openBackend(t)
	a := oneStack(&assembly.Resource{LogicalID: "Z", Type: "P::Test::Zone", Provider: "p", Path: "resources.Z",
		Properties: resource.Properties{"v": "a.example."}})
	res, rec := deployCtx(ctx, t, a, b, reg, engine.Options{Concurrency: 1})
	if err := res.Err(); !errors.Is(err, engine.ErrInterrupted) {
		t.Fatalf("deploy error = %v, want the run interrupted (not failed: nothing to roll back)", err)
	}
	said := false
	for _, e := range rec.events {
		said = said || strings.Contains(e.Reason, "not found yet, and the run was interrupted, so the create was not sent again")
	}
	if !said {
		t.Errorf("no event says the create was left pending: %v", rec.events)
	}
	if !sawInterrupt || sawCancel {
		t.Errorf("the create saw the interrupt: %v, its context cancelled: %v; want true, false", sawInterrupt, sawCancel)
	}
	c.mu.Lock()
	if c.creates != 1 {
		t.Errorf("creates sent = %d, want 1", c.creates)
	}
	c.live["zone-late"] = "a.example." // the request held on its way arrives after the run
	c.mu.Unlock()
	st, err := b.GetStack(t.Context(), "S")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Resources) != 1 || st.Resources["Z"] == nil || st.Resources["Z"].Pending == nil || st.Resources["Z"].Pending.Op != state.PendingCreate {
		t.Fatalf("state after the interrupted run = %+v, want the create pending", st.Resources)
	}
	p.CreateFunc = create
	// The next deploy's recovery settles the pending create.
	rres, err := engine.Refresh(t.Context(), []*state.Stack{st}, engine.Options{Backend: b, Providers: reg},
		engine.RefreshOptions{PendingOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := rres.Err(); err != nil {
		t.Fatalf("recovery: %v", err)
	}
	st, err = b.GetStack(t.Context(), "S")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Resources) != 1 || st.Resources["Z"] == nil || st.Resources["Z"].PhysicalID != "zone-late" || st.Resources["Z"].Pending != nil {
		t.Errorf("state after recovery = %+v, want zone-late recorded", st.Resources)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.creates != 1 {
		t.Errorf("creates sent = %d, want still 1", c.creates)
	}
}
