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

// ImportComplete and ImportFailed are the statuses of a resource that Import recorded or could not read.
const (
	ImportComplete Status = "IMPORT_COMPLETE"
	ImportFailed   Status = "IMPORT_FAILED"
)

// operation is what a stack or resource transition does. Its statuses are looked up in statusTable,
// never built from its name (terraform: internal/plans/action.go).
type operation uint8

const (
	opCreate         operation = iota // a resource's or a never-deployed stack's first create
	opUpdate                          // a change in place, a replacement, a deploy of a deployed stack
	opDelete                          // a delete, a destroy
	opUpdateRollback                  // undoing a run's changes to a stack deployed before it
	opRollback                        // undoing a run's changes to a stack it deployed first
	opImport                          // recording an object read from its provider (no in-progress status)
)

// statusSet is the statuses of one operation: while it runs, when it succeeded, when it failed.
type statusSet struct {
	inProgress, complete, failed Status
}

// statusTable holds each operation's statuses.
var statusTable = [...]statusSet{
	opCreate:         {CreateInProgress, CreateComplete, CreateFailed},
	opUpdate:         {UpdateInProgress, UpdateComplete, UpdateFailed},
	opDelete:         {DeleteInProgress, DeleteComplete, DeleteFailed},
	opUpdateRollback: {UpdateRollbackInProgress, UpdateRollbackComplete, UpdateRollbackFailed},
	opRollback:       {RollbackInProgress, RollbackComplete, RollbackFailed},
	opImport:         {"", ImportComplete, ImportFailed},
}

// statuses returns o's statuses.
func (o operation) statuses() statusSet { return statusTable[o] }

// rollback returns the operation that undoes a run's changes to a stack the run would record with o:
// opRollback for a first deploy (opCreate), opUpdateRollback otherwise.
func (o operation) rollback() operation {
	if o == opCreate {
		return opRollback
	}
	return opUpdateRollback
}

// statusClass is where a status stands: running, done, failed, or none of these (NO_CHANGES, SKIPPED).
type statusClass uint8

const (
	classOther statusClass = iota
	classInProgress
	classComplete
	classFailed
)

// statusClasses classifies every status of statusTable, UPDATE_COMPLETE_CLEANUP_IN_PROGRESS and
// DETECTION_FAILED.
var statusClasses = func() map[Status]statusClass {
	m := map[Status]statusClass{UpdateCompleteCleanup: classInProgress, DetectionFailed: classFailed}
	for _, set := range statusTable {
		if set.inProgress != "" {
			m[set.inProgress] = classInProgress
		}
		m[set.complete], m[set.failed] = classComplete, classFailed
	}
	return m
}()

// InProgress reports whether the status is one of the *_IN_PROGRESS statuses.
func (s Status) InProgress() bool { return statusClasses[s] == classInProgress }

// Complete reports whether the status is one of the *_COMPLETE statuses (not
// UPDATE_COMPLETE_CLEANUP_IN_PROGRESS, which is in progress).
func (s Status) Complete() bool { return statusClasses[s] == classComplete }

// Failed reports whether the status is one of the *_FAILED statuses.
func (s Status) Failed() bool { return statusClasses[s] == classFailed }

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
