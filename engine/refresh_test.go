package engine_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/engine/enginetest"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// TestRefreshRecoversPendingOperations writes the records an interrupted run leaves behind (a pending
// operation before each provider call) and checks that Refresh settles each by reading the provider.
func TestRefreshRecoversPendingOperations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cloud := enginetest.NewCloud()
	reg := engine.NewRegistry(cloud)
	b := openBackend(t)
	now := time.Now().UTC()
	pending := func(op state.PendingOp, inputs resource.Properties, physicalID string) *state.PendingOperation {
		return &state.PendingOperation{Op: op, Inputs: inputs, PhysicalID: physicalID, StartedAt: now}
	}
	rec := func(id, physicalID string, inputs resource.Properties, p *state.PendingOperation) *state.Resource {
		return &state.Resource{LogicalID: id, Type: enginetest.CloudType, Provider: "fake", PhysicalID: physicalID,
			Inputs: inputs, Outputs: resource.Properties{"id": physicalID}, Status: "X", Pending: p}
	}
	createdID := cloud.Put(resource.Properties{"key": "made", "value": "v"}) // created, result never recorded
	updatedID := cloud.Put(resource.Properties{"key": "upd", "value": "new"})
	deletedKeptID := cloud.Put(resource.Properties{"key": "del-kept", "value": "v"})
	liveID := cloud.Put(resource.Properties{"key": "rep", "value": "new"})
	oldKeptID := cloud.Put(resource.Properties{"key": "rep-old-kept", "value": "old"})
	replaced := func(id, live, old string) *state.Resource {
		r := rec(id, live, resource.Properties{"key": "rep", "value": "new"}, pending("deleting", nil, old))
		r.Replaced = []state.Object{{Type: enginetest.CloudType, Provider: "fake", PhysicalID: old}}
		return r
	}
	changes := []state.Change{
		{Kind: state.PutResource, Resource: replaced("RepGone", liveID, "fake-old-gone")},
		{Kind: state.PutResource, Resource: replaced("RepKept", liveID, oldKeptID)},
		{Kind: state.PutResource, Resource: rec("Made", "", nil, pending("creating", resource.Properties{"key": "made", "value": "v"}, ""))},
		{Kind: state.PutResource, Resource: rec("NotMade", "", nil, pending("creating", resource.Properties{"key": "never", "value": "v"}, ""))},
		{Kind: state.PutResource, Resource: rec("Upd", updatedID, resource.Properties{"key": "upd", "value": "old"},
			pending("updating", resource.Properties{"key": "upd", "value": "new"}, updatedID))},
		{Kind: state.PutResource, Resource: rec("DelGone", "fake-gone", resource.Properties{"key": "g"}, pending("deleting", nil, "fake-gone"))},
		{Kind: state.PutResource, Resource: rec("DelKept", deletedKeptID, resource.Properties{"key": "del-kept", "value": "v"}, pending("deleting", nil, deletedKeptID))},
	}
	if _, err := b.Commit(ctx, "crashed", "S", changes, nil); err != nil {
		t.Fatal(err)
	}
	st, _ := b.GetStack(ctx, "S")
	if n := engine.PendingOperations([]*state.Stack{st}); n != 7 {
		t.Fatalf("PendingOperations = %d, want 7", n)
	}
	var events []engine.Event
	res, err := engine.Refresh(ctx, []*state.Stack{st}, engine.Options{Backend: b, Providers: reg,
		OnEvent: func(e engine.Event) { events = append(events, e) }}, engine.RefreshOptions{PendingOnly: true})
	if err != nil || len(res.Failures) > 0 {
		t.Fatalf("Refresh: %v %+v", err, res.Failures)
	}
	st, _ = b.GetStack(ctx, "S")
	got := map[string]string{}
	for id, r := range st.Resources {
		got[id] = r.Status + " " + r.PhysicalID + fmt.Sprintf(" replaced=%d", len(r.Replaced))
		if r.Pending != nil {
			t.Errorf("%s still has a pending operation", id)
		}
	}
	want := map[string]string{
		"Made":    "CREATE_COMPLETE " + createdID + " replaced=0",
		"Upd":     "UPDATE_COMPLETE " + updatedID + " replaced=0",
		"DelKept": "DELETE_FAILED " + deletedKeptID + " replaced=0",
		"RepGone": "X " + liveID + " replaced=0",
		"RepKept": "X " + liveID + " replaced=1",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("records after recovery (-want +got):\n%s", diff)
	}
	if v := st.Resources["Upd"].Inputs["value"]; v != "new" {
		t.Errorf("Upd inputs value = %v, want the live value new", v)
	}
	if len(events) != 7 {
		t.Errorf("got %d events, want one per reconciled resource: %+v", len(events), events)
	}
	ds, _ := b.ListDeployments(ctx, state.DeploymentFilter{Stack: "S"})
	if len(ds) != 1 || ds[0].Kind != state.KindRefresh || ds[0].Status != state.StatusCompleted {
		t.Errorf("deployments = %+v, want one completed refresh", ds)
	}
}

// TestRefreshDetectsDrift changes and deletes objects out of band: a refresh records both, and a dry run
// reports the same without writing.
func TestRefreshDetectsDrift(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cloud := enginetest.NewCloud()
	reg := engine.NewRegistry(cloud)
	b := openBackend(t)
	a := mkAssembly(map[string]string{"A": "a", "B": "b", "C": "c"})
	if res, _ := deploy(t, a, b, reg, 2); res.Err() != nil {
		t.Fatal(res.Err())
	}
	st, _ := b.GetStack(ctx, "S")
	cloud.Set(st.Resources["A"].PhysicalID, resource.Properties{"key": "kA", "value": "changed by hand"})
	cloud.Remove(st.Resources["B"].PhysicalID)
	for _, dry := range []bool{true, false} {
		var statuses []string
		res, err := engine.Refresh(ctx, []*state.Stack{st}, engine.Options{Backend: b, Providers: reg,
			OnEvent: func(e engine.Event) { statuses = append(statuses, e.LogicalID+" "+string(e.Status)) }}, engine.RefreshOptions{DryRun: dry})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(map[engine.Status]int{engine.Modified: 1, engine.Deleted: 1, engine.InSync: 1}, res.Counts); diff != "" {
			t.Errorf("dry=%t counts (-want +got):\n%s", dry, diff)
		}
		if got := res.Stacks["S"].Resources["A"].Inputs["value"]; got != "changed by hand" {
			t.Errorf("dry=%t: refreshed A value = %v", dry, got)
		}
		if _, ok := res.Stacks["S"].Resources["B"]; ok {
			t.Errorf("dry=%t: B still in the refreshed stack", dry)
		}
		after, _ := b.GetStack(ctx, "S")
		if _, kept := after.Resources["B"]; kept != dry {
			t.Errorf("dry=%t: B in stored state = %t", dry, kept)
		}
	}
	// The next deploy corrects the drift: A updated back, B re-created.
	res, _ := deploy(t, a, b, reg, 2)
	if diff := cmp.Diff(map[engine.Status]int{engine.UpdateComplete: 1, engine.CreateComplete: 1, engine.NoChanges: 1}, res.Counts); diff != "" {
		t.Errorf("correcting deploy counts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(normalize(cloud.Objects()), normalize(objectsInState(t, b, "S"))); diff != "" {
		t.Errorf("provider vs state (-provider +state):\n%s", diff)
	}
}
