package cli_test

import (
	"testing"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/planner"
)

// TestNeedsApproval: destructive asks for replacements and deletions only, any for every change, never
// never; a plan without changes never asks.
func TestNeedsApproval(t *testing.T) {
	t.Parallel()
	plan := func(ops ...planner.Op) *planner.Plan {
		p := &planner.Plan{}
		for _, op := range ops {
			if op == planner.OpDelete {
				p.Deletes = append(p.Deletes, &planner.Step{Decision: planner.Decision{Op: op}})
			} else {
				p.Steps = append(p.Steps, &planner.Step{Decision: planner.Decision{Op: op}})
			}
		}
		return p
	}
	for _, tc := range []struct {
		name  string
		level cli.Approval
		plan  *planner.Plan
		need  bool
		what  string
	}{
		{"no changes", cli.ApprovalAny, plan(planner.OpSame), false, ""},
		{"create, destructive", cli.ApprovalDestructive, plan(planner.OpCreate, planner.OpUpdate, planner.OpSame), false, ""},
		{"create, any", cli.ApprovalAny, plan(planner.OpCreate, planner.OpUpdate, planner.OpSame), true, "creates 1, updates 1 resource(s)"},
		{"replace", cli.ApprovalDestructive, plan(planner.OpReplace, planner.OpCreate), true, "replaces 1 resource(s)"},
		{"delete", cli.ApprovalDestructive, plan(planner.OpDelete, planner.OpDelete), true, "deletes 2 resource(s)"},
		{"all, any", cli.ApprovalAny, plan(planner.OpCreate, planner.OpReplace, planner.OpDelete), true, "creates 1, replaces 1, deletes 1 resource(s)"},
		{"never", cli.ApprovalNever, plan(planner.OpReplace, planner.OpDelete), false, ""},
	} {
		need, what := cli.NeedsApproval(tc.level, tc.plan)
		if need != tc.need || what != tc.what {
			t.Errorf("%s: NeedsApproval = %t, %q; want %t, %q", tc.name, need, what, tc.need, tc.what)
		}
	}
}
