package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Update statuses (apitype.UpdateStatus).
const (
	statusNotStarted = "not started"
	statusRunning    = "running"
	statusSucceeded  = "succeeded"
	statusFailed     = "failed"
	statusCancelled  = "cancelled"
)

// updateKinds are the kinds POST /api/stacks/{org}/{project}/{stack}/{kind} creates.
var updateKinds = map[string]bool{"update": true, "preview": true, "refresh": true, "destroy": true}

func isActive(status string) bool {
	return status == statusNotStarted || status == "requested" || status == statusRunning
}

// errExpired is the answer to a call with an expired lease; the Pulumi CLI stops renewing on it.
var errExpired = &apiError{code: http.StatusForbidden, msg: "The provided update token has expired"}

func (s *Server) createUpdate(r *http.Request, c *call) (any, error) {
	kind := r.PathValue("kind")
	if !updateKinds[kind] {
		return nil, errorf(http.StatusNotFound, "Not Found: unknown update kind %q", kind)
	}
	var req map[string]any
	body, err := s.decodeBody(r, &req, true)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	id := uuid.NewString()
	err = s.inTx(r.Context(), func(tx pgx.Tx) error {
		st, err := lookupStack(r.Context(), tx, r, false)
		if err != nil {
			return err
		}
		_, err = tx.Exec(r.Context(), `INSERT INTO svc_updates (id, stack_id, kind, status, request, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
			id, st.id, kind, statusNotStarted, body, s.now())
		if pgCode(err) == codeUniqueViolation {
			return errorf(http.StatusConflict, "Conflict: Another update is currently in progress.")
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return map[string]string{"updateID": id}, nil
}

// updateRow is an update as the handlers see it, read under its row lock.
type updateRow struct {
	id, kind, status string
	stackID          int64
	leaseExpires     *time.Time
}

// lockUpdate reads and locks the update named by the request's path; 404 when it is not an update of
// that kind on that stack.
func lockUpdate(ctx context.Context, tx pgx.Tx, r *http.Request) (updateRow, error) {
	var u updateRow
	err := tx.QueryRow(ctx, `SELECT u.id, u.kind, u.status, u.stack_id, u.lease_expires_at FROM svc_updates u
JOIN svc_stacks s ON s.id = u.stack_id
WHERE u.id = $1 AND u.kind = $2 AND s.org = $3 AND s.project = $4 AND s.name = $5 FOR UPDATE OF u`,
		r.PathValue("id"), r.PathValue("kind"), r.PathValue("org"), r.PathValue("project"), r.PathValue("stack")).
		Scan(&u.id, &u.kind, &u.status, &u.stackID, &u.leaseExpires)
	if errors.Is(err, pgx.ErrNoRows) {
		return u, errorf(http.StatusNotFound, "Not Found: update %q not found", r.PathValue("id"))
	}
	return u, err
}

// lockLease finds the update of the request's update token and locks its row: 401 when no update has
// that token, 403 when it is another update's (or another stack's).
func lockLease(ctx context.Context, tx pgx.Tx, r *http.Request, c *call) (updateRow, error) {
	var u updateRow
	var org, project, stack string
	err := tx.QueryRow(ctx, `SELECT u.id, u.kind, u.status, u.stack_id, u.lease_expires_at, s.org, s.project, s.name
FROM svc_updates u JOIN svc_stacks s ON s.id = u.stack_id WHERE u.lease_hash = $1 FOR UPDATE OF u`, c.leaseHash).
		Scan(&u.id, &u.kind, &u.status, &u.stackID, &u.leaseExpires, &org, &project, &stack)
	if errors.Is(err, pgx.ErrNoRows) {
		return u, errorf(http.StatusUnauthorized, "Unauthorized: invalid update token")
	}
	if err != nil {
		return u, err
	}
	if u.id != r.PathValue("id") || u.kind != r.PathValue("kind") || org != r.PathValue("org") ||
		project != r.PathValue("project") || stack != r.PathValue("stack") {
		return u, errorf(http.StatusForbidden, "Forbidden: the update token belongs to another update")
	}
	return u, nil
}

// requireRunning checks that u is running with an unexpired lease.
func (s *Server) requireRunning(u updateRow) error {
	if u.status != statusRunning {
		return errorf(http.StatusConflict, "Conflict: update %s is %s, not running", u.id, u.status)
	}
	if u.leaseExpires == nil || !u.leaseExpires.After(s.now()) {
		return errExpired
	}
	return nil
}

// lockRunning is lockLease followed by requireRunning: the update of the request's token, locked, running
// with an unexpired lease.
func (s *Server) lockRunning(ctx context.Context, tx pgx.Tx, r *http.Request, c *call) (updateRow, error) {
	u, err := lockLease(ctx, tx, r, c)
	if err != nil {
		return u, err
	}
	return u, s.requireRunning(u)
}

// newLeaseToken returns a random lease token and its SHA-256.
func newLeaseToken() (string, []byte, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", nil, err
	}
	tok := base64.RawURLEncoding.EncodeToString(raw[:])
	sum := sha256.Sum256([]byte(tok))
	return tok, sum[:], nil
}

// startUpdateRequest mirrors apitype.StartUpdateRequest.
type startUpdateRequest struct {
	Tags           map[string]string `json:"tags,omitempty"`
	JournalVersion int               `json:"journalVersion,omitempty"`
}

// startUpdateResponse mirrors apitype.StartUpdateResponse. JournalVersion is 1 (journalVersion) when
// the request asked for journal version 1 or later, and absent otherwise: the Pulumi CLI then sends
// journal entries (PATCH …/journalentries, journal.go) instead of checkpoints.
type startUpdateResponse struct {
	Version         int64  `json:"version"`
	Token           string `json:"token,omitempty"`
	TokenExpiration int64  `json:"tokenExpiration,omitempty"`
	JournalVersion  int    `json:"journalVersion,omitempty"`
}

func (s *Server) startUpdate(r *http.Request, c *call) (any, error) {
	var req startUpdateRequest
	if _, err := s.decodeBody(r, &req, true); err != nil {
		return nil, err
	}
	tok, hash, err := newLeaseToken()
	if err != nil {
		return nil, err
	}
	now := s.now()
	exp := now.Add(s.lease)
	var resp startUpdateResponse
	err = s.inTx(r.Context(), func(tx pgx.Tx) error {
		u, err := lockUpdate(r.Context(), tx, r)
		if err != nil {
			return err
		}
		if u.status != statusNotStarted {
			return errorf(http.StatusConflict, "Conflict: update %s is %s; it can be started only once", u.id, u.status)
		}
		if _, err := tx.Exec(r.Context(), `UPDATE svc_updates SET status = $2, started_at = $3, lease_hash = $4, lease_expires_at = $5 WHERE id = $1`,
			u.id, statusRunning, now, hash, exp); err != nil {
			return err
		}
		q := `UPDATE svc_stacks SET last_update = $2 WHERE id = $1 RETURNING version`
		args := []any{u.stackID, now}
		if req.Tags != nil {
			tags, err := json.Marshal(req.Tags)
			if err != nil {
				return err
			}
			q = `UPDATE svc_stacks SET last_update = $2, tags = $3 WHERE id = $1 RETURNING version`
			args = append(args, tags)
		}
		if err := tx.QueryRow(r.Context(), q, args...).Scan(&resp.Version); err != nil {
			return err
		}
		if req.JournalVersion < 1 {
			return nil
		}
		resp.JournalVersion = journalVersion
		return beginJournal(r.Context(), tx, u.id, resp.Version)
	})
	if err != nil {
		return nil, err
	}
	resp.Token, resp.TokenExpiration = tok, exp.Unix()
	return resp, nil
}

// updateResults mirrors apitype.UpdateResults.
type updateResults struct {
	Status            string            `json:"status"`
	Events            []json.RawMessage `json:"events"`
	ContinuationToken *string           `json:"continuationToken,omitempty"`
}

func (s *Server) updateStatus(r *http.Request, c *call) (any, error) {
	var res updateResults
	err := s.inTx(r.Context(), func(tx pgx.Tx) error {
		u, err := lockUpdate(r.Context(), tx, r)
		res.Status = u.status
		return err
	})
	if err != nil {
		return nil, err
	}
	res.Events = []json.RawMessage{}
	if isActive(res.Status) {
		t := "0"
		res.ContinuationToken = &t
	}
	return res, nil
}

func (s *Server) cancelUpdate(r *http.Request, c *call) (any, error) {
	err := s.inTx(r.Context(), func(tx pgx.Tx) error {
		u, err := lockUpdate(r.Context(), tx, r)
		if err != nil {
			return err
		}
		switch {
		case u.status == statusCancelled:
			return nil
		case !isActive(u.status):
			return errorf(http.StatusConflict, "Conflict: update %s already completed (%s)", u.id, u.status)
		}
		_, err = tx.Exec(r.Context(), `UPDATE svc_updates SET status = $2, completed_at = $3, lease_expires_at = NULL WHERE id = $1`,
			u.id, statusCancelled, s.now())
		return err
	})
	if err != nil {
		return nil, err
	}
	return noContent{}, nil
}

// eventPageSize bounds the events one GET …/events returns.
const eventPageSize = 1000

func (s *Server) listEvents(r *http.Request, c *call) (any, error) {
	after := int64(-1)
	if t := r.URL.Query().Get("continuationToken"); t != "" {
		n, err := strconv.ParseInt(t, 10, 64)
		if err != nil {
			return nil, errorf(http.StatusBadRequest, "Bad Request: continuationToken %q is not a number", t)
		}
		after = n
	}
	resp := struct {
		Events            []json.RawMessage `json:"events"`
		ContinuationToken *string           `json:"continuationToken,omitempty"`
	}{Events: []json.RawMessage{}}
	err := s.inTx(r.Context(), func(tx pgx.Tx) error {
		u, err := lockUpdate(r.Context(), tx, r)
		if err != nil {
			return err
		}
		rows, err := tx.Query(r.Context(), `SELECT seq, data FROM svc_events WHERE update_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
			u.id, after, eventPageSize)
		if err != nil {
			return err
		}
		last := after
		for rows.Next() {
			var data []byte
			if err := rows.Scan(&last, &data); err != nil {
				return err
			}
			resp.Events = append(resp.Events, data)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if isActive(u.status) || len(resp.Events) == eventPageSize {
			t := strconv.FormatInt(max(last, 0), 10)
			if last < 0 {
				t = strconv.FormatInt(after, 10)
			}
			resp.ContinuationToken = &t
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// eventBatch mirrors apitype.EngineEventBatch.
type eventBatch struct {
	Events []json.RawMessage `json:"events"`
}

func (s *Server) eventsBatch(r *http.Request, c *call) (any, error) {
	var req eventBatch
	if _, err := s.decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	seqs := make([]int64, len(req.Events))
	for i, e := range req.Events {
		var head struct {
			Sequence  *int64 `json:"sequence"`
			Timestamp *int64 `json:"timestamp"`
		}
		if err := json.Unmarshal(e, &head); err != nil {
			return nil, errorf(http.StatusBadRequest, "Bad Request: event %d is not a JSON object: %v", i, err)
		}
		if head.Sequence == nil || head.Timestamp == nil {
			return nil, errorf(http.StatusBadRequest, "Bad Request: event %d has no sequence or timestamp", i)
		}
		seqs[i] = *head.Sequence
	}
	err := s.inTx(r.Context(), func(tx pgx.Tx) error {
		u, err := s.lockRunning(r.Context(), tx, r, c)
		if err != nil {
			return err
		}
		batch := &pgx.Batch{}
		for i, e := range req.Events {
			batch.Queue(`INSERT INTO svc_events (update_id, seq, data) VALUES ($1, $2, $3) ON CONFLICT (update_id, seq) DO NOTHING`, u.id, seqs[i], []byte(e))
		}
		return tx.SendBatch(r.Context(), batch).Close()
	})
	return nil, err
}

func (s *Server) renewLease(r *http.Request, c *call) (any, error) {
	var req struct {
		Duration int `json:"duration"`
		// HeartbeatAt is the cdkx extension: the client's heartbeat time, reported by the lock listing.
		HeartbeatAt *time.Time `json:"heartbeatAt,omitempty"`
	}
	if _, err := s.decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	if req.Duration <= 0 {
		return nil, errorf(http.StatusBadRequest, "Bad Request: duration must be a positive number of seconds")
	}
	d := min(time.Duration(req.Duration)*time.Second, MaxLease)
	exp := s.now().Add(d)
	err := s.inTx(r.Context(), func(tx pgx.Tx) error {
		u, err := s.lockRunning(r.Context(), tx, r, c)
		if err != nil {
			return err
		}
		_, err = tx.Exec(r.Context(), `UPDATE svc_updates SET lease_expires_at = $2, heartbeat_at = coalesce($3, heartbeat_at) WHERE id = $1`, u.id, exp, req.HeartbeatAt)
		return err
	})
	if err != nil {
		return nil, err
	}
	_, tok := authorization(r)
	return map[string]any{"token": tok, "tokenExpiration": exp.Unix()}, nil
}

func (s *Server) complete(r *http.Request, c *call) (any, error) {
	var req struct {
		Status string `json:"status"`
	}
	if _, err := s.decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	switch req.Status {
	case statusSucceeded, statusFailed, statusCancelled:
	default:
		return nil, errorf(http.StatusBadRequest, "Bad Request: status %q: want succeeded, failed or cancelled", req.Status)
	}
	err := s.inTx(r.Context(), func(tx pgx.Tx) error {
		u, err := lockLease(r.Context(), tx, r, c)
		if err != nil {
			return err
		}
		if u.status == req.Status {
			return nil // a retry: already done
		}
		if err := s.requireRunning(u); err != nil {
			return err
		}
		_, err = tx.Exec(r.Context(), `UPDATE svc_updates SET status = $2, completed_at = $3, lease_expires_at = NULL WHERE id = $1`,
			u.id, req.Status, s.now())
		return err
	})
	return nil, err
}
