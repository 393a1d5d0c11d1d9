// Package transport is the HTTP client that every provider adapter sends its API requests through.
//
// An adapter builds one JSON (a JSON-over-HTTP API client) on one Client, with two hooks: Auth, which
// authenticates each request, and Error, which decodes the API's error responses. JSON.Call encodes the
// request, sends it, and decodes the response or the error; the adapter keeps only what is particular to
// its API.
//
// It is the one place in cdkx that builds a github.com/hashicorp/go-retryablehttp client, so the retry
// policy, the backoff, the connection pool, the logger and the "gave up" error are configured once:
//
//   - network errors, 429 and 5xx (except 501) are retried; every other status is returned to the caller
//     at once, so a 401, 404 or 422 costs exactly one request;
//   - but a request that is not idempotent (POST; PATCH unless marked with Idempotent) is not sent again
//     once it may have been received (see outcome.go): it fails with an *OutcomeUnknownError;
//   - waits grow exponentially from Retry.WaitMin to Retry.WaitMax with jitter, except that what the
//     response asks for is honoured, up to Retry.MaxRetryAfter: the adapter's Retry.After hook (Hetzner's
//     RateLimit-Reset), else a Retry-After header on a 429 or 503 (seconds or an HTTP date);
//   - an adapter may wrap every attempt's round tripper (Options.Wrap), e.g. to pace requests by a rate
//     limit before the API refuses them;
//   - a cancelled context stops at once, also in the middle of a wait;
//   - when the retries run out the error is a *RetryError naming the method, the URL, the number of
//     attempts and the provider's own error message;
//   - the default client keeps an idle connection for every request in flight (up to
//     DefaultMaxIdleConnsPerHost), so that a keep-alive API is not dialled again for each request;
//   - logs go to an optional *slog.Logger and never carry header values, URL credentials, query values or
//     any of Options.Secrets, and neither do the messages of JSON.Call's errors;
//   - redirects are followed only to the request's own scheme, host and port (at most MaxRedirects), with
//     the credential headers and URL user information removed; any other fails with a *RedirectError
//     naming Options.URLSetting and the target, and nothing is sent there;
//   - a response body longer than Options.MaxBody (DefaultMaxBody, 32 MiB) fails with a
//     *BodyTooLargeError; a call longer than Options.CallTimeout (5 min) or a body read longer than
//     Options.BodyTimeout (60 s) fails with a *TimeoutError, and a cancelled context ends either at once.
package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	cleanhttp "github.com/hashicorp/go-cleanhttp"
	retryablehttp "github.com/hashicorp/go-retryablehttp"

	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// Defaults of the retry policy, used for zero fields of Retry.
const (
	DefaultRetryMax      = 4
	DefaultWaitMin       = 200 * time.Millisecond
	DefaultWaitMax       = 5 * time.Second
	DefaultMaxRetryAfter = 30 * time.Second
	// DefaultResponseTimeout bounds the wait for response headers on one attempt of the default client.
	DefaultResponseTimeout = 60 * time.Second
	// DefaultMaxIdleConnsPerHost is how many idle keep-alive connections the default client keeps to its
	// API, as many as requests in flight up to this bound, so that each request can reuse one.
	DefaultMaxIdleConnsPerHost = 100
)

// MaxErrorText is how many bytes of an error body ErrorText keeps.
const MaxErrorText = 512

// CheckRetry decides whether a request is tried again. It is called after every attempt with either the
// response (err nil) or the error of http.Client.Do (resp nil). Return (true, nil) to retry, (false, nil)
// to hand the response to the caller as it is, or (false, err) to fail the request with err. The context
// is checked before CheckRetry runs: a cancelled request is never retried.
type CheckRetry func(ctx context.Context, resp *http.Response, err error) (bool, error)

// DefaultCheckRetry retries network errors (except those that cannot heal: a bad URL scheme, too many
// redirects, an untrusted certificate), 429 Too Many Requests, and 5xx except 501 Not Implemented. Every
// other response, including each 4xx, goes back to the caller.
func DefaultCheckRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	// retryablehttp's policy classifies network errors (it knows the unrecoverable ones); on a response
	// it retries 429 and 5xx, which is what cdkx wants. Its error value only explains a retry.
	retry, _ := retryablehttp.DefaultRetryPolicy(ctx, resp, err)
	if err != nil && !retry {
		return false, err
	}
	return retry, nil
}

// Retry is a retry policy. Zero fields take the defaults above.
type Retry struct {
	// Max is the number of retries after the first attempt: 0 means DefaultRetryMax, negative means none.
	Max int
	// WaitMin and WaitMax bound the exponential backoff between attempts (before jitter).
	WaitMin, WaitMax time.Duration
	// MaxRetryAfter caps how long a Retry-After header may make the client wait.
	MaxRetryAfter time.Duration
	// Check overrides DefaultCheckRetry, e.g. for an API whose 500s are permanent.
	Check CheckRetry
	// After, when set, says how long a retried response asks the client to wait before the next attempt
	// (e.g. from Hetzner's RateLimit-Reset header on a 429), capped at MaxRetryAfter; ok false falls back
	// to Retry-After and then to the backoff. now is the time of the decision.
	After func(resp *http.Response, now time.Time) (d time.Duration, ok bool)
}

// Options configures a Client.
type Options struct {
	// Provider is the adapter's name, e.g. "powerdns": it prefixes errors and log records.
	Provider string
	// Service is the API's name for people, e.g. "PowerDNS", and URLSetting the environment variable or
	// flag its URL comes from, e.g. "PDNS_API_URL". With both set, a request that no attempt got through
	// because the connection was refused or the host name is unknown fails with an *UnreachableError
	// that names the setting and what to check.
	Service, URLSetting string
	// HTTPClient sends each attempt; nil means a pooled client (go-cleanhttp) that keeps up to
	// DefaultMaxIdleConnsPerHost idle connections (net/http keeps 2, and go-cleanhttp GOMAXPROCS+1, so
	// that at 10 requests in flight most would open a new connection), and whose attempts give up when no
	// response header arrives within ResponseTimeout.
	HTTPClient *http.Client
	// Retry is the retry policy; its zero value is the defaults.
	Retry Retry
	// ErrorMessage extracts the provider's message from an error response whose body (at most
	// MaxErrorBody bytes) has been read already. Nil means ErrorText(body).
	ErrorMessage func(resp *http.Response, body []byte) string
	// Logger receives debug records of attempts and retries; nil logs nothing.
	Logger *slog.Logger
	// Secrets are strings (API keys, tokens, passwords) scrubbed from every log record, on top of the URL
	// credentials and query values that are always scrubbed, and from the messages of JSON.Call's errors.
	Secrets []string
	// Wrap, when set, wraps the round tripper of every attempt (the default client's or HTTPClient's), e.g.
	// to pace requests by the rate-limit headers of earlier responses. It sees each attempt, retries
	// included.
	Wrap func(http.RoundTripper) http.RoundTripper
	// Idempotent declares every request of the client safe to send again after it may have been received:
	// for an API built for retries (the state service: sequence numbers, completions that answer a repeat
	// as done). Without it a POST or PATCH is not resent once it may have been received (outcome.go).
	Idempotent bool
	// Limits bound each call: response body size, call, header and body-read deadlines (zero fields take
	// the defaults). LimitsFromEnv reads a user's overrides.
	Limits
	// CredentialHeaders are request headers that carry credentials, removed from every redirected
	// request on top of Authorization, Proxy-Authorization, Cookie, X-API-Key and X-Auth-Token.
	CredentialHeaders []string
}

// Client sends requests with retries. It is safe for concurrent use.
type Client struct {
	provider string
	service  string // Options.Service
	setting  string // Options.URLSetting
	rc       *retryablehttp.Client
	message  func(resp *http.Response, body []byte) string
	secrets  []string // Options.Secrets without empty strings
	// credentials are the headers removed from a redirected request.
	credentials []string
	maxBody     int64
	callTimeout time.Duration
	bodyTimeout time.Duration
	idempotent  bool // Options.Idempotent
}

// New returns a Client configured by opts.
func New(opts Options) *Client {
	r := opts.Retry
	if r.Max == 0 {
		r.Max = DefaultRetryMax
	} else if r.Max < 0 {
		r.Max = 0
	}
	if r.WaitMin <= 0 {
		r.WaitMin = DefaultWaitMin
	}
	if r.WaitMax <= 0 {
		r.WaitMax = DefaultWaitMax
	}
	if r.WaitMax < r.WaitMin {
		r.WaitMax = r.WaitMin
	}
	if r.MaxRetryAfter <= 0 {
		r.MaxRetryAfter = DefaultMaxRetryAfter
	}
	check := r.Check
	if check == nil {
		check = DefaultCheckRetry
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = cleanhttp.DefaultPooledClient()
		t := hc.Transport.(*http.Transport)
		t.MaxIdleConnsPerHost = DefaultMaxIdleConnsPerHost
		t.ResponseHeaderTimeout = opts.ResponseTimeout
		if t.ResponseHeaderTimeout <= 0 {
			t.ResponseHeaderTimeout = DefaultResponseTimeout
		}
	}
	c := &Client{provider: opts.Provider, service: opts.Service, setting: opts.URLSetting,
		credentials: append(append([]string(nil), credentialHeaders...), opts.CredentialHeaders...),
		maxBody:     opts.MaxBody, callTimeout: opts.CallTimeout, bodyTimeout: opts.BodyTimeout, idempotent: opts.Idempotent}
	if c.maxBody <= 0 {
		c.maxBody = DefaultMaxBody
	}
	if c.callTimeout <= 0 {
		c.callTimeout = DefaultCallTimeout
	}
	if c.bodyTimeout <= 0 {
		c.bodyTimeout = DefaultBodyTimeout
	}
	// A copy, so that the redirect policy holds for a caller's client too without changing it.
	own := *hc
	own.CheckRedirect = c.checkRedirect(hc.CheckRedirect)
	hc = &own
	if opts.Wrap != nil {
		rt := hc.Transport
		if rt == nil {
			rt = http.DefaultTransport
		}
		hc.Transport = opts.Wrap(rt)
	}
	c.rc = &retryablehttp.Client{
		HTTPClient:   hc,
		RetryWaitMin: r.WaitMin,
		RetryWaitMax: r.WaitMax,
		RetryMax:     r.Max,
		CheckRetry:   checkRetry(check),
		Backoff:      backoff(r.MaxRetryAfter, r.After),
		ErrorHandler: func(resp *http.Response, err error, attempts int) (*http.Response, error) {
			return nil, &stopped{resp: resp, err: err, attempts: attempts}
		},
	}
	var secrets []string
	for _, s := range opts.Secrets {
		if s != "" {
			secrets = append(secrets, s)
		}
	}
	if opts.Logger != nil {
		c.rc.Logger = &logger{l: opts.Logger, provider: opts.Provider, secrets: secrets}
	}
	c.message = opts.ErrorMessage
	if c.message == nil {
		c.message = func(_ *http.Response, body []byte) string { return ErrorText(body) }
	}
	c.secrets = secrets
	return c
}

// Do sends req (built with http.NewRequestWithContext; its body is buffered so that it can be resent)
// and returns the first response that is not retried, whatever its status: the caller decodes 4xx
// errors and must close the body. Reading the body fails with a *BodyTooLargeError past Options.MaxBody
// and with a *TimeoutError when a deadline passes.
//
// Redirects are followed only to the request's own scheme, host and port, at most MaxRedirects times,
// and without credentials (the credential headers and URL user information are removed); any other is
// a *RedirectError, and nothing is sent to its target.
//
// Errors: a *RetryError when the retries ran out (errors.As also finds the *resource.ProviderError of
// the last response, or the last network error); a *TimeoutError when Options.CallTimeout passed; an
// error wrapping the context's error when the context ended; a *BodyTooLargeError for a 2xx answer
// whose Content-Length is past the cap; otherwise an error naming the method and URL (a *RedirectError
// among them). No error holds URL credentials or query values.
func (c *Client) Do(req *http.Request) (*http.Response, error) {
	rreq, err := retryablehttp.FromRequest(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %s %s: %w", c.provider, req.Method, redact(req.URL), err)
	}
	return c.do(rreq)
}

// do is Do for a request that retryablehttp can resend already.
func (c *Client) do(rreq *retryablehttp.Request) (*http.Response, error) {
	if !c.idempotent {
		rreq = guard(rreq)
	}
	req := rreq.Request
	where := redact(req.URL)
	k := c.newCall(req, where)
	rreq.Request = req.WithContext(k.ctx)
	resp, err := c.rc.Do(rreq)
	if err == nil {
		if resp.StatusCode/100 == 2 && resp.ContentLength > c.maxBody {
			resp.Body.Close()
			k.end()
			return nil, c.lostAnswer(req, resp.StatusCode, &BodyTooLargeError{Provider: c.provider, Method: req.Method, URL: where, Limit: c.maxBody})
		}
		k.wrap(resp)
		return resp, nil
	}
	defer k.end()
	var st *stopped
	if !errors.As(err, &st) {
		// A context that ended during a wait, or a body that could not be rewound.
		if kerr := k.err(); kerr != nil {
			return nil, kerr
		}
		return nil, fmt.Errorf("%s: %s %s: %w", c.provider, req.Method, where, err)
	}
	if st.resp != nil {
		defer st.resp.Body.Close()
	}
	// A request that may have been received is not sent again (outcome.go); the call's context (its
	// deadline, the run's cancel) is rreq's, so a deadline after the request was written counts too.
	if u := c.outcomeUnknown(rreq.Request, st); u != nil {
		return nil, u
	}
	if kerr := k.err(); kerr != nil {
		return nil, kerr
	}
	var perm *permanent
	if errors.As(st.err, &perm) {
		return nil, fmt.Errorf("%s: %s %s: %w", c.provider, req.Method, where, netCause(perm.err))
	}
	re := &RetryError{Provider: c.provider, Method: req.Method, URL: where, Attempts: st.attempts}
	switch {
	case st.resp != nil:
		body, _ := io.ReadAll(io.LimitReader(st.resp.Body, MaxErrorBody))
		re.Status = st.resp.StatusCode
		re.Err = &resource.ProviderError{Provider: c.provider, Method: req.Method, URL: where,
			Status: st.resp.StatusCode, Message: c.message(st.resp, body)}
	case st.err != nil:
		re.Err = netCause(st.err)
		if c.service != "" && c.setting != "" && unreachable(re.Err) {
			re.Err = &UnreachableError{Service: c.service, URL: req.URL.Scheme + "://" + req.URL.Host, Setting: c.setting, Err: re.Err}
		}
	default:
		re.Err = errors.New("no response")
	}
	return nil, re
}

// RetryError is returned when a request still failed after its last retry. Status is the last HTTP
// status, 0 when no response came (connection refused, timeout). Err is the last cause: a
// *resource.ProviderError holding the provider's message when a response came, else the network error.
type RetryError struct {
	Provider string
	Method   string
	URL      string // without credentials or query values
	Attempts int
	Status   int
	Err      error
}

// Error renders e.g. `powerdns: GET http://127.0.0.1:8081/api/v1/servers/localhost/zones/x.: giving up
// after 5 attempts: 503: backend unavailable`. When the cause is an *UnreachableError, what to check comes
// first: `PowerDNS at http://127.0.0.1:8081 (PDNS_API_URL) refused the connection: is it running, and is
// PDNS_API_URL right? (GET /api/v1/servers/localhost/zones/x., 5 attempts)`.
func (e *RetryError) Error() string {
	cause := "no response"
	var pe *resource.ProviderError
	var ue *UnreachableError
	switch {
	case errors.As(e.Err, &ue):
		return fmt.Sprintf("%s (%s %s, %d attempts)", ue.Error(), e.Method, strings.TrimPrefix(e.URL, ue.URL), e.Attempts)
	case errors.As(e.Err, &pe):
		cause = fmt.Sprintf("%d: %s", pe.Status, pe.Message)
	case e.Err != nil:
		cause = e.Err.Error()
	}
	return fmt.Sprintf("%s: %s %s: giving up after %d attempts: %s", e.Provider, e.Method, e.URL, e.Attempts, cause)
}

// Unwrap returns the last cause, so that errors.As finds the *resource.ProviderError or the net error.
func (e *RetryError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, resource.ErrUnreachable) true when no attempt got a response (Status 0 and the
// cause is not a decoded provider error): the provider is down or unreachable, not refusing the request.
func (e *RetryError) Is(target error) bool {
	if target != resource.ErrUnreachable || e.Status != 0 {
		return false
	}
	var pe *resource.ProviderError
	return !errors.As(e.Err, &pe) && !errors.Is(e.Err, context.Canceled) && !errors.Is(e.Err, context.DeadlineExceeded)
}

// UnreachableError is the cause of a *RetryError when no attempt reached the API because the connection
// was refused or the host name is unknown: the URL is probably wrong, or the server is not running. It
// names the setting the URL comes from (Options.URLSetting).
type UnreachableError struct {
	Service string // e.g. "PowerDNS"
	URL     string // scheme://host[:port] that was dialled
	Setting string // e.g. "PDNS_API_URL"
	Err     error  // the network error
}

// Error renders e.g. `PowerDNS at http://127.0.0.1:8081 (PDNS_API_URL) refused the connection: is it
// running, and is PDNS_API_URL right?`.
func (e *UnreachableError) Error() string {
	var dns *net.DNSError
	if errors.As(e.Err, &dns) {
		return fmt.Sprintf("%s at %s (%s): no such host %q: is %s right?", e.Service, e.URL, e.Setting, dns.Name, e.Setting)
	}
	return fmt.Sprintf("%s at %s (%s) refused the connection: is it running, and is %s right?", e.Service, e.URL, e.Setting, e.Setting)
}

// Unwrap returns the network error, so that errors.Is(err, syscall.ECONNREFUSED) holds.
func (e *UnreachableError) Unwrap() error { return e.Err }

// unreachable reports whether err, a network error of an attempt, says that the URL leads nowhere: the
// connection was refused, or the host name does not resolve.
func unreachable(err error) bool {
	var dns *net.DNSError
	return errors.Is(err, syscall.ECONNREFUSED) || (errors.As(err, &dns) && dns.IsNotFound)
}

// ErrorText renders an error body as one line of at most MaxErrorText bytes: whitespace runs become one
// space, and a cut is marked with "…".
func ErrorText(body []byte) string {
	s := strings.Join(strings.Fields(string(body)), " ")
	if len(s) <= MaxErrorText {
		return s
	}
	cut := MaxErrorText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// stopped carries what retryablehttp's ErrorHandler saw to Client.Do, which knows the request.
type stopped struct {
	resp     *http.Response
	err      error
	attempts int
}

func (s *stopped) Error() string { return fmt.Sprintf("stopped after %d attempts", s.attempts) }

// permanent marks an error that CheckRetry decided not to retry.
type permanent struct{ err error }

func (p *permanent) Error() string { return p.err.Error() }

func checkRetry(check CheckRetry) retryablehttp.CheckRetry {
	return func(ctx context.Context, resp *http.Response, err error) (bool, error) {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		if errors.As(err, new(*RedirectError)) {
			// A refused redirect does not heal, whatever the adapter's policy.
			return false, &permanent{err: err}
		}
		retry, cerr := check(ctx, resp, err)
		if retry {
			if u := refuseUnknown(ctx, resp, err); u != nil {
				return false, &permanent{err: u}
			}
		}
		switch {
		case retry:
			return true, nil
		case cerr != nil:
			return false, &permanent{err: cerr}
		case err != nil:
			return false, &permanent{err: err}
		}
		return false, nil
	}
}

// backoff is exponential with "equal jitter": attempt n waits a random time in [d/2, d] where
// d = min(waitMin·2ⁿ, waitMax), never less than waitMin. What the response asks for wins, capped at
// maxRetryAfter: after's answer, else a Retry-After header on a 429 or 503.
func backoff(maxRetryAfter time.Duration, after func(*http.Response, time.Time) (time.Duration, bool)) retryablehttp.Backoff {
	return func(waitMin, waitMax time.Duration, attempt int, resp *http.Response) time.Duration {
		if resp != nil && after != nil {
			if d, ok := after(resp, time.Now()); ok {
				return min(d, maxRetryAfter)
			}
		}
		if resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
			if d, ok := RetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
				return min(d, maxRetryAfter)
			}
		}
		d := waitMax
		if attempt < 32 {
			d = min(waitMin<<attempt, waitMax)
		}
		d = d/2 + rand.N(d/2+1)
		return max(d, waitMin)
	}
}

// RetryAfter parses a Retry-After header value, either delay-seconds ("120") or an HTTP date, relative to
// now. A date in the past gives 0. ok is false for an empty or malformed value.
func RetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		if secs > int64(24*time.Hour/time.Second) {
			secs = int64(24 * time.Hour / time.Second)
		}
		return time.Duration(secs) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}

// netCause drops the *url.Error wrapper (which repeats method and URL) from a network error.
func netCause(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// redact returns u without user credentials and with every query value replaced by "REDACTED".
func redact(u *url.URL) string {
	if u == nil {
		return ""
	}
	r := *u
	r.User = nil
	if r.RawQuery != "" {
		q := r.Query()
		for k, vs := range q {
			for i := range vs {
				vs[i] = "REDACTED"
			}
			q[k] = vs
		}
		r.RawQuery = q.Encode()
	}
	return r.String()
}
