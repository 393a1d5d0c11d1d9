package statecmd_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/statecmd"
	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/pkg/backend/sqlite"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

func open(t *testing.T, name string) state.Backend {
	t.Helper()
	b, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// TestExportImportRoundTrip moves a stack's state from one backend to another through the export JSON:
// resources, outputs and dependencies arrive unchanged; a resource only in the target goes.
func TestExportImportRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src, dst := open(t, "src.db"), open(t, "dst.db")
	now := time.Date(2026, 11, 21, 7, 0, 0, 0, time.UTC)
	res := func(id, phys string, deps ...string) *state.Resource {
		return &state.Resource{LogicalID: id, Type: "Fake::Test::Thing", Provider: "fake", PhysicalID: phys,
			Inputs:  resource.Properties{"ttl": json.Number("300"), "list": []any{"a", json.Number("1.5")}},
			Outputs: resource.Properties{"crn": "crn:" + phys}, Dependencies: deps, Status: "CREATE_COMPLETE", UpdatedAt: now}
	}
	if _, err := src.Commit(ctx, "d1", "App", []state.Change{
		{Kind: state.PutResource, Resource: res("A", "p-a")},
		{Kind: state.PutResource, Resource: res("B", "p-b", "A")},
		{Kind: state.PutStack, Status: "CREATE_COMPLETE", Outputs: resource.Properties{"Url": "https://x"}, Dependencies: []string{"Zones"}},
	}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := dst.Commit(ctx, "d0", "App", []state.Change{{Kind: state.PutResource, Resource: res("Old", "p-old")}}, nil); err != nil {
		t.Fatal(err)
	}
	st, _ := src.GetStack(ctx, "App")
	data, err := json.Marshal(struct {
		Stacks []statecmd.Export `json:"stacks"`
	}{[]statecmd.Export{statecmd.ToExport(st)}})
	if err != nil {
		t.Fatal(err)
	}
	stacks, err := statecmd.ParseExport(data)
	if err != nil {
		t.Fatal(err)
	}
	d, err := engine.ImportState(ctx, dst, stacks[0], engine.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := dst.GetStack(ctx, "App")
	if diff := cmp.Diff(st.SortedResources(), got.SortedResources()); diff != "" {
		t.Errorf("resources after import (-source +target):\n%s", diff)
	}
	if diff := cmp.Diff(st.Outputs, got.Outputs); diff != "" {
		t.Errorf("outputs (-source +target):\n%s", diff)
	}
	if d.Kind != state.KindImport || d.Status != state.StatusCompleted || got.Version != d.Version || got.Version != 2 {
		t.Errorf("deployment %+v, target version %d", d, got.Version)
	}

	// Invalid input changes nothing.
	for _, bad := range []string{`[1]`, `{"name":"App","resources":[{"logicalId":"A","type":"T::T::T","provider":"p","physicalId":"x","outputs":{"crn":"c"},"pending":{"op":"creating","startedAt":"2026-11-21T00:00:00Z"}}]}`, `{"name":"App","bogus":1}`} {
		stacks, err := statecmd.ParseExport([]byte(bad))
		if err == nil {
			_, err = engine.ImportState(ctx, dst, stacks[0], engine.Options{})
		}
		if err == nil {
			t.Errorf("import of %s: no error", bad)
		}
		after, _ := dst.GetStack(ctx, "App")
		if after.Version != got.Version {
			t.Errorf("import of %s changed the state (version %d → %d)", bad, got.Version, after.Version)
		}
	}
	if _, err := statecmd.ParseExport([]byte(`{"name":"App","resources":[{"logicalId":"A"},{"logicalId":"A"}]}`)); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("duplicate resource: %v", err)
	}
}
