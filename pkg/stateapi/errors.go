package stateapi

import "github.com/cdkx-dev/cdkx/pkg/state"

// ErrorResponse mirrors the code and message of apitype.ErrorResponse: the body of every error answer
// of the service (4xx and 5xx; a 503 also carries Retry-After: 1). A 409 of the deployment queue (a cdkx
// extension) adds Queued or Transition, from which a client rebuilds the typed error.
type ErrorResponse struct {
	// Code is the HTTP status code.
	Code int `json:"code"`
	// Message says what went wrong, prefixed with the status text ("Conflict: …").
	Message string `json:"message"`
	// Queued, a cdkx extension, is set when a claimed deployment is not at the head of its stack's queue.
	Queued *QueuedConflict `json:"queued,omitempty"`
	// Transition, a cdkx extension, is set when a deployment's status does not allow the change asked.
	Transition *TransitionConflict `json:"transition,omitempty"`
}

// QueuedConflict is a cdkx extension, ErrorResponse.Queued: a pkg/state.QueuedError on the wire.
type QueuedConflict struct {
	// ID is the deployment asked for.
	ID string `json:"id"`
	// Stack is its stack.
	Stack string `json:"stack"`
	// Position is the number of deployments ahead of it (1 or more).
	Position int `json:"position"`
	// Ahead is the first of them (the RUNNING one, if any), without its snapshot.
	Ahead state.Deployment `json:"ahead"`
}

// TransitionConflict is a cdkx extension, ErrorResponse.Transition: a pkg/state.TransitionError on the
// wire.
type TransitionConflict struct {
	// ID is the deployment asked for.
	ID string `json:"id"`
	// Status is its status, which does not allow the change.
	Status state.DeploymentStatus `json:"status"`
	// To is the status asked for.
	To state.DeploymentStatus `json:"to"`
}
