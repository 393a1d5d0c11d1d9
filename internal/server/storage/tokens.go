package storage

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrExists is returned when a row to create exists already (a unique key is taken).
var ErrExists = errors.New("exists already")

// Token is an API token as stored: its name, the organizations it reaches ("*": all), whether it only
// reads, when it was created. Its secret is stored only as a SHA-256.
type Token struct {
	Name      string
	Orgs      []string
	ReadOnly  bool
	CreatedAt time.Time
}

// CreateToken stores token t whose secret has the SHA-256 hash; ErrExists when the name is taken.
func (c Conn) CreateToken(ctx context.Context, t Token, hash []byte) error {
	_, err := c.q.Exec(ctx, `INSERT INTO svc_tokens (name, hash, created_at, orgs, read_only) VALUES ($1, $2, $3, $4, $5)`,
		t.Name, hash, t.CreatedAt, t.Orgs, t.ReadOnly)
	if UniqueViolation(err) {
		return ErrExists
	}
	return err
}

// DeleteToken deletes the token named name, and its console sessions; ErrNotFound when there is none.
func (c Conn) DeleteToken(ctx context.Context, name string) error {
	tag, err := c.q.Exec(ctx, `DELETE FROM svc_tokens WHERE name = $1`, name)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	_, err = c.q.Exec(ctx, `DELETE FROM svc_console_sessions WHERE token_name = $1`, name)
	return err
}

// Tokens returns every token, by name.
func (c Conn) Tokens(ctx context.Context) ([]Token, error) {
	rows, err := c.q.Query(ctx, `SELECT name, orgs, read_only, created_at FROM svc_tokens ORDER BY name`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Token, error) {
		var t Token
		err := row.Scan(&t.Name, &t.Orgs, &t.ReadOnly, &t.CreatedAt)
		return t, err
	})
}

// TokenByHash returns the token whose secret has the SHA-256 hash (without CreatedAt); ErrNotFound when
// none has.
func (c Conn) TokenByHash(ctx context.Context, hash []byte) (Token, error) {
	var t Token
	err := c.q.QueryRow(ctx, `SELECT name, orgs, read_only FROM svc_tokens WHERE hash = $1`, hash).Scan(&t.Name, &t.Orgs, &t.ReadOnly)
	if errors.Is(err, pgx.ErrNoRows) {
		return t, ErrNotFound
	}
	return t, err
}

// LeaseCreator is what the renewal of a lease checks of the token that created its update.
type LeaseCreator struct {
	// Update is the update's ID; Org its stack's organization.
	Update, Org string
	// Creator names the API token that created the update; "" when not recorded (created before
	// migration 00005).
	Creator string
	// Token is the creator's token as it is now; nil when it was revoked.
	Token *Token
}

// LeaseCreatorOf returns the creator of the update whose lease token has the SHA-256 hash; ErrNotFound
// when no update has that lease.
func (c Conn) LeaseCreatorOf(ctx context.Context, hash []byte) (LeaseCreator, error) {
	var lc LeaseCreator
	var creator *string
	var exists bool
	var t Token
	err := c.q.QueryRow(ctx, `SELECT u.id, u.created_by, s.org, t.name IS NOT NULL, coalesce(t.orgs, '{}'), coalesce(t.read_only, false)
FROM svc_updates u JOIN svc_stacks s ON s.id = u.stack_id LEFT JOIN svc_tokens t ON t.name = u.created_by WHERE u.lease_hash = $1`, hash).
		Scan(&lc.Update, &creator, &lc.Org, &exists, &t.Orgs, &t.ReadOnly)
	if errors.Is(err, pgx.ErrNoRows) {
		return lc, ErrNotFound
	}
	if err != nil {
		return lc, err
	}
	if creator != nil {
		lc.Creator = *creator
		if exists {
			t.Name = lc.Creator
			lc.Token = &t
		}
	}
	return lc, nil
}
