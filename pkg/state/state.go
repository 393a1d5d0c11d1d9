// Package state is the model of what cdkx has deployed: stacks, resources, deployments and their events.
package state

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// Resource is one deployed object as recorded after its last step.
type Resource struct {
	LogicalID  string `json:"logicalId"`
	Type       string `json:"type"`
	Provider   string `json:"provider"`
	PhysicalID string `json:"physicalId,omitempty"`
	// Inputs are the resolved properties last applied (write-only values replaced by their fingerprint).
	Inputs resource.Properties `json:"inputs"`
	// Outputs are what {ref, attr} tokens read, "crn" included.
	Outputs resource.Properties `json:"outputs"`
	// Dependencies are the direct dependencies: logical IDs in the same stack, sorted.
	Dependencies []string `json:"dependencies,omitempty"`
	// Status is the last lifecycle status, e.g. CREATE_COMPLETE.
	Status string `json:"status"`
	// Pending is set while a provider call for this resource may be in flight (see engine-semantics.md).
	Pending *PendingOperation `json:"pending,omitempty"`
	// Replaced lists older objects of this logical ID that a replacement created a successor for and that
	// are not deleted yet. They exist at the provider and state must know them.
	Replaced  []Object  `json:"replaced,omitempty"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// Object is a provider object identified by its physical ID, with what was last applied to it.
type Object struct {
	Type       string              `json:"type"`
	Provider   string              `json:"provider"`
	PhysicalID string              `json:"physicalId"`
	Inputs     resource.Properties `json:"inputs"`
	Outputs    resource.Properties `json:"outputs"`
}

// PendingOperation is the durable record written before a provider call: the operation, the inputs sent,
// and when it started. It is cleared by the change that records the call's result.
type PendingOperation struct {
	Op         PendingOp           `json:"op"`
	Inputs     resource.Properties `json:"inputs,omitempty"`
	PhysicalID string              `json:"physicalId,omitempty"`
	StartedAt  time.Time           `json:"startedAt"`
}

// PendingOp is the kind of provider call a PendingOperation stands for.
type PendingOp string

// The pending operations, as stored.
const (
	// PendingCreate: a create was sent; the object may exist without its physical ID being recorded.
	PendingCreate PendingOp = "creating"
	// PendingUpdate: an update to Inputs was sent to the object PhysicalID.
	PendingUpdate PendingOp = "updating"
	// PendingDelete: a delete of the object PhysicalID was sent.
	PendingDelete PendingOp = "deleting"
)

// Stack is a stack's state at one version.
type Stack struct {
	Name string `json:"name"`
	// Version increases by one with every change committed to the stack; 0 for a stack never deployed.
	Version int64 `json:"version"`
	// Status is the stack's last lifecycle status, e.g. UPDATE_COMPLETE.
	Status string `json:"status,omitempty"`
	// Outputs are the stack's resolved outputs, what {stackRef, outputKey} tokens read.
	Outputs resource.Properties `json:"outputs"`
	// Dependencies are the stacks this stack's last deployment depended on, sorted.
	Dependencies []string `json:"dependencies,omitempty"`
	// Resources are keyed by logical ID.
	Resources map[string]*Resource `json:"-"`
	UpdatedAt time.Time            `json:"updatedAt"`
}

// NewStack returns an empty stack state (version 0) named name.
func NewStack(name string) *Stack {
	return &Stack{Name: name, Outputs: resource.Properties{}, Resources: map[string]*Resource{}}
}

// SortedResources returns the stack's resources ordered by logical ID.
func (s *Stack) SortedResources() []*Resource {
	out := make([]*Resource, 0, len(s.Resources))
	for _, r := range s.Resources {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LogicalID < out[j].LogicalID })
	return out
}

// ChangeKind names what one Change does to a stack.
type ChangeKind string

// Kinds of change.
const (
	// PutResource records Resource (insert or replace by logical ID).
	PutResource ChangeKind = "put"
	// DeleteResource removes LogicalID from the stack.
	DeleteResource ChangeKind = "delete"
	// PutStack records the stack's Status, Outputs and Dependencies.
	PutStack ChangeKind = "stack"
)

// Change is one entry of a stack's journal: O(size of one resource) bytes.
type Change struct {
	Kind      ChangeKind `json:"kind"`
	Resource  *Resource  `json:"resource,omitempty"`
	LogicalID string     `json:"logicalId,omitempty"`
	// For PutStack.
	Status       string              `json:"status,omitempty"`
	Outputs      resource.Properties `json:"outputs,omitempty"`
	Dependencies []string            `json:"dependencies,omitempty"`
}

// Apply applies c to s in memory (the same rule the backends use when replaying a journal).
func (s *Stack) Apply(c Change) error {
	switch c.Kind {
	case PutResource:
		if c.Resource == nil {
			return errors.New("put change without resource")
		}
		s.Resources[c.Resource.LogicalID] = c.Resource
	case DeleteResource:
		delete(s.Resources, c.LogicalID)
	case PutStack:
		s.Status = c.Status
		s.Outputs = c.Outputs
		if s.Outputs == nil {
			s.Outputs = resource.Properties{}
		}
		s.Dependencies = c.Dependencies
	default:
		return fmt.Errorf("unknown change kind %q", c.Kind)
	}
	return nil
}

// DeploymentKind is what a deployment did.
type DeploymentKind string

// Deployment kinds (engine-semantics.md).
const (
	KindDeploy  DeploymentKind = "deploy"
	KindPlan    DeploymentKind = "plan"
	KindDestroy DeploymentKind = "destroy"
	KindImport  DeploymentKind = "import"
	KindRefresh DeploymentKind = "refresh"
)

// DeploymentStatus is where a deployment is in its lifecycle.
type DeploymentStatus string

// Deployment statuses. Terminal: COMPLETED, FAILED, REJECTED, ABORTED.
const (
	StatusProposed  DeploymentStatus = "PROPOSED"
	StatusApproved  DeploymentStatus = "APPROVED"
	StatusRejected  DeploymentStatus = "REJECTED"
	StatusPending   DeploymentStatus = "PENDING"
	StatusRunning   DeploymentStatus = "RUNNING"
	StatusCompleted DeploymentStatus = "COMPLETED"
	StatusFailed    DeploymentStatus = "FAILED"
	StatusAborted   DeploymentStatus = "ABORTED"
)

// Event is one lifecycle event of a deployment, numbered from 1 by Seq.
type Event struct {
	DeploymentID string    `json:"deploymentId"`
	Seq          int64     `json:"seq"`
	Time         time.Time `json:"time"`
	Stack        string    `json:"stack"`
	LogicalID    string    `json:"logicalId,omitempty"`
	Type         string    `json:"type,omitempty"`
	Status       string    `json:"status"`
	Reason       string    `json:"reason,omitempty"`
}

// LockInfo identifies the holder of a stack's lock.
type LockInfo struct {
	ID        string `json:"id"`
	Stack     string `json:"stack"`
	Operation string `json:"operation"`
	User      string `json:"user"`
	Host      string `json:"host"`
	PID       int    `json:"pid"`
	// Machine identifies the operating system instance and PID namespace the holder runs in (Linux: boot ID
	// and PID namespace inode), so that PID means something only where Machine matches; "" when unknown.
	Machine     string    `json:"machine,omitempty"`
	StartedAt   time.Time `json:"startedAt"`
	HeartbeatAt time.Time `json:"heartbeatAt"`
}

// String renders the holder for an error message, e.g. `deploy by alice@ci-7 (pid 4242) since 2026-…`.
func (l LockInfo) String() string {
	return fmt.Sprintf("%s by %s@%s (pid %d, lock %s) since %s", l.Operation, l.User, l.Host, l.PID, l.ID,
		l.StartedAt.UTC().Format(time.RFC3339))
}

// LockedError is returned by Backend.Lock when another holder has the stack's lock.
type LockedError struct {
	Holder LockInfo
}

// Error names the stack and the holder.
func (e *LockedError) Error() string {
	return fmt.Sprintf("stack %q is locked: %s", e.Holder.Stack, e.Holder)
}

// ErrNotFound is returned (wrapped) when a stack version or deployment does not exist.
var ErrNotFound = errors.New("not found")

// Abilities is what a backend can do beyond the contract every backend keeps, declared as data (as
// resource.ProviderInfo declares a provider's): callers read Backend.Abilities, never probe the backend's
// type. The zero value is a local store (SQLite, PostgreSQL).
type Abilities struct {
	// LeasedLocks: the backend's locks are leases that its server expires by itself (the state service): a
	// holder that stops renewing loses its lock when its lease runs out, so clients never take such a lock
	// over on their own (StaleLock does not apply), they wait.
	LeasedLocks bool
	// CancelOthers: Unlock with another holder's lock ID cancels that holder's run (the state service's
	// update), which loses its lock at its next heartbeat: what cdkx cancel does. Without it a lock is
	// released by its holder, or taken over once stale.
	CancelOthers bool
}

// Backend is where state lives. Every method is safe for concurrent use. Each Commit is one atomic
// transaction; a crash leaves state as of the last committed Commit.
type Backend interface {
	// ListStacks returns the names of stacks with state, sorted.
	ListStacks(ctx context.Context) ([]string, error)
	// GetStack returns the current state of a stack; a stack never deployed is NewStack(name), not an error.
	GetStack(ctx context.Context, name string) (*Stack, error)
	// GetStackVersion returns the stack as it was at version (replaying its journal); ErrNotFound when the
	// stack never reached that version.
	GetStackVersion(ctx context.Context, name string, version int64) (*Stack, error)
	// StackVersion returns the stack's current version (0 for a stack never deployed) without reading its
	// resources: whether a stack read earlier has moved since.
	StackVersion(ctx context.Context, name string) (int64, error)

	// Commit applies changes to the stack and stores events, in one transaction, and returns the
	// stack's new version (one more than before, whatever the number of changes).
	Commit(ctx context.Context, deploymentID, stack string, changes []Change, events []Event) (int64, error)

	// Deployments is the deployment queue and its records (deployment.go).
	Deployments

	// Lock takes the stack's lock for info.ID, or returns *LockedError naming the holder. It does not wait.
	Lock(ctx context.Context, info LockInfo) error
	// Unlock releases the stack's lock if id holds it (a compare-and-delete: taking over a stale lock is
	// Unlock with the stale holder's ID, then Lock).
	Unlock(ctx context.Context, stack, id string) error
	// Locks returns every held lock, ordered by stack.
	Locks(ctx context.Context) ([]LockInfo, error)
	// Heartbeat refreshes the holder's heartbeat time on the stack's lock.
	Heartbeat(ctx context.Context, stack, id string, at time.Time) error

	// Abilities declares what the backend can do beyond this contract; it is constant for a backend.
	Abilities() Abilities

	// Close releases the backend's resources.
	Close() error
}
