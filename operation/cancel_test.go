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

// TestCancel: on a state service the stack's lock is removed by its holder's ID and the holder returned;
// a stack without a lock is an error; local state (SQLite) is ErrNoService and nothing is removed.
func TestCancel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	held := []state.LockInfo{{ID: "l1", Stack: "App", Operation: "deploy"}, {ID: "l2", Stack: "Zones", Operation: "refresh"}}
	var unlocked []string
	svc := leasedStore{lockStore{
		locks: func(context.Context) ([]state.LockInfo, error) { return held, nil },
		unlock: func(_ context.Context, stack, id string) error {
			unlocked = append(unlocked, stack+"/"+id)
			return nil
		},
	}}
	got, err := operation.Cancel{Backend: svc, Stack: "Zones"}.Run(ctx)
	if err != nil || got.ID != "l2" {
		t.Fatalf("Cancel(Zones) = %v, %v; want lock l2", got, err)
	}
	if diff := cmp.Diff([]string{"Zones/l2"}, unlocked); diff != "" {
		t.Errorf("unlocked (-want +got):\n%s", diff)
	}
	_, err = operation.Cancel{Backend: svc, Stack: "Mail"}.Run(ctx)
	if want := "stack Mail has no running update to cancel"; err == nil || err.Error() != want {
		t.Errorf("Cancel(Mail) = %v, want %q", err, want)
	}

	fx := newFixture(t, 0)
	lockOn(t, fx, "App", "local", time.Now().UTC())
	if _, err := (operation.Cancel{Backend: fx.env.Backend, Stack: "App"}).Run(ctx); !errors.Is(err, operation.ErrNoService) {
		t.Errorf("Cancel() on SQLite = %v, want ErrNoService", err)
	}
	if left, _ := fx.env.Backend.Locks(ctx); len(left) != 1 {
		t.Errorf("locks after a refused cancel = %v, want App's still held", left)
	}
}
