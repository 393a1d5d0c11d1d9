package operation

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

func TestPlanDifferences(t *testing.T) {
	t.Parallel()
	step := func(old, new any, digest string) state.PlanStep {
		return state.PlanStep{Resource: "S/R", Stack: "S", LogicalID: "R", Type: "T", Op: "update",
			Paths: []string{"properties.value"}, Digest: digest, Changes: []state.PlanChange{{Name: "value", Old: old, New: new}}}
	}
	plan := func(values bool, steps ...state.PlanStep) *state.Plan {
		return &state.Plan{Update: len(steps), Steps: steps, Values: values}
	}
	create := state.PlanStep{Resource: "S/N", Type: "T", Op: "create", Inputs: map[string]any{"address": "10.0.0.1"}}
	evil := create
	evil.Inputs = map[string]any{"address": "10.0.0.66"}
	tests := []struct {
		name          string
		approved, now *state.Plan
		want          []string
	}{
		{"the same plan", plan(true, step("a", "b", "d1")), plan(true, step("a", "b", "d1")), nil},
		{"another new value", plan(true, step("a", "b", "d1")), plan(true, step("a", "EVIL", "d2")),
			[]string{`S/R: update value: approved "a" → "b", now "a" → "EVIL"`}},
		{"a create's input", plan(true, create), plan(true, evil),
			[]string{`S/N: create address: approved "10.0.0.1", now "10.0.0.66"`}},
		{"a step nobody approved", plan(true), plan(true, create), []string{"S/N: not in the approved plan; now create"}},
		{"an approved step gone", plan(true, create), plan(true), []string{"S/N: approved create; now no such step"}},
		{"another starting point", plan(true, step("a", "b", "d1")), plan(true, step("a", "b", "d2")),
			[]string{"S/R: update another starting point or values (digest)"}},
		// A plan recorded by an older cdkx carried no values: it binds its paths and digests.
		{"an older record, the same change", plan(false, state.LegacyStep(step("a", "b", "d1"))), plan(true, step("a", "b", "d1")), nil},
		{"an older record, another change", plan(false, state.LegacyStep(step("a", "b", "d1"))), plan(true, step("a", "EVIL", "d2")),
			[]string{"S/R: update another starting point or values (digest)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, planDifferences(tt.approved, tt.now)); diff != "" {
				t.Errorf("planDifferences (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMovedSince(t *testing.T) {
	t.Parallel()
	now := map[string]*state.Stack{"App": {Name: "App", Version: 5}, "Zones": {Name: "Zones", Version: 8}}
	tests := []struct {
		name string
		d    state.Deployment
		want []string
	}{
		{"nothing moved", state.Deployment{Stack: "App", StateVersion: 5, Plan: &state.Plan{Reads: map[string]int64{"Zones": 8}}}, nil},
		{"its own stack", state.Deployment{Stack: "App", StateVersion: 3, Plan: &state.Plan{Reads: map[string]int64{"Zones": 8}}},
			[]string{"stack App: version 3 → 5"}},
		// The plan changes because a stack it reads outputs from moved: stale, not tampered.
		{"a stack it reads", state.Deployment{Stack: "App", StateVersion: 5, Plan: &state.Plan{Reads: map[string]int64{"Zones": 7}}},
			[]string{"stack Zones: version 7 → 8"}},
		{"a stack it reads is gone", state.Deployment{Stack: "App", StateVersion: 5, Plan: &state.Plan{Reads: map[string]int64{"Old": 2}}},
			[]string{"stack Old: version 2 → 0"}},
		{"a record without reads", state.Deployment{Stack: "App", StateVersion: 5}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, movedSince(&tt.d, now)); diff != "" {
				t.Errorf("movedSince (-want +got):\n%s", diff)
			}
		})
	}
}
