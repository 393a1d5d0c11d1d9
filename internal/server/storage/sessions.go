package storage

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// ConsoleSession is a web console session as stored: the SHA-256 of its ID, its token's name, rights and
// organizations (nil: all) when it logged in, its CSRF token, and when it was created and ends.
type ConsoleSession struct {
	IDHash    []byte
	TokenName string
	ReadOnly  bool
	Orgs      []string
	CSRF      string
	Created   time.Time
	Expires   time.Time
}

// MaxSessionsPerToken bounds the sessions one token keeps: a login beyond it ends that token's oldest.
const MaxSessionsPerToken = 100

// PutConsoleSession stores session s, first removing every session expired at s.Created, and then the
// oldest of its token's beyond MaxSessionsPerToken.
func (c Conn) PutConsoleSession(ctx context.Context, s ConsoleSession) error {
	if _, err := c.q.Exec(ctx, `DELETE FROM svc_console_sessions WHERE expires_at <= $1`, s.Created); err != nil {
		return err
	}
	if _, err := c.q.Exec(ctx, `INSERT INTO svc_console_sessions (id_hash, token_name, read_only, orgs, csrf, created_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)`, s.IDHash, s.TokenName, s.ReadOnly, s.Orgs, s.CSRF, s.Created, s.Expires); err != nil {
		return err
	}
	_, err := c.q.Exec(ctx, `DELETE FROM svc_console_sessions WHERE token_name = $1 AND id_hash NOT IN (
  SELECT id_hash FROM svc_console_sessions WHERE token_name = $1 ORDER BY created_at DESC, id_hash LIMIT $2)`, s.TokenName, MaxSessionsPerToken)
	return err
}

// ConsoleSessionByHash returns the session whose ID has the SHA-256 hash and has not expired at now;
// ErrNotFound otherwise.
func (c Conn) ConsoleSessionByHash(ctx context.Context, hash []byte, now time.Time) (ConsoleSession, error) {
	s := ConsoleSession{IDHash: hash}
	err := c.q.QueryRow(ctx, `SELECT token_name, read_only, orgs, csrf, created_at, expires_at FROM svc_console_sessions
WHERE id_hash = $1 AND expires_at > $2`, hash, now).Scan(&s.TokenName, &s.ReadOnly, &s.Orgs, &s.CSRF, &s.Created, &s.Expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, ErrNotFound
	}
	return s, err
}

// DeleteConsoleSession removes the session whose ID has the SHA-256 hash (none: no error).
func (c Conn) DeleteConsoleSession(ctx context.Context, hash []byte) error {
	_, err := c.q.Exec(ctx, `DELETE FROM svc_console_sessions WHERE id_hash = $1`, hash)
	return err
}
