package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/pkg/stateapi"
)

// The deployment queue lives on the service (internal/server, deployments.go): every rule is enforced there,
// in PostgreSQL; these methods only call it. The service records who from the API token's name, and
// takes claim and heartbeat times from its own clock (the times given here are sent for information).
// Each changing call carries an Idempotency-Key, so that the client's retries never apply it twice.

// idempotencyHeader carries a changing call's key (internal/server.IdempotencyHeader).
const idempotencyHeader = "Idempotency-Key"

// mutate sends a changing request with a new idempotency key (kept across the Doer's retries) and maps
// the deployment errors of the answer (deploymentError).
func (b *Backend) mutate(ctx context.Context, method, path string, body, out any) error {
	h := http.Header{idempotencyHeader: {uuid.NewString()}}
	return deploymentError(b.sendWith(ctx, method, path, "token "+b.token, h, body, out))
}

// deploymentError turns an answer of the service into the error it stands for: 404 is (or wraps)
// state.ErrNotFound; a 409 carrying "queued" or "transition" is a *state.QueuedError or a
// *state.TransitionError; a 403 carrying "forbidden" a *state.ForbiddenError; anything else is returned as
// it is.
func deploymentError(err error) error {
	var ae *APIError
	if !errors.As(err, &ae) {
		return err
	}
	switch ae.Status {
	case http.StatusNotFound:
		// The callers name the deployment; a missing stack is news to them.
		if msg := strings.TrimPrefix(ae.Message, "Not Found: "); !strings.HasPrefix(msg, "deployment ") {
			return fmt.Errorf("%s: %w", msg, state.ErrNotFound)
		}
		return state.ErrNotFound
	case http.StatusForbidden:
		var c stateapi.ErrorResponse
		if json.Unmarshal(ae.body, &c) == nil && c.Forbidden != nil {
			return &state.ForbiddenError{ID: c.Forbidden.ID, Reason: c.Forbidden.Reason}
		}
	case http.StatusConflict:
		var c stateapi.ErrorResponse
		if json.Unmarshal(ae.body, &c) != nil {
			return err
		}
		switch q, t := c.Queued, c.Transition; {
		case q != nil:
			return &state.QueuedError{ID: q.ID, Stack: q.Stack, Position: q.Position, Ahead: q.Ahead}
		case t != nil:
			return &state.TransitionError{ID: t.ID, Status: t.Status, To: t.To}
		}
	}
	return err
}

// wrap prefixes err with what was asked, unless it is a *state.QueuedError, *state.TransitionError or
// *state.ForbiddenError, whose messages say it all.
func wrap(err error, format string, args ...any) error {
	var qe *state.QueuedError
	var te *state.TransitionError
	var fe *state.ForbiddenError
	if errors.As(err, &qe) || errors.As(err, &te) || errors.As(err, &fe) {
		return err
	}
	return fmt.Errorf(format+": %w", append(args, err)...)
}

func (b *Backend) deploymentPath(id string) string {
	return b.cdkxPath() + "/deployments/" + url.PathEscape(id)
}

// CreateDeployments stores ds on the service in one transaction (creating their stacks there first) and
// sets each one's Seq, CreatedAt and CreatedBy (the token's name) as the service recorded them.
func (b *Backend) CreateDeployments(ctx context.Context, ds []*state.Deployment) error {
	if len(ds) == 0 {
		return nil
	}
	for _, d := range ds {
		if err := b.ensureStack(ctx, d.Stack); err != nil {
			return err
		}
	}
	req := stateapi.DeploymentList{Deployments: make([]state.Deployment, len(ds))}
	for i, d := range ds {
		req.Deployments[i] = *d
	}
	var resp stateapi.DeploymentList
	if err := b.mutate(ctx, "POST", b.cdkxPath()+"/deployments", req, &resp); err != nil {
		return wrap(err, "create deployments")
	}
	if len(resp.Deployments) != len(ds) {
		return fmt.Errorf("create deployments: the service answered %d records for %d deployments", len(resp.Deployments), len(ds))
	}
	for i, d := range ds {
		snapshot := d.Snapshot
		*d = resp.Deployments[i]
		d.Snapshot = snapshot
	}
	return nil
}

// UpdateDeployment applies t on the service (By is the token's name there, and the token that claimed a
// RUNNING deployment its runner: t.Runner is not sent) and returns the record after it.
func (b *Backend) UpdateDeployment(ctx context.Context, id string, t state.Transition) (*state.Deployment, error) {
	// JSON would carry a comment that is not UTF-8 with its bad bytes replaced: refuse it here, as the
	// server refuses what is too long.
	if err := state.CheckMessage(t.Comment); err != nil {
		return nil, fmt.Errorf("make deployment %s %s: comment: %w", id, t.To, err)
	}
	body := stateapi.TransitionRequest{From: t.From, To: t.To, Error: t.Error, Comment: t.Comment, At: t.At}
	var d state.Deployment
	if err := b.mutate(ctx, "POST", b.deploymentPath(id)+"/transition", body, &d); err != nil {
		return nil, wrap(err, "make deployment %s %s", id, t.To)
	}
	return &d, nil
}

// RequestAbort asks the runner of RUNNING deployment id to stop (AbortedBy is the token's name).
func (b *Backend) RequestAbort(ctx context.Context, id, by string, at time.Time) (*state.Deployment, error) {
	var d state.Deployment
	if err := b.mutate(ctx, "POST", b.deploymentPath(id)+"/abort", stateapi.AbortRequest{At: at}, &d); err != nil {
		return nil, wrap(err, "abort deployment %s", id)
	}
	return &d, nil
}

// ClaimDeployments makes ids RUNNING for runner, all or none, at the service's time.
func (b *Backend) ClaimDeployments(ctx context.Context, ids []string, runner string, now time.Time) error {
	err := b.mutate(ctx, "POST", b.cdkxPath()+"/deployments/claim", stateapi.ClaimRequest{IDs: ids, Runner: runner, Now: now}, nil)
	if err != nil {
		return wrap(err, "claim deployments %s", strings.Join(ids, ", "))
	}
	return nil
}

// ClaimNext claims the oldest deployment an agent may run in stacks (all when empty), with its snapshot;
// nil when there is none.
func (b *Backend) ClaimNext(ctx context.Context, stacks []string, runner string, now time.Time) (*state.Deployment, error) {
	if stacks == nil {
		stacks = []string{}
	}
	var raw []byte
	if err := b.mutate(ctx, "POST", b.cdkxPath()+"/deployments/claim-next", stateapi.ClaimNextRequest{Stacks: stacks, Runner: runner, Now: now}, &raw); err != nil {
		return nil, fmt.Errorf("claim the next deployment: %w", err)
	}
	if len(raw) == 0 {
		return nil, nil
	}
	var d state.Deployment
	if err := unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("claim the next deployment: decode answer: %w", err)
	}
	return &d, nil
}

// HeartbeatDeployments renews the heartbeat of the waiting or running deployments among ids (at the
// service's time) and returns every one of ids that exists, in Seq order, without snapshots.
func (b *Backend) HeartbeatDeployments(ctx context.Context, ids []string, at time.Time) ([]state.Deployment, error) {
	var resp stateapi.DeploymentList
	if err := b.mutate(ctx, "POST", b.cdkxPath()+"/deployments/heartbeat", stateapi.HeartbeatRequest{IDs: ids, At: at}, &resp); err != nil {
		return nil, fmt.Errorf("heartbeat deployments: %w", err)
	}
	return resp.Deployments, nil
}

// FinishDeployment records a RUNNING deployment's end; a FAILED or ABORTED one makes the update of its
// stack that this backend holds complete as failed. The service knows the runner by the API token that
// claimed it: runner is not sent.
func (b *Backend) FinishDeployment(ctx context.Context, id, runner string, status state.DeploymentStatus, finishedAt time.Time, version int64, errMsg string) error {
	var d state.Deployment
	err := b.mutate(ctx, "PATCH", b.deploymentPath(id),
		stateapi.FinishRequest{Status: status, FinishedAt: finishedAt, Version: version, Error: errMsg}, &d)
	if err != nil {
		return wrap(err, "finish deployment %s", id)
	}
	if status == state.StatusFailed || status == state.StatusAborted {
		b.mu.Lock()
		b.failed[d.Stack] = true
		b.mu.Unlock()
	}
	return nil
}

// ListDeployments returns the deployments f selects, newest (highest Seq) first, without snapshots.
func (b *Backend) ListDeployments(ctx context.Context, f state.DeploymentFilter) ([]state.Deployment, error) {
	q := url.Values{}
	if f.Stack != "" {
		q.Set("stack", f.Stack)
	}
	if len(f.Statuses) > 0 {
		sts := make([]string, len(f.Statuses))
		for i, s := range f.Statuses {
			sts[i] = string(s)
		}
		q.Set("status", strings.Join(sts, ","))
	}
	if len(f.Kinds) > 0 {
		ks := make([]string, len(f.Kinds))
		for i, k := range f.Kinds {
			ks[i] = string(k)
		}
		q.Set("kind", strings.Join(ks, ","))
	}
	if f.IDPrefix != "" {
		q.Set("idPrefix", f.IDPrefix)
	}
	if f.Before != 0 {
		q.Set("before", strconv.FormatInt(f.Before, 10))
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	var resp stateapi.DeploymentList
	if err := b.call(ctx, "GET", b.cdkxPath()+"/deployments?"+q.Encode(), nil, &resp); err != nil {
		return nil, fmt.Errorf("list deployments: %w", err)
	}
	// A server older than idPrefix, kind or before ignores them: keep only what the filter selects. (Such a
	// server's page may then be short: its cursor still works, from the last deployment it sent.)
	out := slices.DeleteFunc(resp.Deployments, func(d state.Deployment) bool { return !f.Match(&d) })
	if f.NoPlans { // the server sends them: let them go at once
		for i := range out {
			out[i].Plan = nil
		}
	}
	return out, nil
}

// GetDeployment returns one deployment with its snapshot; ErrNotFound (wrapped) when absent.
func (b *Backend) GetDeployment(ctx context.Context, id string) (*state.Deployment, error) {
	var d state.Deployment
	if err := deploymentError(b.call(ctx, "GET", b.deploymentPath(id), nil, &d)); err != nil {
		return nil, fmt.Errorf("deployment %s: %w", id, err)
	}
	return &d, nil
}

// Events returns a deployment's events in Seq order.
func (b *Backend) Events(ctx context.Context, deploymentID string) ([]state.Event, error) {
	var resp stateapi.DeploymentEvents
	if err := b.call(ctx, "GET", b.deploymentPath(deploymentID)+"/events", nil, &resp); err != nil {
		return nil, fmt.Errorf("events of deployment %s: %w", deploymentID, err)
	}
	return resp.Events, nil
}
