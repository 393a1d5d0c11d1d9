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
	// Forbidden, a cdkx extension, is set on a 403 of the deployment state machine: the change exists but
	// not for this token (the second-person rule, a run ended by another token), or a deploy that must be
	// proposed.
	Forbidden *ForbiddenRefusal `json:"forbidden,omitempty"`
}

// ForbiddenRefusal is a cdkx extension, ErrorResponse.Forbidden: a pkg/state.ForbiddenError on the wire.
type ForbiddenRefusal struct {
	// ID is the deployment asked for.
	ID string `json:"id"`
	// Reason says what is refused and what to do instead.
	Reason string `json:"reason"`
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
