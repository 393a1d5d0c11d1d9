package server

// The cdkx extension: what the cdkx CLI needs beyond the Pulumi update lifecycle, under paths the
// Pulumi CLI never calls.
//
//   PATCH /api/stacks/{org}/{project}/{stack}/{kind}/{id}/commit   (update token)
//     cdkxCommitRequest → {"version": N}: a delta checkpoint against an explicit base version, stored
//     with the cdkx deployment events that came with it, in one transaction.
//   GET   /api/cdkx/{org}/{project}/locks[?stack=S]                 (API token)
//     → {"locks": [activeUpdate…]}: the active updates, with the cdkx lock holder each was created for.
//   POST  /api/cdkx/{org}/{project}/deployments                     (API token)  state.Deployment → 204
//   PATCH /api/cdkx/{org}/{project}/deployments/{id}                (API token)  finish → 204
//   GET   /api/cdkx/{org}/{project}/deployments[?stack=S&limit=N]   (API token)
//   GET   /api/cdkx/{org}/{project}/deployments/{id}                (API token)
//   GET   /api/cdkx/{org}/{project}/deployments/{id}/events         (API token)
//
// The cdkx CLI creates updates with a "cdkxLock" object (pkg/state.LockInfo) in the
// UpdateProgramRequest, which the server keeps with the update; renew_lease takes an optional
// "heartbeatAt" (RFC 3339) that the lock listing reports.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

// cdkxCommitRequest is the body of PATCH …/commit: the edits that turn the stack's checkpoint at
// BaseVersion into the new one (DeploymentDelta, the same text edits as checkpointdelta), or the new
// checkpoint's exact text (DeploymentText, a JSON string: its bytes are kept as they are), and the
// SHA-256 (lowercase hex) of the result; SequenceNumber makes a retry a no-op that answers the version
// the first attempt stored.
type cdkxCommitRequest struct {
	SequenceNumber  int64           `json:"sequenceNumber"`
	BaseVersion     int64           `json:"baseVersion"`
	CheckpointHash  string          `json:"checkpointHash"`
	DeploymentDelta json.RawMessage `json:"deploymentDelta,omitempty"`
	DeploymentText  *string         `json:"deploymentText,omitempty"`
	ResourceCount   int             `json:"resourceCount"`
	DeploymentID    string          `json:"deploymentId"`
	Events          []state.Event   `json:"events,omitempty"`
}

func (s *Server) cdkxCommit(r *http.Request, c *call) (any, error) {
	var req cdkxCommitRequest
	if _, err := s.decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	if req.SequenceNumber < 1 {
		return nil, errorf(http.StatusBadRequest, "Bad Request: sequenceNumber must be 1 or more")
	}
	var edits []textEdit
	switch {
	case req.DeploymentText != nil && len(req.DeploymentDelta) > 0:
		return nil, errorf(http.StatusBadRequest, "Bad Request: send deploymentDelta or deploymentText, not both")
	case req.DeploymentText == nil:
		var err error
		if edits, err = parseDelta(req.DeploymentDelta); err != nil {
			return nil, err
		}
	}
	for i, e := range req.Events {
		if e.Status == "" {
			return nil, errorf(http.StatusBadRequest, "Bad Request: event %d has no status", i)
		}
	}
	var stackID, version int64
	var next []byte
	err := s.inTx(r.Context(), func(tx pgx.Tx) error {
		u, err := s.lockRunning(r.Context(), tx, r, c)
		if err != nil {
			return err
		}
		err = tx.QueryRow(r.Context(), `SELECT version FROM svc_checkpoints WHERE update_id = $1 AND sequence_number = $2`, u.id, req.SequenceNumber).Scan(&version)
		if err == nil {
			return nil // a retry of a stored commit
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		var current int64
		if err := tx.QueryRow(r.Context(), `SELECT version FROM svc_stacks WHERE id = $1 FOR UPDATE`, u.stackID).Scan(&current); err != nil {
			return err
		}
		if current != req.BaseVersion {
			return errorf(http.StatusConflict, "Conflict: the stack is at version %d, the commit was made against version %d; read the stack again", current, req.BaseVersion)
		}
		if req.DeploymentText != nil {
			next = []byte(*req.DeploymentText)
		} else {
			prev, err := s.checkpointText(r.Context(), tx, u.stackID, current)
			if err != nil {
				return err
			}
			if next, err = applyDelta(prev, edits); err != nil {
				return err
			}
		}
		if err := checkHash(next, req.CheckpointHash); err != nil {
			return err
		}
		if err := validEdits(next, req.DeploymentText != nil, edits); err != nil {
			return err
		}
		stackID = u.stackID
		if version, err = s.storeCheckpoint(r.Context(), tx, u, next, edits, &req.SequenceNumber, req.ResourceCount); err != nil {
			return err
		}
		return insertEvents(r.Context(), tx, u.stackID, r.PathValue("stack"), req.DeploymentID, req.Events)
	})
	if err != nil {
		return nil, err
	}
	if next != nil {
		s.texts.put(stackID, version, next)
	}
	return map[string]int64{"version": version}, nil
}

// validEdits checks what a commit brings: a whole text must be valid JSON; with edits, each edit's new
// text (the cdkx client edits whole lines: a resource or the stack header, after a "," or newline
// separator) must be a valid JSON value or empty. Checking the edits, not the whole result, keeps a
// commit O(size of the change) in parsing; the hash has already bound the result to what the client
// built.
func validEdits(next []byte, whole bool, edits []textEdit) error {
	if whole {
		if !json.Valid(next) {
			return errorf(http.StatusBadRequest, "Bad Request: deploymentText is not valid JSON")
		}
		return nil
	}
	for i, e := range edits {
		text := strings.TrimLeft(e.NewText, ",\n\r\t ")
		if text != "" && !json.Valid([]byte(text)) {
			return errorf(http.StatusBadRequest, "Bad Request: edit %d: its new text is not a JSON value", i)
		}
	}
	return nil
}

// insertEvents stores events of deployment: explicit sequence numbers are kept, zero ones continue after
// the highest stored.
func insertEvents(ctx context.Context, tx pgx.Tx, stackID int64, stack, deployment string, events []state.Event) error {
	if len(events) == 0 {
		return nil
	}
	var last int64
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(seq), 0) FROM svc_deployment_events WHERE deployment_id = $1`, deployment).Scan(&last); err != nil {
		return err
	}
	batch := &pgx.Batch{}
	for _, e := range events {
		if e.Seq == 0 {
			e.Seq = last + 1
		}
		last = max(last, e.Seq)
		e.DeploymentID, e.Stack = deployment, stack
		data, err := json.Marshal(e)
		if err != nil {
			return err
		}
		batch.Queue(`INSERT INTO svc_deployment_events (deployment_id, seq, stack_id, data) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
			deployment, e.Seq, stackID, data)
	}
	return tx.SendBatch(ctx, batch).Close()
}

// activeUpdate is an active update in the lock listing; Lock is the cdkx lock holder it was created for
// (null for an update the Pulumi CLI created).
type activeUpdate struct {
	Stack          string          `json:"stack"`
	UpdateID       string          `json:"updateID"`
	Kind           string          `json:"kind"`
	Status         string          `json:"status"`
	CreatedAt      time.Time       `json:"createdAt"`
	LeaseExpiresAt *time.Time      `json:"leaseExpiresAt,omitempty"`
	HeartbeatAt    *time.Time      `json:"heartbeatAt,omitempty"`
	Lock           json.RawMessage `json:"lock"`
}

func (s *Server) cdkxLocks(r *http.Request, c *call) (any, error) {
	rows, err := s.pool.Query(r.Context(), `SELECT s.name, u.id, u.kind, u.status, u.created_at, u.lease_expires_at, u.heartbeat_at, u.request->'cdkxLock'
FROM svc_updates u JOIN svc_stacks s ON s.id = u.stack_id
WHERE s.org = $1 AND s.project = $2 AND ($3 = '' OR s.name = $3) AND u.status IN ('not started', 'requested', 'running')
ORDER BY s.name`, r.PathValue("org"), r.PathValue("project"), r.URL.Query().Get("stack"))
	if err != nil {
		return nil, err
	}
	locks := []activeUpdate{}
	for rows.Next() {
		var a activeUpdate
		var lock []byte
		if err := rows.Scan(&a.Stack, &a.UpdateID, &a.Kind, &a.Status, &a.CreatedAt, &a.LeaseExpiresAt, &a.HeartbeatAt, &lock); err != nil {
			return nil, err
		}
		a.Lock = lock
		if a.Lock == nil {
			a.Lock = json.RawMessage("null")
		}
		locks = append(locks, a)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return map[string]any{"locks": locks}, nil
}

// projectStack returns the row ID of stack in the request's org and project; 404 when it does not exist.
func projectStack(ctx context.Context, tx pgx.Tx, r *http.Request, stack string) (int64, error) {
	var id int64
	err := tx.QueryRow(ctx, `SELECT id FROM svc_stacks WHERE org = $1 AND project = $2 AND name = $3`,
		r.PathValue("org"), r.PathValue("project"), stack).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, errorf(http.StatusNotFound, "Not Found: stack '%s/%s/%s' not found; create it first", r.PathValue("org"), r.PathValue("project"), stack)
	}
	return id, err
}

func (s *Server) createDeployment(r *http.Request, c *call) (any, error) {
	var d state.Deployment
	if _, err := s.decodeBody(r, &d, false); err != nil {
		return nil, err
	}
	if d.ID == "" || d.Stack == "" || d.Kind == "" || d.Status == "" {
		return nil, errorf(http.StatusBadRequest, "Bad Request: a deployment needs id, stack, kind and status")
	}
	snapshot := d.Snapshot
	d.Snapshot = nil
	record, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	err = s.inTx(r.Context(), func(tx pgx.Tx) error {
		stackID, err := projectStack(r.Context(), tx, r, d.Stack)
		if err != nil {
			return err
		}
		_, err = tx.Exec(r.Context(), `INSERT INTO svc_deployments (id, stack_id, record, snapshot, started_at) VALUES ($1, $2, $3, $4, $5)`,
			d.ID, stackID, record, snapshot, d.StartedAt)
		if pgCode(err) == codeUniqueViolation {
			return errorf(http.StatusConflict, "Conflict: deployment %s already exists", d.ID)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return noContent{}, nil
}

// finishRequest is the body of PATCH …/deployments/{id}.
type finishRequest struct {
	Status     string    `json:"status"`
	FinishedAt time.Time `json:"finishedAt"`
	Version    int64     `json:"version"`
	Error      string    `json:"error"`
}

func (s *Server) finishDeployment(r *http.Request, c *call) (any, error) {
	var f finishRequest
	if _, err := s.decodeBody(r, &f, false); err != nil {
		return nil, err
	}
	if f.Status == "" {
		return nil, errorf(http.StatusBadRequest, "Bad Request: finishing a deployment needs a status")
	}
	patch, err := json.Marshal(map[string]any{"status": f.Status, "finishedAt": f.FinishedAt, "version": f.Version, "error": f.Error})
	if err != nil {
		return nil, err
	}
	tag, err := s.pool.Exec(r.Context(), `UPDATE svc_deployments d SET record = d.record || $4::jsonb FROM svc_stacks s
WHERE d.id = $3 AND s.id = d.stack_id AND s.org = $1 AND s.project = $2`, r.PathValue("org"), r.PathValue("project"), r.PathValue("id"), patch)
	if err != nil {
		return nil, err
	}
	if tag.RowsAffected() == 0 {
		return nil, errorf(http.StatusNotFound, "Not Found: deployment %s not found", r.PathValue("id"))
	}
	return noContent{}, nil
}

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
	rows, err := s.pool.Query(r.Context(), `SELECT d.record FROM svc_deployments d JOIN svc_stacks s ON s.id = d.stack_id
WHERE s.org = $1 AND s.project = $2 AND ($3 = '' OR s.name = $3)
ORDER BY d.started_at DESC, d.id DESC LIMIT CASE WHEN $4 > 0 THEN $4 END`, r.PathValue("org"), r.PathValue("project"), q.Get("stack"), limit)
	if err != nil {
		return nil, err
	}
	records, err := pgx.CollectRows(rows, pgx.RowTo[json.RawMessage])
	if err != nil {
		return nil, err
	}
	if records == nil {
		records = []json.RawMessage{}
	}
	return map[string]any{"deployments": records}, nil
}

func (s *Server) getDeployment(r *http.Request, c *call) (any, error) {
	var d state.Deployment
	var record, snapshot []byte
	err := s.pool.QueryRow(r.Context(), `SELECT d.record, d.snapshot FROM svc_deployments d JOIN svc_stacks s ON s.id = d.stack_id
WHERE d.id = $3 AND s.org = $1 AND s.project = $2`, r.PathValue("org"), r.PathValue("project"), r.PathValue("id")).Scan(&record, &snapshot)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errorf(http.StatusNotFound, "Not Found: deployment %s not found", r.PathValue("id"))
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(record, &d); err != nil {
		return nil, err
	}
	d.Snapshot = snapshot
	return d, nil
}

func (s *Server) deploymentEvents(r *http.Request, c *call) (any, error) {
	rows, err := s.pool.Query(r.Context(), `SELECT e.data FROM svc_deployment_events e JOIN svc_stacks s ON s.id = e.stack_id
WHERE e.deployment_id = $3 AND s.org = $1 AND s.project = $2 ORDER BY e.seq`, r.PathValue("org"), r.PathValue("project"), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	events, err := pgx.CollectRows(rows, pgx.RowTo[json.RawMessage])
	if err != nil {
		return nil, err
	}
	if events == nil {
		events = []json.RawMessage{}
	}
	return map[string]any{"events": events}, nil
}
