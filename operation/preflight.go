package operation

import (
	"context"

	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/pkg/diag"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/planner"
)

// CheckedPlan is Plan followed by Preflight: it plans sel's stacks of a against st and asks every provider
// of the plan's resources to check its credentials and the planned resources, by reads only, before
// anything is changed. What a provider would refuse joins the plan's diagnostics, at its template file and JSON path,
// and the plan is then nil, as for any plan error. err is a provider's: its configuration (an unset API
// URL), its *resource.CredentialsError, or a failed read.
func CheckedPlan(ctx context.Context, a *assembly.Assembly, g *planner.Graph, sel Selection, st map[string]*state.Stack,
	reg *engine.Registry) (*planner.Plan, diag.Diagnostics, error) {
	plan, ds := Plan(a, g, sel, st, reg)
	if plan == nil {
		return nil, ds, nil
	}
	pds, err := Preflight(ctx, reg, plan)
	if err != nil {
		return nil, ds, err
	}
	if pds.HasErrors() {
		ds = append(ds, pds...)
		ds.Sort()
		return nil, ds, nil
	}
	return plan, ds, nil
}

// Preflight calls the Preflight of every provider of the plan's resources, in name order — those it
// leaves alone too, so that a plan with nothing to change (a CI diff step) still fails on broken
// credentials — with the resources the plan creates, updates or replaces with it, and returns what they
// would refuse as diagnostics at each resource's template file and JSON path. The error is the first
// provider's error.
func Preflight(ctx context.Context, reg *engine.Registry, plan *planner.Plan) (diag.Diagnostics, error) {
	resources := map[string][]resource.PreflightResource{}
	for _, s := range plan.Steps {
		if s.Resource == nil || (s.Op != planner.OpCreate && s.Op != planner.OpUpdate && s.Op != planner.OpReplace) {
			continue
		}
		// The provider checks what it will be sent: asset paths as this machine's (engine.ResolveAssets).
		props := s.Inputs
		if plan.Assembly != nil {
			props, _ = engine.ResolveAssets(props, assetResolver(plan.Assembly)) // nil without assets: no walk
		}
		resources[s.Provider] = append(resources[s.Provider], resource.PreflightResource{Stack: s.Stack, LogicalID: s.LogicalID,
			Type: s.Type, Properties: props, Creates: s.Op != planner.OpUpdate})
	}
	problems, err := reg.Preflight(ctx, planProviders(plan, true), resources)
	if err != nil {
		return nil, err
	}
	var ds diag.Diagnostics
	for _, p := range problems {
		file, at := "", ""
		if st := plan.Assembly.Stack(p.Stack); st != nil {
			file = st.File
			if r := st.Resource(p.LogicalID); r != nil {
				at = r.Path + ".properties"
				if p.Path != "" {
					at = assembly.JoinPath(at, p.Path)
				}
			}
		}
		ds.Errorf(file, at, "%s", p.Message)
	}
	ds.Sort()
	return ds, nil
}

// checkCredentials builds the providers that stacks' resources name (those only selects, nil: all) and
// has each check its credentials (Preflight without resources), before a destroy or a refresh changes
// anything.
func (e Env) checkCredentials(ctx context.Context, stacks []*state.Stack, only func(*state.Resource) bool) error {
	_, err := e.Providers.Preflight(ctx, providersOf(stacks, only), nil)
	return err
}
