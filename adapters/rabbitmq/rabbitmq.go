// Package rabbitmq is the cdkx provider "rabbitmq": virtual hosts, exchanges, queues, bindings, users,
// permissions and policies of a RabbitMQ broker, through its management HTTP API
// (https://www.rabbitmq.com/docs/http-api-reference; the broker serves its own copy at /api/index.html).
//
// Types (one file each):
//   - RabbitMQ::Broker::VirtualHost (vhost.go), /api/vhosts/{vhost};
//   - RabbitMQ::Broker::Exchange (exchange.go), /api/exchanges/{vhost}/{name};
//   - RabbitMQ::Broker::Queue (queue.go), /api/queues/{vhost}/{name};
//   - RabbitMQ::Broker::Binding (binding.go), /api/bindings/{vhost}/e/{source}/{q|e}/{destination}[/{key}];
//   - RabbitMQ::Broker::Policy (policy.go), /api/policies/{vhost}/{name};
//   - RabbitMQ::Access::User (user.go), /api/users/{name};
//   - RabbitMQ::Access::Permission (permission.go), /api/permissions/{vhost}/{user}.
//
// Every request goes through adapters/transport with HTTP basic auth. Network errors, 429, 502, 503 and
// 504 are retried; every 4xx and 500 is answered at once (RabbitMQ answers 500 for requests its handlers
// cannot process, e.g. an unknown default queue type, and they fail the same way every time). API errors
// come back as *resource.ProviderError whose Message is the broker's reason, decoded by status first: the
// body is JSON {"error": …, "reason": …} (both are usually strings, sometimes Erlang terms such as lists of
// character codes), except from a proxy in front of the broker. A 401 "Login failed" says to check
// RABBITMQ_USERNAME and RABBITMQ_PASSWORD.
//
// Create never adopts an object that exists already: it reads first and answers an error wrapping
// resource.ErrAlreadyExists when the object is there (RabbitMQ's PUT would overwrite it, or, for an
// exchange or queue, accept it silently when identical). The read and the write are not atomic. Delete
// treats 404 as done, also when the parent vhost (or user) was deleted first and took its children with
// it: RabbitMQ cascades those deletions. Read answers resource.ErrNotFound for an object that is gone.
//
// Names may hold any character, "/" included (the default vhost is "/"): URLs escape every segment with
// url.PathEscape, and physical IDs made of several names join their url.PathEscape'd forms with "/".
//
// Observed against RabbitMQ 3.10.8 (Debian 12); the API is the same in 3.11 to 4.x except where a type's
// documentation says otherwise.
package rabbitmq

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/cdkx-dev/cdkx/adapters/internal/kit"
	"github.com/cdkx-dev/cdkx/adapters/transport"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// Name is the provider's name as written in templates.
const Name = "rabbitmq"

// DefaultConcurrency is how many requests cdkx should have in flight at once against one broker, the
// provider's default limit (the engine's global limit is higher): the management API serialises
// definition changes and answers slowly under a burst of them.
const DefaultConcurrency = 4

// Environment variables read by NewFromEnv.
const (
	EnvAPIURL   = "RABBITMQ_API_URL"  // base URL of the management API, e.g. http://127.0.0.1:15672
	EnvUsername = "RABBITMQ_USERNAME" // user of HTTP basic auth; needs the administrator tag
	EnvPassword = "RABBITMQ_PASSWORD" // its password; never logged or shown in errors
)

// Config configures a Provider.
type Config struct {
	// URL is the base URL of the management API, e.g. http://127.0.0.1:15672; the adapter appends
	// /api/…. A trailing "/" or "/api" is accepted and dropped; a path prefix (management.path_prefix)
	// is kept. It must not hold credentials.
	URL string
	// Username and Password are sent with HTTP basic auth on every request. The user needs the
	// administrator tag to manage vhosts, users and permissions. The password is never logged or shown.
	Username string
	Password string
	// HTTPClient sends each attempt; nil means a pooled client with sane timeouts.
	HTTPClient *http.Client
	// Retry is the retry policy; zero fields take the transport defaults (4 retries, 200ms..5s). A nil
	// Retry.Check means CheckRetry.
	Retry transport.Retry
	// Logger receives debug records of HTTP attempts and retries; nil logs nothing.
	// Limits bound each call (response body size, deadlines); zero fields take the transport's
	// defaults. NewFromEnv reads them from CDKX_MAX_BODY_<NAME> and the other transport.LimitsFromEnv
	// variables.
	Limits transport.Limits
	Logger *slog.Logger
}

// Provider serves the RabbitMQ types listed in the package documentation. It is safe for concurrent use.
// Constructing one sends no request, so a CLI can build it only when an assembly needs it.
type Provider struct {
	// Dispatch serves Create, Read, Update, Delete and Locate through types.
	kit.Dispatch[*Provider]
	base string // e.g. http://127.0.0.1:15672/api
	// api sends every request, with basic auth; the password is scrubbed from its errors. Call's
	// secrets are further strings of one request (a user's password in its body).
	api *transport.JSON
	// apiOK is set once GET /api/whoami has answered 200, so that a 404 is known to be about the object
	// and not about a wrong URL.
	apiOK atomic.Bool
}

// NewFromEnv builds a Provider from RABBITMQ_API_URL, RABBITMQ_USERNAME and RABBITMQ_PASSWORD, read through
// getenv (os.Getenv in the CLI). A missing variable is an error naming every variable to set.
func NewFromEnv(getenv func(string) string) (*Provider, error) {
	cfg := Config{URL: getenv(EnvAPIURL), Username: getenv(EnvUsername), Password: getenv(EnvPassword)}
	limits, err := transport.LimitsFromEnv(getenv, Name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	cfg.Limits = limits
	var missing []string
	if cfg.URL == "" {
		missing = append(missing, EnvAPIURL+" (the management API, e.g. http://127.0.0.1:15672)")
	}
	if cfg.Username == "" {
		missing = append(missing, EnvUsername)
	}
	if cfg.Password == "" {
		missing = append(missing, EnvPassword)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("rabbitmq: set %s", strings.Join(missing, ", "))
	}
	return New(cfg)
}

// New builds a Provider from cfg. URL, Username and Password are required; URL must be http or https and
// carry no credentials.
func New(cfg Config) (*Provider, error) {
	if cfg.URL == "" {
		return nil, errors.New("rabbitmq: no management API URL; set " + EnvAPIURL)
	}
	if cfg.Username == "" || cfg.Password == "" {
		return nil, fmt.Errorf("rabbitmq: no credentials; set %s and %s", EnvUsername, EnvPassword)
	}
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("rabbitmq: API URL %q is not an http(s) URL like http://127.0.0.1:15672; check %s", transport.RedactURL(cfg.URL), EnvAPIURL)
	}
	if u.User != nil {
		return nil, fmt.Errorf("rabbitmq: API URL %s holds credentials; put them in %s and %s instead", u.Redacted(), EnvUsername, EnvPassword)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("rabbitmq: API URL %q must not have a query or fragment; check %s", transport.RedactURL(cfg.URL), EnvAPIURL)
	}
	base := strings.TrimSuffix(strings.TrimRight(cfg.URL, "/"), "/api")
	retry := cfg.Retry
	if retry.Check == nil {
		retry.Check = CheckRetry
	}
	username, password := cfg.Username, cfg.Password
	p := &Provider{
		base: base + "/api",
		api: &transport.JSON{
			Client: transport.New(transport.Options{
				Provider:     Name,
				Service:      "RabbitMQ",
				URLSetting:   EnvAPIURL,
				HTTPClient:   cfg.HTTPClient,
				Retry:        retry,
				ErrorMessage: errorMessage,
				Logger:       cfg.Logger,
				Limits:       cfg.Limits,
				Secrets:      []string{password},
			}),
			Auth:  func(req *http.Request) { req.SetBasicAuth(username, password) },
			Error: providerError,
		},
	}
	p.Dispatch = types.For(p)
	return p, nil
}

// CheckRetry is the adapter's retry policy: transport.DefaultCheckRetry (network errors, 429 and 5xx)
// except that a 500 is not retried, since RabbitMQ answers 500 for requests it cannot process and a retry
// gets the same answer.
func CheckRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if err == nil && resp != nil && resp.StatusCode == http.StatusInternalServerError {
		return false, nil
	}
	return transport.DefaultCheckRetry(ctx, resp, err)
}

// Info declares the provider "rabbitmq", its types (in the order of the package documentation), its
// default limit of DefaultConcurrency calls in flight, and that it can locate the object of an interrupted
// create. It is the same for a zero Provider, so the CLI can describe RabbitMQ before it is configured.
func (p *Provider) Info() resource.ProviderInfo { return types.Info() }

// types lists the provider's types, in the order Info returns them; the Provider's Create, Read, Update,
// Delete and Locate go through it (kit.Dispatch). The documentation of each Type… constant gives its
// requests, physical ID and outputs.
//
// Create reads the object first and fails with an error wrapping resource.ErrAlreadyExists when it
// exists; otherwise it creates it (PUT, or POST for a binding) and returns its physical ID and outputs.
// A missing parent (vhost, user, source or destination) is a *resource.ProviderError that does not wrap
// ErrNotFound.
//
// Read returns the live properties (in the shape of the inputs, without write-only ones) and outputs of
// an object, or an error wrapping resource.ErrNotFound when it is gone. req.Properties, the inputs last
// applied, only steer the shape: a property the template leaves out is reported only when its live
// value differs from the default.
//
// Update changes an object in place. Exchanges, queues and bindings have only create-only properties, so
// an Update of one with changed properties is an error (the planner replaces them instead). Delete
// deletes an object; one already gone (404), also through the deletion of its vhost or user, is success.
//
// Locate returns the physical ID of the object that a create with req.Properties makes, when it exists
// at the broker, or an error wrapping resource.ErrNotFound, so that the engine can settle a create that
// was interrupted between the call and its record (crash recovery). Every object but a binding is named
// by its properties (its ID), and is read with GET; a binding is found among the bindings from its
// source to its destination by routing key and arguments (GET
// /api/bindings/{vhost}/e/{source}/{q|e}/{destination}).
var types = kit.New(resource.ProviderInfo{Name: Name, DefaultConcurrency: DefaultConcurrency, CanLocate: true},
	kit.Type[*Provider]{Schema: vhostSchema, ID: locateVhost,
		Create: (*Provider).createVhost, Read: (*Provider).readVhost, Update: (*Provider).updateVhost, Delete: (*Provider).deleteVhost},
	kit.Type[*Provider]{Schema: exchangeSchema, ID: locateExchange,
		Create: (*Provider).createExchange, Read: (*Provider).readExchange, Update: (*Provider).updateExchange, Delete: (*Provider).deleteExchange},
	kit.Type[*Provider]{Schema: queueSchema, ID: locateQueue,
		Create: (*Provider).createQueue, Read: (*Provider).readQueue, Update: (*Provider).updateQueue, Delete: (*Provider).deleteQueue},
	kit.Type[*Provider]{Schema: bindingSchema, Locate: (*Provider).locateBinding,
		Create: (*Provider).createBinding, Read: (*Provider).readBinding, Update: (*Provider).updateBinding, Delete: (*Provider).deleteBinding},
	kit.Type[*Provider]{Schema: policySchema, ID: locatePolicy,
		Create: (*Provider).createPolicy, Read: (*Provider).readPolicy, Update: (*Provider).updatePolicy, Delete: (*Provider).deletePolicy},
	kit.Type[*Provider]{Schema: userSchema, ID: locateUser,
		Create: (*Provider).createUser, Read: (*Provider).readUser, Update: (*Provider).updateUser, Delete: (*Provider).deleteUser},
	kit.Type[*Provider]{Schema: permissionSchema, ID: locatePermission,
		Create: (*Provider).createPermission, Read: (*Provider).readPermission, Update: (*Provider).updatePermission, Delete: (*Provider).deletePermission},
)

// noUpdate is the Update of a type whose properties are all create-only: nothing to do when nothing
// changed, an error otherwise.
func noUpdate(req resource.UpdateRequest, outputs func(string) (resource.Properties, error)) (resource.UpdateResult, error) {
	if len(req.Changed) > 0 {
		return resource.UpdateResult{}, fmt.Errorf("rabbitmq: %s %s cannot change in place (changed: %s); every property is create-only, so a change must replace it",
			req.Type, req.PhysicalID, strings.Join(req.Changed, ", "))
	}
	out, err := outputs(req.PhysicalID)
	if err != nil {
		return resource.UpdateResult{}, err
	}
	return resource.UpdateResult{Outputs: out}, nil
}

// path builds an API URL from literal segments (written as they are) and names (each escaped with
// url.PathEscape, so that the vhost "/" becomes %2F).
func (p *Provider) path(literal string, names ...string) string {
	var b strings.Builder
	b.WriteString(p.base)
	b.WriteString(literal)
	for _, n := range names {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(n))
	}
	return b.String()
}

// providerError decodes an error response into a *resource.ProviderError whose Kind is
// resource.ErrNotFound for 404.
func providerError(method, u string, resp *http.Response, body []byte) error {
	e := &resource.ProviderError{Provider: Name, Method: method, URL: u, Status: resp.StatusCode,
		Message: errorMessage(resp, body)}
	if resp.StatusCode == http.StatusNotFound {
		e.Kind = resource.ErrNotFound
	}
	return e
}

// errorMessage is the broker's error text, decoded by status first. 401 is "Login failed" (wrong
// credentials) or a refusal ("Not administrator user", "Access refused." for a reserved amq.* name, "User
// not authorised to access virtual host"), each with what to check. Every other status carries
// {"error", "reason"}: the message is the reason (or the error when there is no reason), HTML entities
// decoded (RabbitMQ escapes validation messages) and Erlang character lists turned into text. A body
// that is not that JSON (e.g. from a proxy) is shown as text of at most 512 bytes; a 404, 405 or 406
// without it comes from outside the API and says to check RABBITMQ_API_URL.
func errorMessage(resp *http.Response, body []byte) string {
	msg, ok := jsonMessage(body)
	if resp.StatusCode == http.StatusUnauthorized {
		switch {
		case !ok || msg == "Login failed":
			return "Login failed: check " + EnvUsername + " and " + EnvPassword
		case msg == "Not administrator user":
			return msg + ": the user in " + EnvUsername + " needs the administrator tag"
		case msg == "Access refused.":
			return msg + " (RabbitMQ reserves exchange and queue names starting with \"amq.\", and the default exchange cannot be bound)"
		}
		return msg + " (check the tags and vhost permissions of the user in " + EnvUsername + ")"
	}
	if ok {
		return msg
	}
	text := transport.ErrorText(body)
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/html" || text == "" {
		text = http.StatusText(resp.StatusCode)
	}
	switch resp.StatusCode {
	case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotAcceptable:
		// The API answers these in JSON; the broker's web server outside /api answers them empty.
		text += " (not an answer of the management API: check that " + EnvAPIURL + " is its base URL, e.g. http://127.0.0.1:15672)"
	}
	return text
}

// jsonMessage decodes {"error": …, "reason": …}.
func jsonMessage(body []byte) (string, bool) {
	var e struct {
		Error  json.RawMessage `json:"error"`
		Reason json.RawMessage `json:"reason"`
	}
	if json.Unmarshal(body, &e) != nil {
		return "", false
	}
	reason, errText := erlangText(e.Reason), erlangText(e.Error)
	m := reason
	if m == "" {
		m = errText
	}
	if m == "" {
		return "", false
	}
	return transport.ErrorText([]byte(html.UnescapeString(m))), true
}

// erlangText renders an error or reason field: a string as it is, a list of character codes (an Erlang
// string) as the text it spells, and any other term as JSON with its character lists turned into strings,
// e.g. ["invalid_regexp","(",["missing )",1]].
func erlangText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&v) != nil || v == nil {
		return ""
	}
	v = charLists(v)
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// charLists replaces every non-empty list of printable character codes in v by the string it spells.
func charLists(v any) any {
	switch v := v.(type) {
	case []any:
		if s, ok := charList(v); ok {
			return s
		}
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = charLists(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = charLists(e)
		}
		return out
	}
	return v
}

func charList(list []any) (string, bool) {
	if len(list) == 0 {
		return "", false
	}
	runes := make([]rune, len(list))
	for i, e := range list {
		n, ok := e.(json.Number)
		if !ok {
			return "", false
		}
		c, err := n.Int64()
		if err != nil || (c < 0x20 && c != '\n' && c != '\t') || c > 0x10FFFF {
			return "", false
		}
		runes[i] = rune(c)
	}
	return string(runes), true
}

// confirmNotFound is called with a 404 that would mean "the object is gone". It makes sure the 404 is
// not about the API itself (a wrong RABBITMQ_API_URL, e.g. without the management path prefix), which
// would otherwise make cdkx believe that every object had been deleted. It returns nil when the API
// answers GET /api/whoami.
func (p *Provider) confirmNotFound(ctx context.Context) error {
	if p.apiOK.Load() {
		return nil
	}
	_, err := p.api.Call(ctx, http.MethodGet, p.base+"/whoami", nil, nil)
	if err == nil {
		p.apiOK.Store(true)
		return nil
	}
	var pe *resource.ProviderError
	if errors.As(err, &pe) && pe.Status == http.StatusNotFound {
		pe.Kind = nil
		pe.Message = "no RabbitMQ management API at this URL; check " + EnvAPIURL
	}
	return err
}

// readGone turns the error of a Read's GET into the Read's error: a 404 stays resource.ErrNotFound only
// when confirmNotFound confirms that the API itself is there.
func (p *Provider) readGone(ctx context.Context, err error) error {
	if errors.Is(err, resource.ErrNotFound) {
		if cerr := p.confirmNotFound(ctx); cerr != nil {
			return cerr
		}
	}
	return err
}

// deleteGone turns the error of a DELETE into the Delete's answer: a 404 confirmed by confirmNotFound is
// success.
func (p *Provider) deleteGone(ctx context.Context, err error) error {
	if errors.Is(err, resource.ErrNotFound) {
		return p.confirmNotFound(ctx)
	}
	return err
}

// exists reads u before a create: false when it answers 404, true when it answers 2xx.
func (p *Provider) exists(ctx context.Context, u string) (bool, error) {
	_, err := p.api.Call(ctx, http.MethodGet, u, nil, nil)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, resource.ErrNotFound):
		return false, nil
	}
	return false, err
}

// createAt is the create of an object named by its URL u: GET u, an error wrapping
// resource.ErrAlreadyExists naming what when it answers 2xx, then PUT u with in. A 404 of the PUT means
// that the parent is missing: its message becomes parent (when not empty), and it does not wrap
// resource.ErrNotFound. secrets are scrubbed from error messages.
func (p *Provider) createAt(ctx context.Context, u string, in any, what, parent string, secrets ...string) error {
	switch found, err := p.exists(ctx, u); {
	case err != nil:
		return err
	case found:
		return alreadyExists(what)
	}
	_, err := p.api.Call(ctx, http.MethodPut, u, in, nil, secrets...)
	return missingParent(err, parent)
}

// alreadyExists is the error of a create whose object exists at the broker but not in cdkx state.
func alreadyExists(what string) error {
	return fmt.Errorf("rabbitmq: %s already exists in RabbitMQ but not in cdkx state; delete it in RabbitMQ or import it into cdkx: %w",
		what, resource.ErrAlreadyExists)
}

// missingParent rewrites the 404 of a create (the vhost, user, exchange or queue it needs is missing):
// for a create that is a failure, not "the object is gone".
func missingParent(err error, what string) error {
	var pe *resource.ProviderError
	if errors.As(err, &pe) && pe.Status == http.StatusNotFound {
		pe.Kind = nil
		if what != "" && (pe.Message == "Not Found" || pe.Message == "vhost_not_found") {
			pe.Message = what
		}
	}
	return err
}

// joinID makes a physical ID from names: each escaped with url.PathEscape (which escapes "/" and "%"),
// joined with "/".
func joinID(parts ...string) string {
	esc := make([]string, len(parts))
	for i, s := range parts {
		esc[i] = url.PathEscape(s)
	}
	return strings.Join(esc, "/")
}

// splitPair splits the physical ID "<vhost>/<name>" of a resourceType; second names the second part
// for errors (name, user).
func splitPair(resourceType, id, second string) (vhost, name string, err error) {
	parts, err := splitID(resourceType, id, 2, "<vhost>/<"+second+">")
	if err != nil {
		return "", "", err
	}
	return parts[0], parts[1], nil
}

// splitID undoes joinID for an ID of n parts; shape names them for the error, e.g. "<vhost>/<name>".
func splitID(resourceType, id string, n int, shape string) ([]string, error) {
	esc := strings.Split(id, "/")
	bad := fmt.Errorf("rabbitmq: %s id %q is not %s (each part escaped with url.PathEscape)", resourceType, id, shape)
	if len(esc) != n {
		return nil, bad
	}
	out := make([]string, n)
	for i, s := range esc {
		v, err := url.PathUnescape(s)
		if err != nil || v == "" {
			return nil, bad
		}
		out[i] = v
	}
	return out, nil
}

// decode decodes the properties of a resourceType into v.
func decode(resourceType string, props resource.Properties, v any) error {
	if err := resource.Decode(props, v); err != nil {
		return fmt.Errorf("rabbitmq: %s properties: %w", resourceType, err)
	}
	return nil
}

// tagList decodes tags as the API answers them: a JSON list (3.9 and later) or a comma-separated string
// (3.8 and earlier).
type tagList []string

// UnmarshalJSON accepts ["a","b"], "a,b", "" and null.
func (t *tagList) UnmarshalJSON(b []byte) error {
	var list []string
	if err := json.Unmarshal(b, &list); err == nil {
		*t = list
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("tags: want a list or a comma-separated string, got %s", b)
	}
	*t = nil
	for _, tag := range strings.Split(s, ",") {
		if tag = strings.TrimSpace(tag); tag != "" {
			*t = append(*t, tag)
		}
	}
	return nil
}

// tagsProp renders live tags for Read: in the template's order when they are the same set, else in the
// broker's order.
func tagsProp(live []string, hint any) []any {
	var want []string
	if list, ok := hint.([]any); ok {
		for _, e := range list {
			if s, ok := e.(string); ok {
				want = append(want, s)
			}
		}
	}
	if sameSet(want, live) {
		live = want
	}
	out := make([]any, 0, len(live))
	for _, s := range live {
		out = append(out, s)
	}
	return out
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// setIf sets props[key] = live when the template set key (hint has it) or live differs from the
// default def, so that a property left out of the template reads back absent while it has its default.
func setIf(props, hint resource.Properties, key string, live, def any) {
	if _, set := hint[key]; set || !resource.Equal(live, def) {
		props[key] = live
	}
}

// object returns v as a JSON object, an empty one for nil.
func object(v map[string]any) map[string]any {
	if v == nil {
		return map[string]any{}
	}
	return v
}

// Preflight checks the credentials by one authenticated read, GET /api/whoami (once per Provider:
// confirmNotFound remembers the answer): a 401 or 403 is a *resource.CredentialsError naming
// RABBITMQ_USERNAME and RABBITMQ_PASSWORD, a 404 says to check RABBITMQ_API_URL. RabbitMQ has nothing
// more to check before a run.
func (p *Provider) Preflight(ctx context.Context, _ resource.PreflightRequest) ([]resource.PreflightProblem, error) {
	err := p.confirmNotFound(ctx)
	var pe *resource.ProviderError
	if errors.As(err, &pe) && (pe.Status == http.StatusUnauthorized || pe.Status == http.StatusForbidden) {
		return nil, &resource.CredentialsError{Provider: Name, Variables: EnvUsername + "/" + EnvPassword, Err: err}
	}
	return nil, err
}
