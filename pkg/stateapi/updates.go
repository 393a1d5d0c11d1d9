package stateapi

import (
	"encoding/json"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

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

// UpdateProgramRequest mirrors the fields of apitype.UpdateProgramRequest that the service reads, with one
// cdkx extension (CdkxLock): the body of POST /api/stacks/{org}/{project}/{stack}/{update|preview|refresh|destroy}.
// The service stores the whole body as sent; history reports Config and Metadata from it, the lock
// listing (GET /api/cdkx/{org}/{project}/locks, LocksResponse) CdkxLock. The answer is 200 with an
// UpdateProgramResponse; 404 when the stack does not exist; 409 when another update of the stack is
// active (except for the Pulumi CLI, which learns it from start).
type UpdateProgramRequest struct {
	// Name is the project's name.
	Name string `json:"name"`
	// Runtime is the project's language runtime ("cdkx" for the cdkx CLI).
	Runtime string `json:"runtime"`
	// Config is the stack's configuration, by key.
	Config map[string]ConfigValue `json:"config,omitempty"`
	// Metadata is the update's message and environment.
	Metadata UpdateMetadata `json:"metadata"`
	// CdkxLock is a cdkx extension (the Pulumi CLI never sends it): the holder of the cdkx stack lock
	// this update stands for, which the lock listing reports as ActiveUpdate.Lock.
	CdkxLock *state.LockInfo `json:"cdkxLock,omitempty"`
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

// RenewUpdateLeaseRequest mirrors apitype.RenewUpdateLeaseRequest, the body of POST
// …/{kind}/{id}/renew_lease (Authorization: update-token), with one cdkx extension (HeartbeatAt). The
// deprecated token field the Pulumi CLI still sends is not read: the lease is the one of the
// Authorization header. The answer is 200 with a RenewUpdateLeaseResponse; 400 when Duration is not
// positive; 401 for an unknown update token; 403 when the lease expired, or the token that created
// the update was revoked or narrowed; 409 when the update is no longer running (cancelled).
type RenewUpdateLeaseRequest struct {
	// Duration is the lease's new lifetime from now, in seconds (at most the server's maximum, 300 s).
	Duration int `json:"duration"`
	// HeartbeatAt is a cdkx extension: the holder's heartbeat time (RFC 3339), which the lock listing
	// reports as ActiveUpdate.HeartbeatAt; absent keeps the last one.
	HeartbeatAt *time.Time `json:"heartbeatAt,omitempty"`
}

// RenewUpdateLeaseResponse mirrors apitype.RenewUpdateLeaseResponse: the answer of renew_lease.
type RenewUpdateLeaseResponse struct {
	// Token is the lease token, unchanged.
	Token string `json:"token"`
	// TokenExpiration is when the renewed lease expires, in Unix seconds.
	TokenExpiration int64 `json:"tokenExpiration,omitempty"`
}

// CompleteUpdateRequest mirrors apitype.CompleteUpdateRequest, the body of POST …/{kind}/{id}/complete
// (Authorization: update-token). The answer is an empty 200; 400 for another status; 403 when the lease
// expired; 409 when the update is not running. Completing again with the status it ended with is a
// 200 (a retry).
type CompleteUpdateRequest struct {
	// Status is how the update ended: "succeeded", "failed" or "cancelled" (apitype.UpdateStatus).
	Status string `json:"status"`
}

// UpdateResults mirrors apitype.UpdateResults: the answer of GET …/{kind}/{id}, the update's status
// ("not started", "running", "succeeded", "failed", "cancelled"; apitype.UpdateStatus). The service
// keeps no results: Events is always empty. 404 when the update is not one of the stack.
type UpdateResults struct {
	Status string            `json:"status"`
	Events []json.RawMessage `json:"events"`
	// ContinuationToken is set while the update is active: poll again.
	ContinuationToken *string `json:"continuationToken,omitempty"`
}

// GetUpdateEventsResponse mirrors apitype.GetUpdateEventsResponse: the answer of GET …/{kind}/{id}/events
// (?continuationToken=T), the update's engine events (apitype.EngineEvent, as sent) after T in sequence
// order, at most 1000 a page. Unlike Pulumi's, ContinuationToken is absent rather than null once the
// update ended and every event was returned. 400 when T is not a number.
type GetUpdateEventsResponse struct {
	Events            []json.RawMessage `json:"events"`
	ContinuationToken *string           `json:"continuationToken,omitempty"`
}

// EngineEventBatch mirrors apitype.EngineEventBatch, the body of POST …/{kind}/{id}/events/batch
// (Authorization: update-token): engine events (apitype.EngineEvent), each stored as sent under its
// sequence number (a repeated sequence is ignored). The answer is an empty 200; 400 when an event is not
// an object with a sequence and a timestamp.
type EngineEventBatch struct {
	Events []json.RawMessage `json:"events"`
}
