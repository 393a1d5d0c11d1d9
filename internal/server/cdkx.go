package server

// The cdkx extension: what the cdkx CLI needs beyond the Pulumi update lifecycle, under paths the
// Pulumi CLI never calls.
//
//   PATCH /api/stacks/{org}/{project}/{stack}/{kind}/{id}/commit   (update token)
//     cdkxCommitRequest → {"version": N}: a delta checkpoint against an explicit base version, stored
//     with the cdkx deployment events that came with it, in one transaction.
//   GET   /api/cdkx/{org}/{project}/locks[?stack=S]                 (API token)
//     → {"locks": [activeUpdate…]}: the active updates, with the cdkx lock holder each was created for.
//
// The deployment queue (deployments.go), all with an API token: the caller is the token's name, recorded
// as createdBy, approvedBy, rejectedBy or abortedBy whatever the body says; claims, heartbeats and the
// abort of dead waiters use the server's clock (times in bodies are informational). D is a
// pkg/state.Deployment as JSON; lists and most answers leave its snapshot out. Errors are the usual
// {"code", "message"}; a 409 of the queue adds "queued": {"id", "stack", "position", "ahead": D} (the
// deployment is not at the head of its stack's queue: state.QueuedError) or "transition": {"id",
// "status", "to"} (its status does not allow the change: state.TransitionError). 404: no such
// deployment (or stack) in the project. POST and PATCH requests may carry an Idempotency-Key header: a
// retry with the same key gets the first answer again (idempotency.go).
//
//   POST  /api/cdkx/{org}/{project}/deployments
//     {"deployments": [D…]} → {"deployments": [D…]}: creates them all or none, in one transaction, at
//     the tail of their stacks' queues, with seq increasing in the order given (across every stack of the
//     server); status PROPOSED, PENDING or APPROVED (400 otherwise; 403 APPROVED under
//     RequireSecondPerson); an existing ID is a 409; a stack that does not exist a 404; createdAt is
//     kept when set, else now; a non-zero heartbeatAt becomes now (a waiting process is attached).
//   POST  /api/cdkx/{org}/{project}/deployments/claim
//     {"ids": [ID…], "runner": R} → {"deployments": [D…]} (RUNNING), all or none, after aborting the dead
//     waiters of their stacks; 409 queued or transition.
//   POST  /api/cdkx/{org}/{project}/deployments/claim-next
//     {"stacks": [S…], "runner": R} → D with its snapshot, the oldest head of a queue of those stacks
//     (every stack when empty) that is APPROVED, or PENDING with no heartbeat, on a stack with nothing
//     RUNNING, now RUNNING; 204 when there is none.
//   POST  /api/cdkx/{org}/{project}/deployments/heartbeat
//     {"ids": [ID…]} → {"deployments": [D…]}: heartbeatAt = now for the PENDING, APPROVED and RUNNING
//     ones; every one of ids that exists is answered, in seq order.
//   POST  /api/cdkx/{org}/{project}/deployments/{id}/transition
//     {"from": [STATUS…], "to": STATUS, "error": E, "at": T} → D: a compare-and-set of the status (not to
//     RUNNING: 400; never out of a terminal status); finishedAt = at (now when absent) when to is
//     terminal; 403 when approving one the caller created under RequireSecondPerson.
//   POST  /api/cdkx/{org}/{project}/deployments/{id}/abort
//     {} → D: asks the runner of a RUNNING deployment to stop (abortedBy = caller; status unchanged);
//     409 transition when it is not RUNNING.
//   PATCH /api/cdkx/{org}/{project}/deployments/{id}
//     {"status", "finishedAt", "version", "error"} → D: finishes a RUNNING deployment (status COMPLETED,
//     FAILED or ABORTED); 409 transition otherwise.
//   GET   /api/cdkx/{org}/{project}/deployments[?stack=S&status=A,B&limit=N]
//     → {"deployments": [D…]}, newest (highest seq) first, without snapshots.
//   GET   /api/cdkx/{org}/{project}/deployments/{id}                → D with its snapshot.
//   GET   /api/cdkx/{org}/{project}/deployments/{id}/events         → {"events": [state.Event…]}.
//
// The cdkx CLI creates updates with a "cdkxLock" object (pkg/state.LockInfo) in the
// UpdateProgramRequest, which the server keeps with the update; renew_lease takes an optional
// "heartbeatAt" (RFC 3339) that the lock listing reports.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
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
