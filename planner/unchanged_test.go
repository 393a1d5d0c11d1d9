package planner_test

import (
	"encoding/json"
	"testing"

	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/planner"
)

func TestStackChanges(t *testing.T) {
	stack := func(outputs resource.Properties, pending bool) map[string]*state.Stack {
		st := state.NewStack("App")
		st.Version, st.Outputs = 3, outputs
		st.Resources["R"] = &state.Resource{LogicalID: "R", Type: "T", PhysicalID: "p"}
		if pending {
			st.Resources["R"].Pending = &state.PendingOperation{Op: state.PendingUpdate}
		}
		return map[string]*state.Stack{"App": st}
	}
	step := func(stack string, op planner.Op) *planner.Step {
		return &planner.Step{Decision: planner.Decision{Op: op}, Stack: stack, LogicalID: "R", Type: "T"}
	}
	outs := resource.Properties{"Url": "https://example.test", "Port": json.Number("443")}
	tests := []struct {
		name string
		p    *planner.Plan
		want bool
	}{
		{"all same", &planner.Plan{Stacks: []string{"App", "Db"}, Steps: []*planner.Step{step("App", planner.OpSame)}, State: stack(outs, false),
			Outputs: map[string]resource.Properties{"App": {"Url": "https://example.test", "Port": json.Number("443.0")}}}, false},
		{"no resources, no outputs, never deployed", &planner.Plan{Stacks: []string{"App", "Db"}}, false},
		{"an update", &planner.Plan{Stacks: []string{"App", "Db"}, Steps: []*planner.Step{step("App", planner.OpSame), step("App", planner.OpUpdate)}, State: stack(outs, false),
			Outputs: map[string]resource.Properties{"App": outs}}, true},
		{"a create", &planner.Plan{Stacks: []string{"App", "Db"}, Steps: []*planner.Step{step("App", planner.OpCreate)}}, true},
		{"a change in another stack only", &planner.Plan{Stacks: []string{"App", "Db"}, Steps: []*planner.Step{step("App", planner.OpSame), step("Db", planner.OpReplace)},
			State: stack(outs, false), Outputs: map[string]resource.Properties{"App": outs}}, false},
		{"a delete", &planner.Plan{Stacks: []string{"App", "Db"}, Deletes: []*planner.Step{step("App", planner.OpDelete)}, State: stack(outs, false),
			Outputs: map[string]resource.Properties{"App": outs}}, true},
		{"a pending operation to settle", &planner.Plan{Stacks: []string{"App", "Db"}, Steps: []*planner.Step{step("App", planner.OpSame)}, State: stack(outs, true),
			Outputs: map[string]resource.Properties{"App": outs}}, true},
		{"an output changed", &planner.Plan{Stacks: []string{"App", "Db"}, Steps: []*planner.Step{step("App", planner.OpSame)}, State: stack(outs, false),
			Outputs: map[string]resource.Properties{"App": {"Url": "https://example.test", "Port": json.Number("8443")}}}, true},
		{"an output added", &planner.Plan{Stacks: []string{"App", "Db"}, Steps: []*planner.Step{step("App", planner.OpSame)}, State: stack(outs, false),
			Outputs: map[string]resource.Properties{"App": {"Url": "https://example.test", "Port": json.Number("443"), "New": "x"}}}, true},
		{"an output removed", &planner.Plan{Stacks: []string{"App", "Db"}, Steps: []*planner.Step{step("App", planner.OpSame)}, State: stack(outs, false),
			Outputs: map[string]resource.Properties{"App": {"Url": "https://example.test"}}}, true},
		{"not in the plan (--target left it out)", &planner.Plan{Stacks: []string{"Db"}, State: stack(outs, true)}, false},
		{"an output renamed", &planner.Plan{Stacks: []string{"App", "Db"}, Steps: []*planner.Step{step("App", planner.OpSame)}, State: stack(outs, false),
			Outputs: map[string]resource.Properties{"App": {"Url": "https://example.test", "Portt": json.Number("443")}}}, true},
	}
	for _, tt := range tests {
		if got := tt.p.StackChanges("App"); got != tt.want {
			t.Errorf("%s: StackChanges(App) = %v, want %v", tt.name, got, tt.want)
		}
	}
}
