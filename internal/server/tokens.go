package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
)

// ErrTokenNotFound is returned by RevokeToken for a name no token has.
var ErrTokenNotFound = errors.New("no API token has that name")

// ErrTokenExists is returned by CreateToken for a name a token already has.
var ErrTokenExists = errors.New("an API token with that name exists")

// CreateToken issues an API token named name and returns it; only its SHA-256 is stored, so this is
// the one time it can be read.
func (s *Server) CreateToken(ctx context.Context, name string) (string, error) {
	if !validName.MatchString(name) {
		return "", errors.New("create token: a name is 1 to 100 letters, digits, '-', '_' or '.'")
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	tok := "cdkx-" + hex.EncodeToString(raw[:])
	sum := sha256.Sum256([]byte(tok))
	_, err := s.pool.Exec(ctx, `INSERT INTO svc_tokens (name, hash, created_at) VALUES ($1, $2, $3)`, name, sum[:], s.now())
	if pgCode(err) == codeUniqueViolation {
		return "", ErrTokenExists
	}
	if err != nil {
		return "", err
	}
	return tok, nil
}

// RevokeToken deletes the API token named name.
func (s *Server) RevokeToken(ctx context.Context, name string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM svc_tokens WHERE name = $1`, name)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return ErrTokenNotFound
	}
	return nil
}
