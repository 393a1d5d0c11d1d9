package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cdkx-dev/cdkx/internal/server/storage"
)

// ErrTokenNotFound is returned by RevokeToken for a name no token has.
var ErrTokenNotFound = errors.New("no API token has that name")

// ErrTokenExists is returned by CreateToken for a name a token already has.
var ErrTokenExists = errors.New("an API token with that name exists")

// AllOrganizations is the organization name that, given to ForOrgs (cdkx server token create --org
// '*'), makes a token reach every organization, those created later included.
const AllOrganizations = "*"

// tokenScope is what a token may do: the organizations it reaches (AllOrganizations: every one) and
// whether it may only read.
type tokenScope struct {
	orgs     []string
	readOnly bool
	// scoped says that ForOrgs was given (CreateToken).
	scoped bool
}

// reaches reports whether the scope includes organization org.
func (t tokenScope) reaches(org string) bool {
	return slices.Contains(t.orgs, AllOrganizations) || slices.Contains(t.orgs, org)
}

// all reports whether the scope reaches every organization.
func (t tokenScope) all() bool { return slices.Contains(t.orgs, AllOrganizations) }

// A TokenOption scopes the token CreateToken issues.
type TokenOption func(*tokenScope)

// ForOrgs makes the token reach only the organizations orgs (each a valid organization name, or
// AllOrganizations for every organization); several ForOrgs add up.
func ForOrgs(orgs ...string) TokenOption {
	return func(t *tokenScope) { t.orgs, t.scoped = append(t.orgs, orgs...), true }
}

// ReadOnly makes the token read only: GET requests (exports, history, stacks, locks, deployments) and the
// decrypt endpoints; every other request it sends is answered 403.
func ReadOnly() TokenOption {
	return func(t *tokenScope) { t.readOnly = true }
}

// DefaultOrganization returns the server's default organization (Options.Organization): the one a
// token reaches when `cdkx server token create` is given no --org.
func (s *Server) DefaultOrganization() string { return s.org }

// CreateToken issues an API token named name and returns it; only its SHA-256 is stored, so this is
// the one time it can be read. Without ForOrgs the token reaches every organization (as every token did
// before scopes existed); `cdkx server token create` passes ForOrgs(DefaultOrganization()) when given no
// --org.
func (s *Server) CreateToken(ctx context.Context, name string, opts ...TokenOption) (string, error) {
	if !validName.MatchString(name) {
		return "", fmt.Errorf("create token: invalid name %s: %s", quoteName(name), tokenRule)
	}
	var scope tokenScope
	for _, o := range opts {
		o(&scope)
	}
	switch {
	case scope.scoped && len(scope.orgs) == 0:
		return "", fmt.Errorf("create token: name at least one organization, or %q for every organization", AllOrganizations)
	case !scope.scoped:
		scope.orgs = []string{AllOrganizations}
	}
	if slices.Contains(scope.orgs, AllOrganizations) {
		scope.orgs = []string{AllOrganizations}
	}
	for _, org := range scope.orgs {
		if org != AllOrganizations && !validOrgName(org) {
			return "", fmt.Errorf("create token: invalid organization name %s: %s (or %q for every organization)", quoteName(org), orgRule, AllOrganizations)
		}
	}
	slices.Sort(scope.orgs)
	scope.orgs = slices.Compact(scope.orgs)
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	tok := "cdkx-" + hex.EncodeToString(raw[:])
	sum := sha256.Sum256([]byte(tok))
	err := s.db.CreateToken(ctx, storage.Token{Name: name, Orgs: scope.orgs, ReadOnly: scope.readOnly, CreatedAt: s.now()}, sum[:])
	if errors.Is(err, storage.ErrExists) {
		return "", ErrTokenExists
	}
	if err != nil {
		return "", err
	}
	return tok, nil
}

// RevokeToken deletes the API token named name.
func (s *Server) RevokeToken(ctx context.Context, name string) error {
	err := s.db.DeleteToken(ctx, name)
	if errors.Is(err, storage.ErrNotFound) {
		return ErrTokenNotFound
	}
	return err
}

// TokenInfo describes an API token (never the token itself: the server keeps only its SHA-256).
type TokenInfo struct {
	Name string
	// Orgs are the organizations it reaches, sorted; AllOrganizations alone: every one.
	Orgs     []string
	ReadOnly bool
	// CreatedAt is when it was created, in the server's clock.
	CreatedAt time.Time
}

// Tokens lists the API tokens by name.
func (s *Server) Tokens(ctx context.Context) ([]TokenInfo, error) {
	stored, err := s.db.Tokens(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]TokenInfo, len(stored))
	for i, t := range stored {
		out[i] = TokenInfo{Name: t.Name, Orgs: t.Orgs, ReadOnly: t.ReadOnly, CreatedAt: t.CreatedAt}
	}
	return out, nil
}
