package operation_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// lockStore is a fake operation.LockStore built from function fields; nil fields fail the test's call.
type lockStore struct {
	locks  func(context.Context) ([]state.LockInfo, error)
	unlock func(ctx context.Context, stack, id string) error
}

func (s lockStore) Locks(ctx context.Context) ([]state.LockInfo, error) { return s.locks(ctx) }
func (lockStore) Abilities() state.Abilities                            { return state.Abilities{} }
func (s lockStore) Unlock(ctx context.Context, stack, id string) error {
	return s.unlock(ctx, stack, id)
}

// leasedStore is a lockStore whose locks are a state service's leases.
type leasedStore struct{ lockStore }

func (leasedStore) Abilities() state.Abilities {
	return state.Abilities{LeasedLocks: true, CancelOthers: true}
}

// lockOn takes the lock of stack for holder on the fixture's backend.
func lockOn(t *testing.T, fx *fixture, stack, id string, heartbeat time.Time) state.LockInfo {
	t.Helper()
	info := state.LockInfo{ID: id, Stack: stack, Operation: "deploy", User: "alice", Host: "ci-7", PID: 4242,
		StartedAt: heartbeat, HeartbeatAt: heartbeat}
	if err := fx.env.Backend.Lock(context.Background(), info); err != nil {
		t.Fatal(err)
	}
	return info
}

// TestLocks: each held lock comes with the verdict a run would reach on it; none held is an empty list.
func TestLocks(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, 0)
	ctx := context.Background()
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	if got, err := operation.Locks(ctx, fx.env.Backend, "", now); err != nil || len(got) != 0 {
		t.Fatalf("Locks() of no lock = %v, %v; want none", got, err)
	}
	lockOn(t, fx, "App", "fresh", now.Add(-time.Second))
	lockOn(t, fx, "Zones", "old", now.Add(-time.Hour))
	got, err := operation.Locks(ctx, fx.env.Backend, "", now)
	if err != nil {
		t.Fatal(err)
	}
	type verdict struct {
		Stack, ID string
		Stale     bool
		Why       bool
	}
	var gotV []verdict
	for _, l := range got {
		gotV = append(gotV, verdict{l.Stack, l.ID, l.Stale, l.Why != ""})
	}
	want := []verdict{{"App", "fresh", false, false}, {"Zones", "old", true, true}}
	if diff := cmp.Diff(want, gotV); diff != "" {
		t.Errorf("Locks() (-want +got):\n%s", diff)
	}
}

// TestUnlock: every lock with the ID goes, others stay; an unknown ID says how to list the locks; the
// backend's failure is the run's.
func TestUnlock(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, 0)
	ctx := context.Background()
	now := time.Now().UTC()
	a := lockOn(t, fx, "App", "gone", now)
	z := lockOn(t, fx, "Zones", "gone", now)
	lockOn(t, fx, "Other", "alive", now)
	var told []string
	removed, err := operation.Unlock{Backend: fx.env.Backend, ID: "gone", OnRemoved: func(l state.LockInfo) { told = append(told, l.Stack) }}.Run(ctx)
	if err != nil {
		t.Fatalf("Unlock(gone) = %v", err)
	}
	if diff := cmp.Diff([]string{a.Stack, z.Stack}, told); diff != "" {
		t.Errorf("OnRemoved stacks (-want +got):\n%s", diff)
	}
	if len(removed) != 2 || removed[0].ID != "gone" || removed[1].Stack != "Zones" {
		t.Errorf("Unlock(gone) removed %v", removed)
	}
	left, _ := fx.env.Backend.Locks(ctx)
	if len(left) != 1 || left[0].ID != "alive" {
		t.Errorf("locks left = %v, want only alive's", left)
	}

	_, err = operation.Unlock{Backend: fx.env.Backend, ID: "nope"}.Run(ctx)
	if want := "no lock with ID nope; cdkx unlock lists the held locks"; err == nil || err.Error() != want {
		t.Errorf("Unlock(nope) = %v, want %q", err, want)
	}

	boom := errors.New("boom")
	failing := lockStore{locks: func(context.Context) ([]state.LockInfo, error) { return []state.LockInfo{a}, nil },
		unlock: func(context.Context, string, string) error { return boom }}
	if _, err := (operation.Unlock{Backend: failing, ID: "gone"}).Run(ctx); !errors.Is(err, boom) {
		t.Errorf("Unlock() on a failing backend = %v, want %v", err, boom)
	}
}
