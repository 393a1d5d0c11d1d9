package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// Defaults of the transport's limits, used for zero fields of Options.
const (
	// DefaultMaxBody caps a response body: a longer one fails the call with a *BodyTooLargeError.
	DefaultMaxBody = 32 << 20
	// DefaultCallTimeout bounds one call as a whole: every attempt, the waits between them and the
	// reading of the response body.
	DefaultCallTimeout = 5 * time.Minute
	// DefaultBodyTimeout bounds the reading of a response body, from the arrival of its headers.
	DefaultBodyTimeout = 60 * time.Second
	// StallAfterInterrupt is how long a call of an interrupted run may go without receiving a byte of its
	// answer before it is ended (resource.WithInterrupt): calls in flight at Ctrl-C or an abort may finish
	// while their answer arrives, but a stuck one does not hold the run.
	StallAfterInterrupt = time.Second
	// MaxRedirects is how many same-origin redirects one call follows before it fails.
	MaxRedirects = 5
)

// Limits are the bounds of one provider's calls that a user may change. Zero fields take the defaults.
type Limits struct {
	// MaxBody caps a response body in bytes (0: DefaultMaxBody, 32 MiB): a 2xx answer that announces
	// or sends more fails the call with a *BodyTooLargeError, and nothing of it is decoded.
	MaxBody int64
	// CallTimeout bounds one call as a whole, every attempt and wait and the body read included (0:
	// DefaultCallTimeout, 5 min); it fails with a *TimeoutError. The caller's context still ends the call
	// at once.
	CallTimeout time.Duration
	// ResponseTimeout bounds the wait for a response's headers on each attempt of the default client
	// (0: DefaultResponseTimeout, 60 s). A server that accepts the connection and never answers is then
	// retried like a network error (a GET, PUT or DELETE) or fails as an unknown outcome (a POST or PATCH
	// that may have been received) instead of hanging the deploy.
	ResponseTimeout time.Duration
	// BodyTimeout bounds the reading of a response body from the arrival of its headers (0:
	// DefaultBodyTimeout, 60 s), so that an answer that drips forever fails with a *TimeoutError.
	BodyTimeout time.Duration
}

// Prefixes of the environment variables LimitsFromEnv reads, each followed by the provider's name in upper
// case, e.g. CDKX_MAX_BODY_POWERDNS=64MiB or CDKX_CALL_TIMEOUT_HETZNER=10m.
const (
	EnvMaxBody         = "CDKX_MAX_BODY_"         // bytes: 1048576, or with a unit: 512KiB, 64MiB, 1GiB
	EnvCallTimeout     = "CDKX_CALL_TIMEOUT_"     // a Go duration: 30s, 10m
	EnvResponseTimeout = "CDKX_RESPONSE_TIMEOUT_" // a Go duration
	EnvBodyTimeout     = "CDKX_BODY_TIMEOUT_"     // a Go duration
)

// LimitsFromEnv reads a provider's limits from CDKX_MAX_BODY_<NAME>, CDKX_CALL_TIMEOUT_<NAME>,
// CDKX_RESPONSE_TIMEOUT_<NAME> and CDKX_BODY_TIMEOUT_<NAME> through getenv, where NAME is provider in
// upper case ("powerdns" → POWERDNS). Unset variables leave their field zero (the default). A value that
// is not a positive size or duration is an error naming the variable and the form it takes.
func LimitsFromEnv(getenv func(string) string, provider string) (Limits, error) {
	var l Limits
	name := strings.ToUpper(provider)
	if v := getenv(EnvMaxBody + name); v != "" {
		n, ok := parseSize(v)
		if !ok {
			return Limits{}, fmt.Errorf("%s%s=%q is not a positive size like 1048576, 512KiB or 64MiB", EnvMaxBody, name, v)
		}
		l.MaxBody = n
	}
	for _, d := range []struct {
		prefix string
		to     *time.Duration
	}{{EnvCallTimeout, &l.CallTimeout}, {EnvResponseTimeout, &l.ResponseTimeout}, {EnvBodyTimeout, &l.BodyTimeout}} {
		v := getenv(d.prefix + name)
		if v == "" {
			continue
		}
		dur, err := time.ParseDuration(v)
		if err != nil || dur <= 0 {
			return Limits{}, fmt.Errorf("%s%s=%q is not a positive duration like 30s or 10m", d.prefix, name, v)
		}
		*d.to = dur
	}
	return l, nil
}

// parseSize reads a positive byte count: digits, optionally followed by KiB, MiB or GiB (powers of 1024).
func parseSize(s string) (int64, bool) {
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}} {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = rest, u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64/mult {
		return 0, false
	}
	return n * mult, true
}

// credentialHeaders are removed from every redirected request, on top of Options.CredentialHeaders.
var credentialHeaders = []string{"Authorization", "Proxy-Authorization", "Cookie", "X-API-Key", "X-Auth-Token"}

// RedirectError fails a call whose response redirected it where the transport does not follow: to another
// scheme, host or port than the request's (the URL setting's origin), or around a loop. Nothing was sent to
// Target.
type RedirectError struct {
	Setting string // e.g. "PDNS_API_URL"; may be empty
	From    string // the URL that answered the redirect, without credentials or query values
	Target  string // where it pointed, without credentials or query values
	Reason  string // "another origin", "loop" or "too many"
}

// Error renders e.g. `redirected to http://127.0.0.1:9/x, another scheme, host or port than
// PDNS_API_URL: not followed, so that credentials and request bodies go nowhere else; check
// PDNS_API_URL`.
func (e *RedirectError) Error() string {
	setting := e.Setting
	if setting == "" {
		setting = "the configured URL"
	}
	switch e.Reason {
	case "loop":
		return fmt.Sprintf("redirect loop: %s redirected back to %s; check %s and the server's configuration", e.From, e.Target, setting)
	case "too many":
		return fmt.Sprintf("stopped after %d redirects (the last to %s); check %s", MaxRedirects, e.Target, setting)
	}
	return fmt.Sprintf("redirected to %s, another scheme, host or port than %s: not followed, so that credentials and request bodies go nowhere else; check %s",
		e.Target, setting, setting)
}

// BodyTooLargeError fails a call whose response body is longer than the cap (Options.MaxBody). Nothing of
// the body is decoded.
type BodyTooLargeError struct {
	Provider, Method, URL string
	Limit                 int64 // bytes
}

// Error renders e.g. `powerdns: GET http://…/zones: the answer is larger than the 32 MiB cap on response
// bodies: refused`.
func (e *BodyTooLargeError) Error() string {
	return fmt.Sprintf("%s: %s %s: the answer is larger than the %s cap on response bodies: refused; is this the right server?",
		e.Provider, e.Method, e.URL, bytesText(e.Limit))
}

// TimeoutError fails a call that did not end within its deadline: the call's (Options.CallTimeout) or the
// body read's (Options.BodyTimeout). errors.Is(err, context.DeadlineExceeded) holds.
type TimeoutError struct {
	Provider, Method, URL string
	What                  string // "call", "body read", or "interrupt" (StallAfterInterrupt)
	Limit                 time.Duration
}

// Error renders e.g. `powerdns: GET http://…: no complete answer within the 1m0s body read deadline`.
func (e *TimeoutError) Error() string {
	if e.What == whatInterrupt {
		return fmt.Sprintf("%s: %s %s: the run was interrupted and no byte of the answer came for %s: the call was ended",
			e.Provider, e.Method, e.URL, e.Limit)
	}
	return fmt.Sprintf("%s: %s %s: no complete answer within the %s %s deadline; the server is stuck or too slow",
		e.Provider, e.Method, e.URL, e.Limit, e.What)
}

// whatInterrupt is TimeoutError.What of a call ended by StallAfterInterrupt.
const whatInterrupt = "interrupt"

// Is makes errors.Is(err, resource.ErrInterrupted) true for a call ended by StallAfterInterrupt.
func (e *TimeoutError) Is(target error) bool {
	return target == resource.ErrInterrupted && e.What == whatInterrupt
}

// Unwrap returns context.DeadlineExceeded.
func (e *TimeoutError) Unwrap() error { return context.DeadlineExceeded }

func bytesText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d-byte", n)
}

// origin is scheme://host:port of u, lower case, with the scheme's default port made explicit.
func origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

// checkRedirect follows a redirect only to the origin of the first request, and strips every credential
// from the redirected request: the credential headers, and user information in its URL.
func (c *Client) checkRedirect(next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		first, last := via[0], via[len(via)-1]
		e := &RedirectError{Setting: c.setting, From: redact(last.URL), Target: redact(req.URL)}
		switch {
		case origin(req.URL) != origin(first.URL):
			e.Reason = "another origin"
			return e
		case len(via) > MaxRedirects:
			e.Reason = "too many"
			return e
		}
		for _, v := range via {
			if v.URL.String() == req.URL.String() {
				e.Reason = "loop"
				return e
			}
		}
		req.URL.User = nil
		for _, h := range c.credentials {
			req.Header.Del(h)
		}
		if next != nil {
			return next(req, via)
		}
		return nil
	}
}

// call holds the deadlines of one call: its context ends when the call's deadline passes, when the body
// read's deadline passes, when the caller's context ends, or when the body is closed.
type call struct {
	c              *Client
	method, url    string // url without credentials or query values
	parent         context.Context
	ctx            context.Context
	cancel         context.CancelCauseFunc
	callT, bodyT   *time.Timer
	once           sync.Once
	errCall, errBT *TimeoutError
	// progress is when the call last received something (its start, the headers, body bytes), in Unix
	// nanoseconds: after an interrupt, StallAfterInterrupt counts from it.
	progress atomic.Int64
}

func (c *Client) newCall(req *http.Request, where string) *call {
	ctx, cancel := context.WithCancelCause(req.Context())
	k := &call{c: c, method: req.Method, url: where, parent: req.Context(), ctx: ctx, cancel: cancel,
		errCall: &TimeoutError{Provider: c.provider, Method: req.Method, URL: where, What: "call", Limit: c.callTimeout},
		errBT:   &TimeoutError{Provider: c.provider, Method: req.Method, URL: where, What: "body read", Limit: c.bodyTimeout}}
	k.callT = time.AfterFunc(c.callTimeout, func() { cancel(k.errCall) })
	k.touch()
	if interrupted := resource.Interrupted(req.Context()); interrupted != nil {
		go k.watch(interrupted, &TimeoutError{Provider: c.provider, Method: req.Method, URL: where, What: whatInterrupt, Limit: StallAfterInterrupt})
	}
	return k
}

// touch notes that the call received something.
func (k *call) touch() { k.progress.Store(time.Now().UnixNano()) }

// watch ends the call with stalled once interrupted is closed and the call has then received nothing for
// StallAfterInterrupt. It returns when the call ends.
func (k *call) watch(interrupted <-chan struct{}, stalled *TimeoutError) {
	select {
	case <-interrupted:
	case <-k.ctx.Done():
		return
	}
	t := time.NewTimer(StallAfterInterrupt)
	defer t.Stop()
	for {
		select {
		case <-k.ctx.Done():
			return
		case <-t.C:
			idle := time.Since(time.Unix(0, k.progress.Load()))
			if idle >= StallAfterInterrupt {
				k.cancel(stalled)
				return
			}
			t.Reset(StallAfterInterrupt - idle)
		}
	}
}

// err turns the error of an attempt or a read into the deadline's error when one passed, or into one
// wrapping the caller context's error when that ended; otherwise it returns nil.
func (k *call) err() error {
	if k.parent.Err() != nil {
		return fmt.Errorf("%s: %s %s: %w", k.c.provider, k.method, k.url, context.Cause(k.parent))
	}
	var te *TimeoutError
	if errors.As(context.Cause(k.ctx), &te) {
		return te
	}
	return nil
}

// end releases the call's timers and context.
func (k *call) end() {
	k.once.Do(func() {
		k.callT.Stop()
		if k.bodyT != nil {
			k.bodyT.Stop()
		}
		k.cancel(nil)
	})
}

// body wraps a response body: it starts the body read's deadline, fails a read past the cap, turns a
// read cut by a deadline or by the caller's context into a clear error, and ends the call when closed.
type body struct {
	k    *call
	rc   io.ReadCloser
	max  int64
	read int64
}

func (k *call) wrap(resp *http.Response) {
	k.touch()
	k.bodyT = time.AfterFunc(k.c.bodyTimeout, func() { k.cancel(k.errBT) })
	resp.Body = &body{k: k, rc: resp.Body, max: k.c.maxBody}
}

func (b *body) Read(p []byte) (int, error) {
	if b.read > b.max {
		return 0, b.tooLarge()
	}
	if rest := b.max - b.read + 1; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := b.rc.Read(p)
	if n > 0 {
		b.k.touch()
	}
	b.read += int64(n)
	if b.read > b.max {
		return n, b.tooLarge()
	}
	if err != nil && err != io.EOF {
		if kerr := b.k.err(); kerr != nil {
			return n, kerr
		}
	}
	return n, err
}

func (b *body) tooLarge() error {
	return &BodyTooLargeError{Provider: b.k.c.provider, Method: b.k.method, URL: b.k.url, Limit: b.max}
}

func (b *body) Close() error {
	err := b.rc.Close()
	b.k.end()
	return err
}

// RedactURL returns raw without user credentials and with every query value replaced by "REDACTED"; a
// URL that does not parse is returned as it is when it holds no "@" or "?", else as "REDACTED-URL".
// Adapters use it for every configured URL they put into an error.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return unparsed(raw)
	}
	return redact(u)
}

func unparsed(raw string) string {
	if strings.ContainsAny(raw, "@?") {
		return "REDACTED-URL"
	}
	return raw
}

// withoutUser returns raw without user credentials; a URL that does not parse is treated as RedactURL does.
func withoutUser(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return unparsed(raw)
	}
	u.User = nil
	return u.String()
}
