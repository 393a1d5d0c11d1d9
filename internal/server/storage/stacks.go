package storage

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// Stack is a stack's row identity and counters.
type Stack struct {
	ID, Version, ResourceCount int64
}

// LookupStack reads the stack at p, locking its row when lock is set; ErrNotFound when it does not exist.
func (c Conn) LookupStack(ctx context.Context, p StackPath, lock bool) (Stack, error) {
	q := `SELECT id, version, resource_count FROM svc_stacks WHERE org = $1 AND project = $2 AND name = $3`
	if lock {
		q += ` FOR UPDATE`
	}
	var st Stack
	err := c.q.QueryRow(ctx, q, p.Org, p.Project, p.Stack).Scan(&st.ID, &st.Version, &st.ResourceCount)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, ErrNotFound
	}
	return st, err
}

// CreateStack creates the stack at p with tags (a JSON object) at at; ErrExists when it exists.
func (c Conn) CreateStack(ctx context.Context, p StackPath, tags []byte, at time.Time) error {
	_, err := c.q.Exec(ctx, `INSERT INTO svc_stacks (org, project, name, tags, created_at) VALUES ($1, $2, $3, $4, $5)`,
		p.Org, p.Project, p.Stack, tags, at)
	if UniqueViolation(err) {
		return ErrExists
	}
	return err
}

// StackInfo is what GET of a stack answers: its path, tags (a JSON object) and version, and its active
// update, or its latest one when none is active (Update is "" for a stack never updated).
type StackInfo struct {
	StackPath
	Tags    map[string]string
	Version int64
	// Update, Kind, Status, Author (the token that created it) and Created describe that update.
	Update, Kind, Status, Author string
	Created                      time.Time
}

// StackInfoOf returns the StackInfo of the stack at p; ErrNotFound when it does not exist.
func (c Conn) StackInfoOf(ctx context.Context, p StackPath) (StackInfo, error) {
	var info StackInfo
	var id int64
	var update, kind, status, author *string
	var started *time.Time
	err := c.q.QueryRow(ctx, `SELECT s.id, s.org, s.project, s.name, s.tags, s.version, u.id, u.kind, u.status, u.created_by, u.created_at
FROM svc_stacks s LEFT JOIN LATERAL (SELECT * FROM svc_updates WHERE stack_id = s.id
  ORDER BY status IN ('not started', 'requested', 'running') DESC, created_at DESC LIMIT 1) u ON true
WHERE s.org = $1 AND s.project = $2 AND s.name = $3`, p.Org, p.Project, p.Stack).
		Scan(&id, &info.Org, &info.Project, &info.Stack, &info.Tags, &info.Version, &update, &kind, &status, &author, &started)
	if errors.Is(err, pgx.ErrNoRows) {
		return info, ErrNotFound
	}
	info.Update, info.Kind, info.Status, info.Author = deref(update), deref(kind), deref(status), deref(author)
	if started != nil {
		info.Created = *started
	}
	return info, err
}

// DeleteStack deletes the stack (row ID) and, by cascade, all it holds.
func (c Conn) DeleteStack(ctx context.Context, stackID int64) error {
	_, err := c.q.Exec(ctx, `DELETE FROM svc_stacks WHERE id = $1`, stackID)
	return err
}

// ProjectExists reports whether org has a stack of project.
func (c Conn) ProjectExists(ctx context.Context, org, project string) (bool, error) {
	var exists bool
	err := c.q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM svc_stacks WHERE org = $1 AND project = $2)`, org, project).Scan(&exists)
	return exists, err
}

// SetTags sets the tags (a JSON object) of the stack at p; ErrNotFound when it does not exist.
func (c Conn) SetTags(ctx context.Context, p StackPath, tags []byte) error {
	tag, err := c.q.Exec(ctx, `UPDATE svc_stacks SET tags = $4 WHERE org = $1 AND project = $2 AND name = $3`, p.Org, p.Project, p.Stack, tags)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// RenameStack moves the stack (row ID) to project under name; ErrExists when that stack exists.
func (c Conn) RenameStack(ctx context.Context, stackID int64, project, name string) error {
	_, err := c.q.Exec(ctx, `UPDATE svc_stacks SET project = $2, name = $3 WHERE id = $1`, stackID, project, name)
	if UniqueViolation(err) {
		return ErrExists
	}
	return err
}

// Busy reports whether the stack (row ID) has an active update (not started, requested, running).
func (c Conn) Busy(ctx context.Context, stackID int64) (bool, error) {
	var active bool
	err := c.q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM svc_updates WHERE stack_id = $1 AND status IN ('not started', 'requested', 'running'))`, stackID).Scan(&active)
	return active, err
}

// SetLastUpdate records that the stack (row ID) was last updated at at.
func (c Conn) SetLastUpdate(ctx context.Context, stackID int64, at time.Time) error {
	_, err := c.q.Exec(ctx, `UPDATE svc_stacks SET last_update = $2 WHERE id = $1`, stackID, at)
	return err
}

// Lock is an active update of a stack as the lock listing shows it.
type Lock struct {
	Stack, Update, Kind, Status string
	CreatedAt                   time.Time
	// LeaseExpires and Heartbeat are nil when unknown; Request is the request's "cdkxLock" (JSON), or nil.
	LeaseExpires, Heartbeat *time.Time
	Request                 []byte
}

// Locks returns the active updates of the stacks of org and project (of stack alone, when not ""), by
// stack name.
func (c Conn) Locks(ctx context.Context, org, project, stack string) ([]Lock, error) {
	rows, err := c.q.Query(ctx, `SELECT s.name, u.id, u.kind, u.status, u.created_at, u.lease_expires_at, u.heartbeat_at, u.request->'cdkxLock'
FROM svc_updates u JOIN svc_stacks s ON s.id = u.stack_id
WHERE s.org = $1 AND s.project = $2 AND ($3 = '' OR s.name = $3) AND u.status IN ('not started', 'requested', 'running')
ORDER BY s.name`, org, project, stack)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Lock, error) {
		var l Lock
		err := row.Scan(&l.Stack, &l.Update, &l.Kind, &l.Status, &l.CreatedAt, &l.LeaseExpires, &l.Heartbeat, &l.Request)
		return l, err
	})
}

// OtherOrgs returns the organizations that have stacks, but org, sorted.
func (c Conn) OtherOrgs(ctx context.Context, org string) ([]string, error) {
	rows, err := c.q.Query(ctx, `SELECT DISTINCT org FROM svc_stacks WHERE org <> $1 ORDER BY org`, org)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// StackSummary is a stack as listings show it: its path, when it was last updated (nil: never) and its
// resources then.
type StackSummary struct {
	StackPath
	LastUpdate    *time.Time
	ResourceCount int64
}

// Stacks returns the stacks of org (any when "") and project (any when ""), only of orgs when not nil,
// by organization, project and name.
func (c Conn) Stacks(ctx context.Context, org, project string, orgs []string) ([]StackSummary, error) {
	rows, err := c.q.Query(ctx, `SELECT org, project, name, last_update, resource_count FROM svc_stacks
WHERE ($1 = '' OR org = $1) AND ($2 = '' OR project = $2) AND ($3::text[] IS NULL OR org = ANY($3))
ORDER BY org, project, name`, org, project, orgs)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (StackSummary, error) {
		var s StackSummary
		err := row.Scan(&s.Org, &s.Project, &s.Stack, &s.LastUpdate, &s.ResourceCount)
		return s, err
	})
}
