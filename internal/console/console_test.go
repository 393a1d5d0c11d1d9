package console

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

// fakeSource is a Source whose methods are function fields; nil ones answer from a small fixed project.
type fakeSource struct {
	AuthenticateF func(ctx context.Context, token string) (Caller, error)
	StacksF       func(ctx context.Context, c Caller, s Scope) ([]StackSummary, error)
	DeploymentsF  func(ctx context.Context, c Caller, s Scope, q Query) (Page, error)
	DeploymentF   func(ctx context.Context, c Caller, s Scope, id string) (*state.Deployment, error)
	EventsF       func(ctx context.Context, c Caller, s Scope, id string, after int) ([]state.Event, error)
	LocksF        func(ctx context.Context, c Caller, s Scope) ([]state.LockInfo, error)
	ApproveF      func(ctx context.Context, c Caller, s Scope, id, comment string) error
	RejectF       func(ctx context.Context, c Caller, s Scope, id, comment string) error
	AbortF        func(ctx context.Context, c Caller, s Scope, id string) error
	RedeployF     func(ctx context.Context, c Caller, s Scope, id string) (string, error)
	UnlockF       func(ctx context.Context, c Caller, s Scope, stack, lockID string) error
}

var (
	scope    = Scope{Org: "acme", Project: "web"}
	t0       = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	proposal = state.Deployment{ID: "11111111-aaaa-4000-8000-000000000001", Stack: "dns", Kind: state.KindDeploy, Status: state.StatusProposed,
		Seq: 3, CreatedBy: "alice", CreatedAt: t0, Message: "raise the TTL",
		Plan: &state.Plan{Update: 1, Values: true, Steps: []state.PlanStep{{Resource: "dns/Zone", Stack: "dns", LogicalID: "Zone",
			Type: "dns:zone", Op: "update", Changes: []state.PlanChange{{Name: "ttl", Old: 60.0, New: 300.0}}}}}}
	completed = state.Deployment{ID: "22222222-bbbb-4000-8000-000000000002", Stack: "dns", Kind: state.KindDeploy, Status: state.StatusCompleted,
		Seq: 2, CreatedBy: "bob", CreatedAt: t0.Add(-time.Hour), FinishedAt: t0.Add(-time.Hour + time.Minute)}
)

func (f *fakeSource) Authenticate(ctx context.Context, token string) (Caller, error) {
	if f.AuthenticateF != nil {
		return f.AuthenticateF(ctx, token)
	}
	switch token {
	case "good":
		return Caller{Name: "ci"}, nil
	case "reader":
		return Caller{Name: "viewer", ReadOnly: true}, nil
	case "other":
		return Caller{Name: "stranger", Orgs: []string{"other"}}, nil
	}
	return Caller{}, ErrUnauthorized
}

func (f *fakeSource) Scopes(context.Context, Caller) ([]Scope, error) { return []Scope{scope}, nil }

func (f *fakeSource) Stacks(ctx context.Context, c Caller, s Scope) ([]StackSummary, error) {
	if f.StacksF != nil {
		return f.StacksF(ctx, c, s)
	}
	return []StackSummary{{Name: "dns", Status: state.StatusProposed, Last: &proposal, Proposed: 1}}, nil
}

func (f *fakeSource) Deployments(ctx context.Context, c Caller, s Scope, q Query) (Page, error) {
	if f.DeploymentsF != nil {
		return f.DeploymentsF(ctx, c, s, q)
	}
	return Page{Deployments: []state.Deployment{proposal, completed}}, nil
}

func (f *fakeSource) Deployment(ctx context.Context, c Caller, s Scope, id string) (*state.Deployment, error) {
	if f.DeploymentF != nil {
		return f.DeploymentF(ctx, c, s, id)
	}
	for _, d := range []state.Deployment{proposal, completed} {
		if d.ID == id {
			return &d, nil
		}
	}
	return nil, ErrNotFound
}

func (f *fakeSource) Events(ctx context.Context, c Caller, s Scope, id string, after int) ([]state.Event, error) {
	if f.EventsF != nil {
		return f.EventsF(ctx, c, s, id, after)
	}
	return nil, nil
}

func (f *fakeSource) Locks(ctx context.Context, c Caller, s Scope) ([]state.LockInfo, error) {
	if f.LocksF != nil {
		return f.LocksF(ctx, c, s)
	}
	return []state.LockInfo{{ID: "lock-1", Stack: "dns", Operation: "deploy", User: "carol", Host: "ci-7", PID: 42, StartedAt: t0}}, nil
}

func (f *fakeSource) Approve(ctx context.Context, c Caller, s Scope, id, comment string) error {
	if f.ApproveF != nil {
		return f.ApproveF(ctx, c, s, id, comment)
	}
	return nil
}

func (f *fakeSource) Reject(ctx context.Context, c Caller, s Scope, id, comment string) error {
	if f.RejectF != nil {
		return f.RejectF(ctx, c, s, id, comment)
	}
	return nil
}

func (f *fakeSource) Abort(ctx context.Context, c Caller, s Scope, id string) error {
	if f.AbortF != nil {
		return f.AbortF(ctx, c, s, id)
	}
	return nil
}

func (f *fakeSource) Redeploy(ctx context.Context, c Caller, s Scope, id string) (string, error) {
	if f.RedeployF != nil {
		return f.RedeployF(ctx, c, s, id)
	}
	return "33333333-cccc-4000-8000-000000000003", nil
}

func (f *fakeSource) Unlock(ctx context.Context, c Caller, s Scope, stack, lockID string) error {
	if f.UnlockF != nil {
		return f.UnlockF(ctx, c, s, stack, lockID)
	}
	return nil
}

// client is a browser: a cookie jar, redirects not followed.
type client struct {
	t    *testing.T
	srv  *httptest.Server
	http *http.Client
}

func newClient(t *testing.T, src Source, opts Options) *client {
	t.Helper()
	srv := httptest.NewServer(New(src, opts))
	t.Cleanup(srv.Close)
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &client{t: t, srv: srv, http: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (c *client) do(method, path string, form url.Values, header http.Header) (*http.Response, string) {
	c.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(context.Background(), method, c.srv.URL+path, body)
	if err != nil {
		c.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp, string(b)
}

func (c *client) get(path string) (*http.Response, string) { return c.do("GET", path, nil, nil) }

func (c *client) login(token string) *http.Response {
	c.t.Helper()
	resp, _ := c.do("POST", "/login", url.Values{"token": {token}}, nil)
	return resp
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf reads the CSRF token from a page.
func (c *client) csrf() string {
	c.t.Helper()
	_, body := c.get("/acme/web/stacks")
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		c.t.Fatalf("no CSRF field in the stacks page:\n%s", body)
	}
	return m[1]
}

func TestHeaders(t *testing.T) {
	t.Parallel()
	c := newClient(t, &fakeSource{}, Options{})
	c.login("good")
	for _, path := range []string{"/login", "/acme/web/stacks", "/acme/web/deployments/" + proposal.ID, "/nope/x/stacks"} {
		resp, _ := c.get(path)
		want := map[string]string{
			"Content-Security-Policy": contentSecurityPolicy, "X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff",
			"Referrer-Policy": "same-origin", "Cache-Control": "no-store",
		}
		got := map[string]string{}
		for k := range want {
			got[k] = resp.Header.Get(k)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("GET %s headers (-want +got):\n%s", path, diff)
		}
	}
	if !strings.Contains(contentSecurityPolicy, "frame-ancestors 'none'") || strings.Contains(contentSecurityPolicy, "unsafe-inline") {
		t.Errorf("CSP %q: want frame-ancestors 'none' and no unsafe-inline", contentSecurityPolicy)
	}
	resp, _ := c.get("/static/console.css")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Security-Policy") == "" {
		t.Errorf("GET /static/console.css = %d, CSP %q", resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
	}
}

func TestNoInlineScriptOrStyle(t *testing.T) {
	t.Parallel()
	c := newClient(t, &fakeSource{}, Options{})
	c.login("good")
	for _, path := range []string{"/login", "/acme/web/stacks", "/acme/web/stacks/dns", "/acme/web/deployments/" + proposal.ID,
		"/acme/web/locks", "/acme/web/audit", "/acme/web/locks/unlock?stack=dns&id=lock-1"} {
		resp, body := c.get(path)
		if resp.StatusCode != 200 {
			t.Errorf("GET %s = %d:\n%s", path, resp.StatusCode, body)
		}
		if regexp.MustCompile(`<script>|<script [^>]*>[^<]|style="|<style| on[a-z]+="`).MatchString(body) {
			t.Errorf("GET %s has inline script or style:\n%s", path, body)
		}
	}
}

func sessionCookie(resp *http.Response) *http.Cookie {
	for _, ck := range resp.Cookies() {
		if ck.Name == cookieName {
			return ck
		}
	}
	return nil
}

func TestLoginCookie(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		opts       Options
		header     http.Header
		wantSecure bool
	}{
		{name: "plain HTTP", wantSecure: false},
		{name: "secure flag", opts: Options{SecureCookies: true}, wantSecure: true},
		{name: "trusted proxy", opts: Options{TrustProxy: true}, header: http.Header{"X-Forwarded-Proto": {"https"}}, wantSecure: true},
		{name: "untrusted proxy header", header: http.Header{"X-Forwarded-Proto": {"https"}}, wantSecure: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newClient(t, &fakeSource{}, tt.opts)
			resp, _ := c.do("POST", "/login", url.Values{"token": {"good"}}, tt.header)
			ck := sessionCookie(resp)
			if resp.StatusCode != http.StatusSeeOther || ck == nil {
				t.Fatalf("login = %d, cookie %v; want 303 and a session cookie", resp.StatusCode, ck)
			}
			if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Secure != tt.wantSecure || ck.MaxAge <= 0 || len(ck.Value) < 40 {
				t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, Secure=%t, expiring, a long random value", ck, tt.wantSecure)
			}
		})
	}
}

func TestLoginFailures(t *testing.T) {
	t.Parallel()
	c := newClient(t, &fakeSource{}, Options{LoginAttempts: 3})
	var bodies []string
	for _, tok := range []string{"wrong", "", "also-wrong"} {
		resp, body := c.do("POST", "/login", url.Values{"token": {tok}}, nil)
		if resp.StatusCode != http.StatusUnauthorized || sessionCookie(resp) != nil {
			t.Errorf("login with %q = %d, cookie %v; want 401 and none", tok, resp.StatusCode, sessionCookie(resp))
		}
		bodies = append(bodies, body)
	}
	if bodies[0] != bodies[2] || !strings.Contains(bodies[0], "Login failed: the token was not accepted.") {
		t.Errorf("failed logins say different things or not the generic message:\n%s\n%s", bodies[0], bodies[2])
	}
	if resp := c.login("good"); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("login after 3 failures = %d, want 429", resp.StatusCode)
	}
}

func TestLoginLogout(t *testing.T) {
	t.Parallel()
	c := newClient(t, &fakeSource{}, Options{})
	resp, _ := c.get("/acme/web/stacks")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login?next=") {
		t.Fatalf("GET stacks without session = %d %q, want 303 to /login", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, _ = c.do("POST", "/login", url.Values{"token": {"good"}, "next": {"/acme/web/locks"}}, nil)
	if got := resp.Header.Get("Location"); got != "/acme/web/locks" {
		t.Errorf("login with next: Location %q", got)
	}
	resp, body := c.get("/acme/web/stacks")
	if resp.StatusCode != 200 || !strings.Contains(body, "token ci") || !strings.Contains(body, "Log out") {
		t.Fatalf("GET stacks after login = %d:\n%s", resp.StatusCode, body)
	}
	csrf := c.csrf()
	if resp, _ := c.do("POST", "/logout", url.Values{}, nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("logout without CSRF = %d, want 403", resp.StatusCode)
	}
	resp, _ = c.do("POST", "/logout", url.Values{"csrf": {csrf}}, nil)
	if resp.StatusCode != http.StatusSeeOther {
		t.Errorf("logout = %d", resp.StatusCode)
	}
	if resp, _ := c.get("/acme/web/stacks"); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("GET stacks after logout = %d, want 303 to login", resp.StatusCode)
	}
	// A foreign next is not followed.
	resp, _ = c.do("POST", "/login", url.Values{"token": {"good"}, "next": {"//evil.example/"}}, nil)
	if got := resp.Header.Get("Location"); got != "/" {
		t.Errorf("login with a foreign next: Location %q, want /", got)
	}
}

func TestURLLogin(t *testing.T) {
	t.Parallel()
	off := newClient(t, &fakeSource{}, Options{})
	if resp, _ := off.get("/login?token=good"); sessionCookie(resp) != nil {
		t.Errorf("URL login without URLLogin set a cookie")
	}
	on := newClient(t, &fakeSource{}, Options{URLLogin: true})
	if resp, _ := on.get("/login?token=good"); resp.StatusCode != http.StatusSeeOther || sessionCookie(resp) == nil {
		t.Errorf("URL login = %d, cookie %v", resp.StatusCode, sessionCookie(resp))
	}
}

func TestSessionExpiry(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := t0
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	c := newClient(t, &fakeSource{}, Options{Now: clock, SessionLifetime: time.Hour})
	c.login("good")
	if resp, _ := c.get("/acme/web/stacks"); resp.StatusCode != 200 {
		t.Fatalf("GET = %d", resp.StatusCode)
	}
	mu.Lock()
	now = now.Add(time.Hour)
	mu.Unlock()
	if resp, _ := c.get("/acme/web/stacks"); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("GET after the session's lifetime = %d, want 303 to login", resp.StatusCode)
	}
}

func TestSessionsBounded(t *testing.T) {
	t.Parallel()
	h := newConsole(&fakeSource{}, Options{MaxSessions: 2})
	srv := httptest.NewServer(h)
	defer srv.Close()
	for range 5 {
		c := &client{t: t, srv: srv, http: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
		c.login("good")
	}
	m := h.sessions.(*memorySessions)
	m.mu.Lock()
	n := len(m.m)
	m.mu.Unlock()
	if n != 2 {
		t.Errorf("sessions kept = %d, want 2", n)
	}
}

// fakeSessions is a SessionStore built from function fields.
type fakeSessions struct {
	PutF    func(context.Context, Session) error
	GetF    func(context.Context, string, time.Time) (*Session, error)
	DeleteF func(context.Context, string) error
}

func (f fakeSessions) Put(ctx context.Context, s Session) error { return f.PutF(ctx, s) }
func (f fakeSessions) Get(ctx context.Context, id string, now time.Time) (*Session, error) {
	return f.GetF(ctx, id, now)
}
func (f fakeSessions) Delete(ctx context.Context, id string) error { return f.DeleteF(ctx, id) }

// TestSessionStore: the console keeps its sessions in Options.Sessions (cdkx server's database), asks it
// on every request, removes a session at logout, and answers 503, logging nobody in, when it fails.
func TestSessionStore(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var log []string
	stored := map[string]Session{}
	var broken bool
	store := fakeSessions{
		PutF: func(_ context.Context, s Session) error {
			mu.Lock()
			defer mu.Unlock()
			if broken {
				return errors.New("database down")
			}
			log = append(log, "put "+s.Caller.Name)
			stored[s.ID] = s
			return nil
		},
		GetF: func(_ context.Context, id string, _ time.Time) (*Session, error) {
			mu.Lock()
			defer mu.Unlock()
			if broken {
				return nil, errors.New("database down")
			}
			s, ok := stored[id]
			if !ok {
				return nil, nil
			}
			return &s, nil
		},
		DeleteF: func(_ context.Context, id string) error {
			mu.Lock()
			defer mu.Unlock()
			log = append(log, "delete")
			delete(stored, id)
			return nil
		},
	}
	c := newClient(t, &fakeSource{}, Options{Sessions: store})
	c.login("good")
	if resp, _ := c.get("/acme/web/stacks"); resp.StatusCode != 200 {
		t.Fatalf("GET with a session from the store = %d, want 200", resp.StatusCode)
	}
	// Another console (a second replica) with the same store knows the session.
	other := newClient(t, &fakeSource{}, Options{Sessions: store})
	from, _ := url.Parse(c.srv.URL)
	to, _ := url.Parse(other.srv.URL)
	other.http.Jar.SetCookies(to, c.http.Jar.Cookies(from))
	if resp, _ := other.get("/acme/web/stacks"); resp.StatusCode != 200 {
		t.Errorf("GET on a second console with the same store = %d, want 200", resp.StatusCode)
	}
	mu.Lock()
	broken = true
	mu.Unlock()
	if resp, _ := c.get("/acme/web/stacks"); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("GET while the store fails = %d, want 503", resp.StatusCode)
	}
	fresh := newClient(t, &fakeSource{}, Options{Sessions: store})
	resp, _ := fresh.do("POST", "/login", url.Values{"token": {"good"}}, nil)
	if resp.StatusCode != http.StatusServiceUnavailable || len(resp.Cookies()) != 0 {
		t.Errorf("login while the store fails = %d with cookies %v, want 503 and none", resp.StatusCode, resp.Cookies())
	}
	mu.Lock()
	broken = false
	mu.Unlock()
	if resp, _ := c.do("POST", "/logout", url.Values{"csrf": {c.csrf()}}, nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("logout = %d, want 303", resp.StatusCode)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{"put ci", "delete"}, log); diff != "" || len(stored) != 0 {
		t.Errorf("store calls (-want +got):\n%s\nleft: %v", diff, stored)
	}
}

func TestCSRF(t *testing.T) {
	t.Parallel()
	var approved []string
	var mu sync.Mutex
	src := &fakeSource{ApproveF: func(_ context.Context, c Caller, _ Scope, id, comment string) error {
		mu.Lock()
		defer mu.Unlock()
		approved = append(approved, c.Name+" "+id+" "+comment)
		return nil
	}}
	c := newClient(t, src, Options{})
	c.login("good")
	csrf := c.csrf()
	path := "/acme/web/deployments/" + proposal.ID + "/approve"
	tests := []struct {
		name   string
		form   url.Values
		header http.Header
		want   int
	}{
		{"no token", url.Values{"comment": {"ok"}}, nil, 403},
		{"wrong token", url.Values{"comment": {"ok"}, "csrf": {csrf + "x"}}, nil, 403},
		{"other origin", url.Values{"comment": {"ok"}, "csrf": {csrf}}, http.Header{"Origin": {"http://evil.example"}}, 403},
		{"right token", url.Values{"comment": {"looks good"}, "csrf": {csrf}}, nil, 303},
	}
	for _, tt := range tests {
		resp, _ := c.do("POST", path, tt.form, tt.header)
		if resp.StatusCode != tt.want {
			t.Errorf("%s: POST approve = %d, want %d", tt.name, resp.StatusCode, tt.want)
		}
	}
	if diff := cmp.Diff([]string{"ci " + proposal.ID + " looks good"}, approved); diff != "" {
		t.Errorf("approvals (-want +got):\n%s", diff)
	}
}

func TestReadOnly(t *testing.T) {
	t.Parallel()
	called := false
	src := &fakeSource{
		ApproveF: func(context.Context, Caller, Scope, string, string) error { called = true; return nil },
		UnlockF:  func(context.Context, Caller, Scope, string, string) error { called = true; return nil },
	}
	c := newClient(t, src, Options{})
	c.login("reader")
	for _, path := range []string{"/acme/web/deployments/" + proposal.ID, "/acme/web/deployments/" + completed.ID, "/acme/web/locks"} {
		_, body := c.get(path)
		for _, b := range []string{">Approve<", ">Reject<", ">Abort<", ">Redeploy<", ">Unlock<"} {
			if strings.Contains(body, b) {
				t.Errorf("read-only GET %s shows button %s", path, b)
			}
		}
	}
	csrf := c.csrf()
	for _, path := range []string{"/acme/web/deployments/" + proposal.ID + "/approve", "/acme/web/deployments/" + proposal.ID + "/reject",
		"/acme/web/deployments/" + proposal.ID + "/abort", "/acme/web/deployments/" + completed.ID + "/redeploy", "/acme/web/locks/unlock"} {
		if resp, _ := c.do("POST", path, url.Values{"csrf": {csrf}, "stack": {"dns"}, "id": {"lock-1"}}, nil); resp.StatusCode != 403 {
			t.Errorf("read-only POST %s = %d, want 403", path, resp.StatusCode)
		}
	}
	if called {
		t.Error("a read-only caller's POST reached the Source")
	}
	if resp, _ := c.do("POST", "/logout", url.Values{"csrf": {csrf}}, nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("read-only logout = %d, want 303", resp.StatusCode)
	}
}

func TestTenancy(t *testing.T) {
	t.Parallel()
	c := newClient(t, &fakeSource{}, Options{})
	c.login("other")
	for _, path := range []string{"/acme/web/stacks", "/acme/web/deployments/" + proposal.ID, "/acme/web/locks", "/nope/web/stacks"} {
		if resp, _ := c.get(path); resp.StatusCode != 404 {
			t.Errorf("GET %s by a caller of another organization = %d, want 404", path, resp.StatusCode)
		}
	}
}

func TestActionErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		err      error
		want     int
		wantText string
		notText  string
	}{
		{"second person", &state.ForbiddenError{ID: proposal.ID, Reason: "ci proposed it and cannot approve it"}, 403, "ci proposed it and cannot approve it", ""},
		{"forbidden", ErrForbidden, 403, "You may not do this.", ""},
		{"not found", fmt.Errorf("read: %w", state.ErrNotFound), 404, "Not found.", ""},
		{"transition", &state.TransitionError{ID: proposal.ID, Status: state.StatusRejected, To: state.StatusApproved}, 409, "terminal status", ""},
		{"other", errors.New("pq: password authentication failed for user secret-admin"), 500, "Something went wrong", "secret-admin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newClient(t, &fakeSource{ApproveF: func(context.Context, Caller, Scope, string, string) error { return tt.err }}, Options{})
			c.login("good")
			resp, body := c.do("POST", "/acme/web/deployments/"+proposal.ID+"/approve", url.Values{"csrf": {c.csrf()}}, nil)
			if resp.StatusCode != tt.want || !strings.Contains(body, tt.wantText) || (tt.notText != "" && strings.Contains(body, tt.notText)) {
				t.Errorf("approve with %v = %d, want %d with %q:\n%s", tt.err, resp.StatusCode, tt.want, tt.wantText, body)
			}
		})
	}
}

func TestActions(t *testing.T) {
	t.Parallel()
	var got []string
	var mu sync.Mutex
	rec := func(s string) { mu.Lock(); defer mu.Unlock(); got = append(got, s) }
	src := &fakeSource{
		ApproveF: func(_ context.Context, _ Caller, _ Scope, id, comment string) error {
			rec("approve " + id[:8] + " " + comment)
			return nil
		},
		RejectF: func(_ context.Context, _ Caller, _ Scope, id, comment string) error {
			rec("reject " + id[:8] + " " + comment)
			return nil
		},
		AbortF: func(_ context.Context, _ Caller, _ Scope, id string) error { rec("abort " + id[:8]); return nil },
		RedeployF: func(_ context.Context, _ Caller, _ Scope, id string) (string, error) {
			rec("redeploy " + id[:8])
			return "33333333-cccc-4000-8000-000000000003", nil
		},
		UnlockF: func(_ context.Context, _ Caller, _ Scope, stack, id string) error {
			rec("unlock " + stack + " " + id)
			return nil
		},
	}
	c := newClient(t, src, Options{})
	c.login("good")
	csrf := c.csrf()
	_, body := c.get("/acme/web/deployments/" + proposal.ID)
	for _, b := range []string{">Approve<", ">Reject<", `name="comment"`} {
		if !strings.Contains(body, b) {
			t.Errorf("proposal page lacks %s", b)
		}
	}
	if strings.Contains(body, ">Redeploy<") || strings.Contains(body, ">Abort<") {
		t.Error("proposal page offers Redeploy or Abort")
	}
	_, body = c.get("/acme/web/deployments/" + completed.ID)
	if !strings.Contains(body, ">Redeploy<") || strings.Contains(body, ">Approve<") || strings.Contains(body, ">Abort<") {
		t.Errorf("completed page buttons wrong:\n%s", body)
	}
	_, body = c.get("/acme/web/locks/unlock?stack=dns&id=lock-1")
	if !strings.Contains(body, "deploy by carol@ci-7") || !strings.Contains(body, ">Unlock<") {
		t.Errorf("unlock confirmation lacks the holder or the button:\n%s", body)
	}
	wantLoc := map[string]string{
		"/acme/web/deployments/" + proposal.ID + "/approve":   "/acme/web/deployments/" + proposal.ID,
		"/acme/web/deployments/" + proposal.ID + "/reject":    "/acme/web/deployments/" + proposal.ID,
		"/acme/web/deployments/" + proposal.ID + "/abort":     "/acme/web/deployments/" + proposal.ID,
		"/acme/web/deployments/" + completed.ID + "/redeploy": "/acme/web/deployments/33333333-cccc-4000-8000-000000000003",
		"/acme/web/locks/unlock":                              "/acme/web/locks",
	}
	for _, path := range []string{"/acme/web/deployments/" + proposal.ID + "/approve", "/acme/web/deployments/" + proposal.ID + "/reject",
		"/acme/web/deployments/" + proposal.ID + "/abort", "/acme/web/deployments/" + completed.ID + "/redeploy", "/acme/web/locks/unlock"} {
		resp, _ := c.do("POST", path, url.Values{"csrf": {csrf}, "comment": {"why"}, "stack": {"dns"}, "id": {"lock-1"}}, nil)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != wantLoc[path] {
			t.Errorf("POST %s = %d %q, want 303 %q", path, resp.StatusCode, resp.Header.Get("Location"), wantLoc[path])
		}
	}
	want := []string{"approve 11111111 why", "reject 11111111 why", "abort 11111111", "redeploy 22222222", "unlock dns lock-1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
	src.RedeployF = func(context.Context, Caller, Scope, string) (string, error) { return "", nil }
	if resp, body := c.do("POST", "/acme/web/deployments/"+completed.ID+"/redeploy", url.Values{"csrf": {csrf}}, nil); resp.StatusCode != 200 ||
		!strings.Contains(body, "no proposal was recorded") {
		t.Errorf("a redeploy with nothing to change = %d:\n%s", resp.StatusCode, body)
	}
	if resp, _ := c.do("POST", "/acme/web/deployments/"+proposal.ID+"/explode", url.Values{"csrf": {csrf}}, nil); resp.StatusCode != 404 {
		t.Errorf("unknown action = %d, want 404", resp.StatusCode)
	}
}

// TestNoRedeploy: a console whose Source cannot plan again (cdkx server) offers no Redeploy.
func TestNoRedeploy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		noRedeploy, want bool
	}{{false, true}, {true, false}} {
		c := newClient(t, &fakeSource{}, Options{NoRedeploy: tc.noRedeploy})
		c.login("good")
		_, body := c.get("/acme/web/deployments/" + completed.ID)
		if got := strings.Contains(body, ">Redeploy<"); got != tc.want {
			t.Errorf("NoRedeploy %v: the completed deployment's page offers Redeploy: %v, want %v", tc.noRedeploy, got, tc.want)
		}
	}
}

func TestEscaping(t *testing.T) {
	t.Parallel()
	hostile := proposal
	hostile.Message = "<script>alert(1)</script>\u202eevil\x1b[31m"
	hostile.CreatedBy = "<img src=x onerror=alert(1)>"
	hostile.RejectionComment = "no <script>alert(2)</script>\u202e"
	hostile.Plan = &state.Plan{Create: 1, Values: true, Steps: []state.PlanStep{{Resource: "dns/<b>", Stack: "dns", LogicalID: "<b>x</b>", Type: "t",
		Op: "create", Inputs: map[string]any{"name": "</pre><script>x()</script>\u202e"}}}}
	src := &fakeSource{DeploymentF: func(context.Context, Caller, Scope, string) (*state.Deployment, error) { d := hostile; return &d, nil }}
	c := newClient(t, src, Options{})
	c.login("good")
	_, body := c.get("/acme/web/deployments/" + proposal.ID)
	for _, bad := range []string{"<script>alert", "<img", "\u202e", "\x1b", "<b>x</b>", "</pre><script>"} {
		if strings.Contains(body, bad) {
			t.Errorf("the page contains %q as it is", bad)
		}
	}
	for _, good := range []string{"&lt;script&gt;alert(1)&lt;/script&gt;", `\u202eevil\x1b[31m`, "&lt;img src=x onerror=alert(1)&gt;", "Rejection comment", `no &lt;script&gt;alert(2)&lt;/script&gt;\u202e`} {
		if !strings.Contains(body, good) {
			t.Errorf("the page lacks %q (escaped, visible)", good)
		}
	}
}

func TestStackPage(t *testing.T) {
	t.Parallel()
	running := state.Deployment{ID: "44444444-dddd-4000-8000-000000000004", Stack: "dns", Kind: state.KindDeploy, Status: state.StatusRunning, Seq: 5}
	pending := state.Deployment{ID: "55555555-eeee-4000-8000-000000000005", Stack: "dns", Kind: state.KindDeploy, Status: state.StatusPending, Seq: 6}
	approved := state.Deployment{ID: "66666666-ffff-4000-8000-000000000006", Stack: "dns", Kind: state.KindDeploy, Status: state.StatusApproved, Seq: 4}
	var queries []Query
	var mu sync.Mutex
	src := &fakeSource{DeploymentsF: func(_ context.Context, _ Caller, _ Scope, q Query) (Page, error) {
		mu.Lock()
		queries = append(queries, q)
		mu.Unlock()
		if len(q.Statuses) == 4 { // the queue, newest first as a Source returns it
			return Page{Deployments: []state.Deployment{pending, running, approved, proposal}}, nil
		}
		if q.Cursor == "" {
			return Page{Deployments: []state.Deployment{completed}, Next: "c2"}, nil
		}
		return Page{Deployments: []state.Deployment{}}, nil
	}}
	c := newClient(t, src, Options{})
	c.login("good")
	_, body := c.get("/acme/web/stacks/dns?status=COMPLETED&kind=deploy&status=BOGUS")
	order := regexp.MustCompile(`<span class="status s-[a-z]+">([A-Z]+)</span>`).FindAllStringSubmatch(body, -1)
	var got []string
	for _, m := range order {
		got = append(got, m[1])
	}
	if diff := cmp.Diff([]string{"RUNNING", "APPROVED", "PENDING", "PROPOSED", "COMPLETED"}, got); diff != "" {
		t.Errorf("queue then history statuses (-want +got):\n%s", diff)
	}
	if !strings.Contains(body, `href="?cursor=c2&amp;kind=deploy&amp;status=COMPLETED"`) {
		t.Errorf("no link to the next page with the filters:\n%s", body)
	}
	mu.Lock()
	hist := queries[1]
	mu.Unlock()
	if diff := cmp.Diff(Query{Stack: "dns", Statuses: []state.DeploymentStatus{"COMPLETED"}, Kinds: []state.DeploymentKind{"deploy"}, Limit: historyPage}, hist); diff != "" {
		t.Errorf("history query (-want +got):\n%s", diff)
	}
}

// bigPlanSource is a Source whose every deployment is the proposal with a plan of 100,000 creates.
func bigPlanSource() *fakeSource {
	big := proposal
	big.Plan = &state.Plan{Create: 100000, Values: true}
	for i := range 100000 {
		big.Plan.Steps = append(big.Plan.Steps, state.PlanStep{Resource: fmt.Sprintf("dns/R%d", i), Stack: "dns", LogicalID: fmt.Sprintf("R%d", i),
			Type: "t", Op: "create", Inputs: map[string]any{"n": i}})
	}
	return &fakeSource{DeploymentF: func(context.Context, Caller, Scope, string) (*state.Deployment, error) { return &big, nil }}
}

// BenchmarkBigPlanPage serves the page of a deployment whose plan has 100,000 steps (a page of steps deep
// in it): issue 23 asks that its summary show at once.
func BenchmarkBigPlanPage(b *testing.B) {
	srv := httptest.NewServer(New(bigPlanSource(), Options{}))
	defer srv.Close()
	jar, _ := cookiejar.New(nil)
	cl := &http.Client{Jar: jar}
	if resp, err := cl.PostForm(srv.URL+"/login", url.Values{"token": {"good"}}); err != nil || resp.StatusCode != 200 {
		b.Fatalf("login: %v", err)
	} else {
		resp.Body.Close()
	}
	for b.Loop() {
		resp, err := cl.Get(srv.URL + "/acme/web/deployments/" + proposal.ID + "?steps=40000")
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("GET the page: %v", err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// TestEventsPaged: a run's events are shown a page at a time, the newest first shown (and only there
// streamed live), with links to earlier and later pages.
func TestEventsPaged(t *testing.T) {
	t.Parallel()
	running := proposal
	running.Status = state.StatusRunning
	var all []state.Event
	for i := range 1200 {
		all = append(all, state.Event{Seq: int64(i + 1), Time: t0, Stack: "dns", LogicalID: fmt.Sprintf("E%d", i+1), Status: "CREATE_COMPLETE"})
	}
	src := &fakeSource{
		DeploymentF: func(context.Context, Caller, Scope, string) (*state.Deployment, error) { return &running, nil },
		EventsF:     func(context.Context, Caller, Scope, string, int) ([]state.Event, error) { return all, nil },
	}
	c := newClient(t, src, Options{})
	c.login("good")
	page := "/acme/web/deployments/" + running.ID
	tests := []struct {
		query                    string
		want, notWant            []string
		live, earlier, laterLink bool
	}{
		{"", []string{"Events 701–1200 of 1200.", ">E701<", ">E1200<", `data-after="1200"`}, []string{">E700<"}, true, true, false},
		{"?events=0", []string{"Events 1–500 of 1200.", ">E1<", ">E500<"}, []string{">E501<"}, false, false, true},
		{"?events=600", []string{"Events 601–1100 of 1200."}, nil, false, true, true},
		{"?events=99999", []string{"Events 701–1200 of 1200."}, nil, true, true, false},
	}
	for _, tt := range tests {
		_, body := c.get(page + tt.query)
		for _, w := range tt.want {
			if !strings.Contains(body, w) {
				t.Errorf("%s%s lacks %q", page, tt.query, w)
			}
		}
		for _, w := range tt.notWant {
			if strings.Contains(body, w) {
				t.Errorf("%s%s shows %q, on another page", page, tt.query, w)
			}
		}
		if got := strings.Contains(body, "data-live="); got != tt.live {
			t.Errorf("%s%s live = %v, want %v", page, tt.query, got, tt.live)
		}
		if got := strings.Contains(body, ">Earlier events<"); got != tt.earlier {
			t.Errorf("%s%s has a link to earlier events = %v, want %v", page, tt.query, got, tt.earlier)
		}
		if got := strings.Contains(body, ">Later events<"); got != tt.laterLink {
			t.Errorf("%s%s has a link to later events = %v, want %v", page, tt.query, got, tt.laterLink)
		}
	}
}

func TestBigPlanPaged(t *testing.T) {
	t.Parallel()
	src := bigPlanSource()
	c := newClient(t, src, Options{})
	c.login("good")
	start := time.Now()
	_, body := c.get("/acme/web/deployments/" + proposal.ID + "?steps=400")
	took := time.Since(start)
	if !strings.Contains(body, "Plan: 100000 to create") || !strings.Contains(body, "Steps 401–600 of 100000") ||
		!strings.Contains(body, "t R400") || strings.Contains(body, "t R600") || !strings.Contains(body, `?steps=600#plan`) {
		t.Errorf("the big plan's page 3 is wrong:\n%.3000s", body)
	}
	t.Logf("a page of a 100,000-step plan in %v", took)
}

func TestEventsStream(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	all := []state.Event{
		{Seq: 1, Time: t0, Stack: "dns", Status: "DEPLOYING"},
		{Seq: 2, Time: t0, Stack: "dns", LogicalID: "Zone", Type: "dns:zone", Status: "UPDATING"},
		{Seq: 3, Time: t0, Stack: "dns", LogicalID: "Zone", Type: "dns:zone", Status: "UPDATED", Reason: "<b>\u202e"},
		{Seq: 4, Time: t0, Stack: "dns", Status: "DEPLOYED"},
	}
	polls := 0
	d := completed
	d.Status = state.StatusRunning
	src := &fakeSource{
		DeploymentF: func(context.Context, Caller, Scope, string) (*state.Deployment, error) {
			mu.Lock()
			defer mu.Unlock()
			polls++
			x := d
			if polls >= 3 {
				x.Status = state.StatusCompleted
			}
			return &x, nil
		},
		EventsF: func(_ context.Context, _ Caller, _ Scope, _ string, after int) ([]state.Event, error) {
			mu.Lock()
			defer mu.Unlock()
			n := min(len(all), polls*2) // two more events each poll
			var out []state.Event
			for _, e := range all[:n] {
				if e.Seq > int64(after) {
					out = append(out, e)
				}
			}
			return out, nil
		},
	}
	c := newClient(t, src, Options{PollEvery: time.Millisecond})
	c.login("good")
	resp, body := c.get("/acme/web/deployments/" + d.ID + "/events")
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	var got []string
	for _, m := range regexp.MustCompile(`(?m)^(id: \d+\n)?event: (\w+)\ndata: (.*)$`).FindAllStringSubmatch(body, -1) {
		got = append(got, m[2]+" "+m[3])
	}
	want := []string{
		`event {"seq":1,"time":"12:00:00.000","stack":"dns","logicalId":"","type":"","status":"DEPLOYING","reason":""}`,
		`event {"seq":2,"time":"12:00:00.000","stack":"dns","logicalId":"Zone","type":"dns:zone","status":"UPDATING","reason":""}`,
		`event {"seq":3,"time":"12:00:00.000","stack":"dns","logicalId":"Zone","type":"dns:zone","status":"UPDATED","reason":"\u003cb\u003e\\u202e"}`,
		`event {"seq":4,"time":"12:00:00.000","stack":"dns","logicalId":"","type":"","status":"DEPLOYED","reason":""}`,
		`done {"error":"","finishedAt":"` + d.FinishedAt.Format(time.RFC3339) + `","status":"COMPLETED","version":0}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stream (-want +got):\n%s\nbody:\n%s", diff, body)
	}
}

func TestCompareResources(t *testing.T) {
	t.Parallel()
	a := map[string]any{
		"dns/Zone":   map[string]any{"type": "dns:zone", "properties": map[string]any{"ttl": 60, "name": "example.com"}},
		"dns/Record": map[string]any{"type": "dns:record", "properties": map[string]any{"values": []any{"1.2.3.4"}}},
		"dns/Gone":   map[string]any{"type": "dns:record"},
	}
	b := map[string]any{
		"dns/Zone":   map[string]any{"type": "dns:zone", "properties": map[string]any{"ttl": 300, "name": "example.com"}},
		"dns/Record": map[string]any{"type": "dns:record", "properties": map[string]any{"values": []any{"1.2.3.4"}}},
		"dns/New":    map[string]any{"type": "dns:record"},
	}
	got := compareResources(a, b)
	want := []compareResource{
		{Resource: "dns/Gone", OnlyA: true, Changed: true, Rows: []compareRow{{Path: "type", A: `"dns:record"`, InA: true, Change: true}}},
		{Resource: "dns/New", OnlyB: true, Changed: true, Rows: []compareRow{{Path: "type", B: `"dns:record"`, InB: true, Change: true}}},
		{Resource: "dns/Record", Rows: []compareRow{
			{Path: "properties.values[0]", A: `"1.2.3.4"`, B: `"1.2.3.4"`, InA: true, InB: true},
			{Path: "type", A: `"dns:record"`, B: `"dns:record"`, InA: true, InB: true}}},
		{Resource: "dns/Zone", Changed: true, Rows: []compareRow{
			{Path: "properties.name", A: `"example.com"`, B: `"example.com"`, InA: true, InB: true},
			{Path: "properties.ttl", A: "60", B: "300", InA: true, InB: true, Change: true},
			{Path: "type", A: `"dns:zone"`, B: `"dns:zone"`, InA: true, InB: true}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("compareResources (-want +got):\n%s", diff)
	}
}

func TestBasePath(t *testing.T) {
	t.Parallel()
	c := newClient(t, &fakeSource{}, Options{BasePath: "/console/"})
	resp, _ := c.do("POST", "/console/login", url.Values{"token": {"good"}}, nil)
	ck := sessionCookie(resp)
	if resp.StatusCode != http.StatusSeeOther || ck == nil || ck.Path != "/console" || resp.Header.Get("Location") != "/console/" {
		t.Fatalf("login under a base path = %d, cookie %v, Location %q", resp.StatusCode, ck, resp.Header.Get("Location"))
	}
	_, body := c.get("/console/acme/web/stacks")
	if !strings.Contains(body, `href="/console/static/console.css"`) || !strings.Contains(body, `href="/console/acme/web/stacks/dns"`) {
		t.Errorf("links under the base path wrong:\n%s", body)
	}
	for _, path := range []string{"/acme/web/stacks", "/consoleacme/web/stacks"} {
		if resp, _ := c.get(path); resp.StatusCode != 404 {
			t.Errorf("GET %s, outside the base path = %d, want 404", path, resp.StatusCode)
		}
	}
}

func TestAuditAndMoved(t *testing.T) {
	t.Parallel()
	rejected := state.Deployment{ID: "77777777-0000-4000-8000-000000000007", Stack: "dns", Kind: state.KindDeploy, Status: state.StatusRejected,
		CreatedBy: "dave", CreatedAt: t0.Add(-30 * time.Minute), RejectedBy: "erin", FinishedAt: t0.Add(-20 * time.Minute)}
	approved := completed
	approved.ApprovedBy, approved.ApprovalComment, approved.ApprovedAt = "frank", "<i>ship it</i>", t0.Add(-50*time.Minute)
	// A record approved before records kept the time of approval: its row says so.
	older := completed
	older.ID, older.CreatedBy, older.CreatedAt, older.ApprovedBy = "88888888-0000-4000-8000-000000000008", "gina", t0.Add(-2*time.Hour), "hank"
	src := &fakeSource{DeploymentsF: func(_ context.Context, _ Caller, _ Scope, q Query) (Page, error) {
		return Page{Deployments: []state.Deployment{proposal, rejected, approved, older}, Next: "n1"}, nil
	}}
	c := newClient(t, src, Options{})
	c.login("good")
	_, body := c.get("/acme/web/audit")
	var got []string
	for _, m := range regexp.MustCompile(`<tr><td>(?:<time>([^<]*)</time>|<span class="muted">not recorded</span>)</td><td>([^<]*)</td><td>([^<]*)</td>`).FindAllStringSubmatch(body, -1) {
		got = append(got, m[1]+" "+m[2]+" "+m[3])
	}
	want := []string{
		"2026-11-27T12:00:00Z alice created (PROPOSED)",
		"2026-11-27T11:40:00Z erin rejected",
		"2026-11-27T11:30:00Z dave created (REJECTED)",
		"2026-11-27T11:10:00Z frank approved",
		"2026-11-27T11:00:00Z bob created (COMPLETED)",
		"2026-11-27T10:00:00Z gina created (COMPLETED)",
		" hank approved",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("audit rows (-want +got):\n%s", diff)
	}
	if !strings.Contains(body, `<td class="msg">&lt;i&gt;ship it&lt;/i&gt;</td>`) {
		t.Errorf("the audit list lacks the approval comment, escaped:\n%s", body)
	}
	if !strings.Contains(body, `href="?cursor=n1"`) {
		t.Error("the audit page has no link to older entries")
	}
	// The stack moved since the proposal was planned (version 0; the fake's stack has Version 0 too).
	moved := &fakeSource{StacksF: func(context.Context, Caller, Scope) ([]StackSummary, error) {
		return []StackSummary{{Name: "dns", Version: 7}}, nil
	}}
	c2 := newClient(t, moved, Options{})
	c2.login("good")
	_, body = c2.get("/acme/web/deployments/" + proposal.ID)
	if !strings.Contains(body, "The stack has moved since this deployment was planned") || !strings.Contains(body, "now at version 7") {
		t.Errorf("no moved warning:\n%s", body)
	}
	_, body = c.get("/acme/web/deployments/" + proposal.ID)
	if strings.Contains(body, "The stack has moved") {
		t.Error("a moved warning for a stack that did not move")
	}
}

var update = flag.Bool("update", false, "rewrite the golden files")

// golden compares got with testdata/NAME.golden (rewritten with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}

// TestPagesGolden keeps the markup the browser tests select by (data-status, button texts, field names,
// class "event") under review: the pages of the fake project, with the session's CSRF token scrubbed.
func TestPagesGolden(t *testing.T) {
	t.Parallel()
	src := &fakeSource{EventsF: func(context.Context, Caller, Scope, string, int) ([]state.Event, error) {
		return []state.Event{{Seq: 1, Time: t0, Stack: "dns", Status: "DEPLOYING"}}, nil
	}}
	c := newClient(t, src, Options{})
	c.login("good")
	for name, path := range map[string]string{
		"stacks": "/acme/web/stacks", "stack": "/acme/web/stacks/dns", "proposal": "/acme/web/deployments/" + proposal.ID,
		"completed": "/acme/web/deployments/" + completed.ID, "locks": "/acme/web/locks", "audit": "/acme/web/audit",
	} {
		_, body := c.get(path)
		golden(t, "TestPagesGolden-"+name, csrfRE.ReplaceAllString(body, `name="csrf" value="CSRF"`))
	}
}
