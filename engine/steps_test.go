package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/engine/enginetest"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// TestBrokenStepCallsNothing destroys a stack whose state has a record without a provider: its delete step
// breaks an invariant of its constructor, so it fails with that error without a provider call, and the
// record stays; the other record's object is deleted.
func TestBrokenStepCallsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cloud := enginetest.NewCloud()
	reg := engine.NewRegistry(cloud)
	b := openBackend(t)
	goodID := cloud.Put(resource.Properties{"key": "good", "value": "v"})
	changes := []state.Change{
		{Kind: state.PutResource, Resource: &state.Resource{LogicalID: "Good", Type: enginetest.CloudType, Provider: "fake",
			PhysicalID: goodID, Inputs: resource.Properties{"key": "good", "value": "v"}, Status: string(engine.CreateComplete)}},
		{Kind: state.PutResource, Resource: &state.Resource{LogicalID: "Bad", Type: enginetest.CloudType,
			PhysicalID: "fake-bad", Status: string(engine.CreateComplete)}},
	}
	if _, err := b.Commit(ctx, "seed", "S", changes, nil); err != nil {
		t.Fatal(err)
	}
	st, err := b.GetStack(ctx, "S")
	if err != nil {
		t.Fatal(err)
	}
	res, err := engine.Destroy(ctx, []*state.Stack{st}, engine.Options{Backend: b, Providers: reg})
	if err != nil {
		t.Fatal(err)
	}
	var failures []string
	for _, f := range res.Failures {
		failures = append(failures, fmt.Sprintf("%s %s: %v", f.LogicalID, f.Status, f.Err))
	}
	want := []string{`Bad DELETE_FAILED: engine: delete step of S/Bad without a type or provider ("` + enginetest.CloudType + `", "")`}
	if diff := cmp.Diff(want, failures); diff != "" {
		t.Errorf("failures (-want +got):\n%s", diff)
	}
	if n := cloud.Calls(); n != 1 {
		t.Errorf("provider calls = %d, want 1 (the delete of Good)", n)
	}
	st, _ = b.GetStack(ctx, "S")
	got := map[string]string{}
	for id, r := range st.Resources {
		got[id] = r.Status + " " + r.PhysicalID
	}
	if diff := cmp.Diff(map[string]string{"Bad": "DELETE_FAILED fake-bad"}, got); diff != "" {
		t.Errorf("records after destroy (-want +got):\n%s", diff)
	}
}
