package storage

// What the web console (internal/server/console.go) reads beyond the API's statements: a token by name
// (a session's rights are the token's as they are now), a project's stacks with their last deployment
// and open proposals in one statement, a deployment without its snapshot and the events after a
// sequence number. Pages of deployments are Deployments with DeploymentFilter.NoPlans.

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"
)

// TokenByName returns the token named name (without CreatedAt); ErrNotFound when none is.
func (c Conn) TokenByName(ctx context.Context, name string) (Token, error) {
	var t Token
	err := c.q.QueryRow(ctx, `SELECT name, orgs, read_only FROM svc_tokens WHERE name = $1`, name).Scan(&t.Name, &t.Orgs, &t.ReadOnly)
	if errors.Is(err, pgx.ErrNoRows) {
		return t, ErrNotFound
	}
	return t, err
}

// listRecordSQL selects the record of deployment d as lists show it: without the plan (megabytes for a
// large stack) and the snapshot (never in the record).
const listRecordSQL = `(d.record - 'plan')`

// StackOverview is a stack of a project as the console's stacks page needs it.
type StackOverview struct {
	// Name is the stack's name; Version its state version.
	Name    string
	Version int64
	// Last and Running are the records of its newest deployment and of its RUNNING one, without plans
	// (nil: none).
	Last, Running json.RawMessage
	// Waiting counts its PENDING and APPROVED deployments, Proposed its PROPOSED ones.
	Waiting, Proposed int
}

// StackOverviews returns the stacks of org and project, by name, each with its newest deployment, its
// RUNNING one and the counts of its waiting deployments and open proposals, in one statement (indexes
// svc_deployments_stack_seq and svc_deployments_one_running): records are read for two deployments a
// stack, however long its queue.
func (c Conn) StackOverviews(ctx context.Context, org, project string) ([]StackOverview, error) {
	rows, err := c.q.Query(ctx, `SELECT s.name, s.version,
  (SELECT `+listRecordSQL+` FROM svc_deployments d WHERE d.stack_id = s.id ORDER BY d.seq DESC LIMIT 1),
  (SELECT `+listRecordSQL+` FROM svc_deployments d WHERE d.stack_id = s.id AND d.status = 'RUNNING'),
  (SELECT count(*) FROM svc_deployments d WHERE d.stack_id = s.id AND d.status IN ('PENDING', 'APPROVED')),
  (SELECT count(*) FROM svc_deployments d WHERE d.stack_id = s.id AND d.status = 'PROPOSED')
FROM svc_stacks s WHERE s.org = $1 AND s.project = $2 ORDER BY s.name`, org, project)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (StackOverview, error) {
		var o StackOverview
		var last, running []byte
		err := row.Scan(&o.Name, &o.Version, &last, &running, &o.Waiting, &o.Proposed)
		if last != nil {
			o.Last = last
		}
		if running != nil {
			o.Running = running
		}
		return o, err
	})
}

// DeploymentRecord returns the record of deployment id of org and project, with its plan and without its
// snapshot; ErrNotFound when absent.
func (c Conn) DeploymentRecord(ctx context.Context, org, project, id string) (json.RawMessage, error) {
	var record []byte
	err := c.q.QueryRow(ctx, `SELECT d.record FROM svc_deployments d JOIN svc_stacks s ON s.id = d.stack_id
WHERE d.id = $3 AND s.org = $1 AND s.project = $2`, org, project, id).Scan(&record)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	return record, err
}

// DeploymentEventsAfter returns the stored events of deployment id of org and project whose sequence
// number is above after, in order.
func (c Conn) DeploymentEventsAfter(ctx context.Context, org, project, id string, after int64) ([]json.RawMessage, error) {
	rows, err := c.q.Query(ctx, `SELECT e.data FROM svc_deployment_events e JOIN svc_stacks s ON s.id = e.stack_id
WHERE e.deployment_id = $3 AND s.org = $1 AND s.project = $2 AND e.seq > $4 ORDER BY e.seq`, org, project, id, after)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[json.RawMessage])
}
