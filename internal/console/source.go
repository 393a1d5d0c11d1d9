// Package console is cdkx's web console: the pages of a project's stacks, deployment queue, plans, live
// events, comparisons, locks and audit, with login, sessions, CSRF and a strict Content-Security-Policy.
// It reads and acts through a Source (the local one over a state.Backend, or the server's over its
// storage) and never prints.
package console

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

// Scope is one project of one organization: the unit every page shows. The local Source has exactly one,
// {"local", "default"}.
type Scope struct{ Org, Project string }

// Caller is who a session belongs to.
type Caller struct {
	// Name is shown in the page header and recorded as the actor ("token NAME").
	Name string
	// ReadOnly callers see no buttons; every POST answers 403.
	ReadOnly bool
	// Orgs are the organizations the caller may see; nil means all.
	Orgs []string
}

// StackSummary is one stack of a scope as the stacks page shows it.
type StackSummary struct {
	Name string
	// Status is the status of the stack's last deployment ("" when it has none).
	Status state.DeploymentStatus
	// Last is the stack's newest deployment (nil when none), without snapshot or plan.
	Last *state.Deployment
	// Running is the deployment running now (nil when none), without snapshot or plan.
	Running *state.Deployment
	// Waiting counts the stack's PENDING and APPROVED deployments.
	Waiting int
	// Proposed counts its open proposals (PROPOSED).
	Proposed int
	// Lock is the holder of the stack's lock (nil when unlocked).
	Lock *state.LockInfo
	// Version is the stack's state version (0 when never deployed or unknown).
	Version int64
}

// Query selects deployments of a scope, newest first.
type Query struct {
	// Stack, when not "", keeps only that stack's deployments.
	Stack string
	// Statuses and Kinds, when not empty, keep only deployments with one of them.
	Statuses []state.DeploymentStatus
	Kinds    []state.DeploymentKind
	// Cursor is Page.Next of the previous page (opaque), "" for the first page.
	Cursor string
	// Limit is the most deployments of a page (0: the Source's default).
	Limit int
}

// Page is one page of deployments, newest first, without snapshots or plans.
type Page struct {
	Deployments []state.Deployment
	// Next is the cursor of the following page, "" when this is the last.
	Next string
}

// Source is what the console reads and acts through. Every method checks the caller's rights on the scope.
type Source interface {
	// Authenticate returns the caller a token belongs to; ErrUnauthorized for an unknown token.
	Authenticate(ctx context.Context, token string) (Caller, error)
	// Scopes returns the scopes the caller may see.
	Scopes(ctx context.Context, c Caller) ([]Scope, error)
	// Stacks returns the stacks of a scope, sorted by name.
	Stacks(ctx context.Context, c Caller, s Scope) ([]StackSummary, error)
	// Deployments returns one page of the deployments q selects.
	Deployments(ctx context.Context, c Caller, s Scope, q Query) (Page, error)
	// Deployment returns one deployment with its plan.
	Deployment(ctx context.Context, c Caller, s Scope, id string) (*state.Deployment, error)
	// Events returns a deployment's events whose Seq is greater than after, in Seq order.
	Events(ctx context.Context, c Caller, s Scope, id string, after int) ([]state.Event, error)
	// Locks returns the scope's held locks (and leases), ordered by stack.
	Locks(ctx context.Context, c Caller, s Scope) ([]state.LockInfo, error)
	// Approve, Reject, Abort, Redeploy and Unlock act as the caller; *state.ForbiddenError when the
	// rules refuse it, ErrForbidden when the caller may not act at all.
	Approve(ctx context.Context, c Caller, s Scope, id, comment string) error
	Reject(ctx context.Context, c Caller, s Scope, id, comment string) error
	Abort(ctx context.Context, c Caller, s Scope, id string) error
	Redeploy(ctx context.Context, c Caller, s Scope, id string) (newID string, err error)
	Unlock(ctx context.Context, c Caller, s Scope, stack, lockID string) error
}

// Errors a Source returns (wrapped or not) and how the console answers them: ErrUnauthorized with the
// login page, ErrForbidden with 403, ErrNotFound with 404. A *state.ForbiddenError (the second-person
// rule) is a 403 with its message; anything else a 500 with a sanitized message.
var (
	ErrUnauthorized = errors.New("unauthorized")
	ErrForbidden    = errors.New("forbidden")
	ErrNotFound     = errors.New("not found")
)

// Options configure the console's handler.
type Options struct {
	// BasePath is the path the console is mounted at ("" or "/": the root), without a trailing slash.
	BasePath string
	// SecureCookies marks the session cookie Secure (the console is served over TLS).
	SecureCookies bool
	// TrustProxy trusts X-Forwarded-Proto: https from the reverse proxy in front: the cookie is then Secure.
	TrustProxy bool
	// SessionLifetime is how long a session lasts after login (0: 12 hours).
	SessionLifetime time.Duration
	// MaxSessions bounds the sessions kept in memory (0: 10,000); the oldest go first. Only for the
	// store in memory (Sessions nil).
	MaxSessions int
	// Sessions keeps the sessions; nil: in this process's memory (NewMemorySessions(MaxSessions)).
	Sessions SessionStore
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// PollEvery is how often the live events stream asks the Source for new events (0: 500 ms).
	PollEvery time.Duration
	// LoginAttempts bounds failed logins per minute (0: 10).
	LoginAttempts int
	// URLLogin accepts the token in the login page's URL (/login?token=…): the local console's one-time
	// login link. A server's long-lived API tokens should not travel in URLs: it leaves it off.
	URLLogin bool
	// NoRedeploy hides Redeploy: a Source that cannot plan again (cdkx server has neither the providers
	// nor the passphrase; `cdkx deployments redeploy ID` does it from a machine that has them).
	NoRedeploy bool
}

// New returns the console's handler over src.
func New(src Source, opts Options) http.Handler {
	return newConsole(src, opts)
}
