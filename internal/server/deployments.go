package server

// The deployment queue of the cdkx extension (the endpoints are listed in cdkx.go): state.Deployments
// served from the storage package's svc_deployments, so that any number of replicas and clients may share
// one database. The handlers decode and check the requests, decide by the queue's rules in pkg/state,
// the ones every backend applies (PrepareCreate, Numbered, Dead, AbortedDead, PlanClaims, PlanNext,
// Claimed, ApplyTransition, ApplyAbortRequest, CheckFinish), on the rows storage reads and locks, and
// have storage write what they decided. Storage's comment says how its locks keep the queue's statements from deadlocking.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cdkx-dev/cdkx/internal/server/storage"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/pkg/stateapi"
)

// maxClaimRounds bounds how often ClaimNext looks again after losing every candidate to racing claims.
const maxClaimRounds = 50

// errNotClaimable rolls back a ClaimNext attempt whose candidate was taken or changed meanwhile.
var errNotClaimable = errors.New("the candidate is no longer claimable")

// transitionConflict is the "transition" field of a 409 (the name the package's tests compare with).
type transitionConflict = stateapi.TransitionConflict

// queuedError is the 409 of e, with its "queued" field (stateapi.QueuedConflict).
func queuedError(e *state.QueuedError) error {
	e.Ahead.Snapshot = nil
	return &apiError{code: http.StatusConflict, msg: "Conflict: " + e.Error(),
		queued: &stateapi.QueuedConflict{ID: e.ID, Stack: e.Stack, Position: e.Position, Ahead: e.Ahead}}
}

// transitionError is the 409 of e, with its "transition" field (stateapi.TransitionConflict).
func transitionError(e *state.TransitionError) error {
	return &apiError{code: http.StatusConflict, msg: "Conflict: " + e.Error(),
		transition: &stateapi.TransitionConflict{ID: e.ID, Status: e.Status, To: e.To}}
}

// knownStatus reports whether st is one of the state.Status constants.
func knownStatus(st state.DeploymentStatus) bool {
	switch st {
	case state.StatusProposed, state.StatusApproved, state.StatusRejected, state.StatusPending,
		state.StatusRunning, state.StatusCompleted, state.StatusFailed, state.StatusAborted:
		return true
	}
	return false
}

// clockNow is the server's time for the queue: UTC, microseconds (what PostgreSQL keeps), so that the
// record and the columns hold the same instant.
func (s *Server) clockNow() time.Time {
	return s.now().UTC().Truncate(time.Microsecond)
}

// deploymentsBody is stateapi.DeploymentList under the name the package's tests send (a defined type,
// not an alias, so that their unkeyed literals stay local to the package for go vet).
type deploymentsBody stateapi.DeploymentList

// rawDeployments is a stateapi.DeploymentList as the server answers it: the stored records as they are,
// never parsed (a heartbeat every 0.5 s must not decode and encode megabytes of plans).
type rawDeployments struct {
	Deployments []json.RawMessage `json:"deployments"`
}

func (s *Server) createDeployments(r *http.Request, c *call) (any, error) {
	var req stateapi.DeploymentList
	if _, err := s.decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	if len(req.Deployments) == 0 {
		return nil, errorf(http.StatusBadRequest, "Bad Request: send at least one deployment")
	}
	names := []string{}
	for i := range req.Deployments {
		d := &req.Deployments[i]
		if d.ID == "" || d.Stack == "" || d.Kind == "" {
			return nil, errorf(http.StatusBadRequest, "Bad Request: deployment %d needs an id, a stack and a kind", i)
		}
		if !validStackName(d.Stack) {
			return nil, badName("stack", d.Stack, stackRule, fmt.Sprintf("in deployment %d", i))
		}
		if !slices.Contains(names, d.Stack) {
			names = append(names, d.Stack)
		}
	}
	// The queue's rules of a create (state.PrepareCreate); the hash recorded is the one computed there,
	// of the bytes stored (state.BindSnapshot).
	ds := make([]*state.Deployment, len(req.Deployments))
	ids := make([]string, len(req.Deployments))
	for i := range req.Deployments {
		ds[i], ids[i] = &req.Deployments[i], req.Deployments[i].ID
	}
	if err := state.PrepareCreate(ds, s.policy()); err != nil {
		if err := stateError(err); errors.As(err, new(*apiError)) {
			return nil, err
		}
		return nil, errorf(http.StatusBadRequest, "Bad Request: %v", err)
	}
	org, project := r.PathValue("org"), r.PathValue("project")
	return s.once(r, func(ctx context.Context, tx *storage.Tx) (any, error) {
		if err := tx.LockCreates(ctx); err != nil {
			return nil, err
		}
		existing, err := tx.FirstDeployment(ctx, ids)
		if err != nil {
			return nil, err
		}
		if existing != "" {
			return nil, errorf(http.StatusConflict, "Conflict: deployment %s already exists", existing)
		}
		// Events stored under an ID the queue did not know (owner.go) are not a record's: a record created
		// with that ID would show them.
		if existing, err = tx.FirstWithEvents(ctx, ids); err != nil {
			return nil, err
		}
		if existing != "" {
			return nil, errorf(http.StatusConflict, "Conflict: events of a deployment %s exist already; choose another ID", existing)
		}
		stackIDs, err := tx.StackIDs(ctx, org, project, names)
		if err != nil {
			return nil, err
		}
		for _, name := range names {
			if _, ok := stackIDs[name]; !ok {
				return nil, errorf(http.StatusNotFound, "Not Found: stack '%s/%s/%s' not found; create it first", org, project, name)
			}
		}
		seqs, err := tx.NextSeqs(ctx, len(ids))
		if err != nil {
			return nil, err
		}
		now := s.clockNow()
		rows := make([]storage.NewDeployment, len(ids))
		out := rawDeployments{Deployments: make([]json.RawMessage, len(ids))}
		for i, d := range state.Numbered(ds, 0, now) {
			snapshot := d.Snapshot
			d.Snapshot = nil
			d.Seq = seqs[i]
			d.CreatedBy = c.user
			if d.ApprovedBy != "" {
				d.ApprovedBy, d.ApprovedAt = c.user, now
			}
			d.CreatedAt = d.CreatedAt.UTC()
			var heartbeat *time.Time
			if !d.HeartbeatAt.IsZero() {
				d.HeartbeatAt, heartbeat = now, &now
			}
			record, err := json.Marshal(d)
			if err != nil {
				return nil, err
			}
			out.Deployments[i] = record
			rows[i] = storage.NewDeployment{ID: d.ID, StackID: stackIDs[d.Stack], Record: record, Snapshot: snapshot, Status: d.Status, Seq: d.Seq, HeartbeatAt: heartbeat}
		}
		err = tx.InsertDeployments(ctx, rows)
		if errors.Is(err, storage.ErrExists) {
			return nil, errorf(http.StatusConflict, "Conflict: a deployment of %s already exists", strings.Join(ids, ", "))
		}
		if err != nil {
			return nil, err
		}
		noteRecords(ctx, out.Deployments...)
		return out, nil
	})
}

// aborts are the writes that abort the dead waiters and runners of dead (state.Dead) at now, as
// state.AbortedDead leaves them, each compared and set on what was read.
func aborts(dead []state.Deployment, now time.Time) []storage.Abort {
	out := make([]storage.Abort, len(dead))
	for i, d := range dead {
		a := state.AbortedDead(d, now)
		out[i] = storage.Abort{ID: d.ID, Status: d.Status, HeartbeatAt: d.HeartbeatAt, FinishedAt: a.FinishedAt, Error: a.Error}
	}
	return out
}

// abortDead makes ABORTED the dead waiters and runners (state.Dead) of the queues of stacks, read
// (and, in a transaction that locked them, locked) through conn, and returns the queues without them.
func abortDead(ctx context.Context, conn storage.Conn, queues map[int64][]state.Deployment, now time.Time) (map[int64][]state.Deployment, error) {
	var dead []state.Deployment
	for stack, q := range queues {
		queues[stack] = slices.DeleteFunc(q, func(d state.Deployment) bool {
			if state.Dead(&d, now) {
				dead = append(dead, d)
				return true
			}
			return false
		})
	}
	return queues, abortNoted(ctx, conn, dead, now)
}

// abortNoted aborts dead (state.AbortedDead) at now through conn and notes the event of each one it
// aborted (webhooks.go).
func abortNoted(ctx context.Context, conn storage.Conn, dead []state.Deployment, now time.Time) error {
	ids, err := conn.AbortDeployments(ctx, aborts(dead, now))
	for _, d := range dead {
		if slices.Contains(ids, d.ID) {
			a := state.AbortedDead(d, now)
			note(ctx, &a)
		}
	}
	return err
}

// lockQueue takes the queue lock of each of stacks, locks their queued deployments and aborts the dead
// waiters among them; it returns each stack's queue as it is then. Every queued row is locked, in ID
// order, before any is changed.
func lockQueue(ctx context.Context, tx *storage.Tx, stacks []int64, now time.Time) (map[int64][]state.Deployment, error) {
	if err := tx.LockQueues(ctx, stacks); err != nil {
		return nil, err
	}
	queues, err := tx.Queues(ctx, stacks, true)
	if err != nil {
		return nil, err
	}
	return abortDead(ctx, tx.Conn, queues, now)
}

// claimError is the answer of a claim's error: 409 for the queue's conflicts, 404 for an unknown
// deployment.
func claimError(err error) error {
	var qe *state.QueuedError
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return err
	case errors.As(err, &qe):
		return queuedError(qe)
	case errors.Is(err, state.ErrNotFound), errors.Is(err, storage.ErrNotFound):
		return errorf(http.StatusNotFound, "Not Found: %v", err)
	case errors.Is(err, storage.ErrRunning):
		return errorf(http.StatusConflict, "Conflict: another deployment of the stack is RUNNING")
	}
	return stateError(err)
}

// claimDeployments answers POST …/deployments/claim (stateapi.ClaimRequest).
func (s *Server) claimDeployments(r *http.Request, c *call) (any, error) {
	var req stateapi.ClaimRequest
	if _, err := s.decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	if len(req.IDs) == 0 {
		return nil, errorf(http.StatusBadRequest, "Bad Request: name at least one deployment in ids")
	}
	for i, id := range req.IDs {
		if slices.Contains(req.IDs[:i], id) {
			return nil, errorf(http.StatusBadRequest, "Bad Request: deployment %s appears twice in ids", id)
		}
	}
	org, project := r.PathValue("org"), r.PathValue("project")
	// Dead waiters are aborted in statements of their own: the claim's transaction is rolled back when it
	// answers "still queued", and their abort must stick (a killed waiter must not keep its place).
	at, err := s.db.DeploymentStacks(r.Context(), org, project, req.IDs)
	if err != nil {
		return nil, err
	}
	if len(at) > 0 {
		queues, err := s.db.Queues(r.Context(), stackRowIDs(at), false)
		if err != nil {
			return nil, err
		}
		// Committed statement by statement: noted and handed to the webhooks at once.
		ctx, ob := s.withOutbox(r.Context(), org, project)
		_, err = abortDead(ctx, s.db.Conn, queues, s.clockNow())
		s.flush(ob)
		if err != nil {
			return nil, err
		}
	}
	return s.once(r, func(ctx context.Context, tx *storage.Tx) (any, error) {
		now := s.clockNow()
		at, err := tx.DeploymentStacks(ctx, org, project, req.IDs)
		if err != nil {
			return nil, err
		}
		for _, id := range req.IDs {
			if _, ok := at[id]; !ok {
				return nil, errorf(http.StatusNotFound, "Not Found: deployment %s not found", id)
			}
		}
		queues, err := lockQueue(ctx, tx, stackRowIDs(at), now)
		if err != nil {
			return nil, err
		}
		// The rules of a claim (state.PlanClaims) on the queues as locked, each deployment under its
		// stack's name now; those not queued (any more) by their status.
		var queue []state.Deployment
		found := map[string]state.Deployment{}
		for _, w := range at {
			for _, d := range queues[w.ID] {
				d.Stack = w.Name
				queue = append(queue, d)
				found[d.ID] = d
			}
			queues[w.ID] = nil // each stack once
		}
		for _, id := range req.IDs {
			if _, ok := found[id]; !ok {
				status, err := tx.DeploymentStatus(ctx, id)
				if err != nil {
					return nil, err
				}
				found[id] = state.Deployment{ID: id, Stack: at[id].Name, Status: status}
			}
		}
		plan := state.PlanClaims(req.IDs, found, queue, now)
		if plan.Err != nil {
			return nil, claimError(plan.Err)
		}
		records, err := claim(ctx, tx, req.IDs, req.Runner, c.user, now)
		if err != nil {
			return nil, claimError(err)
		}
		return rawDeployments{Deployments: records}, nil
	})
}

// claim makes ids, each the head of its queue (rows locked), RUNNING for runner at now as state.Claimed
// leaves a claimed deployment, claimed by the API token named by; it returns their records in seq order.
func claim(ctx context.Context, tx *storage.Tx, ids []string, runner, by string, now time.Time) ([]json.RawMessage, error) {
	d := state.Claimed(state.Deployment{}, runner, now)
	patch, err := json.Marshal(map[string]any{"status": d.Status, "startedAt": d.StartedAt, "heartbeatAt": d.HeartbeatAt, "runner": d.Runner})
	if err != nil {
		return nil, err
	}
	records, err := tx.Claim(ctx, ids, patch, by, now)
	noteRecords(ctx, records...)
	return records, err
}

// stackRowIDs returns the row IDs of the stacks of at, each once.
func stackRowIDs(at map[string]storage.StackRef) []int64 {
	var ids []int64
	for _, w := range at {
		if !slices.Contains(ids, w.ID) {
			ids = append(ids, w.ID)
		}
	}
	return ids
}

// claimNext answers POST …/deployments/claim-next (stateapi.ClaimNextRequest): it claims the oldest
// claimable head of the project's queues, as state.PlanNext decides it (heads that are APPROVED, or
// PENDING with no heartbeat, on stacks with nothing RUNNING, lowest seq first). It reads the queues,
// aborts the dead waiters and tries the head PlanNext picks in a transaction of its own under its stack's
// queue lock, where the rule is applied again to the queue as locked; a head taken meanwhile passes to
// the head PlanNext picks among the other stacks, and when every one was, it looks again.
func (s *Server) claimNext(r *http.Request, c *call) (any, error) {
	var req stateapi.ClaimNextRequest
	if _, err := s.decodeBody(r, &req, true); err != nil {
		return nil, err
	}
	for _, st := range req.Stacks {
		if !validStackName(st) {
			return nil, badName("stack", st, stackRule, "in stacks")
		}
	}
	ctx := r.Context()
	org, project := r.PathValue("org"), r.PathValue("project")
	for range maxClaimRounds {
		// A retry whose first attempt claimed the last candidate finds none: its answer is stored.
		if res, ok, err := s.storedAnswer(ctx, r); ok || err != nil {
			return res, err
		}
		ids, err := s.db.StackIDs(ctx, org, project, req.Stacks)
		if err != nil || len(ids) == 0 {
			return noContent{}, err
		}
		scope := make([]int64, 0, len(ids))
		for _, id := range ids {
			scope = append(scope, id)
		}
		queues, err := s.db.Queues(ctx, scope, false)
		if err != nil {
			return nil, err
		}
		now := s.clockNow()
		plan := state.PlanNext(bySeq(queues), now)
		actx, ob := s.withOutbox(ctx, org, project)
		err = abortNoted(actx, s.db.Conn, plan.Abort, now)
		s.flush(ob)
		if err != nil {
			return nil, err
		}
		if len(plan.Claim) == 0 {
			if res, ok, err := s.storedAnswer(ctx, r); ok || err != nil {
				return res, err
			}
			return noContent{}, nil
		}
		// The candidates in PlanNext's order: a head taken meanwhile passes to the next stack's.
		for len(plan.Claim) > 0 {
			head := plan.Claim[0]
			stack := int64(-1)
			for id, q := range queues {
				if slices.ContainsFunc(q, func(d state.Deployment) bool { return d.ID == head.ID }) {
					stack = id
				}
			}
			res, err := s.once(r, func(ctx context.Context, tx *storage.Tx) (any, error) {
				return s.claimHead(ctx, tx, stack, head.ID, req.Runner, c.user)
			})
			if !errors.Is(err, errNotClaimable) {
				return res, err
			}
			delete(queues, stack)
			plan = state.PlanNext(bySeq(queues), now)
		}
	}
	return noContent{}, nil
}

// bySeq returns the deployments of queues in one list, in seq order.
func bySeq(queues map[int64][]state.Deployment) []state.Deployment {
	var all []state.Deployment
	for _, q := range queues {
		all = append(all, q...)
	}
	slices.SortFunc(all, func(a, b state.Deployment) int { return cmp.Compare(a.Seq, b.Seq) })
	return all
}

// claimHead claims deployment id, the head of stack's queue, for runner, by the API token named by, when
// it still is the head an agent may run (state.PlanNext on the queue as locked), else returns
// errNotClaimable; the answer is the deployment with its snapshot.
func (s *Server) claimHead(ctx context.Context, tx *storage.Tx, stack int64, id, runner, by string) (any, error) {
	now := s.clockNow()
	queues, err := lockQueue(ctx, tx, []int64{stack}, now)
	if err != nil {
		return nil, err
	}
	plan := state.PlanNext(queues[stack], now)
	if len(plan.Claim) == 0 || plan.Claim[0].ID != id {
		return nil, errNotClaimable
	}
	records, err := claim(ctx, tx, []string{id}, runner, by, now)
	if err != nil {
		return nil, claimError(err)
	}
	snapshot, err := tx.Snapshot(ctx, id)
	if err != nil {
		return nil, err
	}
	return withSnapshot(records[0], snapshot)
}

// storedAnswer returns the stored answer of the request's Idempotency-Key, if it has one.
func (s *Server) storedAnswer(ctx context.Context, r *http.Request) (any, bool, error) {
	key := r.Header.Get(IdempotencyHeader)
	if key == "" {
		return nil, false, nil
	}
	a, err := s.db.StoredAnswer(ctx, key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	st := storedAnswer{path: a.Path, status: a.Status, body: a.Body}
	res, err := st.answer(key, r)
	return res, true, err
}

// withSnapshot returns the record with its snapshot, as a state.Deployment.
func withSnapshot(record, snapshot []byte) (*state.Deployment, error) {
	var d state.Deployment
	if err := json.Unmarshal(record, &d); err != nil {
		return nil, err
	}
	d.Snapshot = snapshot
	return &d, nil
}

// heartbeatDeployments answers POST …/deployments/heartbeat (stateapi.HeartbeatRequest).
func (s *Server) heartbeatDeployments(r *http.Request, c *call) (any, error) {
	var req stateapi.HeartbeatRequest
	if _, err := s.decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	out := rawDeployments{Deployments: []json.RawMessage{}}
	if len(req.IDs) == 0 {
		return out, nil
	}
	// A RUNNING deployment beats only for the token that claimed it (another token's beats would keep a
	// dead run's stack taken); a waiting one for any token (approve --run waits for another's).
	err := s.inTx(r.Context(), func(tx *storage.Tx) error {
		records, err := tx.Heartbeat(r.Context(), r.PathValue("org"), r.PathValue("project"), req.IDs, s.clockNow(), c.user)
		out.Deployments = append(out.Deployments, records...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// lockDeployment locks deployment id of org and project and returns its record and the name of
// the token that claimed it ("" when none or unknown); 404 when absent.
func lockDeployment(ctx context.Context, tx *storage.Tx, org, project, id string) (*state.Deployment, string, error) {
	d, claimer, err := tx.LockDeployment(ctx, org, project, id)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, "", errorf(http.StatusNotFound, "Not Found: deployment %s not found", id)
	}
	return d, claimer, err
}

// tokenView returns deployment d and the caller c as the state machine (state.CheckTransition) sees them
// on a state service: people and runners are API tokens. The runner of a RUNNING deployment is the token
// that claimed it (claimer; "" before claims were recorded: any token is taken for it), and the caller
// runs as its own token; only the claimer may end a run. Anyone else may ask it to stop (requestAbort),
// and the queue aborts it by itself once its heartbeats stop.
func tokenView(d *state.Deployment, claimer string, c *call) (state.Deployment, state.Actor) {
	v := *d
	if claimer == "" {
		claimer = c.user
	}
	v.Runner = "token " + claimer + " (runner " + d.Runner + ")"
	runner := "token " + c.user
	if claimer == c.user {
		runner = v.Runner
	}
	return v, state.Actor{Name: c.user, Runner: runner}
}

// policy is the server's approval policy (Options.RequireSecondPerson).
func (s *Server) policy() state.Policy {
	return state.Policy{RequireSecondPerson: s.secondPerson}
}

// stateError is the answer of an error of the state machine: 409 with "transition" for a
// *state.TransitionError, 403 with "forbidden" for a *state.ForbiddenError (the message of a direct
// deploy under --require-second-person says to propose it with cdkx deploy --propose).
func stateError(err error) error {
	var te *state.TransitionError
	var fe *state.ForbiddenError
	switch {
	case errors.As(err, &te):
		return transitionError(te)
	case errors.As(err, &fe):
		return &apiError{code: http.StatusForbidden, msg: "Forbidden: " + fe.Error(),
			forbidden: &stateapi.ForbiddenRefusal{ID: fe.ID, Reason: fe.Reason}}
	}
	return err
}

// setRecord sets deployment id's status and merges fields into its record; it returns the record.
func setRecord(ctx context.Context, tx *storage.Tx, id string, status state.DeploymentStatus, fields map[string]any) (json.RawMessage, error) {
	fields["status"] = status
	patch, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	record, err := tx.SetRecord(ctx, id, status, patch)
	if errors.Is(err, storage.ErrRunning) {
		return nil, errorf(http.StatusConflict, "Conflict: another deployment of the stack is RUNNING")
	}
	if err == nil && eventOf(status) != "" && status != state.StatusRunning {
		noteRecords(ctx, record) // an abort request leaves a deployment RUNNING: no event
	}
	return record, err
}

// transitionDeployment answers POST …/deployments/{id}/transition (stateapi.TransitionRequest).
func (s *Server) transitionDeployment(r *http.Request, c *call) (any, error) {
	var req stateapi.TransitionRequest
	if _, err := s.decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	switch {
	case !knownStatus(req.To):
		return nil, errorf(http.StatusBadRequest, "Bad Request: %q is not a deployment status", req.To)
	case req.To == state.StatusRunning:
		return nil, errorf(http.StatusBadRequest, "Bad Request: a deployment becomes RUNNING only by a claim (POST …/deployments/claim)")
	case len(req.From) == 0:
		return nil, errorf(http.StatusBadRequest, "Bad Request: name the statuses the deployment may be in (from)")
	}
	id := r.PathValue("id")
	return s.once(r, func(ctx context.Context, tx *storage.Tx) (any, error) {
		record, err := s.transition(ctx, tx, r.PathValue("org"), r.PathValue("project"), id, c, req)
		if err != nil {
			return nil, stateError(err)
		}
		return record, nil
	})
}

// transition makes the change req of deployment id of org and project, asked by c, in tx (its row
// locked): the state machine's rules of a transition (state.ApplyTransition, under the server's policy)
// on the deployment as the tokens see it (tokenView). It returns the record as changed; an *apiError 404
// when there is no such deployment, 400 for a status only a claim or a finish makes; the state machine's
// errors as they are. The API (transitionDeployment) and the console (console.go) both change statuses
// through it.
func (s *Server) transition(ctx context.Context, tx *storage.Tx, org, project, id string, c *call, req stateapi.TransitionRequest) (json.RawMessage, error) {
	d, claimer, err := lockDeployment(ctx, tx, org, project, id)
	if err != nil {
		return nil, err
	}
	view, actor := tokenView(d, claimer, c)
	at := req.At.UTC()
	if at.IsZero() {
		at = s.clockNow()
	}
	next, err := state.ApplyTransition(view, state.Transition{From: req.From, To: req.To, By: actor.Name, Runner: actor.Runner, Error: req.Error, Comment: req.Comment, At: at}, s.policy())
	var te *state.TransitionError
	var fe *state.ForbiddenError
	switch {
	case errors.As(err, &te), errors.As(err, &fe):
		return nil, err
	case err != nil && req.Comment != "" && req.To != state.StatusRunning && req.To != state.StatusCompleted && req.To != state.StatusFailed:
		return nil, errorf(http.StatusBadRequest, "Bad Request: %v", err)
	case err != nil:
		return nil, errorf(http.StatusBadRequest, "Bad Request: a deployment becomes %s only by a claim or a finish (POST …/deployments/claim, PATCH …/deployments/{id})", req.To)
	}
	fields := map[string]any{}
	switch req.To {
	case state.StatusApproved:
		fields["approvedBy"], fields["approvedAt"] = next.ApprovedBy, next.ApprovedAt
		if next.ApprovalComment != "" {
			fields["approvalComment"] = next.ApprovalComment
		}
	case state.StatusRejected:
		fields["rejectedBy"] = next.RejectedBy
		if next.RejectionComment != "" {
			fields["rejectionComment"] = next.RejectionComment
		}
	case state.StatusAborted:
		fields["abortedBy"] = next.AbortedBy
	}
	if req.Error != "" {
		fields["error"] = next.Error
	}
	if req.To.Terminal() {
		fields["finishedAt"] = next.FinishedAt
	}
	return setRecord(ctx, tx, id, req.To, fields)
}

// requestAbort answers POST …/deployments/{id}/abort (stateapi.AbortRequest).
func (s *Server) requestAbort(r *http.Request, c *call) (any, error) {
	var req stateapi.AbortRequest
	if _, err := s.decodeBody(r, &req, true); err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	return s.once(r, func(ctx context.Context, tx *storage.Tx) (any, error) {
		record, err := s.abortRequest(ctx, tx, r.PathValue("org"), r.PathValue("project"), id, c)
		if err != nil {
			return nil, stateError(err)
		}
		return record, nil
	})
}

// abortRequest asks the runner of the RUNNING deployment id of org and project to stop, as c
// (state.ApplyAbortRequest), in tx; the API (requestAbort) and the console both ask through it.
func (s *Server) abortRequest(ctx context.Context, tx *storage.Tx, org, project, id string, c *call) (json.RawMessage, error) {
	d, _, err := lockDeployment(ctx, tx, org, project, id)
	if err != nil {
		return nil, err
	}
	next, err := state.ApplyAbortRequest(*d, c.user)
	if err != nil {
		return nil, err
	}
	return setRecord(ctx, tx, id, state.StatusRunning, map[string]any{"abortedBy": next.AbortedBy})
}

// finishDeployment answers PATCH …/deployments/{id} (stateapi.FinishRequest).
func (s *Server) finishDeployment(r *http.Request, c *call) (any, error) {
	var req stateapi.FinishRequest
	if _, err := s.decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	switch req.Status {
	case state.StatusCompleted, state.StatusFailed, state.StatusAborted:
	default:
		return nil, errorf(http.StatusBadRequest, "Bad Request: a deployment finishes COMPLETED, FAILED or ABORTED, not %q", req.Status)
	}
	id := r.PathValue("id")
	return s.once(r, func(ctx context.Context, tx *storage.Tx) (any, error) {
		d, claimer, err := lockDeployment(ctx, tx, r.PathValue("org"), r.PathValue("project"), id)
		if err != nil {
			return nil, err
		}
		view, actor := tokenView(d, claimer, c)
		if err := state.CheckFinish(view, actor.Runner, req.Status); err != nil {
			return nil, stateError(err)
		}
		at := req.FinishedAt.UTC()
		if at.IsZero() {
			at = s.clockNow()
		}
		return setRecord(ctx, tx, id, req.Status, map[string]any{"finishedAt": at, "version": req.Version, "error": req.Error})
	})
}

// listDeployments answers GET …/deployments[?stack=S&status=A,B&kind=K,L&idPrefix=P&before=SEQ&limit=N] (a
// stateapi.DeploymentList).
func (s *Server) listDeployments(r *http.Request, c *call) (any, error) {
	q := r.URL.Query()
	limit := 0
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 0 {
			return nil, errorf(http.StatusBadRequest, "Bad Request: limit %q is not a number of 0 or more", l)
		}
		limit = n
	}
	statuses := []string{}
	if st := q.Get("status"); st != "" {
		for _, one := range strings.Split(st, ",") {
			if !knownStatus(state.DeploymentStatus(one)) {
				return nil, errorf(http.StatusBadRequest, "Bad Request: status %q is not a deployment status", one)
			}
			statuses = append(statuses, one)
		}
	}
	kinds := []string{}
	if k := q.Get("kind"); k != "" {
		kinds = strings.Split(k, ",")
	}
	var before int64
	if b := q.Get("before"); b != "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n < 0 {
			return nil, errorf(http.StatusBadRequest, "Bad Request: before %q is not a deployment's seq (the cursor of a page)", b)
		}
		before = n
	}
	records, err := s.db.Deployments(r.Context(), r.PathValue("org"), r.PathValue("project"),
		storage.DeploymentFilter{Stack: q.Get("stack"), Statuses: statuses, Kinds: kinds, IDPrefix: q.Get("idPrefix"), Before: before, Limit: limit})
	if err != nil {
		return nil, err
	}
	if records == nil {
		records = []json.RawMessage{}
	}
	return rawDeployments{Deployments: records}, nil
}

// getDeployment answers GET …/deployments/{id}: the state.Deployment with its snapshot.
func (s *Server) getDeployment(r *http.Request, c *call) (any, error) {
	record, snapshot, err := s.db.Deployment(r.Context(), r.PathValue("org"), r.PathValue("project"), r.PathValue("id"))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, errorf(http.StatusNotFound, "Not Found: deployment %s not found", r.PathValue("id"))
	}
	if err != nil {
		return nil, err
	}
	return withSnapshot(record, snapshot)
}

// deploymentEvents answers GET …/deployments/{id}/events: a stateapi.DeploymentEvents, the stored events
// as they are.
func (s *Server) deploymentEvents(r *http.Request, c *call) (any, error) {
	events, err := s.db.DeploymentEvents(r.Context(), r.PathValue("org"), r.PathValue("project"), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	if events == nil {
		events = []json.RawMessage{}
	}
	return map[string]any{"events": events}, nil
}
