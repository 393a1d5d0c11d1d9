package storage

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// Answer is the answer stored with an idempotency key: the request it answered (method and path), its
// status (0 while the request runs) and body.
type Answer struct {
	Path   string
	Status int
	Body   []byte
}

// ClaimKey claims idempotency key for the request where (method and path) at at; it waits for a
// concurrent transaction holding the same key to end. It returns the stored answer and false when the
// key was claimed before.
func (t *Tx) ClaimKey(ctx context.Context, key, where string, at time.Time) (Answer, bool, error) {
	tag, err := t.q.Exec(ctx, `INSERT INTO svc_idempotency (key, path, created_at) VALUES ($1, $2, $3) ON CONFLICT (key) DO NOTHING`,
		key, where, at)
	if err != nil || tag.RowsAffected() == 1 {
		return Answer{}, err == nil, err
	}
	var a Answer
	var status *int
	err = t.q.QueryRow(ctx, `SELECT path, status, body FROM svc_idempotency WHERE key = $1`, key).Scan(&a.Path, &status, &a.Body)
	if status != nil {
		a.Status = *status
	}
	return a, false, err
}

// StoreAnswer records the answer of the request that claimed key.
func (t *Tx) StoreAnswer(ctx context.Context, key string, status int, body []byte) error {
	_, err := t.q.Exec(ctx, `UPDATE svc_idempotency SET status = $2, body = $3 WHERE key = $1`, key, status, body)
	return err
}

// StoredAnswer returns the answer stored with key; ErrNotFound when none is (yet).
func (c Conn) StoredAnswer(ctx context.Context, key string) (Answer, error) {
	var a Answer
	err := c.q.QueryRow(ctx, `SELECT path, status, body FROM svc_idempotency WHERE key = $1 AND status IS NOT NULL`, key).Scan(&a.Path, &a.Status, &a.Body)
	if errors.Is(err, pgx.ErrNoRows) {
		return a, ErrNotFound
	}
	return a, err
}
