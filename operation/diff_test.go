package operation_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/pkg/diag"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/planner"
)

// counts is a plan's create, update, replace and delete counts.
func counts(p *planner.Plan) [4]int {
	c, u, r, d := p.Counts()
	return [4]int{c, u, r, d}
}

// TestDiff: a diff plans against state and changes nothing — no provider write, no state version, no
// deployment; OnPlan sees the plan before Run returns it.
func TestDiff(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, 0)
	ctx := context.Background()
	fx.deploy(t, writeAssembly(t, fx, 2, "v1", "").Assembly)
	v, _ := fx.env.Backend.StackVersion(ctx, "S")
	a := writeAssembly(t, fx, 3, "v2", "")
	var seen *planner.Plan
	plan, err := operation.Diff{Env: fx.env, Assembly: a.Assembly, Selection: operation.Selection{Stacks: []string{"S"}},
		OnPending: func(n int) { t.Errorf("OnPending(%d) without pending operations", n) },
		OnPlan:    func(p *planner.Plan, _ diag.Diagnostics) { seen = p }}.Run(ctx)
	if err != nil {
		t.Fatalf("Diff() = %v", err)
	}
	if seen != plan {
		t.Error("OnPlan was not given the plan Run returned")
	}
	if got, want := counts(plan), [4]int{1, 2, 0, 0}; got != want {
		t.Errorf("Diff() counts = %v, want %v", got, want)
	}
	if diff := cmp.Diff(map[string]string{"R0": "v1", "R1": "v1"}, values(fx)); diff != "" {
		t.Errorf("objects after a diff (-want +got):\n%s", diff)
	}
	if after, _ := fx.env.Backend.StackVersion(ctx, "S"); after != v {
		t.Errorf("stack version after a diff = %d, want %d", after, v)
	}
	ds, _ := fx.env.Backend.ListDeployments(ctx, state.DeploymentFilter{})
	for _, d := range ds {
		if d.Kind == state.KindPlan {
			t.Errorf("a diff recorded plan deployment %s", d.ID)
		}
	}
}

// TestDiffRecord: --record records a plan deployment per stack, COMPLETED with its plan, and tells of each.
func TestDiffRecord(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, 0)
	ctx := context.Background()
	a := writeAssembly(t, fx, 2, "v1", "")
	var told []*state.Deployment
	if _, err := (operation.Diff{Env: fx.env, Assembly: a.Assembly, Files: a.files, Selection: operation.Selection{Stacks: []string{"S"}},
		Record: true, OnRecorded: func(d *state.Deployment) { told = append(told, d) }}).Run(ctx); err != nil {
		t.Fatalf("Diff(record) = %v", err)
	}
	if len(told) != 1 || told[0].Kind != state.KindPlan || told[0].Stack != "S" {
		t.Fatalf("OnRecorded = %+v, want one plan deployment of S", told)
	}
	got, err := fx.env.Backend.GetDeployment(ctx, told[0].ID)
	if err != nil || got.Status != state.StatusCompleted || got.Plan == nil || got.Plan.Create != 2 {
		t.Errorf("recorded plan = %+v, %v; want COMPLETED with 2 creates", got, err)
	}
	if len(fx.cloud.Objects()) != 0 {
		t.Errorf("a recorded plan created objects: %v", fx.cloud.Objects())
	}
}

// TestDiffPending: operations an interrupted run left pending are counted for OnPending and not settled;
// with Refresh they are read (nothing written) and OnPending is not called.
func TestDiffPending(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, 0)
	ctx := context.Background()
	fx.deploy(t, writeAssembly(t, fx, 2, "v1", "").Assembly)
	st, _ := fx.env.Backend.GetStack(ctx, "S")
	r := st.Resources["R1"]
	r.Pending = &state.PendingOperation{Op: state.PendingUpdate, PhysicalID: r.PhysicalID, Inputs: resource.Properties{"key": "k1", "value": "v9"}, StartedAt: r.UpdatedAt}
	if _, err := fx.env.Backend.Commit(ctx, "interrupted", "S", []state.Change{{Kind: state.PutResource, Resource: r}}, nil); err != nil {
		t.Fatal(err)
	}
	v, _ := fx.env.Backend.StackVersion(ctx, "S")
	a := writeAssembly(t, fx, 2, "v1", "")
	pending := 0
	if _, err := (operation.Diff{Env: fx.env, Assembly: a.Assembly, Selection: operation.Selection{Stacks: []string{"S"}},
		OnPending: func(n int) { pending = n }}).Run(ctx); err != nil {
		t.Fatalf("Diff() = %v", err)
	}
	if pending != 1 {
		t.Errorf("OnPending(%d), want 1", pending)
	}
	pending = 0
	calls := fx.cloud.Calls()
	if _, err := (operation.Diff{Env: fx.env, Assembly: a.Assembly, Selection: operation.Selection{Stacks: []string{"S"}}, Refresh: true,
		OnPending: func(n int) { pending = n }}).Run(ctx); err != nil {
		t.Fatalf("Diff(refresh) = %v", err)
	}
	if pending != 0 || fx.cloud.Calls() == calls {
		t.Errorf("Diff(refresh): OnPending(%d), %d provider call(s); want no OnPending and reads", pending, fx.cloud.Calls()-calls)
	}
	if after, _ := fx.env.Backend.StackVersion(ctx, "S"); after != v {
		t.Errorf("stack version after diff --refresh = %d, want %d (nothing written)", after, v)
	}
}

// TestDiffPlanError: a plan with errors is *PlanError with its diagnostics, and OnPlan sees them with no plan.
func TestDiffPlanError(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, 0)
	a := writeAssembly(t, fx, 1, "v1", "")
	var got diag.Diagnostics
	_, err := operation.Diff{Env: fx.env, Assembly: a.Assembly, Selection: operation.Selection{Stacks: []string{"S"}, Targets: []string{"Nope"}},
		OnPlan: func(p *planner.Plan, ds diag.Diagnostics) {
			if p != nil {
				t.Error("OnPlan was given a plan with errors")
			}
			got = ds
		}}.Run(context.Background())
	var pe *operation.PlanError
	if !errors.As(err, &pe) || !pe.Diagnostics.HasErrors() || len(got) != len(pe.Diagnostics) {
		t.Errorf("Diff(--target Nope) = %v (OnPlan had %d diagnostic(s)), want *PlanError", err, len(got))
	}
}
