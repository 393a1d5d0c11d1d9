package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdkx-dev/cdkx/pkg/stateapi"
)

// Stack history. Every update that is not a preview gets a history version 1, 2, 3… per stack when it
// starts running (an import or a rename: when it is stored); the trigger of migration 00005 numbers it
// and records the stack's resource count when it ends. GET …/updates lists the history, newest first;
// GET …/export/{version} returns the state history version left: the last checkpoint written by that
// update, or by the last update before it that wrote one.

// maxHistoryPage bounds pageSize.
const maxHistoryPage = 1000

// historyColumns are the columns scanHistory reads, in its order.
const historyColumns = `kind, status, request, started_at, completed_at, history_version, resource_changes, resource_count`

// scanHistory reads one row of historyColumns as a history entry.
func scanHistory(row pgx.Row) (stateapi.UpdateInfo, error) {
	var info stateapi.UpdateInfo
	var status string
	var request, changes []byte
	var started, completed *time.Time
	var count *int64
	if err := row.Scan(&info.Kind, &status, &request, &started, &completed, &info.Version, &changes, &count); err != nil {
		return info, err
	}
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
	return info, nil
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
	limit, offset := any(nil), int64(0) // LIMIT NULL: all
	if pageSize > 0 {
		limit, offset = pageSize, (page-1)*pageSize
	}
	resp := stateapi.GetHistoryResponse{Updates: []stateapi.UpdateInfo{}}
	err = s.inTx(r.Context(), func(tx pgx.Tx) error {
		st, err := lookupStack(r.Context(), tx, r, false)
		if err != nil {
			return err
		}
		rows, err := tx.Query(r.Context(), `SELECT `+historyColumns+` FROM svc_updates
WHERE stack_id = $1 AND history_version IS NOT NULL ORDER BY history_version DESC LIMIT $2 OFFSET $3`, st.id, limit, offset)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			info, err := scanHistory(rows)
			if err != nil {
				return err
			}
			resp.Updates = append(resp.Updates, info)
		}
		return rows.Err()
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
	err := s.inTx(r.Context(), func(tx pgx.Tx) error {
		st, err := lookupStack(r.Context(), tx, r, false)
		if err != nil {
			return err
		}
		resp.Info, err = scanHistory(tx.QueryRow(r.Context(), `SELECT `+historyColumns+` FROM svc_updates
WHERE stack_id = $1 AND history_version IS NOT NULL ORDER BY history_version DESC LIMIT 1`, st.id))
		if errors.Is(err, pgx.ErrNoRows) {
			return errorf(http.StatusNotFound, "Not Found: stack '%s/%s/%s' has no update yet", r.PathValue("org"), r.PathValue("project"), r.PathValue("stack"))
		}
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
	err = s.inTx(r.Context(), func(tx pgx.Tx) error {
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
func checkpointOfHistory(ctx context.Context, tx pgx.Tx, stackID, n int64) (int64, error) {
	var last int64
	if err := tx.QueryRow(ctx, `SELECT history_version FROM svc_stacks WHERE id = $1`, stackID).Scan(&last); err != nil {
		return 0, err
	}
	if n > last {
		return 0, errorf(http.StatusNotFound, "Not Found: the stack has no version %d (its latest is %d)", n, last)
	}
	var v int64
	err := tx.QueryRow(ctx, `SELECT (SELECT max(c.version) FROM svc_checkpoints c WHERE c.update_id = u.id)
FROM svc_updates u
WHERE u.stack_id = $1 AND u.history_version <= $2 AND EXISTS (SELECT 1 FROM svc_checkpoints c WHERE c.update_id = u.id)
ORDER BY u.history_version DESC LIMIT 1`, stackID, n).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return v, err
}
