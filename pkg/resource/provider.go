package resource

import (
	"context"
	"errors"
	"fmt"
)

// SchemaLookup finds the schema of a resource type served by a provider (its lower-case name, e.g.
// "powerdns"). providerKnown is false when no adapter serves the provider; ok is false when the provider
// is known but does not serve the type.
type SchemaLookup func(provider, resourceType string) (s Schema, providerKnown, ok bool)

// Catalog is what the adapters serve, by name: validation looks each resource's schema up in it, and
// suggests the nearest name for a misspelt provider or type. engine.Registry is one.
type Catalog interface {
	// Schema is a SchemaLookup.
	Schema(provider, resourceType string) (s Schema, providerKnown, ok bool)
	// Names returns the provider names, sorted.
	Names() []string
	// Types returns the resource types the named provider serves, sorted; none for an unknown provider.
	Types(provider string) []string
}

// CreateRequest asks an adapter to create one object. Properties are fully resolved.
type CreateRequest struct {
	Type       string
	LogicalID  string
	Properties Properties
}

// CreateResult is what a successful create returns: the provider's ID for the object and its outputs.
type CreateResult struct {
	PhysicalID string
	Outputs    Properties
}

// ReadRequest asks an adapter for the live state of an object, by the physical ID recorded in state.
// Properties and Outputs are the last applied inputs and recorded outputs, as hints.
type ReadRequest struct {
	Type       string
	PhysicalID string
	Properties Properties
	Outputs    Properties
}

// ReadResult is the live state of an object: its properties in the same shape as the inputs, and its
// outputs. Adapters return an error wrapping ErrNotFound when the object is gone.
type ReadResult struct {
	Properties Properties
	Outputs    Properties
}

// UpdateRequest asks an adapter to change an object in place. Changed lists the top-level property names
// whose values differ between Old and New (never a create-only one).
type UpdateRequest struct {
	Type       string
	PhysicalID string
	Old        Properties
	New        Properties
	OldOutputs Properties
	Changed    []string
}

// UpdateResult carries the object's outputs after the update.
type UpdateResult struct {
	Outputs Properties
}

// DeleteRequest asks an adapter to delete an object. An object already gone is not an error.
type DeleteRequest struct {
	Type       string
	PhysicalID string
	Properties Properties
	Outputs    Properties
}

// ProviderInfo is what a provider declares about itself, as a value: the engine reads it and never probes
// a provider for optional methods. Adapters return the same value before and after they are configured, so
// that a provider can be described (validation, concurrency limits) without its credentials.
type ProviderInfo struct {
	// Name is the provider's lower-case name as written in templates, e.g. "powerdns".
	Name string
	// Schemas describes every resource type the provider serves.
	Schemas []Schema
	// DefaultConcurrency bounds the provider's calls in flight when the user sets no limit of their own
	// for it (cdkx.json "concurrency", CDKX_CONCURRENCY_<NAME>); 0 leaves only the global limit.
	DefaultConcurrency int
	// CanLocate is set when the provider's Locate finds the object of a create that was interrupted between
	// the provider call and its record (objects named by their inputs). Without it such a create cannot be
	// recovered automatically, and the run that finds it stops and says what to check by hand.
	CanLocate bool
	// StateOnly is set when the provider's objects exist only in cdkx state (Cdkx::Core::Data): its calls
	// change nothing outside the process, so a crash can orphan nothing. The engine then writes no pending
	// record before its calls and takes no concurrency slot for them (there is no API to spare).
	StateOnly bool
}

// ErrCannotLocate is returned (wrapped) by Locate of a provider whose ProviderInfo.CanLocate is false.
var ErrCannotLocate = errors.New("provider cannot look objects up by their inputs")

// SerialKey names a group of objects whose changes a provider API accepts only one at a time (Hetzner
// Cloud: one action at a time per network). The engine runs the changes (create, update, delete) of objects
// with equal keys one after another; changes with different keys, or none, run concurrently as usual.
//
// The key of a change is Group plus the value of Property in the change's resolved inputs, or, when
// Property is "", the object's own physical ID (the network itself, beside its subnets' "networkId").
type SerialKey struct {
	Group    string
	Property string
}

// PreflightRequest asks a provider, before a run changes anything, to check its credentials by one cheap
// authenticated read and the planned resources against what exists at the provider, by reads only (e.g.
// SSH keys named in a server but absent from the project).
type PreflightRequest struct {
	// Resources are the resources the plan creates, updates or replaces with this provider; none for a
	// destroy or a refresh.
	Resources []PreflightResource
}

// PreflightResource is one planned resource. Properties are its predicted inputs: tokens resolved where
// known, Unknown elsewhere (values known only at deploy must be skipped).
type PreflightResource struct {
	Stack, LogicalID, Type string
	Properties             Properties
	// Creates is set when the step makes a new object (a create or a replacement); false for an update
	// in place, which sends no create-only property.
	Creates bool
}

// PreflightProblem is a property of a planned resource that the provider would refuse. Path is relative
// to the resource's properties, as in FieldError.
type PreflightProblem struct {
	Stack, LogicalID string
	FieldError
}

// CredentialsError is returned by a provider's Preflight when the API refused its credentials (401 or
// 403): Variables names what the user sets them with, e.g. "HCLOUD_TOKEN".
type CredentialsError struct {
	Provider  string
	Variables string
	// Err is the API's answer.
	Err error
}

// Error says which variables to correct and the API's answer, e.g. `hetzner refused the credentials in
// HCLOUD_TOKEN; nothing was changed: correct HCLOUD_TOKEN and run again (hetzner: GET …: 401: …)`.
func (e *CredentialsError) Error() string {
	return fmt.Sprintf("%s refused the credentials in %s; nothing was changed: correct %s and run again (%v)",
		e.Provider, e.Variables, e.Variables, e.Err)
}

// Unwrap returns the API's answer.
func (e *CredentialsError) Unwrap() error { return e.Err }

// WithInterrupt returns ctx carrying interrupted, a channel closed when the run that makes a call is
// interrupted (Ctrl-C, SIGTERM, or an abort of its deployment). The engine calls providers with a context
// that an interrupt does not cancel, so that a call in flight can finish and be recorded; an adapter reads
// the channel with Interrupted to end a call that makes no more progress once the run is interrupted
// (adapters/transport: no byte of an answer for a second).
func WithInterrupt(ctx context.Context, interrupted <-chan struct{}) context.Context {
	return context.WithValue(ctx, interruptKey{}, interrupted)
}

// Interrupted returns the channel given to WithInterrupt, or nil (which never closes) when ctx carries
// none.
func Interrupted(ctx context.Context) <-chan struct{} {
	ch, _ := ctx.Value(interruptKey{}).(<-chan struct{})
	return ch
}

type interruptKey struct{}

// ErrInterrupted is matched (errors.Is) by the error of a provider call that an adapter ended because its
// run was interrupted (see WithInterrupt). The engine records such a step's outcome but does not count it
// as a failure: the run ends as interrupted (exit 130), without a rollback.
var ErrInterrupted = errors.New("the run was interrupted")
