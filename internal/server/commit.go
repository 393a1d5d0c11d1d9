package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/jackc/pgx/v5"
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
		if err := authorizeRecordWrite(r.Context(), tx, u, req.DeploymentID); err != nil {
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
