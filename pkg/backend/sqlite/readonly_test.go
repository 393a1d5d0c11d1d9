package sqlite

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/pressly/goose/v3"

	"github.com/cdkx-dev/cdkx/pkg/backend/internal/sqlschema"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// dirEntries lists the names in dir, recursively, sorted.
func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			rel, _ := filepath.Rel(dir, p)
			names = append(names, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	return names
}

// checkRefusesWrites checks that every kind of write fails with ErrReadOnly.
func checkRefusesWrites(t *testing.T, b *Backend) {
	t.Helper()
	ctx := t.Context()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	writes := map[string]func() error{
		"Commit": func() error {
			_, err := b.Commit(ctx, "d1", "web", []state.Change{{Kind: state.PutStack, Status: "CREATE_COMPLETE"}}, nil)
			return err
		},
		"CreateDeployments": func() error {
			return b.CreateDeployments(ctx, []*state.Deployment{{ID: "d9", Stack: "web", Kind: state.KindDeploy,
				Status: state.StatusPending, CreatedAt: t0}})
		},
		"Lock": func() error {
			return b.Lock(ctx, state.LockInfo{ID: "l1", Stack: "web", StartedAt: t0, HeartbeatAt: t0})
		},
		"Unlock": func() error { return b.Unlock(ctx, "web", "l1") },
	}
	for name, write := range writes {
		if err := write(); !errors.Is(err, ErrReadOnly) {
			t.Errorf("%s() on a read-only backend = %v, want ErrReadOnly", name, err)
		}
	}
}

func TestOpenReadOnlyMissingFileCreatesNothing(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	path := filepath.Join(dir, ".cdkx", "state.db")
	b, err := OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatalf("OpenReadOnly() = %v", err)
	}
	stacks, err := b.ListStacks(ctx)
	if err != nil || len(stacks) != 0 {
		t.Errorf("ListStacks() = %v, %v; want none", stacks, err)
	}
	st, err := b.GetStack(ctx, "App")
	if err != nil {
		t.Fatalf("GetStack() = %v", err)
	}
	if diff := cmp.Diff(state.NewStack("App"), st); diff != "" {
		t.Errorf("GetStack() of an empty state (-want +got):\n%s", diff)
	}
	ds, err := b.ListDeployments(ctx, state.DeploymentFilter{})
	if err != nil || len(ds) != 0 {
		t.Errorf("ListDeployments() = %v, %v; want none", ds, err)
	}
	if _, err := b.GetDeployment(ctx, "d1"); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("GetDeployment() = %v, want ErrNotFound", err)
	}
	checkRefusesWrites(t, b)
	if err := b.Close(); err != nil {
		t.Errorf("Close() = %v", err)
	}
	if got := dirEntries(t, dir); len(got) != 0 {
		t.Errorf("OpenReadOnly() of a missing file left %v in the folder, want nothing", got)
	}
}

func TestOpenReadOnlyReadsExistingState(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	w := mustOpen(t, path)
	if _, err := w.Commit(ctx, "d1", "web", []state.Change{{Kind: state.PutStack, Status: "CREATE_COMPLETE",
		Outputs: resource.Properties{"zone": "example.org."}}}, nil); err != nil {
		t.Fatal(err)
	}
	want, err := w.GetStack(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	before := dirEntries(t, dir)

	b, err := OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatalf("OpenReadOnly() = %v", err)
	}
	got, err := b.GetStack(ctx, "web")
	if err != nil {
		t.Fatalf("GetStack() = %v", err)
	}
	if diff := cmp.Diff(want, got, cmpTimes); diff != "" {
		t.Errorf("GetStack() read-only (-want +got):\n%s", diff)
	}
	checkRefusesWrites(t, b)
	if err := b.Close(); err != nil {
		t.Errorf("Close() = %v", err)
	}
	if diff := cmp.Diff(before, dirEntries(t, dir)); diff != "" {
		t.Errorf("files after a read-only open (-before +after):\n%s", diff)
	}
}

func TestOpenReadOnlyMigratesOlderSchema(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := openPool(ctx, path, writerParams(), 1)
	if err != nil {
		t.Fatal(err)
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, db, sqlschema.Migrations(), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatalf("OpenReadOnly() of an older schema = %v, want it migrated", err)
	}
	defer func() { _ = b.Close() }()
	if _, err := b.ListDeployments(ctx, state.DeploymentFilter{}); err != nil {
		t.Errorf("ListDeployments() after the migration = %v", err)
	}
}
