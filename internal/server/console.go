package server

// The web console inside the server (package console's pages, served at / beside the API): its Source
// over the server's storage. A session belongs to an API token, the same tokens as the API's; every call
// reads the token again by name, so that revoking a token ends its sessions and narrowing it narrows
// them at once. Tenancy is the API's: a token reaches its organizations and no other, and another
// organization's deployments, stacks and locks answer as absent (404, never 403, so that a session cannot
// learn which IDs exist elsewhere). A read-only token may read and never act (ErrForbidden: 403). The
// actions change the queue through the same functions and pkg/state rules as the API (transition,
// abortRequest, cancelActive), under the server's policy (--require-second-person), with the token's name
// as the actor: the name the API records. Sessions live in the database (consoleSessions), so that every
// replica knows every session and a restart logs nobody out.

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cdkx-dev/cdkx/internal/console"
	"github.com/cdkx-dev/cdkx/internal/server/storage"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/pkg/stateapi"
)

// Deployments a console page lists unless it asks for another count, and at most.
const (
	consolePageSize    = 50
	consoleMaxPageSize = 500
)

// ConsoleSource returns the console's Source over the server's storage (what Handler mounts at / when
// Options.Console is set).
func (s *Server) ConsoleSource() console.Source { return consoleSource{s: s} }

// consoleSource is the console.Source of the server.
type consoleSource struct{ s *Server }

var _ console.Source = consoleSource{}

// Authenticate maps an API token to its caller: the token's name, organizations (nil: every one) and
// read-only flag; console.ErrUnauthorized for an unknown token.
func (cs consoleSource) Authenticate(ctx context.Context, token string) (console.Caller, error) {
	token = strings.TrimSpace(token)
	if token == "" {
		return console.Caller{}, console.ErrUnauthorized
	}
	sum := sha256.Sum256([]byte(token))
	t, err := cs.s.db.TokenByHash(ctx, sum[:])
	if errors.Is(err, storage.ErrNotFound) {
		return console.Caller{}, console.ErrUnauthorized
	}
	if err != nil {
		return console.Caller{}, err
	}
	return callerOf(t), nil
}

// callerOf is the console's caller of token t.
func callerOf(t storage.Token) console.Caller {
	c := console.Caller{Name: t.Name, ReadOnly: t.ReadOnly}
	if !slices.Contains(t.Orgs, AllOrganizations) {
		c.Orgs = slices.Clone(t.Orgs)
	}
	return c
}

// token returns the API token of caller c as it is now: console.ErrUnauthorized when it was revoked (the
// session ends).
func (cs consoleSource) token(ctx context.Context, c console.Caller) (tokenScope, error) {
	t, err := cs.s.db.TokenByName(ctx, c.Name)
	if errors.Is(err, storage.ErrNotFound) {
		return tokenScope{}, console.ErrUnauthorized
	}
	if err != nil {
		return tokenScope{}, err
	}
	return tokenScope{orgs: t.Orgs, readOnly: t.ReadOnly}, nil
}

// reader returns the call of caller c on scope sc when its token reaches sc's organization;
// console.ErrNotFound otherwise (as for a scope that does not exist), and for names no stack could have.
func (cs consoleSource) reader(ctx context.Context, c console.Caller, sc console.Scope) (*call, error) {
	if !validOrgName(sc.Org) || !validProjectName(sc.Project) {
		return nil, console.ErrNotFound
	}
	scope, err := cs.token(ctx, c)
	if err != nil {
		return nil, err
	}
	if !scope.reaches(sc.Org) {
		return nil, console.ErrNotFound
	}
	return &call{user: c.Name, scope: scope}, nil
}

// writer is reader for an action: console.ErrForbidden when the token is read-only.
func (cs consoleSource) writer(ctx context.Context, c console.Caller, sc console.Scope) (*call, error) {
	cl, err := cs.reader(ctx, c, sc)
	if err != nil {
		return nil, err
	}
	if cl.scope.readOnly {
		return nil, console.ErrForbidden
	}
	return cl, nil
}

// consoleError maps an error of the API's functions to what the console answers: a 404 to
// console.ErrNotFound, a 403 to console.ErrForbidden, another *apiError to an error with its message;
// the state machine's errors and the rest as they are.
func consoleError(err error) error {
	var ae *apiError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, storage.ErrNotFound):
		return console.ErrNotFound
	case !errors.As(err, &ae):
		return err
	case ae.code == http.StatusNotFound:
		return fmt.Errorf("%s: %w", ae.msg, console.ErrNotFound)
	case ae.code == http.StatusForbidden:
		return fmt.Errorf("%s: %w", ae.msg, console.ErrForbidden)
	}
	return errors.New(ae.msg)
}

// Scopes returns the projects of the organizations the caller's token reaches that have stacks, by
// organization and project.
func (cs consoleSource) Scopes(ctx context.Context, c console.Caller) ([]console.Scope, error) {
	scope, err := cs.token(ctx, c)
	if err != nil {
		return nil, err
	}
	var orgs []string // nil: every organization
	if !scope.all() {
		orgs = append([]string{}, scope.orgs...)
	}
	stacks, err := cs.s.db.Stacks(ctx, "", "", orgs)
	if err != nil {
		return nil, err
	}
	out := []console.Scope{}
	for _, st := range stacks {
		sc := console.Scope{Org: st.Org, Project: st.Project}
		if len(out) == 0 || out[len(out)-1] != sc {
			out = append(out, sc)
		}
	}
	return out, nil
}

// Stacks returns the stacks of the scope by name: each one's last deployment, what runs, how many wait,
// its open proposals and its lock holder.
func (cs consoleSource) Stacks(ctx context.Context, c console.Caller, sc console.Scope) ([]console.StackSummary, error) {
	if _, err := cs.reader(ctx, c, sc); err != nil {
		return nil, err
	}
	overviews, err := cs.s.db.StackOverviews(ctx, sc.Org, sc.Project)
	if err != nil {
		return nil, err
	}
	locks, err := cs.locks(ctx, sc, "")
	if err != nil {
		return nil, err
	}
	out := make([]console.StackSummary, 0, len(overviews))
	for _, o := range overviews {
		sum := console.StackSummary{Name: o.Name, Version: o.Version, Waiting: o.Waiting, Proposed: o.Proposed}
		for rec, to := range map[*json.RawMessage]**state.Deployment{&o.Last: &sum.Last, &o.Running: &sum.Running} {
			if *rec == nil {
				continue
			}
			var d state.Deployment
			if err := json.Unmarshal(*rec, &d); err != nil {
				return nil, fmt.Errorf("deployment record of stack %s: %w", o.Name, err)
			}
			*to = &d
		}
		if sum.Last != nil {
			sum.Status = sum.Last.Status
		}
		for _, l := range locks {
			if l.info.Stack == o.Name {
				sum.Lock = &l.info
				break
			}
		}
		out = append(out, sum)
	}
	return out, nil
}

// Deployments returns one page of the scope's deployments that q selects, newest first, without plans;
// the cursor is the seq below which the next page starts.
func (cs consoleSource) Deployments(ctx context.Context, c console.Caller, sc console.Scope, q console.Query) (console.Page, error) {
	if _, err := cs.reader(ctx, c, sc); err != nil {
		return console.Page{}, err
	}
	f := storage.DeploymentFilter{Stack: q.Stack, Limit: q.Limit, NoPlans: true}
	if f.Limit <= 0 {
		f.Limit = consolePageSize
	}
	f.Limit = min(f.Limit, consoleMaxPageSize)
	if q.Cursor != "" {
		n, err := strconv.ParseInt(q.Cursor, 10, 64)
		if err != nil || n <= 0 {
			return console.Page{}, fmt.Errorf("no page at cursor %q: %w", q.Cursor, console.ErrNotFound)
		}
		f.Before = n
	}
	for _, st := range q.Statuses {
		f.Statuses = append(f.Statuses, string(st))
	}
	for _, k := range q.Kinds {
		f.Kinds = append(f.Kinds, string(k))
	}
	limit := f.Limit
	f.Limit++ // one more tells whether a next page exists
	records, err := cs.s.db.Deployments(ctx, sc.Org, sc.Project, f)
	if err != nil {
		return console.Page{}, err
	}
	page := console.Page{Deployments: make([]state.Deployment, 0, min(len(records), limit))}
	for i, rec := range records {
		if i == limit {
			page.Next = strconv.FormatInt(page.Deployments[limit-1].Seq, 10)
			break
		}
		var d state.Deployment
		if err := json.Unmarshal(rec, &d); err != nil {
			return console.Page{}, fmt.Errorf("deployment record: %w", err)
		}
		d.Plan = nil
		page.Deployments = append(page.Deployments, d)
	}
	return page, nil
}

// Deployment returns deployment id of the scope with its plan, without its snapshot.
func (cs consoleSource) Deployment(ctx context.Context, c console.Caller, sc console.Scope, id string) (*state.Deployment, error) {
	if _, err := cs.reader(ctx, c, sc); err != nil {
		return nil, err
	}
	rec, err := cs.s.db.DeploymentRecord(ctx, sc.Org, sc.Project, id)
	if err != nil {
		return nil, consoleError(err)
	}
	var d state.Deployment
	if err := json.Unmarshal(rec, &d); err != nil {
		return nil, fmt.Errorf("deployment record %s: %w", id, err)
	}
	// The record leaves the snapshot out; compare reads it (the deployment is of this scope: read above).
	if d.Snapshot, err = cs.s.db.Snapshot(ctx, id); err != nil {
		return nil, fmt.Errorf("snapshot of deployment %s: %w", id, err)
	}
	return &d, nil
}

// Events returns the events of deployment id of the scope after seq after, in order; none for a
// deployment of another scope.
func (cs consoleSource) Events(ctx context.Context, c console.Caller, sc console.Scope, id string, after int) ([]state.Event, error) {
	if _, err := cs.reader(ctx, c, sc); err != nil {
		return nil, err
	}
	stored, err := cs.s.db.DeploymentEventsAfter(ctx, sc.Org, sc.Project, id, int64(after))
	if err != nil {
		return nil, err
	}
	out := make([]state.Event, len(stored))
	for i, data := range stored {
		if err := json.Unmarshal(data, &out[i]); err != nil {
			return nil, fmt.Errorf("event of deployment %s: %w", id, err)
		}
	}
	return out, nil
}

// heldLock is a lock holder of the scope and the update that stands for it.
type heldLock struct {
	info   state.LockInfo
	update string
}

// locks returns the lock holders of the scope's stacks (of stack alone, when not ""), as the service
// backend reads them (pkg/backend/service: holders): the cdkx lock an update was created for, or the
// update itself for one the Pulumi CLI created.
func (cs consoleSource) locks(ctx context.Context, sc console.Scope, stack string) ([]heldLock, error) {
	stored, err := cs.s.db.Locks(ctx, sc.Org, sc.Project, stack)
	if err != nil {
		return nil, err
	}
	out := make([]heldLock, 0, len(stored))
	for _, l := range stored {
		info, err := activeUpdate(l).Holder()
		if err != nil {
			return nil, err
		}
		out = append(out, heldLock{info: info, update: l.Update})
	}
	return out, nil
}

// Locks returns the scope's lock holders (the active updates), by stack.
func (cs consoleSource) Locks(ctx context.Context, c console.Caller, sc console.Scope) ([]state.LockInfo, error) {
	if _, err := cs.reader(ctx, c, sc); err != nil {
		return nil, err
	}
	held, err := cs.locks(ctx, sc, "")
	if err != nil {
		return nil, err
	}
	out := make([]state.LockInfo, len(held))
	for i, h := range held {
		out[i] = h.info
	}
	return out, nil
}

// Approve moves the PROPOSED deployment id to APPROVED as the caller, with comment as its
// ApprovalComment (the API's transition: under --require-second-person the proposer's own approval is a
// *state.ForbiddenError).
func (cs consoleSource) Approve(ctx context.Context, c console.Caller, sc console.Scope, id, comment string) error {
	if err := state.CheckMessage(comment); err != nil {
		return fmt.Errorf("comment: %w", err)
	}
	return cs.transition(ctx, c, sc, id, stateapi.TransitionRequest{From: []state.DeploymentStatus{state.StatusProposed}, To: state.StatusApproved, Comment: comment})
}

// Reject moves the PROPOSED deployment id to REJECTED as the caller, with comment as its
// RejectionComment and why (as cdkx deployments reject --comment records it).
func (cs consoleSource) Reject(ctx context.Context, c console.Caller, sc console.Scope, id, comment string) error {
	if err := state.CheckMessage(comment); err != nil {
		return fmt.Errorf("comment: %w", err)
	}
	why := "rejected"
	if comment != "" {
		why = "rejected: " + comment
	}
	return cs.transition(ctx, c, sc, id, stateapi.TransitionRequest{From: []state.DeploymentStatus{state.StatusProposed}, To: state.StatusRejected, Error: why, Comment: comment})
}

// Abort ends the PENDING or APPROVED deployment id at once (ABORTED), or asks the runner of a RUNNING one
// to stop, as cdkx deployments abort does.
func (cs consoleSource) Abort(ctx context.Context, c console.Caller, sc console.Scope, id string) error {
	err := cs.transition(ctx, c, sc, id, stateapi.TransitionRequest{From: []state.DeploymentStatus{state.StatusPending, state.StatusApproved},
		To: state.StatusAborted, Error: "aborted by " + c.Name})
	var te *state.TransitionError
	if !errors.As(err, &te) || te.Status != state.StatusRunning {
		return err
	}
	cl, err := cs.writer(ctx, c, sc)
	if err != nil {
		return err
	}
	return consoleError(cs.s.inTx(ctx, func(tx *storage.Tx) error {
		_, err := cs.s.abortRequest(ctx, tx, sc.Org, sc.Project, id, cl)
		return err
	}))
}

// transition makes the change req of deployment id as the caller, in one transaction.
func (cs consoleSource) transition(ctx context.Context, c console.Caller, sc console.Scope, id string, req stateapi.TransitionRequest) error {
	cl, err := cs.writer(ctx, c, sc)
	if err != nil {
		return err
	}
	return consoleError(cs.s.inTx(ctx, func(tx *storage.Tx) error {
		_, err := cs.s.transition(ctx, tx, sc.Org, sc.Project, id, cl, req)
		return err
	}))
}

// Redeploy is refused on the server: a redeploy plans the deployment's snapshot again against the
// stack's state, which needs the providers and the snapshot's passphrase, and the server holds neither.
// The refusal (a *state.ForbiddenError: 403 with its reason) says to run it from the CLI.
func (cs consoleSource) Redeploy(ctx context.Context, c console.Caller, sc console.Scope, id string) (string, error) {
	if _, err := cs.writer(ctx, c, sc); err != nil {
		return "", err
	}
	if _, err := cs.s.db.DeploymentRecord(ctx, sc.Org, sc.Project, id); err != nil {
		return "", consoleError(err)
	}
	return "", &state.ForbiddenError{ID: id, Reason: fmt.Sprintf(
		"the server cannot plan it again (planning needs the providers and the snapshot's passphrase, which stay with the CLI); run: cdkx deployments redeploy %s", id)}
}

// Unlock releases the lock lockID of stack: the update that holds it is cancelled (as cdkx unlock
// --force and cdkx cancel do with an API token), and its holder loses the lock at its next call.
// console.ErrNotFound when no such lock is held.
func (cs consoleSource) Unlock(ctx context.Context, c console.Caller, sc console.Scope, stack, lockID string) error {
	if _, err := cs.writer(ctx, c, sc); err != nil {
		return err
	}
	if !validStackName(stack) {
		return console.ErrNotFound
	}
	held, err := cs.locks(ctx, sc, stack)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(held, func(h heldLock) bool { return h.info.ID == lockID })
	if i < 0 {
		return fmt.Errorf("stack %s holds no lock %s: %w", stack, lockID, console.ErrNotFound)
	}
	p := storage.StackPath{Org: sc.Org, Project: sc.Project, Stack: stack}
	return consoleError(cs.s.inTx(ctx, func(tx *storage.Tx) error {
		return cs.s.cancelActive(ctx, tx, p, held[i].update)
	}))
}

// consoleSessions is the console's SessionStore in the server's database (storage.ConsoleSession): a
// session is found by the SHA-256 of its ID, which is never stored.
type consoleSessions struct {
	db *storage.Store
}

func sessionHash(id string) []byte {
	sum := sha256.Sum256([]byte(id))
	return sum[:]
}

// Put stores s (expired sessions, and the token's oldest beyond storage.MaxSessionsPerToken, go).
func (cs consoleSessions) Put(ctx context.Context, s console.Session) error {
	return cs.db.PutConsoleSession(ctx, storage.ConsoleSession{IDHash: sessionHash(s.ID), TokenName: s.Caller.Name,
		ReadOnly: s.Caller.ReadOnly, Orgs: s.Caller.Orgs, CSRF: s.CSRF, Created: s.Created.UTC(), Expires: s.Expires.UTC()})
}

// Get returns the session with ID id unexpired at now, or nil.
func (cs consoleSessions) Get(ctx context.Context, id string, now time.Time) (*console.Session, error) {
	st, err := cs.db.ConsoleSessionByHash(ctx, sessionHash(id), now)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &console.Session{ID: id, Caller: console.Caller{Name: st.TokenName, ReadOnly: st.ReadOnly, Orgs: st.Orgs},
		CSRF: st.CSRF, Created: st.Created.UTC(), Expires: st.Expires.UTC()}, nil
}

// Delete removes the session with ID id.
func (cs consoleSessions) Delete(ctx context.Context, id string) error {
	return cs.db.DeleteConsoleSession(ctx, sessionHash(id))
}
