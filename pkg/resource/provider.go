package resource

// SchemaLookup finds the schema of a resource type served by a provider (its lower-case name, e.g.
// "powerdns"). providerKnown is false when no adapter serves the provider; ok is false when the provider
// is known but does not serve the type.
type SchemaLookup func(provider, resourceType string) (s Schema, providerKnown, ok bool)

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
