// Package enginetest provides fake providers for tests and benchmarks of the engine.
package enginetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// Provider is a provider built from function fields; a nil field answers with a plain success
// (Create returns the logical ID as physical ID and no outputs).
type Provider struct {
	// InfoValue is what Info returns.
	InfoValue  resource.ProviderInfo
	CreateFunc func(ctx context.Context, req resource.CreateRequest) (resource.CreateResult, error)
	ReadFunc   func(ctx context.Context, req resource.ReadRequest) (resource.ReadResult, error)
	UpdateFunc func(ctx context.Context, req resource.UpdateRequest) (resource.UpdateResult, error)
	DeleteFunc func(ctx context.Context, req resource.DeleteRequest) error
	LocateFunc func(ctx context.Context, req resource.CreateRequest) (string, error)
	// PreflightFunc, when set, answers Preflight (nil: no problem).
	PreflightFunc func(ctx context.Context, req resource.PreflightRequest) ([]resource.PreflightProblem, error)
}

// Preflight calls PreflightFunc; without one there is nothing to refuse.
func (p *Provider) Preflight(ctx context.Context, req resource.PreflightRequest) ([]resource.PreflightProblem, error) {
	if p.PreflightFunc == nil {
		return nil, nil
	}
	return p.PreflightFunc(ctx, req)
}

// Info returns InfoValue.
func (p *Provider) Info() resource.ProviderInfo { return p.InfoValue }

// Locate calls LocateFunc; without one it fails with resource.ErrCannotLocate.
func (p *Provider) Locate(ctx context.Context, req resource.CreateRequest) (string, error) {
	if p.LocateFunc == nil {
		return "", resource.ErrCannotLocate
	}
	return p.LocateFunc(ctx, req)
}

// Create calls CreateFunc.
func (p *Provider) Create(ctx context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
	if p.CreateFunc == nil {
		return resource.CreateResult{PhysicalID: req.LogicalID, Outputs: resource.Properties{}}, nil
	}
	return p.CreateFunc(ctx, req)
}

// Read calls ReadFunc.
func (p *Provider) Read(ctx context.Context, req resource.ReadRequest) (resource.ReadResult, error) {
	if p.ReadFunc == nil {
		return resource.ReadResult{Properties: req.Properties, Outputs: req.Outputs}, nil
	}
	return p.ReadFunc(ctx, req)
}

// Update calls UpdateFunc.
func (p *Provider) Update(ctx context.Context, req resource.UpdateRequest) (resource.UpdateResult, error) {
	if p.UpdateFunc == nil {
		return resource.UpdateResult{Outputs: resource.Properties{}}, nil
	}
	return p.UpdateFunc(ctx, req)
}

// Delete calls DeleteFunc.
func (p *Provider) Delete(ctx context.Context, req resource.DeleteRequest) error {
	if p.DeleteFunc == nil {
		return nil
	}
	return p.DeleteFunc(ctx, req)
}

// CloudType is the one resource type a Cloud serves: properties "value" (any, updated in place) and
// "key" (any, create-only); outputs "id" and "value".
const CloudType = "Fake::Test::Thing"

// Cloud is an in-memory provider named "fake" that keeps its objects, so tests can compare them with
// state. Latency delays every call; Fail, when set, makes a call fail when it returns an error.
type Cloud struct {
	Latency time.Duration
	Fail    func(op string, logicalIDOrPhysicalID string) error
	// DefaultConcurrency is declared in Info (0: none).
	DefaultConcurrency int
	// Serialize is declared in CloudType's schema (see resource.SerialKey).
	Serialize []resource.SerialKey

	mu      sync.Mutex
	objects map[string]resource.Properties // physical ID → properties
	next    atomic.Int64
	calls   atomic.Int64
	// inFlight and maxInFlight measure concurrency.
	inFlight, maxInFlight atomic.Int64
}

// NewCloud returns an empty Cloud.
func NewCloud() *Cloud { return &Cloud{objects: map[string]resource.Properties{}} }

// Info declares the provider "fake" with CloudType and UniqueType, able to locate interrupted creates
// (by "key"), with DefaultConcurrency as its own limit of calls in flight (0: none).
func (c *Cloud) Info() resource.ProviderInfo {
	props := map[string]resource.PropertySchema{
		"value":  {Kind: resource.KindAny},
		"key":    {Kind: resource.KindAny, CreateOnly: true},
		"secret": {Kind: resource.KindString, WriteOnly: true},
		"group":  {Kind: resource.KindAny},
	}
	return resource.ProviderInfo{Name: "fake", CanLocate: true, DefaultConcurrency: c.DefaultConcurrency,
		Schemas: []resource.Schema{
			{Type: CloudType, Outputs: []string{"id", "value"}, StableOutputs: []string{"id"}, Properties: props,
				Serialize: c.Serialize},
			{Type: UniqueType, Outputs: []string{"id", "value"}, StableOutputs: []string{"id"}, Properties: props,
				DeleteBeforeReplace: true},
		}}
}

// UniqueType is CloudType whose objects cannot coexist with their replacement: a replacement deletes the
// old object first (delete-before-replace).
const UniqueType = "Fake::Test::Unique"

func (c *Cloud) enter(op, id string) error {
	c.calls.Add(1)
	n := c.inFlight.Add(1)
	for {
		m := c.maxInFlight.Load()
		if n <= m || c.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	if c.Latency > 0 {
		time.Sleep(c.Latency)
	}
	if c.Fail != nil {
		return c.Fail(op, id)
	}
	return nil
}

func (c *Cloud) leave() { c.inFlight.Add(-1) }

// Create stores a new object with physical ID "fake-N".
func (c *Cloud) Create(_ context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
	defer c.leave()
	if err := c.enter("create", req.LogicalID); err != nil {
		return resource.CreateResult{}, err
	}
	id := fmt.Sprintf("fake-%d", c.next.Add(1))
	c.mu.Lock()
	c.objects[id] = req.Properties
	c.mu.Unlock()
	return resource.CreateResult{PhysicalID: id, Outputs: resource.Properties{"id": id, "value": req.Properties["value"]}}, nil
}

// Read returns the stored object or resource.ErrNotFound.
func (c *Cloud) Read(_ context.Context, req resource.ReadRequest) (resource.ReadResult, error) {
	defer c.leave()
	if err := c.enter("read", req.PhysicalID); err != nil {
		return resource.ReadResult{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.objects[req.PhysicalID]
	if !ok {
		return resource.ReadResult{}, fmt.Errorf("%s: %w", req.PhysicalID, resource.ErrNotFound)
	}
	return resource.ReadResult{Properties: p, Outputs: resource.Properties{"id": req.PhysicalID, "value": p["value"]}}, nil
}

// Update replaces the stored object's properties.
func (c *Cloud) Update(_ context.Context, req resource.UpdateRequest) (resource.UpdateResult, error) {
	defer c.leave()
	if err := c.enter("update", req.PhysicalID); err != nil {
		return resource.UpdateResult{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.objects[req.PhysicalID]; !ok {
		return resource.UpdateResult{}, fmt.Errorf("%s: %w", req.PhysicalID, resource.ErrNotFound)
	}
	c.objects[req.PhysicalID] = req.New
	return resource.UpdateResult{Outputs: resource.Properties{"id": req.PhysicalID, "value": req.New["value"]}}, nil
}

// Delete removes the object; a missing one is resource.ErrNotFound.
func (c *Cloud) Delete(_ context.Context, req resource.DeleteRequest) error {
	defer c.leave()
	if err := c.enter("delete", req.PhysicalID); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.objects[req.PhysicalID]; !ok {
		return fmt.Errorf("%s: %w", req.PhysicalID, resource.ErrNotFound)
	}
	delete(c.objects, req.PhysicalID)
	return nil
}

// Objects returns a copy of the stored objects by physical ID.
func (c *Cloud) Objects() map[string]resource.Properties {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]resource.Properties, len(c.objects))
	for k, v := range c.objects {
		out[k] = v
	}
	return out
}

// Calls returns how many calls were made.
func (c *Cloud) Calls() int64 { return c.calls.Load() }

// MaxInFlight returns the most calls that ran at once.
func (c *Cloud) MaxInFlight() int64 { return c.maxInFlight.Load() }

// ErrInjected is the error Fail functions conventionally return.
var ErrInjected = errors.New("injected failure")

// Locate finds the object whose "key" property equals the request's (keys are unique in tests), for crash
// recovery; resource.ErrNotFound when there is none.
func (c *Cloud) Locate(_ context.Context, req resource.CreateRequest) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, p := range c.objects {
		if resource.Equal(p["key"], req.Properties["key"]) {
			return id, nil
		}
	}
	return "", fmt.Errorf("key %v: %w", req.Properties["key"], resource.ErrNotFound)
}

// Preflight has nothing to check: a Cloud needs no credentials.
func (c *Cloud) Preflight(context.Context, resource.PreflightRequest) ([]resource.PreflightProblem, error) {
	return nil, nil
}

// Put stores an object as if created out of band (or by a call whose result was lost) and returns its ID.
func (c *Cloud) Put(props resource.Properties) string {
	id := fmt.Sprintf("fake-%d", c.next.Add(1))
	c.mu.Lock()
	c.objects[id] = props
	c.mu.Unlock()
	return id
}

// Set replaces an object's properties out of band; Remove deletes it out of band.
func (c *Cloud) Set(id string, props resource.Properties) {
	c.mu.Lock()
	c.objects[id] = props
	c.mu.Unlock()
}

// Remove deletes an object out of band.
func (c *Cloud) Remove(id string) {
	c.mu.Lock()
	delete(c.objects, id)
	c.mu.Unlock()
}
