package stateapi

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

// LocksResponse is a cdkx extension: the answer of GET /api/cdkx/{org}/{project}/locks[?stack=S] (API
// token), the active updates (not started, requested or running) of the project's stacks (or of stack
// S), ordered by stack. Each is the stack lock of a cdkx CLI or of a Pulumi CLI update.
type LocksResponse struct {
	// Locks is never null.
	Locks []ActiveUpdate `json:"locks"`
}

// ActiveUpdate is a cdkx extension: one active update in a LocksResponse.
type ActiveUpdate struct {
	Stack    string `json:"stack"`
	UpdateID string `json:"updateID"`
	// Kind is the update's kind: update, preview, refresh, destroy or import.
	Kind string `json:"kind"`
	// Status is "not started", "requested" or "running" (apitype.UpdateStatus).
	Status    string    `json:"status"`
	CreatedAt time.Time `json:"createdAt"`
	// LeaseExpiresAt is when the lease of a running update expires unless renewed.
	LeaseExpiresAt *time.Time `json:"leaseExpiresAt,omitempty"`
	// HeartbeatAt is the holder's last heartbeat (RenewUpdateLeaseRequest.HeartbeatAt), if it sent one.
	HeartbeatAt *time.Time `json:"heartbeatAt,omitempty"`
	// Lock is the UpdateProgramRequest.CdkxLock the update was created with, as sent: a pkg/state.LockInfo,
	// or null for an update another client (the Pulumi CLI) created.
	Lock json.RawMessage `json:"lock"`
}

// Holder returns the stack lock a is the update of: the LockInfo it was created with, or, for an update
// another client (the Pulumi CLI) created, one that stands for it (ID the update's, operation its kind,
// user "pulumi", started at its creation). Stack is a's and HeartbeatAt its last heartbeat when it sent
// one. The error is a Lock that is not a LockInfo.
func (a ActiveUpdate) Holder() (state.LockInfo, error) {
	var h state.LockInfo
	if len(a.Lock) > 0 && string(a.Lock) != "null" {
		if err := json.Unmarshal(a.Lock, &h); err != nil {
			return h, fmt.Errorf("lock holder of stack %s: %w", a.Stack, err)
		}
	} else {
		h = state.LockInfo{ID: a.UpdateID, Operation: a.Kind, User: "pulumi", StartedAt: a.CreatedAt, HeartbeatAt: a.CreatedAt}
	}
	h.Stack = a.Stack
	if a.HeartbeatAt != nil {
		h.HeartbeatAt = *a.HeartbeatAt
	}
	return h, nil
}
