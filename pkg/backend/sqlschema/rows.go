package sqlschema

import (
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

// DeploymentColumns are the deployments columns ScanDeployment reads, in its order.
const DeploymentColumns = `id, stack, kind, status, created_by, cdkx_version, snapshot_hash, started_at, finished_at, version, error`

// ScanDeployment scans DeploymentColumns (and then extra destinations) into a Deployment.
func ScanDeployment(row Row, extra ...any) (state.Deployment, error) {
	var d state.Deployment
	var kind, status string
	var started, finished int64
	dest := append([]any{&d.ID, &d.Stack, &kind, &status, &d.CreatedBy, &d.CdkxVersion, &d.SnapshotHash,
		&started, &finished, &d.Version, &d.Error}, extra...)
	if err := row.Scan(dest...); err != nil {
		return d, err
	}
	d.Kind, d.Status = state.DeploymentKind(kind), state.DeploymentStatus(status)
	d.StartedAt, d.FinishedAt = FromNanos(started), FromNanos(finished)
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
