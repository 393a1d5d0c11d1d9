package stateapi

// The deployment queue of the cdkx extension: every route is under /api/cdkx/{org}/{project}/deployments,
// with an API token; the caller is the token's name, recorded as createdBy, approvedBy, rejectedBy or
// abortedBy whatever a body says, and claims and heartbeats use the server's clock (the times in these
// bodies are informational). Errors are ErrorResponse: 400 for a malformed body, 403 for a token that may
// not, 404 for a deployment or stack not in the project, 409 with Queued or Transition for the queue's
// conflicts. The changing requests may carry an Idempotency-Key header: a retry with the same key gets
// the first answer again.

import (
	"time"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

// DeploymentList is a cdkx extension: the body of POST …/deployments (create) and the answer of that
// create, of POST …/deployments/claim and …/heartbeat, and of GET
// …/deployments[?stack=S&status=A,B&kind=K,L&idPrefix=P&before=SEQ&limit=N] (pkg/state.DeploymentFilter:
// before is the cursor, the seq of the last deployment of the page before). Answers leave the
// deployments' snapshots out; a list is never null.
type DeploymentList struct {
	Deployments []state.Deployment `json:"deployments"`
}

// ClaimRequest is a cdkx extension, the body of POST …/deployments/claim: it makes the deployments IDs
// RUNNING for Runner, all or none (answer: DeploymentList, seq order); 409 Queued or Transition.
type ClaimRequest struct {
	IDs    []string `json:"ids"`
	Runner string   `json:"runner"`
	// Now is the client's time, informational.
	Now time.Time `json:"now,omitzero"`
}

// ClaimNextRequest is a cdkx extension, the body of POST …/deployments/claim-next: it claims for Runner
// the oldest head of a queue of Stacks (every stack when empty) that an agent may run. The answer is
// that pkg/state.Deployment, now RUNNING, with its snapshot; 204 when there is none.
type ClaimNextRequest struct {
	// Stacks is never null on the wire ([] for every stack).
	Stacks []string `json:"stacks"`
	Runner string   `json:"runner"`
	// Now is the client's time, informational.
	Now time.Time `json:"now,omitzero"`
}

// HeartbeatRequest is a cdkx extension, the body of POST …/deployments/heartbeat: heartbeatAt becomes the
// server's now for the waiting and running deployments among IDs (a running one only for the token that
// claimed it). The answer is a DeploymentList of every one of IDs that exists, in seq order.
type HeartbeatRequest struct {
	IDs []string `json:"ids"`
	// At is the client's time, informational.
	At time.Time `json:"at,omitzero"`
}

// TransitionRequest is a cdkx extension, the body of POST …/deployments/{id}/transition: a
// pkg/state.Transition (By is the token's name), a compare-and-set of the deployment's status from one
// of From to To (never RUNNING: 400; never out of a terminal status: 409 Transition). The answer is the
// pkg/state.Deployment after it.
type TransitionRequest struct {
	From  []state.DeploymentStatus `json:"from"`
	To    state.DeploymentStatus   `json:"to"`
	Error string                   `json:"error,omitempty"`
	// Comment is the reviewer's comment (approvalComment or rejectionComment), at most 4 KiB of UTF-8
	// (400 otherwise); only with To APPROVED or REJECTED (400 otherwise).
	Comment string `json:"comment,omitempty"`
	// At is the deployment's finishedAt when To is terminal (the server's now when absent).
	At time.Time `json:"at,omitzero"`
}

// AbortRequest is a cdkx extension, the body of POST …/deployments/{id}/abort: it asks the runner of a
// RUNNING deployment to stop (abortedBy is the token's name; the status stays RUNNING). The answer is the
// pkg/state.Deployment after it; 409 Transition when it is not RUNNING.
type AbortRequest struct {
	// At is the client's time, informational.
	At time.Time `json:"at,omitzero"`
}

// FinishRequest is a cdkx extension, the body of PATCH …/deployments/{id}: it ends a RUNNING deployment
// (only the token that claimed it may: 403) with Status COMPLETED, FAILED or ABORTED (400 otherwise).
// The answer is the pkg/state.Deployment after it; 409 Transition when it is not RUNNING.
type FinishRequest struct {
	Status state.DeploymentStatus `json:"status"`
	// FinishedAt is the deployment's end (the server's now when zero).
	FinishedAt time.Time `json:"finishedAt"`
	// Version is the stack's version the deployment ended at.
	Version int64  `json:"version"`
	Error   string `json:"error"`
}

// DeploymentEvents is a cdkx extension: the answer of GET …/deployments/{id}/events, the deployment's
// events in seq order (never null; empty for an unknown deployment).
type DeploymentEvents struct {
	Events []state.Event `json:"events"`
}
