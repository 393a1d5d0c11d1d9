package state

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Deployment is the record of one deployment of one stack (Massdriver's model): what it will run or ran
// (its snapshot and the plan it was made with), where it is in its lifecycle, who moved it there and when.
// A deployment is created PROPOSED or PENDING, waits in its stack's queue, runs once and ends in a terminal
// status; its snapshot never changes.
type Deployment struct {
	ID     string           `json:"id"`
	Stack  string           `json:"stack"`
	Kind   DeploymentKind   `json:"kind"`
	Status DeploymentStatus `json:"status"`
	// Message is what the proposer wrote (deploy --propose --message), or "" .
	Message string `json:"message"`
	// Seq is the deployment's place in creation order, across every stack of the backend: assigned by
	// CreateDeployments, 1 or more, increasing. Queues drain in Seq order.
	Seq int64 `json:"seq"`
	// CreatedBy, ApprovedBy, RejectedBy and AbortedBy say who did each: "user@host" on the SQLite and
	// PostgreSQL backends, the API token's name on a state service ("" when nobody did).
	CreatedBy  string `json:"createdBy"`
	ApprovedBy string `json:"approvedBy"`
	RejectedBy string `json:"rejectedBy,omitempty"`
	AbortedBy  string `json:"abortedBy,omitempty"`
	// ApprovalComment and RejectionComment are what the reviewer wrote when approving or rejecting it
	// (cdkx deployments approve --comment, reject --comment; the console's comment box), or "": at most
	// MaxMessageBytes of UTF-8 (CheckMessage), recorded by the transition (Transition.Comment).
	ApprovalComment  string `json:"approvalComment,omitempty"`
	RejectionComment string `json:"rejectionComment,omitempty"`
	// ApprovedAt is when it was approved (the approving Transition's At), UTC; zero when it was not, or
	// when a record older than this field does not say. A rejection's or an abort's time is FinishedAt.
	ApprovedAt time.Time `json:"approvedAt,omitzero"`
	// CdkxVersion is the version of the cdkx that created the deployment.
	CdkxVersion string `json:"cdkxVersion"`
	// Snapshot is what the deployment runs (the whole assembly and the run's options; see
	// operation.Snapshot), with sensitive values encrypted or redacted; SnapshotHash is its SHA-256, hex.
	// Lists leave Snapshot out.
	Snapshot     []byte `json:"snapshot,omitempty"`
	SnapshotHash string `json:"snapshotHash"`
	// Plan is the plan the deployment was made with (nil for kinds without one).
	Plan *Plan `json:"plan"`
	// StateVersion is the stack's state version the plan was made against.
	StateVersion int64 `json:"stateVersion"`
	// CreatedAt is when it was created, StartedAt when it became RUNNING, FinishedAt when it reached a
	// terminal status (zero: not yet). UTC.
	CreatedAt  time.Time `json:"createdAt"`
	StartedAt  time.Time `json:"startedAt,omitzero"`
	FinishedAt time.Time `json:"finishedAt,omitzero"`
	// HeartbeatAt is the last heartbeat of the process waiting for or running the deployment; zero when no
	// process is attached (a proposal, or a deployment queued with --no-wait for an agent). A PENDING or
	// RUNNING deployment whose heartbeat is older than DeadAfter is ABORTED by the next claim of its stack.
	HeartbeatAt time.Time `json:"heartbeatAt,omitzero"`
	// Runner identifies the process running it ("user@host pid N", or the agent's name) once RUNNING.
	Runner string `json:"runner,omitempty"`
	// Version is the stack's state version when the deployment finished.
	Version int64 `json:"version"`
	// Error is why a deployment FAILED, was ABORTED or REJECTED (the reviewer's message), or "".
	Error string `json:"error"`
}

// Plan is what a deployment was planned to do: counts and steps, with the values each step changes as
// `cdkx diff --json` shows them (sensitive values as "(sensitive)", never in plain text).
type Plan struct {
	Create  int `json:"create"`
	Update  int `json:"update"`
	Replace int `json:"replace"`
	Delete  int `json:"delete"`
	// Same counts resources left alone.
	Same  int        `json:"same"`
	Steps []PlanStep `json:"steps"`
	// SnapshotHash is the SHA-256 (hex) of the snapshot the plan was made from (SnapshotHash); stores
	// refuse a deployment whose plan names another snapshot than its own (BindSnapshot).
	SnapshotHash string `json:"snapshotHash,omitempty"`
	// Values is set on plans whose steps carry values (changes, inputs, replacement, notes). Plans recorded
	// by older cdkx versions carry only each step's paths and digest, and a run compares a new plan with
	// such an approved one by those alone (LegacyStep).
	Values bool `json:"values,omitempty"`
	// Reads are the state versions of the other stacks whose outputs the plan read (the stack's
	// dependencies), by stack name: a run that finds one of them moved calls a changed plan stale, not
	// tampered.
	Reads map[string]int64 `json:"reads,omitempty"`
}

// LegacyStep returns s with only what plans recorded before Plan.Values carried: resource, type, op, paths
// and digest.
func LegacyStep(s PlanStep) PlanStep {
	return PlanStep{Resource: s.Resource, Type: s.Type, Op: s.Op, Paths: s.Paths, Digest: s.Digest}
}

// PlanStep is one resource's step in a Plan. Resources left alone have no step.
type PlanStep struct {
	// Resource is "Stack/LogicalID".
	Resource  string `json:"resource"`
	Stack     string `json:"stack"`
	LogicalID string `json:"logicalId"`
	Type      string `json:"type"`
	// Op is "create", "update", "replace" or "delete".
	Op string `json:"op"`
	// PhysicalID is the object the step changes or deletes ("" for a create).
	PhysicalID string `json:"physicalId,omitempty"`
	// Reason says why a resource is replaced or deleted.
	Reason string `json:"reason,omitempty"`
	// Replacement is the order of a replacement: ReplaceDeleteFirst or ReplaceCreateFirst ("" for
	// other ops).
	Replacement string `json:"replacement,omitempty"`
	// Changes are the changed top-level properties of an update or replacement, sorted by name.
	Changes []PlanChange `json:"changes,omitempty"`
	// Inputs are a create's predicted inputs: write-only ones "(sensitive)", values known only after
	// deploy "(known after deploy)".
	Inputs map[string]any `json:"inputs,omitempty"`
	// Notes say what harm the step does, in a few words each (data lost, downtime), from the type's
	// schema; empty when none is declared.
	Notes []string `json:"notes,omitempty"`
	// Paths are the changed properties, dotted ("properties.ttl"), sorted; empty for creates and deletes.
	Paths []string `json:"paths,omitempty"`
	// Digest is the SHA-256 (hex) of the step's starting object and changes: two plans with the same
	// digest for a resource make the same change from the same starting point. Empty for a create.
	Digest string `json:"digest,omitempty"`
}

// PlanChange is one changed property of a PlanStep: its last applied value (Old) and its new one (New),
// nil when absent; "(sensitive)" for a write-only property, "(known after deploy)" for a value not known
// yet. CreateOnly is set when the change forces the replacement.
type PlanChange struct {
	Name       string `json:"name"`
	Old        any    `json:"old"`
	New        any    `json:"new"`
	CreateOnly bool   `json:"createOnly,omitempty"`
}

// Replacement orders (PlanStep.Replacement): the old object is deleted before its successor exists
// (downtime), or after it.
const (
	ReplaceDeleteFirst = "delete-first"
	ReplaceCreateFirst = "create-first"
)

// Terminal reports whether s is a terminal status: COMPLETED, FAILED, REJECTED or ABORTED.
func (s DeploymentStatus) Terminal() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusRejected || s == StatusAborted
}

// Queued reports whether s holds a place in its stack's queue: PENDING, APPROVED or RUNNING.
func (s DeploymentStatus) Queued() bool {
	return s == StatusPending || s == StatusApproved || s == StatusRunning
}

// Heartbeats: a process waiting for or running a deployment renews its heartbeat every HeartbeatEvery
// (HeartbeatDeployments); one silent for DeadAfter is taken for dead.
const (
	HeartbeatEvery = 500 * time.Millisecond
	DeadAfter      = 10 * time.Second
)

// DeploymentFilter selects deployments for ListDeployments.
type DeploymentFilter struct {
	// Stack, when not "", keeps only that stack's deployments.
	Stack string
	// Statuses, when not empty, keeps only deployments in one of them.
	Statuses []DeploymentStatus
	// Kinds, when not empty, keeps only deployments of one of them.
	Kinds []DeploymentKind
	// IDPrefix, when not "", keeps only deployments whose ID starts with it (ResolveDeploymentID).
	IDPrefix string
	// Before, when not 0, keeps only deployments older than it: the cursor of the next page, which is
	// NextBefore of the page before (the Seq of its last, oldest deployment). Treat it as opaque: a
	// number to pass back, not to compute.
	Before int64
	// Limit keeps the newest Limit (0: all).
	Limit int
	// NoPlans leaves the plans out (nil Plan): lists that show none need not read and decode them (a
	// 100,000-resource plan is ~30 MB of JSON).
	NoPlans bool
}

// Match reports whether d passes the filter's Stack, Statuses, Kinds, IDPrefix and Before (Limit aside).
func (f DeploymentFilter) Match(d *Deployment) bool {
	return (f.Stack == "" || d.Stack == f.Stack) && (len(f.Statuses) == 0 || slices.Contains(f.Statuses, d.Status)) &&
		(len(f.Kinds) == 0 || slices.Contains(f.Kinds, d.Kind)) && (f.Before == 0 || d.Seq < f.Before) &&
		strings.HasPrefix(d.ID, f.IDPrefix)
}

// NextBefore returns the cursor of the page after page, a list ListDeployments answered for a filter with
// Limit limit: the Before of the next page's filter, or 0 when page is the last one (shorter than limit,
// or limit 0).
func NextBefore(page []Deployment, limit int) int64 {
	if limit <= 0 || len(page) < limit {
		return 0
	}
	return page[len(page)-1].Seq
}

// MaxMessageBytes is the longest message a deployment may carry (deploy --propose --message), in bytes.
const MaxMessageBytes = 4 << 10

// CheckMessage returns an error when msg cannot be a deployment's message or a reviewer's comment: longer
// than MaxMessageBytes or not UTF-8. Every backend refuses such a deployment at creation
// (CreateDeployments) and such a comment in a transition (ApplyTransition).
func CheckMessage(msg string) error {
	if len(msg) > MaxMessageBytes {
		return fmt.Errorf("the message is %d bytes; at most %d (4 KiB) are allowed: shorten it, and link to details instead", len(msg), MaxMessageBytes)
	}
	if !utf8.ValidString(msg) {
		return errors.New("the message is not valid UTF-8")
	}
	return nil
}

// MinIDPrefix is the fewest characters of a deployment ID that name it (ResolveDeploymentID).
const MinIDPrefix = 6

// AmbiguousIDError is returned by ResolveDeploymentID when a prefix names more than one deployment.
type AmbiguousIDError struct {
	Prefix string
	// Matches are the deployments whose ID starts with Prefix, newest first.
	Matches []Deployment
}

// Error lists the matching IDs.
func (e *AmbiguousIDError) Error() string {
	ids := make([]string, len(e.Matches))
	for i, d := range e.Matches {
		ids[i] = fmt.Sprintf("%s (%s, %s)", d.ID, d.Stack, d.Status)
	}
	return fmt.Sprintf("deployment ID prefix %q is ambiguous: it matches %s; give more characters", e.Prefix, strings.Join(ids, ", "))
}

// ResolveDeploymentID returns the full ID of the one deployment of ds whose ID is id or starts with id.
// A full ID is taken as it is (even when no such deployment exists: the caller's read then says so).
// Errors: a prefix shorter than MinIDPrefix; ErrNotFound (wrapped) when none starts with it;
// *AmbiguousIDError when several do.
func ResolveDeploymentID(ctx context.Context, ds Deployments, id string) (string, error) {
	if len(id) >= 36 {
		return id, nil
	}
	if len(id) < MinIDPrefix {
		return "", fmt.Errorf("deployment ID %q is too short: give the full ID or a unique prefix of at least %d characters (cdkx deployments list)", id, MinIDPrefix)
	}
	found, err := ds.ListDeployments(ctx, DeploymentFilter{IDPrefix: id, Limit: 11})
	if err != nil {
		return "", err
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("no deployment %q: %w", id, ErrNotFound)
	case 1:
		return found[0].ID, nil
	}
	return "", &AmbiguousIDError{Prefix: id, Matches: found}
}

// Transition is a compare-and-set of a deployment's status (UpdateDeployment).
type Transition struct {
	// From are the statuses the deployment may be in; To is the new one.
	From []DeploymentStatus
	To   DeploymentStatus
	// By is who makes the change: recorded as ApprovedBy (To APPROVED), RejectedBy (REJECTED) or
	// AbortedBy (ABORTED). A state service records its token's name instead. The second-person rule
	// (CheckTransition) compares it with the deployment's CreatedBy.
	By string
	// Runner is the runner identity of the process making the change, when it ends a RUNNING deployment
	// (To ABORTED): only the runner that claimed it may (CheckTransition). A process that found that
	// runner dead on its own machine speaks for it.
	Runner string
	// Error is recorded as the deployment's error when not "" (a rejection's message).
	Error string
	// Comment is the reviewer's comment, recorded as ApprovalComment (To APPROVED) or RejectionComment
	// (To REJECTED); "" for none. Bounded as messages are (CheckMessage); a transition to another status
	// takes none.
	Comment string
	// At is the time of the change: ApprovedAt when To is APPROVED, FinishedAt when To is terminal.
	At time.Time
}

// TransitionError is returned when a deployment is not in a status a change may start from.
type TransitionError struct {
	ID     string
	Status DeploymentStatus
	To     DeploymentStatus
}

// Error says what the deployment is and what was asked.
func (e *TransitionError) Error() string {
	if e.Status.Terminal() {
		return fmt.Sprintf("deployment %s is %s, a terminal status: it never runs or changes again (cannot make it %s)", e.ID, e.Status, e.To)
	}
	return fmt.Sprintf("deployment %s is %s; it cannot become %s", e.ID, e.Status, e.To)
}

// QueuedError is returned by ClaimDeployments when a deployment is not yet at the head of its stack's
// queue: Position deployments are ahead of it (the first of them is Ahead, without plan or snapshot).
type QueuedError struct {
	ID, Stack string
	Position  int
	Ahead     Deployment
}

// Error names the place in the queue and what is ahead: its kind, ID, status, creator and, once it
// runs, its runner without the machine identity ("run by alice@ci-7 pid 4242").
func (e *QueuedError) Error() string {
	who := "created by " + e.Ahead.CreatedBy
	if e.Ahead.Status == StatusRunning && e.Ahead.Runner != "" {
		runner, _, _ := strings.Cut(e.Ahead.Runner, " on ")
		who += ", run by " + runner
	}
	return fmt.Sprintf("deployment %s of stack %s is queued at position %d; ahead of it: %s %s (%s, %s)",
		e.ID, e.Stack, e.Position, e.Ahead.Kind, e.Ahead.ID, e.Ahead.Status, who)
}

// Deployments is the deployment queue and its records. One queue per stack: the stack's PENDING, APPROVED
// and RUNNING deployments in Seq order; at most one RUNNING (the backend enforces it, not its clients);
// PROPOSED ones hold no place.
type Deployments interface {
	// CreateDeployments stores new deployments in one transaction, in order, each at the tail of its
	// stack's queue: it sets Seq (creation order across stacks, so that runs over several stacks queue in the
	// same order everywhere) and CreatedAt when zero. A state service also sets CreatedBy. The store
	// computes SnapshotHash itself (SnapshotHash of Snapshot, "" without one) and refuses a deployment whose
	// given SnapshotHash, when not "", disagrees. An ID that exists is an error, a message CheckMessage
	// refuses is an error, a deployment CheckCreate refuses under the store's Policy a *ForbiddenError, and
	// then nothing is stored.
	CreateDeployments(ctx context.Context, ds []*Deployment) error
	// UpdateDeployment applies t to deployment id and returns the record after it: *TransitionError when
	// its status is not in t.From or CheckTransition knows no such change, *ForbiddenError when
	// CheckTransition refuses t.By (or t.Runner) under the store's Policy, ErrNotFound (wrapped) when
	// absent. Two racing changes cannot both win.
	UpdateDeployment(ctx context.Context, id string, t Transition) (*Deployment, error)
	// RequestAbort records by as AbortedBy of a RUNNING deployment, which stays RUNNING until its runner
	// sees the request (HeartbeatDeployments) and finishes it ABORTED; *TransitionError when not RUNNING.
	RequestAbort(ctx context.Context, id, by string, at time.Time) (*Deployment, error)
	// ClaimDeployments makes every deployment of ids RUNNING, all or none, recording runner, StartedAt and
	// HeartbeatAt = now: each must be PENDING or APPROVED and the oldest queued deployment of its stack.
	// First, in the same transaction, the PENDING and RUNNING deployments of those stacks whose heartbeat
	// is older than now-DeadAfter are made ABORTED ("its process stopped: no heartbeat since …"). Errors:
	// *QueuedError for the first deployment that is not at the head, *TransitionError when one is not
	// PENDING or APPROVED.
	ClaimDeployments(ctx context.Context, ids []string, runner string, now time.Time) error
	// ClaimNext claims the oldest deployment an agent may run, in stacks (all when empty): the head of its
	// stack's queue, APPROVED, or PENDING with no process attached (zero HeartbeatAt); dead waiters are
	// aborted first as in ClaimDeployments. It returns the claimed deployment with its snapshot, or nil when
	// no queue has one.
	ClaimNext(ctx context.Context, stacks []string, runner string, now time.Time) (*Deployment, error)
	// HeartbeatDeployments sets HeartbeatAt of the PENDING, APPROVED and RUNNING deployments among ids to at,
	// and returns every one of ids as stored (without snapshots, plans or messages: it runs every HeartbeatEvery), so
	// that a waiter sees its place and a runner an abort request (AbortedBy on a RUNNING deployment).
	HeartbeatDeployments(ctx context.Context, ids []string, at time.Time) ([]Deployment, error)
	// FinishDeployment moves a RUNNING deployment to a terminal status (COMPLETED, FAILED or ABORTED) with its
	// finish time, resulting version and error, for runner, the runner identity its claim recorded:
	// *TransitionError when it is not RUNNING, *ForbiddenError when another runner claimed it (a state
	// service knows runners by their API token and ignores runner).
	FinishDeployment(ctx context.Context, id, runner string, status DeploymentStatus, finishedAt time.Time, version int64, errMsg string) error
	// ListDeployments returns the deployments f selects (IDPrefix included), newest (highest Seq) first,
	// without snapshots.
	ListDeployments(ctx context.Context, f DeploymentFilter) ([]Deployment, error)
	// GetDeployment returns one deployment with its snapshot; ErrNotFound (wrapped) when absent.
	GetDeployment(ctx context.Context, id string) (*Deployment, error)
	// Events returns a deployment's events in Seq order.
	Events(ctx context.Context, deploymentID string) ([]Event, error)
}
