package engine

import (
	"context"
	"fmt"
	"sort"

	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// Provider is what an adapter offers the engine: its types' schemas and the four object operations.
// Adapters implement it in terms of pkg/resource only and never import the engine.
//
// Every method may be called concurrently. Errors should wrap resource.ErrNotFound or
// resource.ErrAlreadyExists where they apply, and be *resource.ProviderError when the API answered.
type Provider interface {
	// Name is the provider's lower-case name as written in templates, e.g. "powerdns".
	Name() string
	// Schemas describes every resource type the provider serves.
	Schemas() []resource.Schema
	// Create creates one object and returns its physical ID and outputs.
	Create(ctx context.Context, req resource.CreateRequest) (resource.CreateResult, error)
	// Read returns an object's live properties and outputs, or an error wrapping resource.ErrNotFound.
	Read(ctx context.Context, req resource.ReadRequest) (resource.ReadResult, error)
	// Update changes an object in place and returns its outputs.
	Update(ctx context.Context, req resource.UpdateRequest) (resource.UpdateResult, error)
	// Delete deletes an object; one already gone is success.
	Delete(ctx context.Context, req resource.DeleteRequest) error
}

// Registry maps provider names to providers. The zero value is empty; use NewRegistry.
type Registry struct {
	providers map[string]Provider
	schemas   map[string]map[string]resource.Schema
}

// NewRegistry returns a registry of ps, keyed by Name.
func NewRegistry(ps ...Provider) *Registry {
	r := &Registry{providers: map[string]Provider{}, schemas: map[string]map[string]resource.Schema{}}
	for _, p := range ps {
		r.providers[p.Name()] = p
		m := map[string]resource.Schema{}
		for _, s := range p.Schemas() {
			m[s.Type] = s
		}
		r.schemas[p.Name()] = m
	}
	return r
}

// Provider returns the named provider or an error listing the known ones.
func (r *Registry) Provider(name string) (Provider, error) {
	if p, ok := r.providers[name]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("unknown provider %q (known: %v)", name, r.Names())
}

// Names returns the registered provider names, sorted.
func (r *Registry) Names() []string {
	out := make([]string, 0, len(r.providers))
	for n := range r.providers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Schema is a resource.SchemaLookup over the registered providers.
func (r *Registry) Schema(provider, resourceType string) (resource.Schema, bool, bool) {
	m, ok := r.providers[provider]
	if !ok || m == nil {
		return resource.Schema{}, false, false
	}
	s, ok := r.schemas[provider][resourceType]
	return s, true, ok
}
