package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/planner"
)

// ErrManaged is returned (wrapped) by Import when state already records an object for the resource.
var ErrManaged = errors.New("already managed by cdkx")

// Import brings an object that exists at its provider under cdkx's management, as `terraform import`
// does: r is the resource as the assembly declares it in stack st, physicalID the provider's ID of the
// object. The object is read from the provider (a step of the executor); its live properties (those the
// template may set) become the recorded inputs and its outputs are recorded, so that the next plan shows
// how the template differs from what exists. It is recorded as a deployment of kind "import". Errors:
// ErrManaged when state already has an object for the resource; resource.ErrNotFound (wrapped) when the
// provider has no such object (the deployment is then recorded as failed, and state is unchanged).
func Import(ctx context.Context, st *state.Stack, r *assembly.Resource, physicalID string, opts Options) (*Result, error) {
	if old := st.Resources[r.LogicalID]; old != nil && old.PhysicalID != "" {
		return nil, fmt.Errorf("%s/%s is recorded with object %s: %w", st.Name, r.LogicalID, old.PhysicalID, ErrManaged)
	}
	if _, err := opts.Providers.Provider(r.Provider); err != nil {
		return nil, err
	}
	schema, _, _ := opts.Providers.Schema(r.Provider, r.Type)
	run := newRun(ctx, opts)
	run.addStack(st)
	deployments, err := run.start(ctx, []string{st.Name}, state.KindImport, func(string) []byte { return nil })
	if err != nil {
		return nil, err
	}
	tmpl := &state.Resource{LogicalID: r.LogicalID, Type: r.Type, Provider: r.Provider, Dependencies: planner.ResourceDependencies(r)}
	if old := st.Resources[r.LogicalID]; old != nil {
		tmpl.Replaced = old.Replaced // objects left by an earlier replacement stay known
	}
	s := newImportStep(st.Name, tmpl, physicalID, schema)
	callErr := run.x.run(ctx, s)
	res := run.finish([]string{st.Name}, deployments, ending{interrupted: errors.Is(callErr, errNotStarted)})
	if callErr != nil && !errors.Is(callErr, errNotStarted) && !IsStateError(callErr) {
		return res, fmt.Errorf("read %s %s at provider %s: %w", r.Type, physicalID, r.Provider, callErr)
	}
	return res, nil
}
