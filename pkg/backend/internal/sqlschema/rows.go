package sqlschema

import (
	"encoding/json"
	"fmt"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

// Row is what one row is scanned from: *sql.Row, *sql.Rows, pgx.Row and pgx.Rows all are one.
type Row interface {
	Scan(dest ...any) error
}

// Rows is a query's result, read row by row: *sql.Rows and pgx.Rows both are one. The caller closes it.
type Rows interface {
	Row
	Next() bool
	Err() error
}

// The functions below read the schema's rows the same way for both backends. Their errors are the
// driver's own (or a decoding error), unwrapped: the backend adds where and what it was doing.

// DeploymentColumns are the columns ScanDeployment reads, in its order, selected FROM deployments (not
// aliased): every column of the record and its plan, from deployment_payloads; never the snapshot.
const DeploymentColumns = `id, stack, kind, status, message, seq, created_by, approved_by, rejected_by, aborted_by, ` +
	`approval_comment, rejection_comment, cdkx_version, snapshot_hash, ` + payloadPlan + `, state_version, created_at, started_at, finished_at, heartbeat_at, runner, version, error, approved_at`

// ListColumns are DeploymentColumns with the plan left out (read as NULL): lists that show no plan
// (state.DeploymentFilter.NoPlans).
const ListColumns = `id, stack, kind, status, message, seq, created_by, approved_by, rejected_by, aborted_by, ` +
	`approval_comment, rejection_comment, cdkx_version, snapshot_hash, NULL, state_version, created_at, started_at, finished_at, heartbeat_at, runner, version, error, approved_at`

// SnapshotColumn selects, FROM deployments, the deployment's snapshot (NULL when it has none).
const SnapshotColumn = `(SELECT p.snapshot FROM deployment_payloads AS p WHERE p.id = deployments.id)`

const payloadPlan = `(SELECT p.plan FROM deployment_payloads AS p WHERE p.id = deployments.id)`

// QueueColumns are DeploymentColumns with the plan, the message and the comments left out (read as NULL
// and ”): what
// the queue's frequent reads — claims, heartbeats — need. A plan of a large stack is megabytes of JSON;
// decoding it on every heartbeat, under the write lock, would stall the run's own commits.
const QueueColumns = `id, stack, kind, status, '', seq, created_by, approved_by, rejected_by, aborted_by, ` +
	`'', '', cdkx_version, snapshot_hash, NULL, state_version, created_at, started_at, finished_at, heartbeat_at, runner, version, error, approved_at`

// ScanDeployment scans DeploymentColumns (and then extra destinations) into a Deployment. A NULL or empty
// plan is a nil Plan.
func ScanDeployment(row Row, extra ...any) (state.Deployment, error) {
	var d state.Deployment
	var kind, status string
	var plan *string
	var created, started, finished, heartbeat, approved int64
	dest := append([]any{&d.ID, &d.Stack, &kind, &status, &d.Message, &d.Seq, &d.CreatedBy, &d.ApprovedBy,
		&d.RejectedBy, &d.AbortedBy, &d.ApprovalComment, &d.RejectionComment, &d.CdkxVersion, &d.SnapshotHash, &plan, &d.StateVersion,
		&created, &started, &finished, &heartbeat, &d.Runner, &d.Version, &d.Error, &approved}, extra...)
	if err := row.Scan(dest...); err != nil {
		return d, err
	}
	d.Kind, d.Status = state.DeploymentKind(kind), state.DeploymentStatus(status)
	d.CreatedAt, d.StartedAt, d.FinishedAt, d.HeartbeatAt = FromNanos(created), FromNanos(started), FromNanos(finished), FromNanos(heartbeat)
	d.ApprovedAt = FromNanos(approved)
	if plan != nil && *plan != "" {
		d.Plan = new(state.Plan)
		if err := json.Unmarshal([]byte(*plan), d.Plan); err != nil {
			return d, fmt.Errorf("decode the plan of deployment %q: %w", d.ID, err)
		}
	}
	return d, nil
}

// ScanDeployments reads every row of rows (DeploymentColumns) into deployments; an empty, non-nil list
// when there is none.
func ScanDeployments(rows Rows) ([]state.Deployment, error) {
	out := []state.Deployment{}
	for rows.Next() {
		d, err := ScanDeployment(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// InsertDeployment and InsertPayload are the statements that store a new deployment, with the arguments
// DeploymentArgs returns (the payload only when it has a snapshot or a plan).
const (
	InsertDeployment = `INSERT INTO deployments (id, stack, kind, status, message, seq, created_by, approved_by,
  rejected_by, aborted_by, cdkx_version, snapshot_hash, state_version, created_at, started_at,
  finished_at, heartbeat_at, runner, version, error, approval_comment, rejection_comment, approved_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23)`
	InsertPayload = `INSERT INTO deployment_payloads (id, snapshot, plan) VALUES ($1, $2, $3)`
)

// DeploymentArgs returns the arguments of InsertDeployment for d, and those of InsertPayload (nil when d
// has neither snapshot nor plan): the snapshot as text and the plan as JSON (NULL when absent), times as
// Unix nanoseconds. Absent values are nil pointers, which database/sql and pgx both send as NULL.
func DeploymentArgs(d *state.Deployment) (record, payload []any, err error) {
	var snapshot, plan *string
	if len(d.Snapshot) > 0 {
		s := string(d.Snapshot)
		snapshot = &s
	}
	if d.Plan != nil {
		s, err := d.Plan.JSON() // json.Marshal's bytes, without its reflection, its pool or a copy
		if err != nil {
			return nil, nil, fmt.Errorf("encode the plan of deployment %q: %w", d.ID, err)
		}
		plan = &s
	}
	record = []any{d.ID, d.Stack, string(d.Kind), string(d.Status), d.Message, d.Seq, d.CreatedBy, d.ApprovedBy,
		d.RejectedBy, d.AbortedBy, d.CdkxVersion, d.SnapshotHash, d.StateVersion,
		Nanos(d.CreatedAt), Nanos(d.StartedAt), Nanos(d.FinishedAt), Nanos(d.HeartbeatAt), d.Runner, d.Version, d.Error,
		d.ApprovalComment, d.RejectionComment, Nanos(d.ApprovedAt)}
	if snapshot != nil || plan != nil {
		payload = []any{d.ID, snapshot, plan}
	}
	return record, payload, nil
}

// LockColumns are the locks columns, without the stack, that ScanLock reads, in its order.
const LockColumns = `id, operation, username, host, pid, started_at, heartbeat_at, machine`

// ScanLock scans LockColumns into the holder of stack's lock.
func ScanLock(row Row, stack string) (state.LockInfo, error) {
	h := state.LockInfo{Stack: stack}
	var started, heartbeat int64
	if err := row.Scan(&h.ID, &h.Operation, &h.User, &h.Host, &h.PID, &started, &heartbeat, &h.Machine); err != nil {
		return h, err
	}
	h.StartedAt, h.HeartbeatAt = FromNanos(started), FromNanos(heartbeat)
	return h, nil
}

// ScanLocks reads every row of rows (stack, then LockColumns) into lock holders.
func ScanLocks(rows Rows) ([]state.LockInfo, error) {
	var out []state.LockInfo
	for rows.Next() {
		var stack string
		h, err := ScanLock(stackFirst{rows, &stack}, "")
		if err != nil {
			return nil, err
		}
		h.Stack = stack
		out = append(out, h)
	}
	return out, rows.Err()
}

// stackFirst scans a row's first column into stack and the rest into what Scan is given.
type stackFirst struct {
	row   Row
	stack *string
}

func (s stackFirst) Scan(dest ...any) error { return s.row.Scan(append([]any{s.stack}, dest...)...) }

// EventColumns are the events columns, without the deployment ID, that ScanEvents reads, in its order.
const EventColumns = `seq, time, stack, logical_id, type, status, reason`

// ScanEvents reads every row of rows (EventColumns) into events of deploymentID; an empty, non-nil list
// when there is none.
func ScanEvents(rows Rows, deploymentID string) ([]state.Event, error) {
	out := []state.Event{}
	for rows.Next() {
		e := state.Event{DeploymentID: deploymentID}
		var at int64
		if err := rows.Scan(&e.Seq, &at, &e.Stack, &e.LogicalID, &e.Type, &e.Status, &e.Reason); err != nil {
			return nil, err
		}
		e.Time = FromNanos(at)
		out = append(out, e)
	}
	return out, rows.Err()
}

// ReplayJournal applies the journal rows (version, data, created_at, ordered by version, from version 1)
// to s, which must be the empty stack, up to version; an error wrapping state.ErrNotFound when the
// journal ends before it.
func ReplayJournal(s *state.Stack, rows Rows, version int64) error {
	for rows.Next() {
		var v, created int64
		var data []byte
		if err := rows.Scan(&v, &data, &created); err != nil {
			return err
		}
		if v != s.Version+1 {
			return fmt.Errorf("journal jumps from version %d to %d", s.Version, v)
		}
		var changes []state.Change
		if err := DecodeJSON(data, &changes); err != nil {
			return fmt.Errorf("decode journal version %d: %w", v, err)
		}
		for i, c := range changes {
			if err := s.Apply(c); err != nil {
				return fmt.Errorf("replay journal version %d, change %d: %w", v, i, err)
			}
		}
		s.Version = v
		s.UpdatedAt = FromNanos(created)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if s.Version != version {
		return fmt.Errorf("stack is at version %d: %w", s.Version, state.ErrNotFound)
	}
	return nil
}
