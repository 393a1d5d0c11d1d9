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
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/cdkx-dev/cdkx/internal/server/storage"
	"github.com/cdkx-dev/cdkx/pkg/stateapi"
)

// Update statuses (apitype.UpdateStatus).
const (
	statusNotStarted = "not started"
	statusRunning    = "running"
	statusSucceeded  = "succeeded"
	statusFailed     = "failed"
	statusCancelled  = "cancelled"
)

// Update kinds. The Pulumi CLI creates updates with POST …/{stack}/{update|preview|refresh|destroy} and
// sends every follow-up call to …/update/{id}/… whatever the kind; an import is created by POST
// …/import (state.go).
const (
	kindUpdate  = "update"
	kindPreview = "preview"
	kindRefresh = "refresh"
	kindDestroy = "destroy"
	kindImport  = "import"
)

// createKinds are the kinds POST /api/stacks/{org}/{project}/{stack}/{kind} creates.
var createKinds = []string{kindUpdate, kindPreview, kindRefresh, kindDestroy}

// followUpKinds are the {kind} segments the follow-up routes …/{kind}/{id}/… accept. The kind names no
// more than the route: an update is found by its ID whatever its stored kind.
var followUpKinds = map[string]bool{kindUpdate: true, kindPreview: true, kindRefresh: true, kindDestroy: true, kindImport: true}

// NotStartedTakeover is how long an update may stay not started before a create on its stack cancels
// it and takes the stack.
const NotStartedTakeover = 2 * time.Minute

// MinLease is the shortest lease start grants when the request asks for one (leaseSeconds).
const MinLease = 5 * time.Second

func isActive(status string) bool {
	return status == statusNotStarted || status == "requested" || status == statusRunning
}

// errExpired is the answer to a call with an expired lease; the Pulumi CLI stops renewing on it.
var errExpired = &apiError{code: http.StatusForbidden, msg: "The provided update token has expired"}

// errUpdateInProgress is the answer to a create or a start while another update of the stack is
// active: the message the Pulumi service answers. A 409 of start is what the Pulumi CLI turns into its
// ConflictingUpdateError (the message and a link to Pulumi's page on update conflicts).
var errUpdateInProgress = &apiError{code: http.StatusConflict, msg: "Conflict: Another update is currently in progress."}

// pulumiCLIAgent prefixes the User-Agent of the Pulumi CLI (and of its automation API, which runs it).
const pulumiCLIAgent = "pulumi-cli/"

// createUpdate returns the handler of POST …/{stack}/{kind}: it creates a not-started update of kind
// and answers its ID (stateapi.UpdateProgramResponse). An active update of the stack whose lease expired
// (running, lease_expires_at in the past), or that stayed not started for NotStartedTakeover, is
// cancelled first, in the same transaction. A live one makes the create a 409 (errUpdateInProgress) —
// except for the Pulumi CLI (User-Agent pulumi-cli/…), which recognises a busy stack only when start
// answers 409, as the Pulumi service answers it: its create is stored cancelled, never started, and its
// start answers the 409.
func (s *Server) createUpdate(kind string) handlerFunc {
	return func(r *http.Request, c *call) (any, error) {
		var req stateapi.UpdateProgramRequest
		body, err := s.decodeBody(r, &req, true)
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(body)) == 0 {
			body = []byte("{}")
		}
		id := uuid.NewString()
		now := s.now()
		err = s.inTx(r.Context(), func(tx *storage.Tx) error {
			st, err := lookupStack(r.Context(), tx, r, false)
			if err != nil {
				return err
			}
			// The takeover locks the stale update's row: a renew_lease racing with it either commits
			// first (the row no longer matches when re-read) or finds it cancelled (409 for its holder).
			if err := tx.TakeOver(r.Context(), st.id, now, now.Add(-NotStartedTakeover)); err != nil {
				return err
			}
			u := storage.NewUpdate{ID: id, StackID: st.id, Kind: kind, Status: statusNotStarted, Request: body, CreatedAt: now, CreatedBy: c.user}
			created, err := tx.InsertActiveUpdate(r.Context(), u)
			switch {
			case err != nil:
				return err
			case created:
				return nil
			case !strings.HasPrefix(r.UserAgent(), pulumiCLIAgent):
				return errUpdateInProgress
			}
			u.Status = statusCancelled
			return tx.InsertDoneUpdate(r.Context(), u)
		})
		if err != nil {
			return nil, err
		}
		return stateapi.UpdateProgramResponse{UpdateID: id}, nil
	}
}

// updateRow is an update as the handlers see it, read under its row lock.
type updateRow struct {
	id, kind, status string
	stackID          int64
	leaseExpires     *time.Time
}

// lockUpdate reads and locks the update named by the request's path; 404 when it is not an update of
// that stack. The path's {kind} is not compared with the update's: the Pulumi CLI sends the follow-up
// calls of every kind to …/update/{id}.
func lockUpdate(ctx context.Context, tx *storage.Tx, r *http.Request) (updateRow, error) {
	u, err := tx.LockUpdate(ctx, storage.StackPath{Org: r.PathValue("org"), Project: r.PathValue("project"), Stack: r.PathValue("stack")}, r.PathValue("id"))
	if errors.Is(err, storage.ErrNotFound) {
		return updateRow{}, errorf(http.StatusNotFound, "Not Found: update %q not found", r.PathValue("id"))
	}
	return asUpdateRow(u), err
}

// asUpdateRow is u as the handlers see it.
func asUpdateRow(u storage.Update) updateRow {
	return updateRow{id: u.ID, kind: u.Kind, status: u.Status, stackID: u.StackID, leaseExpires: u.LeaseExpires}
}

// lockLease finds the update of the request's update token and locks its row: 401 when no update has
// that token, 403 when it is another update's (or another stack's).
func lockLease(ctx context.Context, tx *storage.Tx, r *http.Request, c *call) (updateRow, error) {
	stored, p, err := tx.LockLease(ctx, c.leaseHash)
	u := asUpdateRow(stored)
	if errors.Is(err, storage.ErrNotFound) {
		return u, errorf(http.StatusUnauthorized, "Unauthorized: invalid update token")
	}
	if err != nil {
		return u, err
	}
	if u.id != r.PathValue("id") || p.Org != r.PathValue("org") ||
		p.Project != r.PathValue("project") || p.Stack != r.PathValue("stack") {
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
func (s *Server) lockRunning(ctx context.Context, tx *storage.Tx, r *http.Request, c *call) (updateRow, error) {
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

// startUpdateResponse is the answer of start (the name the package's tests decode into).
type startUpdateResponse = stateapi.StartUpdateResponse

// leaseFor is the lease start grants for a request asking for seconds (0: the server's default).
func (s *Server) leaseFor(seconds int) time.Duration {
	if seconds <= 0 {
		return s.lease
	}
	return min(max(time.Duration(seconds)*time.Second, MinLease), MaxLease)
}

// startUpdate starts the update of the path (stateapi.StartUpdateRequest → stateapi.StartUpdateResponse):
// it becomes running with a new lease of leaseFor(req.LeaseSeconds); 409 unless it was not started.
// The answer's journalVersion is 1 when the request asked for journal version 1 or later: the Pulumi CLI
// then sends journal entries (PATCH …/journalentries, journal.go) instead of checkpoints.
func (s *Server) startUpdate(r *http.Request, c *call) (any, error) {
	var req stateapi.StartUpdateRequest
	if _, err := s.decodeBody(r, &req, true); err != nil {
		return nil, err
	}
	tok, hash, err := newLeaseToken()
	if err != nil {
		return nil, err
	}
	now := s.now()
	exp := now.Add(s.leaseFor(req.LeaseSeconds))
	var resp stateapi.StartUpdateResponse
	err = s.inTx(r.Context(), func(tx *storage.Tx) error {
		u, err := lockUpdate(r.Context(), tx, r)
		if err != nil {
			return err
		}
		if u.status == statusCancelled {
			// Cancelled before it started: by a create of the Pulumi CLI on a busy stack, by a takeover
			// or by `cancel`; another update holds, or held, the stack.
			never, err := tx.NeverStarted(r.Context(), u.id)
			if err != nil {
				return err
			}
			if never {
				return errUpdateInProgress
			}
		}
		if u.status != statusNotStarted {
			return errorf(http.StatusConflict, "Conflict: update %s is %s; it can be started only once", u.id, u.status)
		}
		if err := tx.StartUpdate(r.Context(), u.id, statusRunning, now, hash, exp); err != nil {
			return err
		}
		var tags []byte
		if req.Tags != nil {
			if tags, err = json.Marshal(req.Tags); err != nil {
				return err
			}
		}
		if resp.Version, err = tx.TouchStack(r.Context(), u.stackID, now, tags); err != nil {
			return err
		}
		if req.JournalVersion < 1 {
			return nil
		}
		resp.JournalVersion = journalVersion
		return tx.BeginJournal(r.Context(), u.id, resp.Version)
	})
	if err != nil {
		return nil, err
	}
	resp.Token, resp.TokenExpiration = tok, exp.Unix()
	return resp, nil
}

// updateResults is the answer of updateStatus (the name the package's tests decode into).
type updateResults = stateapi.UpdateResults

// updateStatus answers GET …/{kind}/{id}: stateapi.UpdateResults.
func (s *Server) updateStatus(r *http.Request, c *call) (any, error) {
	var res updateResults
	err := s.inTx(r.Context(), func(tx *storage.Tx) error {
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
	err := s.inTx(r.Context(), func(tx *storage.Tx) error {
		return s.cancelActive(r.Context(), tx, stackPath(r), r.PathValue("id"))
	})
	if err != nil {
		return nil, err
	}
	return noContent{}, nil
}

// cancelActive cancels update id of the stack at p, in tx (its row locked): nothing when it is cancelled
// already, 409 when it completed, 404 when there is none. The API (cancelUpdate) and the console's unlock
// both cancel through it.
func (s *Server) cancelActive(ctx context.Context, tx *storage.Tx, p storage.StackPath, id string) error {
	stored, err := tx.LockUpdate(ctx, p, id)
	if errors.Is(err, storage.ErrNotFound) {
		return errorf(http.StatusNotFound, "Not Found: update %q not found", id)
	}
	if err != nil {
		return err
	}
	u := asUpdateRow(stored)
	switch {
	case u.status == statusCancelled:
		return nil
	case !isActive(u.status):
		return errorf(http.StatusConflict, "Conflict: update %s already completed (%s)", u.id, u.status)
	}
	return tx.EndUpdate(ctx, u.id, statusCancelled, s.now())
}

// eventPageSize bounds the events one GET …/events returns.
const eventPageSize = 1000

// listEvents answers GET …/{kind}/{id}/events: stateapi.GetUpdateEventsResponse.
func (s *Server) listEvents(r *http.Request, c *call) (any, error) {
	after := int64(-1)
	if t := r.URL.Query().Get("continuationToken"); t != "" {
		n, err := strconv.ParseInt(t, 10, 64)
		if err != nil {
			return nil, errorf(http.StatusBadRequest, "Bad Request: continuationToken %q is not a number", t)
		}
		after = n
	}
	resp := stateapi.GetUpdateEventsResponse{Events: []json.RawMessage{}}
	err := s.inTx(r.Context(), func(tx *storage.Tx) error {
		u, err := lockUpdate(r.Context(), tx, r)
		if err != nil {
			return err
		}
		events, err := tx.UpdateEvents(r.Context(), u.id, after, eventPageSize)
		if err != nil {
			return err
		}
		last := after
		for _, e := range events {
			last = e.Seq
			resp.Events = append(resp.Events, e.Data)
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

// eventsBatch stores the events of POST …/{kind}/{id}/events/batch (stateapi.EngineEventBatch).
func (s *Server) eventsBatch(r *http.Request, c *call) (any, error) {
	var req stateapi.EngineEventBatch
	if _, err := s.decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	seqs := make([]int64, len(req.Events))
	// changes is the resourceChanges of the batch's summary event, recorded for history.
	var changes json.RawMessage
	for i, e := range req.Events {
		var head struct {
			Sequence     *int64 `json:"sequence"`
			Timestamp    *int64 `json:"timestamp"`
			SummaryEvent *struct {
				ResourceChanges json.RawMessage `json:"resourceChanges"`
			} `json:"summaryEvent"`
		}
		if err := json.Unmarshal(e, &head); err != nil {
			return nil, errorf(http.StatusBadRequest, "Bad Request: event %d is not a JSON object: %v", i, err)
		}
		if head.Sequence == nil || head.Timestamp == nil {
			return nil, errorf(http.StatusBadRequest, "Bad Request: event %d has no sequence or timestamp", i)
		}
		seqs[i] = *head.Sequence
		if head.SummaryEvent != nil && len(head.SummaryEvent.ResourceChanges) > 0 && !bytes.Equal(head.SummaryEvent.ResourceChanges, []byte("null")) {
			var m map[string]int
			if err := json.Unmarshal(head.SummaryEvent.ResourceChanges, &m); err != nil {
				return nil, errorf(http.StatusBadRequest, "Bad Request: event %d: summaryEvent.resourceChanges is not an object of counts: %v", i, err)
			}
			changes = head.SummaryEvent.ResourceChanges
		}
	}
	err := s.inTx(r.Context(), func(tx *storage.Tx) error {
		u, err := s.lockRunning(r.Context(), tx, r, c)
		if err != nil {
			return err
		}
		events := make([]storage.UpdateEvent, len(req.Events))
		for i, e := range req.Events {
			events[i] = storage.UpdateEvent{Seq: seqs[i], Data: e}
		}
		return tx.InsertUpdateEvents(r.Context(), u.id, events, changes)
	})
	return nil, err
}

// renewLease extends the lease of the request's update token (stateapi.RenewUpdateLeaseRequest →
// stateapi.RenewUpdateLeaseResponse).
func (s *Server) renewLease(r *http.Request, c *call) (any, error) {
	var req stateapi.RenewUpdateLeaseRequest
	if _, err := s.decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	if req.Duration <= 0 {
		return nil, errorf(http.StatusBadRequest, "Bad Request: duration must be a positive number of seconds")
	}
	d := min(time.Duration(req.Duration)*time.Second, MaxLease)
	exp := s.now().Add(d)
	err := s.inTx(r.Context(), func(tx *storage.Tx) error {
		u, err := s.lockRunning(r.Context(), tx, r, c)
		if err != nil {
			return err
		}
		return tx.RenewLease(r.Context(), u.id, exp, req.HeartbeatAt)
	})
	if err != nil {
		return nil, err
	}
	_, tok := authorization(r)
	return stateapi.RenewUpdateLeaseResponse{Token: tok, TokenExpiration: exp.Unix()}, nil
}

// complete ends the update of the request's update token (stateapi.CompleteUpdateRequest).
func (s *Server) complete(r *http.Request, c *call) (any, error) {
	var req stateapi.CompleteUpdateRequest
	if _, err := s.decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	switch req.Status {
	case statusSucceeded, statusFailed, statusCancelled:
	default:
		return nil, errorf(http.StatusBadRequest, "Bad Request: status %q: want succeeded, failed or cancelled", req.Status)
	}
	err := s.inTx(r.Context(), func(tx *storage.Tx) error {
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
		return tx.EndUpdate(r.Context(), u.id, req.Status, s.now())
	})
	return nil, err
}
