package stateapi

// UpdateMetadata mirrors apitype.UpdateMetadata: what the client says of an update when it creates it.
type UpdateMetadata struct {
	// Message is the update's message (pulumi up --message), shown by history.
	Message string `json:"message"`
	// Environment holds data of the deploying environment (e.g. git commit), shown by history.
	Environment map[string]string `json:"environment"`
}

// ConfigValue mirrors apitype.ConfigValue: one configuration value of a stack as an update saw it.
type ConfigValue struct {
	// String is the value, or its ciphertext when Secret.
	String string `json:"string"`
	// Secret tells whether String is a ciphertext.
	Secret bool `json:"secret"`
	// Object tells whether String is a JSON object or array.
	Object bool `json:"object"`
}

// UpdateProgramRequest mirrors the fields of apitype.UpdateProgramRequest that the service reads: the
// body of POST /api/stacks/{org}/{project}/{stack}/{update|preview|refresh|destroy}. The service stores
// the whole body as sent; history reports Config and Metadata from it.
type UpdateProgramRequest struct {
	// Name is the project's name.
	Name string `json:"name"`
	// Runtime is the project's language runtime ("cdkx" for the cdkx CLI).
	Runtime string `json:"runtime"`
	// Config is the stack's configuration, by key.
	Config map[string]ConfigValue `json:"config,omitempty"`
	// Metadata is the update's message and environment.
	Metadata UpdateMetadata `json:"metadata"`
}

// UpdateProgramResponse mirrors apitype.UpdateProgramResponse: the answer of a create.
type UpdateProgramResponse struct {
	// UpdateID names the update in the follow-up calls (…/update/{updateID}/…).
	UpdateID string `json:"updateID"`
}

// StartUpdateRequest mirrors apitype.StartUpdateRequest, the body of POST …/update/{id}, with one
// cdkx extension.
type StartUpdateRequest struct {
	// Tags, when not nil, replace the stack's tags.
	Tags map[string]string `json:"tags,omitempty"`
	// JournalVersion is the highest journal version the client can send (0: none); the service then
	// answers journalVersion 1 and takes journal entries instead of checkpoints.
	JournalVersion int64 `json:"journalVersion,omitempty"`
	// LeaseSeconds is a cdkx extension (the Pulumi CLI never sends it): the lifetime, in seconds, of
	// the lease start issues, clamped to [5, 300]. Without it the server's default lease applies (300 s
	// unless `cdkx server --lease` says otherwise), which the Pulumi CLI needs: it renews at half time
	// of a lease it assumes to last 5 minutes.
	LeaseSeconds int `json:"leaseSeconds,omitempty"`
}

// StartUpdateResponse mirrors apitype.StartUpdateResponse.
type StartUpdateResponse struct {
	// Version is the stack's checkpoint version when the update starts.
	Version int64 `json:"version"`
	// Token is the lease token: `Authorization: update-token TOKEN` on the update's execution calls.
	Token string `json:"token,omitempty"`
	// TokenExpiration is when the lease expires, in Unix seconds, unless renewed.
	TokenExpiration int64 `json:"tokenExpiration,omitempty"`
	// JournalVersion is 1 when the service takes journal entries (the request allowed it), else absent.
	JournalVersion int64 `json:"journalVersion,omitempty"`
}
