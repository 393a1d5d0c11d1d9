package operation_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/engine/enginetest"
	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/planner"
)

// TestRecordedPlanKeepsValues: a proposal's stored plan holds each change's old and new values and a
// create's inputs, with write-only ones as (sensitive) and never in plain text.
func TestRecordedPlanKeepsValues(t *testing.T) {
	fx := newFixture(t, 0)
	ctx := context.Background()
	first := record(t, fx, writeAssembly(t, fx, 1, "v1", "hunter2-hunter2"), state.StatusProposed, "pass phrase")
	fx.deploy(t, writeAssembly(t, fx, 1, "v1", "hunter2-hunter2").Assembly)
	second := record(t, fx, writeAssembly(t, fx, 1, "v2", "swordfish-fish"), state.StatusProposed, "pass phrase")
	for _, tc := range []struct {
		name string
		d    *state.Deployment
		want state.PlanStep
	}{
		{"create", first, state.PlanStep{Resource: "S/R0", Stack: "S", LogicalID: "R0", Type: enginetest.CloudType, Op: "create",
			Inputs: map[string]any{"key": "k0", "value": "v1", "secret": resource.Sensitive}}},
		{"update", second, state.PlanStep{Resource: "S/R0", Stack: "S", LogicalID: "R0", Type: enginetest.CloudType, Op: "update",
			PhysicalID: "fake-1", Paths: []string{"properties.secret", "properties.value"},
			Changes: []state.PlanChange{{Name: "secret", Old: resource.Sensitive, New: resource.Sensitive}, {Name: "value", Old: "v1", New: "v2"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stored, err := fx.env.Backend.GetDeployment(ctx, tc.d.ID)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := json.Marshal(stored.Plan)
			for _, secret := range []string{"hunter2", "swordfish"} {
				if bytes.Contains(data, []byte(secret)) {
					t.Errorf("the stored plan holds the secret %q in plain text: %s", secret, data)
				}
			}
			if len(stored.Plan.Steps) != 1 {
				t.Fatalf("stored plan steps = %+v, want 1", stored.Plan.Steps)
			}
			got := stored.Plan.Steps[0]
			got.Digest = ""
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("stored step (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPlanRecordsReplacementAndNotes: a replacement records its order, and a step the harm its schema
// declares: ReplaceNote for a replacement, UpdateNote of each changed property for an update.
func TestPlanRecordsReplacementAndNotes(t *testing.T) {
	t.Parallel()
	schema := resource.Schema{Type: "T::S::Server", ReplaceNote: "its disk is lost", Properties: map[string]resource.PropertySchema{
		"serverType": {UpdateNote: "the server is powered off"},
		"labels":     {},
		"image":      {CreateOnly: true}}}
	step := func(id string, d planner.Decision) *planner.Step {
		return &planner.Step{Decision: d, Stack: "S", LogicalID: id, Type: schema.Type, Schema: schema,
			Old: &state.Resource{LogicalID: id, PhysicalID: "p-" + id}}
	}
	image := []planner.PropertyChange{{Name: "image", Old: "a", New: "b", CreateOnly: true}}
	p := &planner.Plan{Stacks: []string{"S"}, Steps: []*planner.Step{
		step("DeleteFirst", planner.Decision{Op: planner.OpReplace, Changes: image, DeleteBeforeReplace: true, Reason: "r"}),
		step("CreateFirst", planner.Decision{Op: planner.OpReplace, Changes: image, Reason: "r"}),
		step("Resize", planner.Decision{Op: planner.OpUpdate, Changes: []planner.PropertyChange{
			{Name: "labels", Old: map[string]any{}, New: map[string]any{"a": "b"}}, {Name: "serverType", Old: "cx22", New: "cx32"}}}),
		step("Relabel", planner.Decision{Op: planner.OpUpdate, Changes: []planner.PropertyChange{
			{Name: "labels", Old: map[string]any{}, New: map[string]any{"a": "b"}}}}),
	}}
	type got struct {
		Replacement string
		Notes       []string
	}
	var out []got
	for _, s := range operation.PlanRecords(p)["S"].Steps {
		out = append(out, got{s.Replacement, s.Notes})
	}
	want := []got{{state.ReplaceDeleteFirst, []string{"its disk is lost"}}, {state.ReplaceCreateFirst, []string{"its disk is lost"}},
		{"", []string{"the server is powered off"}}, {"", nil}}
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("PlanRecords() replacement and notes (-want +got):\n%s", diff)
	}
}
