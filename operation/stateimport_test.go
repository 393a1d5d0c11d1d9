package operation_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

func importedStack(name string) *state.Stack {
	st := state.NewStack(name)
	st.Resources["A"] = &state.Resource{LogicalID: "A", Type: "Fake::Test::Thing", Provider: "fake", PhysicalID: "p-a", Outputs: resource.Properties{"crn": "crn:p-a"},
		Status: "CREATE_COMPLETE", UpdatedAt: time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)}
	return st
}

// TestStateImport: each stack is imported in its own commit, recorded as an import deployment by the
// Env's author, with no lock left.
func TestStateImport(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, 0)
	ctx := context.Background()
	fx.env.CreatedBy = "erin@h"
	var told []string
	ds, err := operation.StateImport{Env: fx.env, Stacks: []*state.Stack{importedStack("App"), importedStack("Zones")},
		OnImported: func(st *state.Stack, _ *state.Deployment) { told = append(told, st.Name) }}.Run(ctx)
	if err != nil || len(ds) != 2 {
		t.Fatalf("StateImport() = %v, %v", ds, err)
	}
	for i, name := range []string{"App", "Zones"} {
		d := ds[i]
		if d.Stack != name || d.Kind != state.KindImport || d.Status != state.StatusCompleted || d.CreatedBy != "erin@h" {
			t.Errorf("deployment %d = %+v, want a COMPLETED import of %s by erin@h", i, d, name)
		}
		if got, _ := fx.env.Backend.GetStack(ctx, name); got.Resources["A"] == nil || got.Version != d.Version {
			t.Errorf("stack %s after import: %+v, want A at version %d", name, got, d.Version)
		}
	}
	if len(told) != 2 {
		t.Errorf("OnImported told of %v", told)
	}
	if locks, _ := fx.env.Backend.Locks(ctx); len(locks) != 0 {
		t.Errorf("locks left = %v", locks)
	}
}

// TestStateImportLocked: a stack locked by another run is not imported (*state.LockedError without a
// wait), and the stacks before it stay imported.
func TestStateImportLocked(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, 0)
	ctx := context.Background()
	lockOn(t, fx, "Zones", "other", time.Now().UTC())
	ds, err := operation.StateImport{Env: fx.env, Stacks: []*state.Stack{importedStack("App"), importedStack("Zones")}}.Run(ctx)
	var le *state.LockedError
	if !errors.As(err, &le) || le.Holder.ID != "other" {
		t.Fatalf("StateImport() = %v, want *state.LockedError held by other", err)
	}
	if len(ds) != 1 || ds[0].Stack != "App" {
		t.Errorf("imported before the lock = %v, want App's", ds)
	}
	if got, _ := fx.env.Backend.GetStack(ctx, "Zones"); len(got.Resources) != 0 {
		t.Errorf("Zones was imported under another's lock: %+v", got)
	}
}
