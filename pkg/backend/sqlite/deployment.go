package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/backend/sqlschema"

	"github.com/cdkx-dev/cdkx/pkg/state"
	sqlite3 "modernc.org/sqlite/lib"
)

// CreateDeployment stores d. Its ID and Stack must be set; an ID already stored is an error. The snapshot
// is stored as text (it is JSON); an empty snapshot is stored as absent and read back as nil.
func (b *Backend) CreateDeployment(ctx context.Context, d *state.Deployment) error {
	if d == nil || d.ID == "" {
		return errors.New("create deployment: empty id")
	}
	if d.Stack == "" {
		return fmt.Errorf("create deployment %q: empty stack name", d.ID)
	}
	var snapshot sql.NullString
	if len(d.Snapshot) > 0 {
		snapshot = sql.NullString{String: string(d.Snapshot), Valid: true}
	}
	err := b.wr.do(func(conn *sql.Conn) error {
		_, err := conn.ExecContext(ctx, `INSERT INTO deployments
(id, stack, kind, status, created_by, cdkx_version, snapshot, snapshot_hash, started_at, finished_at, version, error)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
			d.ID, d.Stack, string(d.Kind), string(d.Status), d.CreatedBy, d.CdkxVersion, snapshot, d.SnapshotHash,
			sqlschema.Nanos(d.StartedAt), sqlschema.Nanos(d.FinishedAt), d.Version, d.Error)
		return err
	})
	if sqliteCode(err) == sqlite3.SQLITE_CONSTRAINT {
		return fmt.Errorf("create deployment %q: a deployment with this id already exists: %w", d.ID, err)
	}
	if err != nil {
		return dbError(b.path, fmt.Sprintf("create deployment %q", d.ID), err)
	}
	return nil
}

// FinishDeployment sets deployment id's status, finish time, resulting version and error message. An
// unknown id is an error wrapping state.ErrNotFound.
func (b *Backend) FinishDeployment(ctx context.Context, id string, status state.DeploymentStatus, finishedAt time.Time, version int64, errMsg string) error {
	op := fmt.Sprintf("finish deployment %q", id)
	var n int64
	err := b.wr.do(func(conn *sql.Conn) error {
		res, err := conn.ExecContext(ctx,
			`UPDATE deployments SET status = $2, finished_at = $3, version = $4, error = $5 WHERE id = $1`,
			id, string(status), sqlschema.Nanos(finishedAt), version, errMsg)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return dbError(b.path, op, err)
	}
	if n == 0 {
		return fmt.Errorf("%s: %w", op, state.ErrNotFound)
	}
	return nil
}

// ListDeployments returns the deployments of stack (of all stacks when stack is ""), newest first by
// StartedAt and then by ID descending, at most limit of them (all when limit <= 0), without snapshots.
func (b *Backend) ListDeployments(ctx context.Context, stack string, limit int) ([]state.Deployment, error) {
	var q strings.Builder
	var args []any
	q.WriteString(`SELECT ` + sqlschema.DeploymentColumns + ` FROM deployments`)
	if stack != "" {
		args = append(args, stack)
		fmt.Fprintf(&q, ` WHERE stack = $%d`, len(args))
	}
	q.WriteString(` ORDER BY started_at DESC, id DESC`)
	if limit > 0 {
		args = append(args, limit)
		fmt.Fprintf(&q, ` LIMIT $%d`, len(args))
	}
	rows, err := b.r.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return nil, dbError(b.path, "list deployments", err)
	}
	defer rows.Close()
	out, err := sqlschema.ScanDeployments(rows)
	if err != nil {
		return nil, dbError(b.path, "list deployments", err)
	}
	return out, nil
}

// GetDeployment returns deployment id with its snapshot; an unknown id is an error wrapping
// state.ErrNotFound.
func (b *Backend) GetDeployment(ctx context.Context, id string) (*state.Deployment, error) {
	op := fmt.Sprintf("read deployment %q", id)
	var snapshot sql.NullString
	d, err := sqlschema.ScanDeployment(b.r.QueryRowContext(ctx,
		`SELECT `+sqlschema.DeploymentColumns+`, snapshot FROM deployments WHERE id = $1`, id), &snapshot)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%s: %w", op, state.ErrNotFound)
	}
	if err != nil {
		return nil, dbError(b.path, op, err)
	}
	if snapshot.Valid && snapshot.String != "" {
		d.Snapshot = []byte(snapshot.String)
	}
	return &d, nil
}

// Events returns deployment id's events ordered by Seq; none (and no error) for an unknown deployment.
func (b *Backend) Events(ctx context.Context, deploymentID string) ([]state.Event, error) {
	op := fmt.Sprintf("read events of deployment %q", deploymentID)
	rows, err := b.r.QueryContext(ctx, `SELECT `+sqlschema.EventColumns+` FROM events WHERE deployment_id = $1 ORDER BY seq`, deploymentID)
	if err != nil {
		return nil, dbError(b.path, op, err)
	}
	defer rows.Close()
	out, err := sqlschema.ScanEvents(rows, deploymentID)
	if err != nil {
		return nil, dbError(b.path, op, err)
	}
	return out, nil
}
