package hcloud

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/cdkx-dev/cdkx/adapters/transport"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// client sends requests to the Hetzner Cloud API under base (e.g. https://api.hetzner.cloud/v1) and
// waits for the actions they start.
type client struct {
	base string
	api  *transport.JSON
	poll PollOptions
	now  func() time.Time
}

// call sends one request to base+path (path starts with "/"; query values already escaped) and decodes
// a 2xx response into out (unless nil). Errors are *apiError (an answer of the API), *transport.RetryError
// (retries ran out) or the context's.
func (c *client) call(ctx context.Context, method, path string, in, out any, secrets ...string) error {
	_, err := c.api.Call(ctx, method, c.base+path, in, out, secrets...)
	return err
}

// apiError is an error answered by the API: the decoded envelope {"error":{"code","message","details"}}
// (https://docs.hetzner.cloud/#errors). It wraps a *resource.ProviderError whose Message is
// "code: message" plus the invalid fields, and whose Kind is resource.ErrNotFound for not_found and
// resource.ErrAlreadyExists for uniqueness_error.
type apiError struct {
	*resource.ProviderError
	// Code is Hetzner's error code, e.g. "uniqueness_error", "locked", "server_not_stopped".
	Code string
}

// Unwrap returns the *resource.ProviderError, so that errors.Is(err, resource.ErrNotFound) works.
func (e *apiError) Unwrap() error { return e.ProviderError }

// errorCode is the Hetzner error code of err ("" when err is not an answer of the API).
func errorCode(err error) string {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.Code
	}
	return ""
}

// envelope is Hetzner's error body.
type envelope struct {
	Error struct {
		Code    string          `json:"code"`
		Message string          `json:"message"`
		Details json.RawMessage `json:"details"`
	} `json:"error"`
}

// decodeEnvelope returns the code and a one-line message of an error body: "code: message", with the
// fields of an invalid_input ("name: is too long; ip_range: …"). ok is false when body is not the
// envelope (a proxy's page, say).
func decodeEnvelope(body []byte) (code, msg string, ok bool) {
	var e envelope
	if json.Unmarshal(body, &e) != nil || e.Error.Code == "" {
		return "", "", false
	}
	msg = e.Error.Code + ": " + e.Error.Message
	var d struct {
		Fields []struct {
			Name     string   `json:"name"`
			Messages []string `json:"messages"`
		} `json:"fields"`
	}
	if len(e.Error.Details) > 0 && json.Unmarshal(e.Error.Details, &d) == nil && len(d.Fields) > 0 {
		var parts []string
		for _, f := range d.Fields {
			parts = append(parts, f.Name+": "+strings.Join(f.Messages, ", "))
		}
		msg += " (" + strings.Join(parts, "; ") + ")"
	}
	return e.Error.Code, msg, true
}

// errorMessage is transport's Options.ErrorMessage: the envelope's "code: message", or the body as text.
// A 401 says which variable holds the token.
func errorMessage(resp *http.Response, body []byte) string {
	_, msg, ok := decodeEnvelope(body)
	if !ok {
		msg = transport.ErrorText(body)
		if msg == "" || strings.HasPrefix(msg, "<") {
			msg = http.StatusText(resp.StatusCode)
		}
		if resp.StatusCode == http.StatusNotFound {
			msg += " (not an answer of the Hetzner Cloud API: check that " + EnvEndpoint + " is its base URL, e.g. " + DefaultEndpoint + ")"
		}
	}
	if resp.StatusCode == http.StatusUnauthorized {
		msg += ": check " + EnvToken + " (an API token of the project, with read & write permission)"
	}
	return msg
}

// providerError is transport's JSON.Error hook: an *apiError for every status that is not 2xx.
func providerError(method, u string, resp *http.Response, body []byte) error {
	code, _, _ := decodeEnvelope(body)
	pe := &resource.ProviderError{Provider: Name, Method: method, URL: u, Status: resp.StatusCode,
		Message: errorMessage(resp, body)}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		pe.Kind = resource.ErrNotFound
	case code == "uniqueness_error":
		pe.Kind = resource.ErrAlreadyExists
	}
	return &apiError{ProviderError: pe, Code: code}
}

// CheckRetry is the adapter's retry policy (https://docs.hetzner.cloud/#errors): network errors, 429
// rate_limit_exceeded, 5xx but 501, 423 locked (an action is running on the object), 409 conflict (the
// object changed during the request) and 503/403 maintenance are retried; every other status, including
// 409 uniqueness_error and 422, is answered at once. It reads the body of a 409 or 403 to tell the codes
// apart and puts it back for the caller.
func CheckRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if err != nil || resp == nil {
		return transport.DefaultCheckRetry(ctx, resp, err)
	}
	switch resp.StatusCode {
	case http.StatusLocked:
		return true, nil
	case http.StatusConflict, http.StatusForbidden:
		body, _ := io.ReadAll(io.LimitReader(resp.Body, transport.MaxErrorBody))
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		code, _, _ := decodeEnvelope(body)
		return code == "conflict" || code == "maintenance", nil
	}
	return transport.DefaultCheckRetry(ctx, resp, err)
}

// retryAfter is transport's Retry.After: on a 429, the wait for one request's worth of the bucket,
// from the RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset (Unix seconds at which the bucket is
// full again) headers. Hetzner refills 1 request per second; the headers give the rate of the moment.
func retryAfter(resp *http.Response, now time.Time) (time.Duration, bool) {
	if resp.StatusCode != http.StatusTooManyRequests {
		return 0, false
	}
	rl, ok := parseRateLimit(resp.Header, now)
	if !ok {
		return 0, false
	}
	if rl.remaining >= 1 {
		return 0, true
	}
	return time.Duration(float64(time.Second) * (1 - rl.remaining) / rl.rate), true
}

// rateLimit is what one response says of the project's request budget.
type rateLimit struct {
	limit, remaining float64
	rate             float64 // requests per second refilled
}

// parseRateLimit reads the RateLimit-* headers (https://docs.hetzner.cloud/#rate-limiting). The refill
// rate is (limit − remaining) ÷ (seconds until reset + 1) when the bucket is not full, else 1 per second:
// the reset is a whole second, so the extra second keeps the estimate of the rate from running ahead of
// the bucket (a 16 % overestimate near a nearly full bucket let requests through to a 429).
func parseRateLimit(h http.Header, now time.Time) (rateLimit, bool) {
	limit, err1 := strconv.ParseFloat(h.Get("RateLimit-Limit"), 64)
	remaining, err2 := strconv.ParseFloat(h.Get("RateLimit-Remaining"), 64)
	if err1 != nil || err2 != nil || limit <= 0 {
		return rateLimit{}, false
	}
	rl := rateLimit{limit: limit, remaining: max(remaining, 0), rate: 1}
	if reset, err := strconv.ParseInt(h.Get("RateLimit-Reset"), 10, 64); err == nil {
		secs := time.Unix(reset, 0).Sub(now).Seconds() + 1
		if missing := limit - rl.remaining; missing > 0 && secs >= 1 {
			rl.rate = max(missing/secs, 0.001)
		}
	}
	return rl, true
}

// idPath is path with id appended as a segment, e.g. idPath("/networks", 5) = "/networks/5".
func idPath(collection string, id int64) string {
	return collection + "/" + strconv.FormatInt(id, 10)
}

// query renders a query string "?name=…" of key/value pairs, escaped.
func query(kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	return "?" + v.Encode()
}

// findByName returns the ID of the object of collection (e.g. "networks") named name, through
// GET /{collection}?name=… (exact match, names are unique per project), or an error wrapping
// resource.ErrNotFound.
func (c *client) findByName(ctx context.Context, collection, name string) (int64, error) {
	var page map[string]json.RawMessage
	if err := c.call(ctx, http.MethodGet, "/"+collection+query("name", name), nil, &page); err != nil {
		return 0, err
	}
	var objs []struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}
	if err := json.Unmarshal(page[collection], &objs); err != nil {
		return 0, fmt.Errorf("%s: GET /%s?name=%s: decode: %w", Name, collection, name, err)
	}
	for _, o := range objs {
		if o.Name == name {
			return o.ID, nil
		}
	}
	return 0, fmt.Errorf("%s: no %s named %q: %w", Name, collection, name, resource.ErrNotFound)
}

// existsError turns a create's 409 uniqueness_error into the advice cdkx gives: the object exists at
// Hetzner but not in cdkx state, so import it or rename it. cdkx never adopts it silently.
func existsError(err error, what, name string) error {
	if !errors.Is(err, resource.ErrAlreadyExists) {
		return err
	}
	return fmt.Errorf("%s %q already exists in the Hetzner project but not in cdkx state: import it (cdkx import) or choose another name: %w",
		what, name, err)
}

// unfinished is the answer of a create whose object (ID id, read at path) was made but could not be
// finished, e.g. a server whose start failed: the error, with the object's physical ID so that state
// keeps the object to delete — unless GET path says Hetzner removed it already (a failed create action
// may take its object with it).
func (p *Provider) unfinished(ctx context.Context, path string, id int64, err error) (resource.CreateResult, error) {
	var out map[string]json.RawMessage
	if gerr := p.c.call(ctx, http.MethodGet, path, nil, &out); errors.Is(gerr, resource.ErrNotFound) {
		return resource.CreateResult{}, err
	}
	return resource.CreateResult{PhysicalID: strconv.FormatInt(id, 10)}, err
}
