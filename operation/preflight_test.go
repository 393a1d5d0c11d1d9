package operation_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/engine/enginetest"
	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// checking is the fake cloud with a Preflight of preflight's, counting its calls and what it was asked.
func checking(fx *fixture, preflight func(resource.PreflightRequest) ([]resource.PreflightProblem, error)) (calls *atomic.Int64, asked *[]string) {
	calls, asked = new(atomic.Int64), new([]string)
	c := fx.cloud
	fx.env.Providers = engine.NewRegistry(&enginetest.Provider{InfoValue: c.Info(), CreateFunc: c.Create, ReadFunc: c.Read,
		UpdateFunc: c.Update, DeleteFunc: c.Delete, LocateFunc: c.Locate,
		PreflightFunc: func(_ context.Context, req resource.PreflightRequest) ([]resource.PreflightProblem, error) {
			calls.Add(1)
			for _, r := range req.Resources {
				*asked = append(*asked, r.Stack+"/"+r.LogicalID)
			}
			return preflight(req)
		}})
	return calls, asked
}

// TestDeployPreflight: a deploy asks the provider's Preflight once, with the resources it creates, before
// anything is recorded or changed; a problem is a plan error at the resource's file and JSON path, and
// refused credentials are returned as they are.
func TestDeployPreflight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	refused := &resource.CredentialsError{Provider: "fake", Variables: "FAKE_TOKEN", Err: errors.New("401")}
	for _, tc := range []struct {
		name      string
		problems  []resource.PreflightProblem
		err       error
		wantDiags []string
		wantErr   error
	}{
		{name: "accepted"},
		{name: "a problem", problems: []resource.PreflightProblem{{Stack: "S", LogicalID: "R01",
			FieldError: resource.FieldError{Path: "value", Message: "the provider would refuse it"}}},
			wantDiags: []string{"S.json resources.R01.properties.value: the provider would refuse it"}},
		{name: "refused credentials", err: refused, wantErr: refused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fx := newFixture(t, 0)
			calls, asked := checking(fx, func(resource.PreflightRequest) ([]resource.PreflightProblem, error) { return tc.problems, tc.err })
			a := assemblyOf(2)
			a.Stacks[0].File = "S.json"
			_, _, err := operation.Deploy{Env: fx.env, Assembly: a, Selection: operation.Selection{Stacks: []string{"S"}}}.Run(ctx)
			var pe *operation.PlanError
			var diags []string
			if errors.As(err, &pe) {
				for _, d := range pe.Diagnostics {
					diags = append(diags, d.File+" "+d.Path+": "+d.Summary)
				}
			}
			if diff := cmp.Diff(tc.wantDiags, diags); diff != "" {
				t.Errorf("plan errors (-want +got):\n%s", diff)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("Deploy error = %v, want %v", err, tc.wantErr)
			}
			if calls.Load() != 1 {
				t.Errorf("Preflight called %d times, want once", calls.Load())
			}
			if diff := cmp.Diff([]string{"S/R00", "S/R01"}, *asked); diff != "" {
				t.Errorf("Preflight asked about (-want +got):\n%s", diff)
			}
			ds, lerr := fx.env.Backend.ListDeployments(ctx, state.DeploymentFilter{})
			if ok := tc.wantDiags == nil && tc.wantErr == nil; err == nil != ok || (len(ds) > 0) != ok || (len(fx.cloud.Objects()) > 0) != ok {
				t.Errorf("Deploy = %v with %d deployment(s) recorded (%v) and %d object(s) made; want all or nothing",
					err, len(ds), lerr, len(fx.cloud.Objects()))
			}
		})
	}
}

// TestDestroyChecksCredentials: refused credentials end a destroy before its question, with nothing
// recorded or deleted.
func TestDestroyChecksCredentials(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFixture(t, 0)
	if _, _, err := (operation.Deploy{Env: fx.env, Assembly: assemblyOf(2), Selection: operation.Selection{Stacks: []string{"S"}}}).Run(ctx); err != nil {
		t.Fatal(err)
	}
	refused := &resource.CredentialsError{Provider: "fake", Variables: "FAKE_TOKEN", Err: errors.New("401")}
	calls, _ := checking(fx, func(resource.PreflightRequest) ([]resource.PreflightProblem, error) { return nil, refused })
	asked := false
	_, err := operation.Destroy{Env: fx.env, Confirm: func([]operation.Deletion, []string) (bool, error) { asked = true; return true, nil }}.Run(ctx)
	if !errors.Is(err, refused) || asked || calls.Load() != 1 {
		t.Errorf("Destroy = %v, asked %t, Preflight called %d times; want the credentials error, no question, one call", err, asked, calls.Load())
	}
	if n := len(fx.cloud.Objects()); n != 2 {
		t.Errorf("%d object(s) left, want the 2 deployed", n)
	}
	ds, err := fx.env.Backend.ListDeployments(ctx, state.DeploymentFilter{})
	if err != nil || len(ds) != 1 {
		t.Errorf("deployments: %d (%v), want only the deploy's", len(ds), err)
	}
}

// TestNoChangeChecksCredentials: a deploy with nothing to change still checks the credentials of the
// providers of the resources it leaves alone, so that a CI step over an unchanged stack fails on broken
// credentials instead of passing.
func TestNoChangeChecksCredentials(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFixture(t, 0)
	sel := operation.Selection{Stacks: []string{"S"}}
	if _, _, err := (operation.Deploy{Env: fx.env, Assembly: assemblyOf(2), Selection: sel}).Run(ctx); err != nil {
		t.Fatal(err)
	}
	refused := &resource.CredentialsError{Provider: "fake", Variables: "FAKE_TOKEN", Err: errors.New("401")}
	calls, _ := checking(fx, func(resource.PreflightRequest) ([]resource.PreflightProblem, error) { return nil, refused })
	_, _, err := operation.Deploy{Env: fx.env, Assembly: assemblyOf(2), Selection: sel}.Run(ctx)
	if !errors.Is(err, refused) || calls.Load() != 1 {
		t.Errorf("Deploy with nothing to change = %v, Preflight called %d times; want the credentials error after one call", err, calls.Load())
	}
}
