// Package engine drives resources through their lifecycle in dependency order: it resolves tokens from
// real outputs, calls the providers, persists state after every step and emits typed events. It never
// prints; views render its events.
package engine

import "time"

// Status is a lifecycle status, in CloudFormation's vocabulary (cloud-assembly.md).
type Status string

// Resource and stack statuses.
const (
	CreateInProgress         Status = "CREATE_IN_PROGRESS"
	CreateComplete           Status = "CREATE_COMPLETE"
	CreateFailed             Status = "CREATE_FAILED"
	UpdateInProgress         Status = "UPDATE_IN_PROGRESS"
	UpdateComplete           Status = "UPDATE_COMPLETE"
	UpdateFailed             Status = "UPDATE_FAILED"
	UpdateCompleteCleanup    Status = "UPDATE_COMPLETE_CLEANUP_IN_PROGRESS"
	DeleteInProgress         Status = "DELETE_IN_PROGRESS"
	DeleteComplete           Status = "DELETE_COMPLETE"
	DeleteFailed             Status = "DELETE_FAILED"
	NoChanges                Status = "NO_CHANGES"
	Skipped                  Status = "SKIPPED"
	UpdateRollbackInProgress Status = "UPDATE_ROLLBACK_IN_PROGRESS"
	UpdateRollbackComplete   Status = "UPDATE_ROLLBACK_COMPLETE"
	UpdateRollbackFailed     Status = "UPDATE_ROLLBACK_FAILED"
	RollbackInProgress       Status = "ROLLBACK_IN_PROGRESS"
	RollbackComplete         Status = "ROLLBACK_COMPLETE"
	RollbackFailed           Status = "ROLLBACK_FAILED"
)

// InProgress reports whether the status is one of the *_IN_PROGRESS statuses.
func (s Status) InProgress() bool {
	return len(s) > 12 && s[len(s)-12:] == "_IN_PROGRESS"
}

// Failed reports whether the status is one of the *_FAILED statuses.
func (s Status) Failed() bool {
	return len(s) > 7 && s[len(s)-7:] == "_FAILED"
}

// Event is one lifecycle transition, emitted once it is durable in state. A stack event has an empty
// LogicalID.
type Event struct {
	Time       time.Time `json:"time"`
	Stack      string    `json:"stack"`
	Type       string    `json:"type"`
	LogicalID  string    `json:"logicalId,omitempty"`
	PhysicalID string    `json:"physicalId,omitempty"`
	Status     Status    `json:"status"`
	Reason     string    `json:"reason,omitempty"`
}

// StackType is the Type of stack events.
const StackType = "cdkx::Stack"
