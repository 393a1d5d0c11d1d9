package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/cdkx-dev/cdkx/pkg/diag"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// Provider is what an adapter offers the engine: what it declares about itself (Info) and the object
// operations. Adapters implement it in terms of pkg/resource only and never import the engine.
//
// Every method may be called concurrently. Errors should wrap resource.ErrNotFound or
// resource.ErrAlreadyExists where they apply, and be *resource.ProviderError when the API answered.
type Provider interface {
	// Info declares the provider's name, types, default concurrency and abilities. It is constant.
	Info() resource.ProviderInfo
	// Create creates one object and returns its physical ID and outputs. When the object was made but
	// could not be finished (its start or attach failed), Create returns the error together with a result
	// naming the object's PhysicalID: state then keeps the object among those to delete, never orphaned.
	Create(ctx context.Context, req resource.CreateRequest) (resource.CreateResult, error)
	// Read returns an object's live properties and outputs, or an error wrapping resource.ErrNotFound.
	Read(ctx context.Context, req resource.ReadRequest) (resource.ReadResult, error)
	// Update changes an object in place and returns its outputs.
	Update(ctx context.Context, req resource.UpdateRequest) (resource.UpdateResult, error)
	// Delete deletes an object; one already gone is success.
	Delete(ctx context.Context, req resource.DeleteRequest) error
	// Locate returns the physical ID of the object req would have created (crash recovery of a create
	// whose result was never recorded), an error wrapping resource.ErrNotFound when there is none, or one
	// wrapping resource.ErrCannotLocate when Info().CanLocate is false.
	Locate(ctx context.Context, req resource.CreateRequest) (physicalID string, err error)
	// Preflight is called before a run changes anything (deploy, diff, destroy): it checks the
	// provider's credentials by one cheap authenticated read (made once per Provider value: a later
	// call may skip it) and req's planned resources by reads only, and returns what the provider would
	// refuse. Rejected credentials are a *resource.CredentialsError. A provider without credentials or
	// checks returns nothing.
	Preflight(ctx context.Context, req resource.PreflightRequest) ([]resource.PreflightProblem, error)
}

// Registry maps provider names to providers. Each entry is either a provider or a lazy one: its Info is
// known at once (validation, limits), the provider itself is built on first use (Configure, or the first
// call), so that a command that never calls it never needs its credentials. The zero value is empty; use
// NewRegistry. A Registry is safe for concurrent use.
type Registry struct {
	entries map[string]*entry
}

type entry struct {
	info    resource.ProviderInfo
	schemas map[string]resource.Schema
	build   func() (Provider, error)

	once sync.Once
	p    Provider
	err  error
}

func (e *entry) get() (Provider, error) {
	e.once.Do(func() { e.p, e.err = e.build() })
	return e.p, e.err
}

// NewRegistry returns a registry of ps, keyed by Info().Name.
func NewRegistry(ps ...Provider) *Registry {
	r := &Registry{entries: map[string]*entry{}}
	for _, p := range ps {
		r.Register(p.Info(), func() (Provider, error) { return p, nil })
	}
	return r
}

// Register adds a lazy provider: info is served at once, build is called once, on first use. A provider
// already registered under info.Name is replaced.
func (r *Registry) Register(info resource.ProviderInfo, build func() (Provider, error)) {
	m := make(map[string]resource.Schema, len(info.Schemas))
	for _, s := range info.Schemas {
		m[s.Type] = s
	}
	r.entries[info.Name] = &entry{info: info, schemas: m, build: build}
}

// Provider returns the named provider, built if it was lazy, or an error listing the known ones, or the
// error of its construction (e.g. "PDNS_API_URL is not set").
func (r *Registry) Provider(name string) (Provider, error) {
	e, ok := r.entries[name]
	if !ok {
		near := ""
		if n := diag.Nearest(name, r.Names()); n != "" {
			near = fmt.Sprintf(" (did you mean %q?)", n)
		}
		return nil, fmt.Errorf("unknown provider %q%s; cdkx knows %s", name, near, strings.Join(r.Names(), ", "))
	}
	return e.get()
}

// Info returns what the named provider declares; ok is false for an unknown name.
func (r *Registry) Info(name string) (resource.ProviderInfo, bool) {
	e, ok := r.entries[name]
	if !ok {
		return resource.ProviderInfo{}, false
	}
	return e.info, true
}

// Configure builds every named provider now, so that missing configuration (an unset API URL) is reported
// before any provider call. It returns the first error.
func (r *Registry) Configure(names []string) error {
	for _, n := range names {
		if _, err := r.Provider(n); err != nil {
			return err
		}
	}
	return nil
}

// Preflight builds each named provider and calls its Preflight with its resources (by provider name; a
// name without resources checks the credentials only), one provider after another in the order given. It
// returns every problem, or the first error.
func (r *Registry) Preflight(ctx context.Context, names []string, resources map[string][]resource.PreflightResource) ([]resource.PreflightProblem, error) {
	var problems []resource.PreflightProblem
	for _, n := range names {
		p, err := r.Provider(n)
		if err != nil {
			return nil, err
		}
		ps, err := p.Preflight(ctx, resource.PreflightRequest{Resources: resources[n]})
		if err != nil {
			return nil, err
		}
		problems = append(problems, ps...)
	}
	return problems, nil
}

// Names returns the registered provider names, sorted.
func (r *Registry) Names() []string {
	out := make([]string, 0, len(r.entries))
	for n := range r.entries {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Types returns the resource types the named provider declares, sorted; nil for an unknown name.
func (r *Registry) Types(provider string) []string {
	e, ok := r.entries[provider]
	if !ok {
		return nil
	}
	out := make([]string, 0, len(e.schemas))
	for t := range e.schemas {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// Schema is a resource.SchemaLookup over the registered providers.
func (r *Registry) Schema(provider, resourceType string) (resource.Schema, bool, bool) {
	e, ok := r.entries[provider]
	if !ok {
		return resource.Schema{}, false, false
	}
	s, ok := e.schemas[resourceType]
	return s, true, ok
}
