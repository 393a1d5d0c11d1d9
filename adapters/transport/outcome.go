package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"

	retryablehttp "github.com/hashicorp/go-retryablehttp"

	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// The policy for requests that are not idempotent (POST, and PATCH unless marked by Idempotent): such a
// request is sent again only when the API cannot have acted on it —
//   - no connection was made (connection refused, unknown host) or the request was not written;
//   - the API answered 429 Too Many Requests or 503 Service Unavailable: it refused the request without
//     carrying it out (Hetzner's injected and real "unavailable" answers, PostgreSQL restarting behind
//     cdkx server).
//
// Once the request may have been received — no answer within the response timeout, a connection reset or
// EOF after it was written, any other 5xx (the API's own 500, or a 502/504 from a proxy in front of it), or
// the context ending after it was written — it is not sent again, and the call fails with an
// *OutcomeUnknownError (errors.Is(err, resource.ErrOutcomeUnknown)): the caller looks the object up
// before it decides anything (the engine locates the object of a create).

// Idempotent returns ctx marked so that a POST or PATCH sent with it may be sent again after it may have
// been received, like a PUT: for a call whose repetition changes nothing (PowerDNS's PATCH that REPLACEs
// an rrset). A request carrying an Idempotency-Key or X-Idempotency-Key header counts as idempotent too.
func Idempotent(ctx context.Context) context.Context {
	return context.WithValue(ctx, idempotentKey{}, true)
}

type idempotentKey struct{}

// idempotent reports whether req may be sent twice with the effect of once.
func idempotent(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	if marked, _ := req.Context().Value(idempotentKey{}).(bool); marked {
		return true
	}
	return req.Header.Get("Idempotency-Key") != "" || req.Header.Get("X-Idempotency-Key") != ""
}

// OutcomeUnknownError fails a request that is not idempotent and may have been carried out although no
// usable answer came. It matches resource.ErrOutcomeUnknown (errors.Is).
type OutcomeUnknownError struct {
	Provider string
	Method   string
	URL      string // without credentials or query values
	Attempts int
	// Status is the answer's HTTP status: a 5xx; a 2xx whose body could not be read (too large, too slow,
	// not the JSON expected), so that the request was carried out but its result is unknown; 0 when no
	// answer came.
	Status int
	// Err is the cause: the network error, the context's error, or a *resource.ProviderError for a 5xx.
	Err error
}

// Error renders e.g. `powerdns: POST http://127.0.0.1:8081/api/v1/servers/localhost/zones: no answer
// after the request was sent (timeout awaiting response headers): it may have been carried out, so it
// was not sent again`.
func (e *OutcomeUnknownError) Error() string {
	if e.Status/100 == 2 {
		return fmt.Sprintf("%s: %s %s: answered %d, but the answer could not be read (%v): the request was carried out, so it was not sent again",
			e.Provider, e.Method, e.URL, e.Status, e.Err)
	}
	cause := "no answer after the request was sent"
	if e.Status != 0 {
		cause = fmt.Sprintf("answered %d", e.Status)
	}
	if e.Err != nil {
		cause += " (" + e.Err.Error() + ")"
	}
	return fmt.Sprintf("%s: %s %s: %s: it may have been carried out, so it was not sent again", e.Provider, e.Method, e.URL, cause)
}

// Unwrap returns the cause, so that errors.Is(err, context.DeadlineExceeded) or errors.As to a
// *resource.ProviderError still hold.
func (e *OutcomeUnknownError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, resource.ErrOutcomeUnknown) true.
func (e *OutcomeUnknownError) Is(target error) bool { return target == resource.ErrOutcomeUnknown }

// lostAnswer returns err, the failure to read or decode the 2xx answer (status) to req, as an
// *OutcomeUnknownError when req is not idempotent: the API carried the request out (a create made its
// object) and only the answer is missing, so the caller must look the object up rather than give up on it
// or send the request again. An idempotent request's err is returned as it is.
func (c *Client) lostAnswer(req *http.Request, status int, err error) error {
	if c.idempotent || idempotent(req) {
		return err
	}
	return &OutcomeUnknownError{Provider: c.provider, Method: req.Method, URL: redact(req.URL), Attempts: 1, Status: status, Err: err}
}

// attempt is what the trace of a request that is not idempotent saw of its latest attempt.
type attempt struct {
	started atomic.Bool // a connection was asked for (the transport supports traces)
	wrote   atomic.Bool // the request was written, wholly or in part
}

type attemptKey struct{}

// guard returns rreq with a trace in its context that tells checkOutcome whether the latest attempt
// wrote the request; an idempotent request is returned as it is.
func guard(rreq *retryablehttp.Request) *retryablehttp.Request {
	if idempotent(rreq.Request) {
		return rreq
	}
	a := &attempt{}
	ctx := httptrace.WithClientTrace(rreq.Context(), &httptrace.ClientTrace{
		GetConn: func(string) {
			a.started.Store(true)
			a.wrote.Store(false)
		},
		WroteRequest: func(httptrace.WroteRequestInfo) { a.wrote.Store(true) },
	})
	return rreq.WithContext(context.WithValue(ctx, attemptKey{}, a))
}

// mayHaveActed reports whether an attempt that the retry policy would retry may have been carried out by
// the API: ctx is the request's (see guard), resp and err the attempt's outcome.
func mayHaveActed(ctx context.Context, resp *http.Response, err error) bool {
	a, guarded := ctx.Value(attemptKey{}).(*attempt)
	if !guarded {
		return false // idempotent
	}
	if resp != nil {
		switch resp.StatusCode {
		case http.StatusTooManyRequests, http.StatusServiceUnavailable:
			return false
		}
		return resp.StatusCode >= 500
	}
	if err == nil || unreachable(netCause(err)) {
		return false
	}
	// A transport without traces tells nothing: assume the worst.
	return !a.started.Load() || a.wrote.Load()
}

// refuseUnknown returns the error that stops a retry of an attempt that may have been carried out (see
// mayHaveActed), or nil. Client.do completes it.
func refuseUnknown(ctx context.Context, resp *http.Response, err error) error {
	if !mayHaveActed(ctx, resp, err) {
		return nil
	}
	return &OutcomeUnknownError{Err: netCause(err)}
}

// outcomeUnknown returns the *OutcomeUnknownError of a request that stopped as st, or nil when its
// outcome is known: it is not guarded (idempotent), the retry policy refused it as unknown
// (checkRetry), or its context ended after it was written.
func (c *Client) outcomeUnknown(req *http.Request, st *stopped) error {
	a, guarded := req.Context().Value(attemptKey{}).(*attempt)
	if !guarded {
		return nil
	}
	var u *OutcomeUnknownError
	var perm *permanent
	ctxErr := req.Context().Err()
	switch {
	case errors.As(st.err, &perm) && errors.As(perm.err, &u):
	case ctxErr != nil && a.wrote.Load():
		u = &OutcomeUnknownError{Err: context.Cause(req.Context())}
	default:
		return nil
	}
	u.Provider, u.Method, u.URL, u.Attempts = c.provider, req.Method, redact(req.URL), st.attempts
	if st.resp != nil {
		body, _ := io.ReadAll(io.LimitReader(st.resp.Body, MaxErrorBody))
		u.Status = st.resp.StatusCode
		u.Err = &resource.ProviderError{Provider: c.provider, Method: req.Method, URL: u.URL,
			Status: st.resp.StatusCode, Message: c.message(st.resp, body)}
	}
	return u
}
