package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/planner"
)

// ImportComplete is the status of a resource recorded by Import.
const ImportComplete Status = "IMPORT_COMPLETE"

// ErrManaged is returned (wrapped) by Import when state already records an object for the resource.
var ErrManaged = errors.New("already managed by cdkx")

// Import brings an object that exists at its provider under cdkx's management, as `terraform import`
// does: r is the resource as the assembly declares it in stack st, physicalID the provider's ID of the
// object. The object is read from the provider; its live properties (those the template may set) become
// the recorded inputs and its outputs are recorded, so that the next plan shows how the template differs
// from what exists. It is recorded as a deployment of kind "import". Errors: ErrManaged when state already
// has an object for the resource; resource.ErrNotFound (wrapped) when the provider has no such object.
func Import(ctx context.Context, st *state.Stack, r *assembly.Resource, physicalID string, opts Options) (*Result, error) {
	if old := st.Resources[r.LogicalID]; old != nil && old.PhysicalID != "" {
		return nil, fmt.Errorf("%s/%s is recorded with object %s: %w", st.Name, r.LogicalID, old.PhysicalID, ErrManaged)
	}
	prov, err := opts.Providers.Provider(r.Provider)
	if err != nil {
		return nil, err
	}
	schema, _, _ := opts.Providers.Schema(r.Provider, r.Type)
	run := newRun(ctx, opts)
	run.stacks[st.Name] = cloneStack(st)
	var live resource.ReadResult
	err = run.call(prov.Info().Name, func(ctx context.Context) error {
		var err error
		live, err = prov.Read(ctx, resource.ReadRequest{Type: r.Type, PhysicalID: physicalID})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read %s %s at provider %s: %w", r.Type, physicalID, r.Provider, err)
	}
	deployments, err := run.startDeployments(ctx, []string{st.Name}, state.KindImport, func(string) []byte { return nil })
	if err != nil {
		return nil, err
	}
	run.j = newJournal(opts.Backend, deploymentIDs(deployments), opts.OnEvent)
	inputs := resource.Properties{}
	for k, v := range live.Properties {
		if _, known := schema.Properties[k]; known || schema.AllowUnknownProperties {
			inputs[k] = v
		}
	}
	rec := &state.Resource{LogicalID: r.LogicalID, Type: r.Type, Provider: r.Provider, PhysicalID: physicalID,
		Inputs: inputs, Outputs: withCRN(cloneProps(live.Outputs), r.Type, physicalID),
		Dependencies: planner.ResourceDependencies(r), Status: string(ImportComplete)}
	if old := st.Resources[r.LogicalID]; old != nil {
		rec.Replaced = old.Replaced // objects left by an earlier replacement stay known
	}
	run.done(ImportComplete)
	_ = run.put(st.Name, rec, Event{Stack: st.Name, Type: r.Type, LogicalID: r.LogicalID, PhysicalID: physicalID,
		Status: ImportComplete, Reason: "read from the provider; the next diff shows how the template differs"})
	return run.finish([]string{st.Name}, deployments, false, 0, false, nil), nil
}
