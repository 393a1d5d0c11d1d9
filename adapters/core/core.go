// Package core is the built-in provider "cdkx": resources that live only in cdkx state, with no API
// behind them, like Terraform's terraform_data.
package core

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/cdkx-dev/cdkx/adapters/internal/kit"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// Name is the provider's name as written in templates.
const Name = "cdkx"

// TypeData holds a value in state, so that it can be passed through tokens, and replaces itself (and,
// through create-only properties, its dependents) when a trigger changes.
//
// Properties:
//   - input (any JSON, may be built from tokens): changes update it in place.
//   - triggersReplace (any JSON, create-only): any change replaces the object (a new id).
//
// Outputs: output (input as last applied: the same value, shared, not a copy, since property values are
// never changed in place; see package resource) and id (a random UUID assigned at create, e.g.
// "0f8fad5b-d9cb-469f-a165-70867728950e"; also the physical ID).
//
// There is no backing store: the object exists exactly as long as state records it. Read returns the
// properties and outputs it is given (recomputing the outputs when none are given); Delete does nothing.
const TypeData = "Cdkx::Core::Data"

var dataSchema = resource.Schema{
	Type:        TypeData,
	Description: "A value kept in cdkx state (like Terraform's terraform_data); no API is called.",
	Properties: map[string]resource.PropertySchema{
		"input": {Kind: resource.KindAny,
			Description: "Any JSON value; published as the output attribute output; a change updates in place"},
		"triggersReplace": {Kind: resource.KindAny, CreateOnly: true,
			Description: "Any JSON value; a change replaces the object and gives it a new id"},
	},
	Outputs:       []string{"output", "id"},
	StableOutputs: []string{"id"},
}

// Provider serves Cdkx::Core::Data. It keeps no state of its own and is safe for concurrent use.
type Provider struct {
	// Dispatch serves Create, Read, Update, Delete and Locate through types.
	kit.Dispatch[*Provider]
}

// New returns the provider.
func New() *Provider {
	p := &Provider{}
	p.Dispatch = types.For(p)
	return p
}

// Info declares the provider "cdkx" and Cdkx::Core::Data. Its objects live only in state (StateOnly: no
// pending record, no concurrency slot), and Locate can always tell that an interrupted create made nothing.
func (*Provider) Info() resource.ProviderInfo { return types.Info() }

// types is the provider's one type; the Provider's Create, Read, Update, Delete and Locate go through it
// (kit.Dispatch).
//
// Create assigns a new random UUID, which is both the physical ID and the id output. Read returns req's
// properties and outputs as they are: the object exists while state says so. With no outputs (e.g. a
// read after an interrupted create) they are computed from the properties. An empty physical ID means
// the object was never created: an error wrapping resource.ErrNotFound. Update publishes the new input as
// output; the id stays. Delete does nothing: the object disappears with its state. Locate always answers
// resource.ErrNotFound: a Cdkx::Core::Data object exists only in state, so a create whose result was
// never recorded created nothing, and the engine clears it.
var types = kit.New(resource.ProviderInfo{Name: Name, CanLocate: true, StateOnly: true},
	kit.Type[*Provider]{Schema: dataSchema,
		Create: (*Provider).create, Read: (*Provider).read, Update: (*Provider).update, Delete: (*Provider).delete,
		Locate: (*Provider).locate})

func (*Provider) create(_ context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
	id := uuid.NewString()
	return resource.CreateResult{PhysicalID: id, Outputs: outputs(id, req.Properties)}, nil
}

func (*Provider) read(_ context.Context, req resource.ReadRequest) (resource.ReadResult, error) {
	if req.PhysicalID == "" {
		return resource.ReadResult{}, fmt.Errorf("cdkx: %s without an id: %w", TypeData, resource.ErrNotFound)
	}
	out := req.Outputs
	if out == nil {
		out = outputs(req.PhysicalID, req.Properties)
	}
	return resource.ReadResult{Properties: req.Properties, Outputs: out}, nil
}

func (*Provider) update(_ context.Context, req resource.UpdateRequest) (resource.UpdateResult, error) {
	return resource.UpdateResult{Outputs: outputs(req.PhysicalID, req.New)}, nil
}

func (*Provider) delete(context.Context, resource.DeleteRequest) error { return nil }

func (*Provider) locate(_ context.Context, req resource.CreateRequest) (string, error) {
	return "", fmt.Errorf("%s %s: %w", req.Type, req.LogicalID, resource.ErrNotFound)
}

// outputs returns a new outputs map whose output shares props' input: property values are never changed in
// place (package resource), and a copy would double the memory each object holds in a large run.
func outputs(id string, props resource.Properties) resource.Properties {
	return resource.Properties{"output": props["input"], "id": id}
}

// Preflight has nothing to check: Cdkx::Core::Data needs no credentials and calls no API.
func (*Provider) Preflight(context.Context, resource.PreflightRequest) ([]resource.PreflightProblem, error) {
	return nil, nil
}
