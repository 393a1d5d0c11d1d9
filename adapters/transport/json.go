package transport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	retryablehttp "github.com/hashicorp/go-retryablehttp"

	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// MaxErrorBody is how many bytes of an error response's body are read to find the provider's message;
// the rest is discarded unread.
const MaxErrorBody = 64 << 10

// maxDrain is how much of a response body Call reads past what it decodes, so that the connection can
// carry the next request; a longer rest is not read, and the connection is closed instead.
const maxDrain = 64 << 10

// JSON is a client of one JSON-over-HTTP API. It encodes a request body as JSON, authenticates the
// request, sends it through a Client (with its retries, logging and "gave up" errors), decodes a 2xx
// response as JSON, and turns any other status into an error with the API's own decoder. Every
// adapter talks to its API through one JSON, configured with its two hooks: Auth and Error.
//
// A JSON is safe for concurrent use; its fields must not change once it is in use.
type JSON struct {
	// Client sends the requests; required.
	Client *Client
	// Auth authenticates a request before it is sent, e.g. with req.SetBasicAuth or an API key header;
	// nil sends no credentials. It runs once per Call: retries resend the same headers.
	Auth func(req *http.Request)
	// Error turns a response whose status is not 2xx (and that the Client did not retry, or retried for
	// the last time) into Call's error. method and url are Call's; body holds the first MaxErrorBody
	// bytes of the response body. It should return a *resource.ProviderError, whose Kind callers match
	// with errors.Is and whose Message Call scrubs of secrets. Nil means a *resource.ProviderError with
	// the Client's Options.ErrorMessage and Kind resource.ErrNotFound for a 404.
	Error func(method, url string, resp *http.Response, body []byte) error
}

// Call sends one request to url and returns the response's headers.
//
// in, unless nil, is the request body, encoded with encoding/json and sent as application/json; every
// request accepts application/json. A 2xx response's body is decoded into out unless out is nil, with
// numbers as json.Number (Decoder.UseNumber), so that integers keep every digit; an empty body is then
// an error. The body past the first JSON value (all of it when out is nil) is read and discarded, up to
// 64 KiB.
//
// secrets are strings of this one request, such as a password in its body, that must not appear in an
// error: each is replaced by "REDACTED" in the Message of the *resource.ProviderError that err holds, as
// are Options.Secrets of the Client.
//
// Errors (each names the provider, method and url): for a status other than 2xx, Error's error; when
// the Client's retries ran out, a *RetryError (see Client.Do); when ctx ended, one wrapping ctx.Err();
// and when in cannot be encoded or the body cannot be decoded into out, one saying so.
func (c *JSON) Call(ctx context.Context, method, url string, in, out any, secrets ...string) (http.Header, error) {
	h, err := c.call(ctx, method, url, in, out)
	if err != nil {
		return nil, c.Client.scrub(err, secrets)
	}
	return h, nil
}

func (c *JSON) call(ctx context.Context, method, rawURL string, in, out any) (http.Header, error) {
	provider := c.Client.provider
	// url is what errors show: without credentials.
	url := withoutUser(rawURL)
	// body is what retryablehttp resends on every attempt: a []byte, or nil for no body at all (a nil
	// []byte would be an empty body of unknown length, which net/http probes before each request).
	var body any
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("%s: encode %s %s request: %w", provider, method, url, err)
		}
		body = b
	}
	req, err := retryablehttp.NewRequestWithContext(ctx, method, rawURL, body)
	if err != nil {
		// netCause: a *url.Error of a URL that does not parse would quote it, credentials and all.
		return nil, fmt.Errorf("%s: %s %s: %w", provider, method, url, netCause(err))
	}
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Auth != nil {
		c.Auth(req.Request)
	}
	resp, err := c.Client.do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, MaxErrorBody))
		return nil, c.statusError(method, url, resp, b)
	}
	if out != nil {
		dec := json.NewDecoder(resp.Body)
		dec.UseNumber()
		if err := dec.Decode(out); err != nil {
			return nil, c.Client.lostAnswer(req.Request, resp.StatusCode, c.readError(ctx, method, url, resp.StatusCode, err))
		}
	}
	if _, err := io.CopyN(io.Discard, resp.Body, maxDrain); err != nil && err != io.EOF {
		// The rest of the body is past the cap or its deadline: the call did not complete.
		var b *BodyTooLargeError
		var t *TimeoutError
		if errors.As(err, &b) || errors.As(err, &t) {
			return nil, c.Client.lostAnswer(req.Request, resp.StatusCode, c.readError(ctx, method, url, resp.StatusCode, err))
		}
	}
	return resp.Header, nil
}

// readError is the error of a 2xx answer whose body could not be read or decoded: the cap's or a deadline's
// own error, the context's, or one saying the body is empty or not the JSON expected.
func (c *JSON) readError(ctx context.Context, method, url string, status int, err error) error {
	provider := c.Client.provider
	if errors.Is(err, io.EOF) {
		err = errors.New("empty body")
	}
	if b := (*BodyTooLargeError)(nil); errors.As(err, &b) {
		return b
	}
	if t := (*TimeoutError)(nil); errors.As(err, &t) {
		return t
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %s %s: read the answer: %w", provider, method, url, context.Cause(ctx))
	}
	return fmt.Errorf("%s: %s %s: decode %d response: %w", provider, method, url, status, err)
}

// statusError is the error of a response that is not 2xx: the Error hook's, or the default.
func (c *JSON) statusError(method, url string, resp *http.Response, body []byte) error {
	if c.Error != nil {
		if err := c.Error(method, url, resp, body); err != nil {
			return err
		}
	}
	e := &resource.ProviderError{Provider: c.Client.provider, Method: method, URL: url, Status: resp.StatusCode,
		Message: c.Client.message(resp, body)}
	if resp.StatusCode == http.StatusNotFound {
		e.Kind = resource.ErrNotFound
	}
	return e
}

// scrub replaces the Client's secrets and secrets with "REDACTED" in the Message of the
// *resource.ProviderError in err's chain, if any, and returns err. Providers quote request values in
// some error messages; this keeps passwords and keys out of them.
func (c *Client) scrub(err error, secrets []string) error {
	var pe *resource.ProviderError
	if !errors.As(err, &pe) {
		return err
	}
	for _, list := range [][]string{c.secrets, secrets} {
		for _, s := range list {
			if s != "" {
				pe.Message = strings.ReplaceAll(pe.Message, s, "REDACTED")
			}
		}
	}
	return err
}
