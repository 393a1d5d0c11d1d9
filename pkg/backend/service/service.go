// Package service is the state.Backend on a cdkx state service (`cdkx server`, see
// internal/server and "Running cdkx server" in README.md), over HTTP.
//
// A stack S maps to the service's stack ORG/PROJECT/S. Its state is stored as a Pulumi deployment laid
// out one resource per line (document.go), so that each Commit sends only the text edits of the resources
// it changed (PATCH …/commit, the cdkx extension of checkpointdelta that also carries the deployment
// events), never the whole state. Lock creates and starts an update and renews its lease in the
// background; Unlock completes it, or cancels another holder's. Deployment records live in the service's
// cdkx extension (/api/cdkx/ORG/PROJECT/…).
package service

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/pkg/stateapi"
)

// Doer sends one HTTP request, retrying transient failures (network errors, 429, 5xx) as it sees fit:
// in the CLI it is the shared transport (adapters/transport), which honours Retry-After.
type Doer interface {
	Do(req *http.Request) (*http.Response, error)
}

// MaxAnswer is the longest answer of the state service that the backend reads, in bytes; its client
// should cap response bodies at the same size (transport.Options.MaxBody).
const MaxAnswer = 256 << 20

// Options configure Open.
type Options struct {
	// Token is the API token (`cdkx server token create NAME`); required.
	Token string
	// Organization is the service organization; "" takes the service's default
	// (GET /api/user/organizations/default).
	Organization string
	// Project is the service project the stacks belong to; required.
	Project string
	// Client sends the requests; nil means http.DefaultClient (no retries).
	Client Doer
	// Now is the clock of stack and heartbeat times (time.Now).
	Now func() time.Time
}

// gzipAbove is the body size from which requests are sent gzip-compressed.
const gzipAbove = 32 << 10

// Backend is the state.Backend on a state service. It is safe for concurrent use.
type Backend struct {
	base    string // scheme://host[:port][/prefix], without a trailing slash
	token   string
	org     string
	project string
	client  Doer
	now     func() time.Time

	mu      sync.Mutex
	leases  map[string]*lease      // by stack
	docs    map[string]*document   // by stack: the last text read or written
	stackMu map[string]*sync.Mutex // by stack: serialises commits
	created map[string]bool        // stacks known to exist on the service
	failed  map[string]bool        // stacks whose deployment finished FAILED or ABORTED
}

// Open returns the backend on the service at rawURL (http:// or https://, e.g. http://127.0.0.1:8080),
// after checking that the service answers and accepts the token.
//
// Errors name the URL and say what to do: no token, a refused token (401), a service that does not
// answer.
func Open(ctx context.Context, rawURL string, opts Options) (*Backend, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("state service %q: not an http:// or https:// URL; write it as https://cdkx.example.com or http://127.0.0.1:8080", rawURL)
	}
	if opts.Token == "" {
		return nil, fmt.Errorf("state service %s: no API token; set CDKX_TOKEN to a token from `cdkx server token create NAME`", u.Redacted())
	}
	if opts.Project == "" {
		return nil, errors.New("state service: no project name; set CDKX_PROJECT (default: the name of the working directory)")
	}
	b := &Backend{base: strings.TrimRight(u.String(), "/"), token: opts.Token, org: opts.Organization,
		project: opts.Project, client: opts.Client, now: opts.Now,
		leases: map[string]*lease{}, docs: map[string]*document{}, stackMu: map[string]*sync.Mutex{},
		created: map[string]bool{}, failed: map[string]bool{}}
	if b.client == nil {
		b.client = http.DefaultClient
	}
	if b.now == nil {
		b.now = time.Now
	}
	if err := b.call(ctx, "GET", "/api/user", nil, nil); err != nil {
		var ae *APIError
		if errors.As(err, &ae) && ae.Status == http.StatusUnauthorized {
			return nil, fmt.Errorf("state service %s refused the API token (401): check CDKX_TOKEN, or create one with `cdkx server token create NAME`", b.base)
		}
		return nil, fmt.Errorf("state service %s: %w", b.base, err)
	}
	if b.org == "" {
		var org stateapi.DefaultOrganizationResponse
		if err := b.call(ctx, "GET", "/api/user/organizations/default", nil, &org); err != nil {
			return nil, fmt.Errorf("state service %s: default organization: %w", b.base, err)
		}
		b.org = org.GitHubLogin
	}
	return b, nil
}

// APIError is an error answer of the service: its HTTP status and message (apitype.ErrorResponse).
type APIError struct {
	Method, Path string
	Status       int
	Message      string
	// body is the answer's body (the typed fields of a deployment conflict).
	body []byte
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s %s: %d %s", e.Method, e.Path, e.Status, e.Message)
}

func isStatus(err error, status int) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == status
}

// call sends a request with the API token; see send.
func (b *Backend) call(ctx context.Context, method, path string, body, out any) error {
	return b.send(ctx, method, path, "token "+b.token, body, out)
}

// send sends body (JSON; gzip above gzipAbove bytes) and decodes a 2xx answer into out (when not nil);
// any other answer is an *APIError.
func (b *Backend) send(ctx context.Context, method, path, auth string, body, out any) error {
	return b.sendWith(ctx, method, path, auth, nil, body, out)
}

// sendWith is send with extra request headers.
func (b *Backend) sendWith(ctx context.Context, method, path, auth string, header http.Header, body, out any) error {
	var r io.Reader
	gz := false
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("%s %s: encode request: %w", method, path, err)
		}
		if len(data) > gzipAbove {
			var zb bytes.Buffer
			zw := gzip.NewWriter(&zb)
			_, _ = zw.Write(data)
			_ = zw.Close()
			data, gz = zb.Bytes(), true
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, b.base+path, r)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", auth)
	req.Header.Set("Accept", "application/vnd.pulumi+8")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if gz {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswer))
	if err != nil {
		return fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		var er stateapi.ErrorResponse
		if json.Unmarshal(data, &er) != nil || er.Message == "" {
			er.Message = strings.TrimSpace(string(data))
		}
		return &APIError{Method: method, Path: path, Status: resp.StatusCode, Message: er.Message, body: data}
	}
	if out == nil {
		return nil
	}
	if raw, ok := out.(*[]byte); ok {
		*raw = data
		return nil
	}
	if err := unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return nil
}

func (b *Backend) stackPath(stack string) string {
	return "/api/stacks/" + url.PathEscape(b.org) + "/" + url.PathEscape(b.project) + "/" + url.PathEscape(stack)
}

func (b *Backend) cdkxPath() string {
	return "/api/cdkx/" + url.PathEscape(b.org) + "/" + url.PathEscape(b.project)
}

// ensureStack creates the service stack of name unless it is known to exist.
func (b *Backend) ensureStack(ctx context.Context, name string) error {
	b.mu.Lock()
	known := b.created[name]
	b.mu.Unlock()
	if known {
		return nil
	}
	err := b.call(ctx, "POST", "/api/stacks/"+url.PathEscape(b.org)+"/"+url.PathEscape(b.project),
		stateapi.CreateStackRequest{StackName: name}, nil)
	if err != nil && !isStatus(err, http.StatusConflict) {
		return fmt.Errorf("create stack %s on the state service: %w", name, err)
	}
	b.mu.Lock()
	b.created[name] = true
	b.mu.Unlock()
	return nil
}

// stackVersion returns the service's current version of stack, 0 when the stack does not exist.
func (b *Backend) stackVersion(ctx context.Context, name string) (int64, bool, error) {
	var info stateapi.Stack
	err := b.call(ctx, "GET", b.stackPath(name), nil, &info)
	if isStatus(err, http.StatusNotFound) {
		return 0, false, nil
	}
	return info.Version, err == nil, err
}

// StackVersion returns the stack's current version (its checkpoint count), 0 when it has none.
func (b *Backend) StackVersion(ctx context.Context, name string) (int64, error) {
	v, _, err := b.stackVersion(ctx, name)
	if err != nil {
		return 0, fmt.Errorf("read the version of stack %s: %w", name, err)
	}
	return v, nil
}

// ListStacks returns the project's stacks that have been updated, sorted.
func (b *Backend) ListStacks(ctx context.Context) ([]string, error) {
	var resp stateapi.ListStacksResponse
	q := url.Values{"organization": {b.org}, "project": {b.project}}
	if err := b.call(ctx, "GET", "/api/user/stacks?"+q.Encode(), nil, &resp); err != nil {
		return nil, fmt.Errorf("list stacks: %w", err)
	}
	var names []string
	for _, s := range resp.Stacks {
		if s.LastUpdate != nil {
			names = append(names, s.StackName)
		}
	}
	sort.Strings(names)
	return names, nil
}

// GetStack returns the stack's current state (NewStack for one the service does not have).
func (b *Backend) GetStack(ctx context.Context, name string) (*state.Stack, error) {
	v, exists, err := b.stackVersion(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("read stack %s: %w", name, err)
	}
	if !exists || v == 0 {
		return state.NewStack(name), nil
	}
	_, st, err := b.readDocument(ctx, name, v)
	return st, err
}

// GetStackVersion returns the stack at version; ErrNotFound when it never reached it.
func (b *Backend) GetStackVersion(ctx context.Context, name string, version int64) (*state.Stack, error) {
	if version == 0 {
		return state.NewStack(name), nil
	}
	if version < 0 {
		return nil, fmt.Errorf("stack %s version %d: %w", name, version, state.ErrNotFound)
	}
	_, st, err := b.readDocument(ctx, name, version)
	if isStatus(err, http.StatusNotFound) {
		return nil, fmt.Errorf("stack %s version %d: %w", name, version, state.ErrNotFound)
	}
	return st, err
}

// readDocument fetches the stack's text at checkpoint version (export/{version}?checkpoint=true: the
// Pulumi CLI's export/{version} numbers history, not checkpoints) and parses it.
func (b *Backend) readDocument(ctx context.Context, name string, version int64) (*document, *state.Stack, error) {
	if version == 0 {
		d, err := newDocument(b.project, name, 0)
		return d, state.NewStack(name), err
	}
	var data []byte
	if err := b.call(ctx, "GET", b.stackPath(name)+"/export/"+strconv.FormatInt(version, 10)+"?checkpoint=true", nil, &data); err != nil {
		return nil, nil, fmt.Errorf("read stack %s version %d: %w", name, version, err)
	}
	return parseDocument(b.project, name, version, data)
}

// stackLock returns the mutex that serialises commits to stack.
func (b *Backend) stackLock(stack string) *sync.Mutex {
	b.mu.Lock()
	defer b.mu.Unlock()
	m := b.stackMu[stack]
	if m == nil {
		m = &sync.Mutex{}
		b.stackMu[stack] = m
	}
	return m
}

// Commit sends the edits of changes and the events to the stack, in one request and one transaction of
// the service, under the lease of the stack's lock when this backend holds it, else under a one-shot
// update (created, started, committed and completed here; a *state.LockedError when another holder has
// the stack).
func (b *Backend) Commit(ctx context.Context, deploymentID, stack string, changes []state.Change, events []state.Event) (int64, error) {
	if err := state.ValidateChanges(changes); err != nil {
		return 0, fmt.Errorf("commit to stack %s: %w", stack, err)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	m := b.stackLock(stack)
	m.Lock()
	defer m.Unlock()
	b.mu.Lock()
	l := b.leases[stack]
	b.mu.Unlock()
	if l != nil {
		return b.commit(ctx, l, deploymentID, changes, events)
	}
	// A one-shot update.
	info := state.LockInfo{ID: uuid.NewString(), Stack: stack, Operation: "commit", StartedAt: b.now().UTC()}
	info.HeartbeatAt = info.StartedAt
	one, err := b.begin(ctx, info)
	if err != nil {
		return 0, fmt.Errorf("commit to stack %s: %w", stack, err)
	}
	v, err := b.commit(ctx, one, deploymentID, changes, events)
	status := "succeeded"
	if err != nil {
		status = "failed"
	}
	if cerr := b.send(context.WithoutCancel(ctx), "POST", one.path+"/complete", one.auth(), map[string]string{"status": status}, nil); cerr != nil && err == nil {
		err = fmt.Errorf("commit to stack %s: complete the update: %w", stack, cerr)
	}
	return v, err
}

// commit sends one commit under l; the caller holds the stack's commit mutex.
func (b *Backend) commit(ctx context.Context, l *lease, deploymentID string, changes []state.Change, events []state.Event) (int64, error) {
	if err := l.err(); err != nil {
		return 0, err
	}
	stack := l.info.Stack
	b.mu.Lock()
	d := b.docs[stack]
	b.mu.Unlock()
	if d == nil || d.version != l.version() {
		var err error
		if d, _, err = b.readDocument(ctx, stack, l.version()); err != nil {
			return 0, fmt.Errorf("commit to stack %s: %w", stack, err)
		}
	}
	p, err := d.apply(changes, b.now().UTC())
	if err != nil {
		return 0, fmt.Errorf("commit to stack %s: %w", stack, err)
	}
	req := stateapi.CommitRequest{SequenceNumber: l.nextSequence(), BaseVersion: d.version, CheckpointHash: p.hash,
		ResourceCount: len(p.next.ids), DeploymentID: deploymentID, Events: events}
	if p.whole != nil {
		text := string(p.whole)
		req.DeploymentText = &text
	} else if len(p.edits) > 0 {
		if req.DeploymentDelta, err = json.Marshal(p.edits); err != nil {
			return 0, fmt.Errorf("commit to stack %s: %w", stack, err)
		}
	}
	var resp stateapi.CommitResponse
	if err := b.send(ctx, "PATCH", l.path+"/commit", l.auth(), req, &resp); err != nil {
		if isStatus(err, http.StatusConflict) || isStatus(err, http.StatusBadRequest) {
			b.mu.Lock()
			delete(b.docs, stack) // read the stack again next time
			b.mu.Unlock()
		}
		if lost := l.lose(err); lost != nil {
			return 0, lost
		}
		return 0, fmt.Errorf("commit to stack %s: %w", stack, err)
	}
	p.next.version = resp.Version
	l.setVersion(resp.Version)
	b.mu.Lock()
	b.docs[stack] = p.next
	b.mu.Unlock()
	return resp.Version, nil
}

// Close stops renewing leases (it does not complete their updates: Unlock does).
func (b *Backend) Close() error {
	b.mu.Lock()
	leases := b.leases
	b.leases = map[string]*lease{}
	b.mu.Unlock()
	for _, l := range leases {
		l.stop()
	}
	return nil
}

var _ state.Backend = (*Backend)(nil)
