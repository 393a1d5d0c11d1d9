package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/cdkx-dev/cdkx/internal/server/storage"
	"github.com/cdkx-dev/cdkx/pkg/stateapi"
)

// Stack history. Every update that is not a preview gets a history version 1, 2, 3… per stack when it
// starts running (an import or a rename: when it is stored); the trigger of migration 00005 numbers it
// and records the stack's resource count when it ends. GET …/updates lists the history, newest first;
// GET …/export/{version} returns the state history version left: the last checkpoint written by that
// update, or by the last update before it that wrote one.

// maxHistoryPage bounds pageSize.
const maxHistoryPage = 1000

// historyInfo is a stored history entry as the API answers it.
func historyInfo(h storage.HistoryEntry) stateapi.UpdateInfo {
	info := stateapi.UpdateInfo{Kind: h.Kind, Version: h.Version}
	status, request, started, completed, changes, count := h.Status, h.Request, h.Started, h.Completed, h.Changes, h.Count
	var req stateapi.UpdateProgramRequest
	if len(request) > 0 {
		_ = json.Unmarshal(request, &req) // stored as the client sent it: what does not parse is left out
	}
	info.Message, info.Environment, info.Config = req.Metadata.Message, req.Metadata.Environment, req.Config
	if info.Environment == nil {
		info.Environment = map[string]string{}
	}
	if info.Config == nil {
		info.Config = map[string]stateapi.ConfigValue{}
	}
	info.Result = updateResult(status)
	if started != nil {
		info.StartTime = started.Unix()
	}
	if completed != nil {
		info.EndTime = completed.Unix()
	}
	if len(changes) > 0 {
		_ = json.Unmarshal(changes, &info.ResourceChanges) // checked when stored (eventsBatch)
	}
	if count != nil {
		info.ResourceCount = *count
	}
	return info
}

// updateResult maps an update status to its history result; cancelled is failed (the Pulumi API has no
// cancelled result).
func updateResult(status string) stateapi.UpdateResult {
	switch status {
	case statusSucceeded:
		return stateapi.ResultSucceeded
	case statusFailed, statusCancelled:
		return stateapi.ResultFailed
	case statusRunning:
		return stateapi.ResultInProgress
	default:
		return stateapi.ResultNotStarted
	}
}

// positiveQuery parses the query parameter name as a positive integer; def when absent.
func positiveQuery(r *http.Request, name string, def int64) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		return 0, errorf(http.StatusBadRequest, "Bad Request: %s %q is not a positive number", name, v)
	}
	return n, nil
}

// history serves GET …/updates (`pulumi stack history`): stateapi.GetHistoryResponse, newest first;
// ?pageSize=N&page=P (pages from 1, pageSize at most 1000) selects a page, the whole history without
// pageSize.
func (s *Server) history(r *http.Request, c *call) (any, error) {
	pageSize, err := positiveQuery(r, "pageSize", 0)
	if err != nil {
		return nil, err
	}
	page, err := positiveQuery(r, "page", 1)
	if err != nil {
		return nil, err
	}
	if pageSize > maxHistoryPage {
		return nil, errorf(http.StatusBadRequest, "Bad Request: pageSize %d is above %d", pageSize, maxHistoryPage)
	}
	var limit *int64 // LIMIT NULL: all
	offset := int64(0)
	if pageSize > 0 {
		limit, offset = &pageSize, (page-1)*pageSize
	}
	resp := stateapi.GetHistoryResponse{Updates: []stateapi.UpdateInfo{}}
	err = s.inTx(r.Context(), func(tx *storage.Tx) error {
		st, err := lookupStack(r.Context(), tx, r, false)
		if err != nil {
			return err
		}
		entries, err := tx.History(r.Context(), st.id, limit, offset)
		for _, h := range entries {
			resp.Updates = append(resp.Updates, historyInfo(h))
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// latestUpdate serves GET …/updates/latest (`pulumi config refresh`): stateapi.LatestUpdateResponse
// with the newest history entry; 404 when the stack has none, which the CLI reads as "no previous
// deployment".
func (s *Server) latestUpdate(r *http.Request, c *call) (any, error) {
	var resp stateapi.LatestUpdateResponse
	err := s.inTx(r.Context(), func(tx *storage.Tx) error {
		st, err := lookupStack(r.Context(), tx, r, false)
		if err != nil {
			return err
		}
		h, err := tx.LatestHistory(r.Context(), st.id)
		if errors.Is(err, storage.ErrNotFound) {
			return errorf(http.StatusNotFound, "Not Found: stack '%s/%s/%s' has no update yet", r.PathValue("org"), r.PathValue("project"), r.PathValue("stack"))
		}
		resp.Info = historyInfo(h)
		return err
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// exportHistoryVersion serves GET …/export/{version} (`pulumi stack export --version N`): the state at
// the end of history version N (the empty deployment when no update up to N wrote state); 404 beyond
// the stack's last history version. With ?checkpoint=true, version is a checkpoint version instead (the
// stack's version counter, which start answers; the cdkx client reads versions so).
func (s *Server) exportHistoryVersion(r *http.Request, c *call) (any, error) {
	if r.URL.Query().Get("checkpoint") == "true" {
		return s.exportVersion(r, c)
	}
	n, err := strconv.ParseInt(r.PathValue("version"), 10, 64)
	if err != nil || n < 1 {
		return nil, errorf(http.StatusBadRequest, "Bad Request: version %q is not a positive number", r.PathValue("version"))
	}
	var data []byte
	err = s.inTx(r.Context(), func(tx *storage.Tx) error {
		st, err := lookupStack(r.Context(), tx, r, false)
		if err != nil {
			return err
		}
		v, err := checkpointOfHistory(r.Context(), tx, st.id, n)
		if err != nil {
			return err
		}
		data, err = s.checkpointText(r.Context(), tx, st.id, v)
		return err
	})
	if err != nil {
		return nil, err
	}
	return rawJSON(data), nil
}

// checkpointOfHistory returns the checkpoint version the stack had at the end of history version n (0:
// none); a 404 apiError when the stack has no history version n.
func checkpointOfHistory(ctx context.Context, tx *storage.Tx, stackID, n int64) (int64, error) {
	last, err := tx.LastHistoryVersion(ctx, stackID)
	if err != nil {
		return 0, err
	}
	if n > last {
		return 0, errorf(http.StatusNotFound, "Not Found: the stack has no version %d (its latest is %d)", n, last)
	}
	return tx.CheckpointOfHistory(ctx, stackID, n)
}
