package stateapi

// UpdateResult mirrors apitype.UpdateResult: the outcome of an update in its history.
type UpdateResult string

// Update results. A cancelled update (by `cancel`, or after its lease expired) is reported failed: the
// Pulumi API has no cancelled result.
const (
	ResultNotStarted UpdateResult = "not-started"
	ResultInProgress UpdateResult = "in-progress"
	ResultSucceeded  UpdateResult = "succeeded"
	ResultFailed     UpdateResult = "failed"
)

// UpdateInfo mirrors apitype.UpdateInfo: one entry of a stack's history.
type UpdateInfo struct {
	// Kind is update, refresh, destroy or import (previews are not history).
	Kind string `json:"kind"`
	// StartTime is when the update started, in Unix seconds.
	StartTime int64 `json:"startTime"`
	// Message is the update's message, from its create request's metadata.
	Message string `json:"message"`
	// Environment is the update's environment metadata (never null).
	Environment map[string]string `json:"environment"`
	// Config is the stack configuration the update ran with (never null).
	Config map[string]ConfigValue `json:"config"`
	// Result is the update's outcome.
	Result UpdateResult `json:"result"`
	// EndTime is when the update ended, in Unix seconds (0 while it runs).
	EndTime int64 `json:"endTime"`
	// Version is the update's history version: 1, 2, 3… per stack, in start order. GET
	// …/export/{version} returns the state this update left.
	Version int64 `json:"version"`
	// ResourceChanges counts the update's resource operations by kind (create, update, same, delete,
	// replace…), as the engine's summary event reported them; absent when it sent none.
	ResourceChanges map[string]int `json:"resourceChanges,omitempty"`
	// ResourceCount is the number of resources in the stack's state when the update ended.
	ResourceCount int64 `json:"resourceCount,omitempty"`
}

// GetHistoryResponse mirrors apitype.GetHistoryResponse: GET /api/stacks/{org}/{project}/{stack}/updates
// (?pageSize=N&page=P, pages from 1), newest first.
type GetHistoryResponse struct {
	Updates []UpdateInfo `json:"updates"`
}

// LatestUpdateResponse is the answer of GET …/updates/latest (`pulumi config refresh`): the newest
// entry of the stack's history; 404 when it has none.
type LatestUpdateResponse struct {
	Info UpdateInfo `json:"info"`
}
