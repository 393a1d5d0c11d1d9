package console

import (
	"context"
	"crypto/subtle"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// LocalScope is the one scope of a Local source.
var LocalScope = Scope{Org: "local", Project: "default"}

// Local is the Source of `cdkx console`: one state backend (SQLite or PostgreSQL), one scope (LocalScope)
// and one caller, who logs in once with a token made at start (Token); a used token is then useless.
// Actions go through the operations the CLI uses (operation.Review, operation.Unlock; redeploy through
// RedeployFunc, the command's cdkx deployments redeploy), so the state machine and the second-person rule
// stay in one place (the store).
type Local struct {
	Backend state.Backend
	// Token is the one-time login token.
	Token string
	// By is who acts ("user@host", as the CLI records it): the caller's name.
	By string
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// RedeployFunc proposes again the snapshot of a completed deploy and returns the new deployment's ID
	// ("" when the stack already is as it left it); nil: redeploy is refused.
	RedeployFunc func(ctx context.Context, d *state.Deployment) (string, error)

	mu   sync.Mutex // guards used
	used bool
}

var _ Source = (*Local)(nil)

// Authenticate accepts Token once.
func (l *Local) Authenticate(_ context.Context, token string) (Caller, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.used || token == "" || subtle.ConstantTimeCompare([]byte(token), []byte(l.Token)) != 1 {
		return Caller{}, ErrUnauthorized
	}
	l.used = true
	return Caller{Name: l.By}, nil
}

func (l *Local) check(s Scope) error {
	if s != LocalScope {
		return ErrNotFound
	}
	return nil
}

// Scopes returns LocalScope.
func (l *Local) Scopes(context.Context, Caller) ([]Scope, error) { return []Scope{LocalScope}, nil }

// Stacks summarizes every stack with state or deployments.
func (l *Local) Stacks(ctx context.Context, _ Caller, s Scope) ([]StackSummary, error) {
	if err := l.check(s); err != nil {
		return nil, err
	}
	names, err := l.Backend.ListStacks(ctx)
	if err != nil {
		return nil, err
	}
	open, err := l.Backend.ListDeployments(ctx, state.DeploymentFilter{Statuses: []state.DeploymentStatus{
		state.StatusProposed, state.StatusPending, state.StatusApproved, state.StatusRunning}})
	if err != nil {
		return nil, err
	}
	locks, err := l.Backend.Locks(ctx)
	if err != nil {
		return nil, err
	}
	byName := map[string]*StackSummary{}
	get := func(name string) *StackSummary {
		if byName[name] == nil {
			byName[name] = &StackSummary{Name: name}
		}
		return byName[name]
	}
	for _, n := range names {
		get(n)
	}
	for _, d := range open {
		sum := get(d.Stack)
		d.Plan = nil
		switch d.Status {
		case state.StatusRunning:
			sum.Running = &d
		case state.StatusProposed:
			sum.Proposed++
		default:
			sum.Waiting++
		}
	}
	for _, lk := range locks {
		get(lk.Stack).Lock = &lk
	}
	out := make([]StackSummary, 0, len(byName))
	for _, sum := range byName {
		last, err := l.Backend.ListDeployments(ctx, state.DeploymentFilter{Stack: sum.Name, Limit: 1})
		if err != nil {
			return nil, err
		}
		if len(last) == 1 {
			last[0].Plan = nil
			sum.Last, sum.Status = &last[0], last[0].Status
		}
		if sum.Version, err = l.Backend.StackVersion(ctx, sum.Name); err != nil {
			return nil, err
		}
		out = append(out, *sum)
	}
	slices.SortFunc(out, func(a, b StackSummary) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// defaultLimit is the size of a page of deployments when the query gives none.
const defaultLimit = 50

// Deployments pages through the backend's deployments newest first, by the store's cursor
// (state.DeploymentFilter.Before, state.NextBefore): a page costs the same wherever it is.
func (l *Local) Deployments(ctx context.Context, _ Caller, s Scope, q Query) (Page, error) {
	if err := l.check(s); err != nil {
		return Page{}, err
	}
	limit := q.Limit
	if limit <= 0 {
		limit = defaultLimit
	}
	var before int64
	if q.Cursor != "" {
		b, err := strconv.ParseInt(q.Cursor, 10, 64)
		if err != nil || b <= 0 {
			return Page{}, fmt.Errorf("bad cursor: %w", ErrNotFound)
		}
		before = b
	}
	ds, err := l.Backend.ListDeployments(ctx, state.DeploymentFilter{Stack: q.Stack, Statuses: q.Statuses, Kinds: q.Kinds,
		Before: before, Limit: limit, NoPlans: true})
	if err != nil {
		return Page{}, err
	}
	out := Page{Deployments: ds}
	if next := state.NextBefore(ds, limit); next > 0 {
		out.Next = strconv.FormatInt(next, 10)
	}
	return out, nil
}

// Deployment returns one deployment with its plan and snapshot.
func (l *Local) Deployment(ctx context.Context, _ Caller, s Scope, id string) (*state.Deployment, error) {
	if err := l.check(s); err != nil {
		return nil, err
	}
	return l.Backend.GetDeployment(ctx, id)
}

// Events returns the deployment's events after Seq after.
func (l *Local) Events(ctx context.Context, _ Caller, s Scope, id string, after int) ([]state.Event, error) {
	if err := l.check(s); err != nil {
		return nil, err
	}
	es, err := l.Backend.Events(ctx, id)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(es, func(e state.Event) bool { return e.Seq <= int64(after) }), nil
}

// Locks returns the held locks.
func (l *Local) Locks(ctx context.Context, _ Caller, s Scope) ([]state.LockInfo, error) {
	if err := l.check(s); err != nil {
		return nil, err
	}
	return l.Backend.Locks(ctx)
}

func (l *Local) review() operation.Review {
	return operation.Review{Backend: l.Backend, By: l.By, Now: l.Now}
}

// Approve approves a proposal with comment as its approval comment (operation.Review).
func (l *Local) Approve(ctx context.Context, c Caller, s Scope, id, comment string) error {
	if err := l.writable(c, s); err != nil {
		return err
	}
	_, err := l.review().Approve(ctx, id, comment)
	return err
}

// Reject rejects a proposal with comment as its rejection comment (operation.Review).
func (l *Local) Reject(ctx context.Context, c Caller, s Scope, id, comment string) error {
	if err := l.writable(c, s); err != nil {
		return err
	}
	_, err := l.review().Reject(ctx, id, comment)
	return err
}

// Abort aborts a queued deployment or asks a running one to stop (operation.Review).
func (l *Local) Abort(ctx context.Context, c Caller, s Scope, id string) error {
	if err := l.writable(c, s); err != nil {
		return err
	}
	_, _, err := l.review().Abort(ctx, id)
	return err
}

// Redeploy proposes again the snapshot of a completed deploy (RedeployFunc).
func (l *Local) Redeploy(ctx context.Context, c Caller, s Scope, id string) (string, error) {
	if err := l.writable(c, s); err != nil {
		return "", err
	}
	if l.RedeployFunc == nil {
		return "", ErrForbidden
	}
	d, err := l.Backend.GetDeployment(ctx, id)
	if err != nil {
		return "", err
	}
	if d.Status != state.StatusCompleted || d.Kind != state.KindDeploy {
		return "", &state.ForbiddenError{ID: d.ID, Reason: fmt.Sprintf("it is a %s %s: only a COMPLETED deploy can be redeployed", d.Status, d.Kind)}
	}
	return l.RedeployFunc(ctx, d)
}

// Unlock removes the lock lockID of stack (operation.Unlock).
func (l *Local) Unlock(ctx context.Context, c Caller, s Scope, stack, lockID string) error {
	if err := l.writable(c, s); err != nil {
		return err
	}
	locks, err := l.Backend.Locks(ctx)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(locks, func(lk state.LockInfo) bool { return lk.Stack == stack && lk.ID == lockID }) {
		return ErrNotFound
	}
	_, err = operation.Unlock{Backend: l.Backend, ID: lockID}.Run(ctx)
	return err
}

func (l *Local) writable(c Caller, s Scope) error {
	if err := l.check(s); err != nil {
		return err
	}
	if c.ReadOnly {
		return ErrForbidden
	}
	return nil
}
