package server

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/cdkx-dev/cdkx/internal/server/storage"
	"github.com/cdkx-dev/cdkx/pkg/stateapi"
)

// apiError is an error answered to the client as stateapi.ErrorResponse {code, message}, with the fields
// of a deployment conflict when it is one.
type apiError struct {
	code int
	msg  string
	// queued and transition describe a 409 of the deployment queue (deployments.go), or are nil.
	queued     *stateapi.QueuedConflict
	transition *stateapi.TransitionConflict
	// forbidden describes a 403 of the deployment state machine, or is nil.
	forbidden *stateapi.ForbiddenRefusal
}

func (e *apiError) Error() string { return fmt.Sprintf("[%d] %s", e.code, e.msg) }

func errorf(code int, format string, args ...any) error {
	return &apiError{code: code, msg: fmt.Sprintf(format, args...)}
}

// errorResponse is the body of every error answer (the name the package's tests decode into).
type errorResponse = stateapi.ErrorResponse

// noContent makes a handler answer 204 without a body.
type noContent struct{}

// rawJSON is a response body sent as is.
type rawJSON []byte

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, e *apiError) {
	if e.code == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, e.code, errorResponse{Code: e.code, Message: e.msg, Queued: e.queued, Transition: e.transition, Forbidden: e.forbidden})
}

// call is what the auth layer learnt about a request.
type call struct {
	// user is the name of the API token (API calls).
	user string
	// scope is what the API token may do (API calls).
	scope tokenScope
	// leaseHash is the SHA-256 of the update token (execution calls).
	leaseHash []byte
}

// handlerFunc answers one request; its result is written as JSON with 200 (nil: an empty 200,
// noContent: 204, rawJSON: the bytes).
type handlerFunc func(r *http.Request, c *call) (any, error)

// api serves an API call: `Authorization: token <api-token>`. Before the handler runs it checks, for
// every route:
//   - the names of the request (checkNames): 400 for an invalid organization, project or stack name in
//     the path or in the organization, project and stack query parameters;
//   - the token's organizations (authorize): 403 when the path's {org}, or the organization query
//     parameter, is one the token does not reach;
//   - the token's access: 403 when a read-only token sends anything but a GET, or a POST to …/decrypt or
//     …/batch-decrypt (reading a stack includes reading its secrets: `pulumi stack output
//     --show-secrets`, `pulumi config` of a secret).
//
// The routes without {org} (/api/user, /api/user/stacks, …/organizations/default, /api/capabilities)
// answer only about the token's organizations (users.go).
func (s *Server) api(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, tok := authorization(r)
		if scheme != "token" || tok == "" {
			writeError(w, &apiError{code: http.StatusUnauthorized, msg: "Unauthorized: No credentials provided or are invalid."})
			return
		}
		sum := sha256.Sum256([]byte(tok))
		t, err := s.db.TokenByHash(r.Context(), sum[:])
		if errors.Is(err, storage.ErrNotFound) {
			writeError(w, &apiError{code: http.StatusUnauthorized, msg: "Unauthorized: No credentials provided or are invalid."})
			return
		}
		if err != nil {
			writeError(w, s.internal(r, err))
			return
		}
		c := &call{user: t.Name, scope: tokenScope{orgs: t.Orgs, readOnly: t.ReadOnly}}
		if err := checkNames(r); err != nil {
			s.fail(w, r, err)
			return
		}
		if err := authorize(r, c); err != nil {
			s.fail(w, r, err)
			return
		}
		s.serve(w, r, h, c)
	})
}

// authorize checks that the API token of c may send r: that it reaches the request's organization and,
// when it is read only, that r only reads (see api).
func authorize(r *http.Request, c *call) error {
	org := r.URL.Query().Get("organization")
	if strings.Contains(r.Pattern, "{org}") {
		org = r.PathValue("org")
	}
	if org != "" && !c.scope.reaches(org) {
		return errorf(http.StatusForbidden, "Forbidden: token %q does not reach organization %q (it reaches %s); use a token of %q, or have an administrator create one: cdkx server token create NAME --org %s",
			c.user, org, strings.Join(c.scope.orgs, ", "), org, org)
	}
	if c.scope.readOnly && writes(r) {
		return errorf(http.StatusForbidden, "Forbidden: token %q is read-only and cannot %s %s; use a read-write token (cdkx server token create NAME, without --read-only)",
			c.user, r.Method, r.URL.Path)
	}
	return nil
}

// writes reports whether r may change something: anything but GET and HEAD, except the decrypt
// endpoints (POST, but they only read).
func writes(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		return false
	case http.MethodPost:
		return !strings.HasSuffix(r.Pattern, "/decrypt") && !strings.HasSuffix(r.Pattern, "/batch-decrypt")
	}
	return true
}

// exec serves an execution call: `Authorization: update-token <lease-token>`; the handler checks the
// lease under the update's row lock (lockLease), which binds it to one update of one stack: the token
// that started the update reached the stack's organization and could write (api). Names are checked as
// in api. A renewal (renew_lease) also checks that the API token that created the update still exists,
// reaches the stack's organization and may write, so that revoking or narrowing a token stops its runs
// within one lease, at the cost of one query per renewal rather than per call.
func (s *Server) exec(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, tok := authorization(r)
		if scheme != "update-token" || tok == "" {
			writeError(w, &apiError{code: http.StatusUnauthorized, msg: "Unauthorized: this call needs an update token (Authorization: update-token …)"})
			return
		}
		if err := checkNames(r); err != nil {
			s.fail(w, r, err)
			return
		}
		sum := sha256.Sum256([]byte(tok))
		if strings.HasSuffix(r.Pattern, "/renew_lease") {
			if err := s.checkLeaseCreator(r, sum[:]); err != nil {
				s.fail(w, r, err)
				return
			}
		}
		s.serve(w, r, h, &call{leaseHash: sum[:]})
	})
}

// checkLeaseCreator checks that the API token that created the update of the lease whose SHA-256 is
// hash still exists, reaches the update's organization and may write (403 otherwise). An unknown lease
// passes: the handler answers it. So does an update whose creator was not recorded (created before
// migration 00005).
func (s *Server) checkLeaseCreator(r *http.Request, hash []byte) error {
	lc, err := s.db.LeaseCreatorOf(r.Context(), hash)
	if errors.Is(err, storage.ErrNotFound) || (err == nil && lc.Creator == "") {
		return nil
	}
	switch {
	case err != nil:
		return err
	case lc.Token == nil:
		return errorf(http.StatusForbidden, "Forbidden: token %q, which created update %s, was revoked; the update's lease is not renewed: run it again with a valid token", lc.Creator, lc.Update)
	case !(tokenScope{orgs: lc.Token.Orgs}).reaches(lc.Org) || lc.Token.ReadOnly:
		return errorf(http.StatusForbidden, "Forbidden: token %q, which created update %s, may no longer write to organization %q; the update's lease is not renewed: run it again with a token that may", lc.Creator, lc.Update, lc.Org)
	}
	return nil
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, h handlerFunc, c *call) {
	res, err := h(r, c)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	switch v := res.(type) {
	case nil:
		w.WriteHeader(http.StatusOK)
	case noContent:
		w.WriteHeader(http.StatusNoContent)
	case rawJSON:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(v)
	default:
		writeJSON(w, http.StatusOK, v)
	}
}

// fail answers err: an *apiError as it says, anything else as s.internal maps it.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = s.internal(r, err)
	}
	writeError(w, ae)
}

// internal maps an unexpected error: transient PostgreSQL conflicts to 503 (the client retries), the
// rest to 500, logged.
func (s *Server) internal(r *http.Request, err error) *apiError {
	if storage.Conflict(err) {
		return &apiError{code: http.StatusServiceUnavailable, msg: "Service Unavailable: conflicting concurrent request; retry"}
	}
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		return &apiError{code: 499, msg: "request cancelled"}
	}
	if storage.Unavailable(err) {
		s.log.WarnContext(r.Context(), "database unavailable", "method", r.Method, "path", r.URL.Path, "error", err)
		return &apiError{code: http.StatusServiceUnavailable, msg: "Service Unavailable: the database does not answer; retry"}
	}
	s.log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "error", err)
	return &apiError{code: http.StatusInternalServerError, msg: "Internal Server Error"}
}

// authorization splits the Authorization header into its scheme and credentials.
func authorization(r *http.Request) (scheme, credentials string) {
	scheme, credentials, _ = strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	return strings.ToLower(scheme), strings.TrimSpace(credentials)
}

// readBody returns the request body, gzip-decoded when Content-Encoding says so, at most the route's
// limit (limitBody; s.maxBody on a route without one) after decoding (413 beyond). The bytes it holds
// are taken from the server's budget (503 with Retry-After when spent), and a body that does not arrive
// within the body timeout is answered 408.
func (s *Server) readBody(r *http.Request) ([]byte, error) {
	st, _ := r.Context().Value(bodyStateKey{}).(*bodyState)
	if st == nil {
		st = &bodyState{limit: s.maxBody}
		defer func() {
			if st.held > 0 && s.budget != nil {
				s.budget.give(st.held)
			}
		}()
	}
	var body io.Reader = r.Body
	size := r.ContentLength
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			if ae := s.bodyError(err); ae != nil {
				return nil, ae
			}
			return nil, errorf(http.StatusBadRequest, "Bad Request: the body is not valid gzip: %v", err)
		}
		defer func() { _ = zr.Close() }()
		body, size = zr, -1
	default:
		return nil, errorf(http.StatusUnsupportedMediaType, "Unsupported Media Type: Content-Encoding %q; send gzip or nothing", enc)
	}
	data, err := s.readLimited(r, body, size, st)
	if err != nil {
		var ae *apiError
		if errors.As(err, &ae) {
			return nil, err
		}
		if size < 0 && (errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) || errors.Is(err, io.ErrUnexpectedEOF)) {
			return nil, errorf(http.StatusBadRequest, "Bad Request: the body is not valid gzip: %v", err)
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, errorf(http.StatusBadRequest, "Bad Request: the body ended before its Content-Length (%d bytes)", size)
		}
		return nil, err
	}
	return data, nil
}

// decodeBody reads the body as JSON into v; an empty body decodes as {} when allowEmpty.
func (s *Server) decodeBody(r *http.Request, v any, allowEmpty bool) ([]byte, error) {
	data, err := s.readBody(r)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		if allowEmpty {
			return data, nil
		}
		return nil, errorf(http.StatusBadRequest, "Bad Request: empty body; send a JSON object")
	}
	if err := json.Unmarshal(data, v); err != nil {
		return nil, errorf(http.StatusBadRequest, "Bad Request: malformed JSON body: %v", err)
	}
	return data, nil
}

// inTx runs f in a transaction, committed when f returns nil and rolled back otherwise: a 4xx leaves
// the database unchanged.
func (s *Server) inTx(ctx context.Context, f func(tx *storage.Tx) error) error {
	return s.db.InTx(ctx, f)
}
