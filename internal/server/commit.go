package server

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/cdkx-dev/cdkx/internal/server/integrity"
	"github.com/cdkx-dev/cdkx/internal/server/storage"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/pkg/stateapi"
)

func (s *Server) cdkxCommit(r *http.Request, c *call) (any, error) {
	var req stateapi.CommitRequest
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
		edits = integrity.SortEdits(edits)
	}
	if len(req.Events) > 0 && req.DeploymentID == "" {
		return nil, errorf(http.StatusBadRequest, "Bad Request: the commit carries %d event(s) but no deploymentId; events belong to a deployment", len(req.Events))
	}
	for i, e := range req.Events {
		if e.Status == "" {
			return nil, errorf(http.StatusBadRequest, "Bad Request: event %d has no status", i)
		}
	}
	var stackID, version int64
	var next []byte
	var ix *docIndex
	err := s.inTx(r.Context(), func(tx *storage.Tx) error {
		u, err := s.lockRunning(r.Context(), tx, r, c)
		if err != nil {
			return err
		}
		st, seen, _, err := tx.LockForCheckpoint(r.Context(), u.stackID, u.id, req.SequenceNumber)
		if err != nil {
			return err
		}
		if seen != nil {
			version = *seen
			return nil // a retry of a stored commit
		}
		current := st.Version
		if current != req.BaseVersion {
			return errorf(http.StatusConflict, "Conflict: the stack is at version %d, the commit was made against version %d; read the stack again", current, req.BaseVersion)
		}
		var prev []byte
		if req.DeploymentText != nil {
			next = []byte(*req.DeploymentText)
		} else {
			if prev, err = s.checkpointText(r.Context(), tx, u.stackID, current); err != nil {
				return err
			}
			if next, err = applyDelta(prev, edits); err != nil {
				return err
			}
		}
		if err := checkHash(next, req.CheckpointHash); err != nil {
			return err
		}
		if req.DeploymentText != nil {
			ix, err = indexDeployment(next, cdkxDoc)
		} else {
			ix, err = s.checkEdit(u.stackID, current, prev, next, edits, cdkxDoc)
		}
		if err != nil {
			return err
		}
		stackID = u.stackID
		if version, err = s.storeCheckpointAt(r.Context(), tx, u, st, next, edits, &req.SequenceNumber, ix.Count()); err != nil {
			return err
		}
		if len(req.Events) == 0 {
			return nil // no record written: nothing to authorize
		}
		if err := s.authorizeRecordWrite(r.Context(), tx, u, req.DeploymentID); err != nil {
			return err
		}
		return insertEvents(r.Context(), tx, u.stackID, r.PathValue("stack"), req.DeploymentID, req.Events)
	})
	if err != nil {
		return nil, err
	}
	if next != nil {
		s.texts.put(stackID, version, next, ix)
	}
	return stateapi.CommitResponse{Version: version}, nil
}

// insertEvents stores events of deployment: explicit sequence numbers are kept, zero ones continue after
// the highest stored.
func insertEvents(ctx context.Context, tx *storage.Tx, stackID int64, stack, deployment string, events []state.Event) error {
	if len(events) == 0 {
		return nil
	}
	last, err := tx.LastEventSeq(ctx, deployment)
	if err != nil {
		return err
	}
	rows := make([]storage.Event, 0, len(events))
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
		rows = append(rows, storage.Event{Seq: e.Seq, Data: data})
	}
	return tx.InsertEvents(ctx, stackID, deployment, rows)
}
