package storage

// What the web console (internal/server/console.go) reads beyond the API's statements: a token by name
// (a session's rights are the token's as they are now), a project's stacks with their last deployment
// and open proposals in one statement, and pages of deployments without their plans.

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
	// ID is the stack's row ID; Name its name; Version its state version.
	ID      int64
	Name    string
	Version int64
	// Last is the record of its newest deployment without the plan (nil: none); Proposed counts its
	// PROPOSED deployments.
	Last     json.RawMessage
	Proposed int
}

// StackOverviews returns the stacks of org and project, by name, each with its newest deployment and
// the count of its open proposals (index svc_deployments_stack_seq).
func (c Conn) StackOverviews(ctx context.Context, org, project string) ([]StackOverview, error) {
	rows, err := c.q.Query(ctx, `SELECT s.id, s.name, s.version,
  (SELECT `+listRecordSQL+` FROM svc_deployments d WHERE d.stack_id = s.id ORDER BY d.seq DESC LIMIT 1),
  (SELECT count(*) FROM svc_deployments d WHERE d.stack_id = s.id AND d.status = 'PROPOSED')
FROM svc_stacks s WHERE s.org = $1 AND s.project = $2 ORDER BY s.name`, org, project)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (StackOverview, error) {
		var o StackOverview
		var last []byte
		err := row.Scan(&o.ID, &o.Name, &o.Version, &last, &o.Proposed)
		if last != nil {
			o.Last = last
		}
		return o, err
	})
}

// PageFilter selects one page of a project's deployments, newest (highest seq) first.
type PageFilter struct {
	// Stack is a stack's name ("": every stack); Statuses and Kinds the statuses and kinds wanted (empty:
	// any).
	Stack    string
	Statuses []string
	Kinds    []string
	// Before, when above 0, keeps the deployments whose seq is below it (the cursor of the next page).
	Before int64
	// Limit caps the number answered (above 0).
	Limit int
}

// DeploymentPage returns the records, without plans, of the deployments of org and project that f
// selects, newest (highest seq) first, at most f.Limit.
func (c Conn) DeploymentPage(ctx context.Context, org, project string, f PageFilter) ([]json.RawMessage, error) {
	statuses, kinds := f.Statuses, f.Kinds
	if statuses == nil {
		statuses = []string{}
	}
	if kinds == nil {
		kinds = []string{}
	}
	rows, err := c.q.Query(ctx, `SELECT `+listRecordSQL+` FROM svc_deployments d JOIN svc_stacks s ON s.id = d.stack_id
WHERE s.org = $1 AND s.project = $2 AND ($3 = '' OR s.name = $3) AND (cardinality($4::text[]) = 0 OR d.status = ANY($4))
  AND (cardinality($5::text[]) = 0 OR d.record->>'kind' = ANY($5)) AND ($6 <= 0 OR d.seq < $6)
ORDER BY d.seq DESC LIMIT $7`, org, project, f.Stack, statuses, kinds, f.Before, f.Limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[json.RawMessage])
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
