package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/cdkx-dev/cdkx/internal/server/storage"
	"github.com/google/uuid"
)

// emptyDeployment is the export of a stack never deployed: a valid version-3 deployment without
// resources.
const emptyDeployment = `{"version":3,"deployment":{"manifest":{"time":"0001-01-01T00:00:00Z","magic":"","version":""},"resources":[]}}`

func (s *Server) export(r *http.Request, c *call) (any, error) {
	var data []byte
	err := s.inTx(r.Context(), func(tx *storage.Tx) error {
		st, err := lookupStack(r.Context(), tx, r, false)
		if err != nil {
			return err
		}
		data, err = s.checkpointText(r.Context(), tx, st.id, st.version)
		return err
	})
	if err != nil {
		return nil, err
	}
	return rawJSON(data), nil
}

func (s *Server) exportVersion(r *http.Request, c *call) (any, error) {
	v, err := strconv.ParseInt(r.PathValue("version"), 10, 64)
	if err != nil || v < 1 {
		return nil, errorf(http.StatusBadRequest, "Bad Request: version %q is not a positive number", r.PathValue("version"))
	}
	var data []byte
	err = s.inTx(r.Context(), func(tx *storage.Tx) error {
		st, err := lookupStack(r.Context(), tx, r, false)
		if err != nil {
			return err
		}
		if v > st.version {
			return errorf(http.StatusNotFound, "Not Found: stack has no version %d (its latest is %d)", v, st.version)
		}
		data, err = s.checkpointText(r.Context(), tx, st.id, v)
		return err
	})
	if err != nil {
		return nil, err
	}
	return rawJSON(data), nil
}

// importStack stores an UntypedDeployment as the stack's next version, through a one-shot update of
// kind import that succeeds at once; 409 while another update is active.
func (s *Server) importStack(r *http.Request, c *call) (any, error) {
	body, err := s.readBody(r)
	if err != nil {
		return nil, err
	}
	count, err := validateDeployment(body, importDoc)
	if err != nil {
		return nil, err
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, body); err != nil {
		return nil, errorf(http.StatusBadRequest, "Bad Request: malformed JSON body: %v", err)
	}
	id := uuid.NewString()
	now := s.now()
	err = s.inTx(r.Context(), func(tx *storage.Tx) error {
		st, err := lookupStack(r.Context(), tx, r, false)
		if err != nil {
			return err
		}
		// Inserted as running, so that the partial unique index refuses it while another update is active.
		err = tx.InsertStartedUpdate(r.Context(), storage.NewUpdate{ID: id, StackID: st.id, Kind: kindImport, Status: statusRunning, CreatedAt: now, CreatedBy: c.user})
		if storage.UniqueViolation(err) {
			return errorf(http.StatusConflict, "Conflict: Another update is currently in progress.")
		}
		if err != nil {
			return err
		}
		if _, err := s.storeCheckpoint(r.Context(), tx, updateRow{id: id, stackID: st.id}, compact.Bytes(), nil, nil, count); err != nil {
			return err
		}
		if err := tx.SetLastUpdate(r.Context(), st.id, now); err != nil {
			return err
		}
		return tx.CompleteUpdate(r.Context(), id, statusSucceeded, now)
	})
	if err != nil {
		return nil, err
	}
	return map[string]string{"updateId": id}, nil
}
