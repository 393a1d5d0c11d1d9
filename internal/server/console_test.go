package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/internal/console"
	"github.com/cdkx-dev/cdkx/internal/server/storage"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// consoleEnv is a server with the console and --require-second-person, two organizations ("org" and
// "other", project "proj") and the tokens of the console's tests: alice (every organization, the
// proposer of every deployment), bob (org), reader (org, read-only), carol (other).
type consoleEnv struct {
	*env
	src                         console.Source
	alice, bob, reader, carol   console.Caller
	bobTok, readerTok, carolTok string
}

func newConsoleEnv(t *testing.T, opts console.Options) *consoleEnv {
	t.Helper()
	e := &consoleEnv{env: newEnvWith(t, Options{RequireSecondPerson: true, Console: &opts})}
	e.src = e.srv.ConsoleSource()
	e.bobTok = strings.TrimPrefix(e.mustCreateToken("bob", ForOrgs("org")), "token ")
	e.readerTok = strings.TrimPrefix(e.mustCreateToken("reader", ForOrgs("org"), ReadOnly()), "token ")
	e.carolTok = strings.TrimPrefix(e.mustCreateToken("carol", ForOrgs("other")), "token ")
	e.alice = e.caller(strings.TrimPrefix(e.token, "token "))
	e.bob, e.reader, e.carol = e.caller(e.bobTok), e.caller(e.readerTok), e.caller(e.carolTok)
	e.createStack("dev")
	e.createStack("prod")
	e.must(200, "POST", "/api/stacks/other/proj", e.token, map[string]any{"stackName": "dev"})
	return e
}

// caller authenticates tok.
func (e *consoleEnv) caller(tok string) console.Caller {
	e.t.Helper()
	c, err := e.src.Authenticate(context.Background(), tok)
	if err != nil {
		e.t.Fatalf("Authenticate(%s) = %v", tok, err)
	}
	return c
}

// createIn creates ds in org's project proj (alice).
func (e *consoleEnv) createIn(org string, ds ...state.Deployment) {
	e.t.Helper()
	e.must(200, "POST", "/api/cdkx/"+org+"/proj/deployments", e.token, deploymentsBody{Deployments: ds})
}

var (
	orgScope   = console.Scope{Org: "org", Project: "proj"}
	otherScope = console.Scope{Org: "other", Project: "proj"}
)

func TestConsoleAuthenticate(t *testing.T) {
	e := newConsoleEnv(t, console.Options{})
	want := map[string]console.Caller{
		"alice":  {Name: "alice"},
		"bob":    {Name: "bob", Orgs: []string{"org"}},
		"reader": {Name: "reader", ReadOnly: true, Orgs: []string{"org"}},
		"carol":  {Name: "carol", Orgs: []string{"other"}},
	}
	got := map[string]console.Caller{"alice": e.alice, "bob": e.bob, "reader": e.reader, "carol": e.carol}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("callers (-want +got):\n%s", diff)
	}
	for _, tok := range []string{"", "  ", "cdkx-0000", e.bobTok + "x"} {
		if _, err := e.src.Authenticate(context.Background(), tok); !errors.Is(err, console.ErrUnauthorized) {
			t.Errorf("Authenticate(%q) = %v, want ErrUnauthorized", tok, err)
		}
	}
	// A revoked token's sessions end at their next call.
	if err := e.srv.RevokeToken(context.Background(), "bob"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.src.Stacks(context.Background(), e.bob, orgScope); !errors.Is(err, console.ErrUnauthorized) {
		t.Errorf("Stacks(revoked bob) = %v, want ErrUnauthorized", err)
	}
}

func TestConsoleScopes(t *testing.T) {
	e := newConsoleEnv(t, console.Options{})
	for _, tt := range []struct {
		c    console.Caller
		want []console.Scope
	}{
		{e.alice, []console.Scope{orgScope, otherScope}},
		{e.bob, []console.Scope{orgScope}},
		{e.reader, []console.Scope{orgScope}},
		{e.carol, []console.Scope{otherScope}},
	} {
		got, err := e.src.Scopes(context.Background(), tt.c)
		if err != nil {
			t.Fatalf("Scopes(%s) = %v", tt.c.Name, err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Scopes(%s) (-want +got):\n%s", tt.c.Name, diff)
		}
	}
}

// TestConsoleTenancy checks that every call of a caller on another organization's scope, or on another
// organization's deployment through its own scope, answers ErrNotFound and changes nothing.
func TestConsoleTenancy(t *testing.T) {
	e := newConsoleEnv(t, console.Options{})
	e.createIn("org", dep("mine", "dev", state.StatusProposed))
	e.createIn("other", dep("theirs", "dev", state.StatusProposed))
	ctx := context.Background()
	calls := map[string]func(c console.Caller, sc console.Scope, id string) error{
		"Stacks": func(c console.Caller, sc console.Scope, _ string) error {
			_, err := e.src.Stacks(ctx, c, sc)
			return err
		},
		"Deployments": func(c console.Caller, sc console.Scope, _ string) error {
			_, err := e.src.Deployments(ctx, c, sc, console.Query{})
			return err
		},
		"Deployment": func(c console.Caller, sc console.Scope, id string) error {
			_, err := e.src.Deployment(ctx, c, sc, id)
			return err
		},
		"Events": func(c console.Caller, sc console.Scope, id string) error {
			_, err := e.src.Events(ctx, c, sc, id, 0)
			return err
		},
		"Locks": func(c console.Caller, sc console.Scope, _ string) error {
			_, err := e.src.Locks(ctx, c, sc)
			return err
		},
		"Approve": func(c console.Caller, sc console.Scope, id string) error { return e.src.Approve(ctx, c, sc, id, "ok") },
		"Reject":  func(c console.Caller, sc console.Scope, id string) error { return e.src.Reject(ctx, c, sc, id, "no") },
		"Abort":   func(c console.Caller, sc console.Scope, id string) error { return e.src.Abort(ctx, c, sc, id) },
		"Redeploy": func(c console.Caller, sc console.Scope, id string) error {
			_, err := e.src.Redeploy(ctx, c, sc, id)
			return err
		},
		"Unlock": func(c console.Caller, sc console.Scope, _ string) error {
			return e.src.Unlock(ctx, c, sc, "dev", "any")
		},
	}
	before := dumpTables(t, e.env)
	for name, call := range calls {
		// bob (org) on other's scope; carol (other) on org's scope.
		for _, tt := range []struct {
			c  console.Caller
			sc console.Scope
			id string
		}{{e.bob, otherScope, "theirs"}, {e.carol, orgScope, "mine"}, {e.bob, console.Scope{Org: "BAD ORG", Project: "proj"}, "mine"}} {
			if err := call(tt.c, tt.sc, tt.id); !errors.Is(err, console.ErrNotFound) {
				t.Errorf("%s(%s, %v, %s) = %v, want ErrNotFound", name, tt.c.Name, tt.sc, tt.id, err)
			}
		}
	}
	// Another organization's deployment ID through one's own scope: absent.
	for _, name := range []string{"Deployment", "Approve", "Reject", "Abort", "Redeploy"} {
		if err := calls[name](e.bob, orgScope, "theirs"); !errors.Is(err, console.ErrNotFound) {
			t.Errorf("%s(bob, org, theirs) = %v, want ErrNotFound", name, err)
		}
	}
	if events, err := e.src.Events(ctx, e.bob, orgScope, "theirs", 0); err != nil || len(events) != 0 {
		t.Errorf("Events(bob, org, theirs) = %v, %v; want none", events, err)
	}
	if diff := cmp.Diff(before, dumpTables(t, e.env)); diff != "" {
		t.Errorf("refused calls changed the database (-before +after):\n%s", diff)
	}
}

// TestConsoleActions checks each action's rules: the read-only token acts on nothing, the proposer
// cannot approve its own proposal (--require-second-person), a second token can, with the token's name
// recorded.
func TestConsoleActions(t *testing.T) {
	e := newConsoleEnv(t, console.Options{})
	e.createIn("org", dep("p1", "dev", state.StatusProposed), dep("p2", "prod", state.StatusProposed), dep("p3", "prod", state.StatusProposed))
	ctx := context.Background()

	before := dumpTables(t, e.env)
	for name, err := range map[string]error{
		"Approve":  e.src.Approve(ctx, e.reader, orgScope, "p1", "lgtm"),
		"Reject":   e.src.Reject(ctx, e.reader, orgScope, "p1", "no"),
		"Abort":    e.src.Abort(ctx, e.reader, orgScope, "p1"),
		"Unlock":   e.src.Unlock(ctx, e.reader, orgScope, "dev", "x"),
		"Redeploy": func() error { _, err := e.src.Redeploy(ctx, e.reader, orgScope, "p1"); return err }(),
	} {
		if !errors.Is(err, console.ErrForbidden) {
			t.Errorf("%s(reader) = %v, want ErrForbidden", name, err)
		}
	}
	var fe *state.ForbiddenError
	if err := e.src.Approve(ctx, e.alice, orgScope, "p1", "mine"); !errors.As(err, &fe) || !strings.Contains(fe.Reason, "second person") {
		t.Errorf("Approve(proposer alice) = %v, want the second-person rule's *state.ForbiddenError", err)
	}
	if diff := cmp.Diff(before, dumpTables(t, e.env)); diff != "" {
		t.Errorf("refused actions changed the database (-before +after):\n%s", diff)
	}

	if err := e.src.Approve(ctx, e.bob, orgScope, "p1", "lgtm"); err != nil {
		t.Fatalf("Approve(bob) = %v", err)
	}
	if err := e.src.Reject(ctx, e.bob, orgScope, "p2", "too wide"); err != nil {
		t.Fatalf("Reject(bob) = %v", err)
	}
	var te *state.TransitionError
	if err := e.src.Approve(ctx, e.bob, orgScope, "p2", ""); !errors.As(err, &te) {
		t.Errorf("Approve(REJECTED p2) = %v, want a *state.TransitionError", err)
	}
	if err := e.src.Abort(ctx, e.bob, orgScope, "p1"); err != nil {
		t.Fatalf("Abort(APPROVED p1) = %v", err)
	}
	if _, err := e.src.Redeploy(ctx, e.bob, orgScope, "p1"); !errors.As(err, &fe) || !strings.Contains(fe.Reason, "cdkx deployments redeploy p1") {
		t.Errorf("Redeploy(p1) = %v, want a *state.ForbiddenError naming the CLI's command", err)
	}
	got := map[string]string{}
	for _, id := range []string{"p1", "p2", "p3"} {
		d, err := e.src.Deployment(ctx, e.reader, orgScope, id)
		if err != nil {
			t.Fatalf("Deployment(%s) = %v", id, err)
		}
		got[id] = fmt.Sprintf("%s approved=%q (%q) rejected=%q (%q) aborted=%q error=%q", d.Status, d.ApprovedBy, d.ApprovalComment,
			d.RejectedBy, d.RejectionComment, d.AbortedBy, d.Error)
	}
	want := map[string]string{
		"p1": `ABORTED approved="bob" ("lgtm") rejected="" ("") aborted="bob" error="aborted by bob"`,
		"p2": `REJECTED approved="" ("") rejected="bob" ("too wide") aborted="" error="rejected: too wide"`,
		"p3": `PROPOSED approved="" ("") rejected="" ("") aborted="" error=""`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("records after the actions (-want +got):\n%s", diff)
	}
}

// TestConsoleAbortRunning checks that aborting a RUNNING deployment asks its runner to stop.
func TestConsoleAbortRunning(t *testing.T) {
	e := newConsoleEnv(t, console.Options{})
	e.createIn("org", dep("r", "dev", state.StatusProposed))
	ctx := context.Background()
	if err := e.src.Approve(ctx, e.bob, orgScope, "r", ""); err != nil {
		t.Fatal(err)
	}
	e.must(200, "POST", deps+"/claim", e.token, map[string]any{"ids": []string{"r"}, "runner": "agent"})
	if err := e.src.Abort(ctx, e.bob, orgScope, "r"); err != nil {
		t.Fatalf("Abort(RUNNING r) = %v", err)
	}
	d := e.get("r")
	if d.Status != state.StatusRunning || d.AbortedBy != "bob" {
		t.Errorf("r after Abort = %s aborted by %q, want RUNNING aborted by bob", d.Status, d.AbortedBy)
	}
}

func TestConsoleStacksAndLocks(t *testing.T) {
	e := newConsoleEnv(t, console.Options{})
	e.createIn("org", dep("a", "dev", state.StatusProposed), dep("b", "dev", state.StatusProposed), dep("c", "prod", state.StatusProposed))
	ctx := context.Background()
	for _, id := range []string{"a", "b"} {
		if err := e.src.Approve(ctx, e.bob, orgScope, id, ""); err != nil {
			t.Fatal(err)
		}
	}
	e.must(200, "POST", deps+"/claim", e.token, map[string]any{"ids": []string{"a"}, "runner": "agent"})
	// A lock of the cdkx CLI (an update created with its holder) and one of the Pulumi CLI (none).
	holder := state.LockInfo{ID: "lock-1", Operation: "deploy", User: "dora", Host: "ci", PID: 7}
	e.must(200, "POST", "/api/stacks/org/proj/dev/update", e.token, map[string]any{"name": "proj", "cdkxLock": holder})
	pulumiUpdate, _ := e.startUpdate("prod", "update")

	stacks, err := e.src.Stacks(ctx, e.reader, orgScope)
	if err != nil {
		t.Fatalf("Stacks = %v", err)
	}
	got := []string{}
	for _, s := range stacks {
		line := fmt.Sprintf("%s status=%s last=%s waiting=%d proposed=%d", s.Name, s.Status, s.Last.ID, s.Waiting, s.Proposed)
		if s.Running != nil {
			line += " running=" + s.Running.ID
		}
		if s.Lock != nil {
			line += " lock=" + s.Lock.ID + " by " + s.Lock.User
		}
		if s.Last.Plan != nil {
			t.Errorf("Stacks: %s's last deployment has its plan, want none", s.Name)
		}
		got = append(got, line)
	}
	want := []string{
		"dev status=APPROVED last=b waiting=1 proposed=0 running=a lock=lock-1 by dora",
		"prod status=PROPOSED last=c waiting=0 proposed=1 lock=" + pulumiUpdate + " by pulumi",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Stacks (-want +got):\n%s", diff)
	}

	// Unlock: the holder's update is cancelled; an unknown lock is absent.
	if err := e.src.Unlock(ctx, e.bob, orgScope, "dev", "no-such-lock"); !errors.Is(err, console.ErrNotFound) {
		t.Errorf("Unlock(unknown lock) = %v, want ErrNotFound", err)
	}
	if err := e.src.Unlock(ctx, e.bob, orgScope, "dev", "lock-1"); err != nil {
		t.Fatalf("Unlock(dev, lock-1) = %v", err)
	}
	locks, err := e.src.Locks(ctx, e.bob, orgScope)
	if err != nil {
		t.Fatal(err)
	}
	if len(locks) != 1 || locks[0].Stack != "prod" || locks[0].ID != pulumiUpdate {
		t.Errorf("Locks after unlocking dev = %+v, want prod's alone", locks)
	}
	if s := e.snapshot("dev"); s.Statuses != "cancelled" {
		t.Errorf("dev's updates after Unlock = %q, want cancelled", s.Statuses)
	}
}

func TestConsoleDeploymentPages(t *testing.T) {
	e := newConsoleEnv(t, console.Options{})
	var ds []state.Deployment
	for i := range 7 {
		d := dep(fmt.Sprintf("d%d", i), []string{"dev", "prod"}[i%2], state.StatusProposed)
		if i == 3 {
			d.Kind = state.KindPlan
			d.Status = state.StatusPending
		}
		d.Plan = &state.Plan{Create: 1, Steps: []state.PlanStep{{Resource: "dev/A", Op: "create"}}, SnapshotHash: d.SnapshotHash}
		ds = append(ds, d)
	}
	e.createIn("org", ds...)
	e.createIn("other", dep("x", "dev", state.StatusProposed))
	ctx := context.Background()
	pages := func(q console.Query) []string {
		t.Helper()
		var out []string
		for range 10 {
			p, err := e.src.Deployments(ctx, e.bob, orgScope, q)
			if err != nil {
				t.Fatalf("Deployments(%+v) = %v", q, err)
			}
			ids := []string{}
			for _, d := range p.Deployments {
				if d.Plan != nil {
					t.Errorf("Deployments: %s has its plan, want none", d.ID)
				}
				ids = append(ids, d.ID)
			}
			out = append(out, strings.Join(ids, ","))
			if p.Next == "" {
				return out
			}
			q.Cursor = p.Next
		}
		t.Fatalf("Deployments(%+v): more than 10 pages", q)
		return nil
	}
	for _, tt := range []struct {
		q    console.Query
		want []string
	}{
		{console.Query{}, []string{"d6,d5,d4,d3,d2,d1,d0"}},
		{console.Query{Limit: 3}, []string{"d6,d5,d4", "d3,d2,d1", "d0"}},
		{console.Query{Limit: 2, Stack: "dev"}, []string{"d6,d4", "d2,d0"}},
		{console.Query{Statuses: []state.DeploymentStatus{state.StatusPending}}, []string{"d3"}},
		{console.Query{Kinds: []state.DeploymentKind{state.KindDeploy}, Stack: "prod"}, []string{"d5,d1"}},
		{console.Query{Stack: "nope"}, []string{""}},
	} {
		if diff := cmp.Diff(tt.want, pages(tt.q)); diff != "" {
			t.Errorf("Deployments(%+v) pages (-want +got):\n%s", tt.q, diff)
		}
	}
	if _, err := e.src.Deployments(ctx, e.bob, orgScope, console.Query{Cursor: "x"}); !errors.Is(err, console.ErrNotFound) {
		t.Errorf("Deployments(cursor x) = %v, want ErrNotFound", err)
	}
	d, err := e.src.Deployment(ctx, e.bob, orgScope, "d0")
	// With its snapshot too: the compare page reads the snapshots of the deployments it compares.
	if err != nil || d.Plan == nil || d.Plan.Create != 1 || len(d.Snapshot) == 0 {
		t.Errorf("Deployment(d0) = %+v, %v; want it with its plan and its snapshot", d, err)
	}
}

// browser is a client of the console that keeps its session cookie and follows no redirect.
type browser struct {
	t      *testing.T
	base   string
	client *http.Client
	cookie *http.Cookie
	csrf   string
}

func (e *consoleEnv) browser() *browser {
	return &browser{t: e.t, base: e.ts.URL, client: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// do sends a request (a form when form is not nil) with the session cookie and the headers (name,
// value pairs); it returns the answer with its body read.
func (b *browser) do(method, path string, form url.Values, header ...string) (*http.Response, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	if b.cookie != nil {
		req.AddCookie(b.cookie)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	if m := csrfField.FindStringSubmatch(string(data)); m != nil {
		b.csrf = m[1]
	}
	return resp, string(data)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// login logs in with tok and returns the session cookie as set.
func (b *browser) login(tok string, header ...string) *http.Cookie {
	b.t.Helper()
	resp, body := b.do("POST", "/login", url.Values{"token": {tok}}, header...)
	if resp.StatusCode != http.StatusSeeOther {
		b.t.Fatalf("POST /login = %d %s, want 303", resp.StatusCode, body)
	}
	for _, ck := range resp.Cookies() {
		if ck.Name == "cdkx_session" {
			b.cookie = ck
			return ck
		}
	}
	b.t.Fatalf("POST /login set no session cookie: %v", resp.Header["Set-Cookie"])
	return nil
}

// must sends a request and fails the test unless it answers want; it returns the body.
func (b *browser) must(want int, method, path string, form url.Values) string {
	b.t.Helper()
	resp, body := b.do(method, path, form)
	if resp.StatusCode != want {
		b.t.Fatalf("%s %s = %d, want %d; body:\n%s", method, path, resp.StatusCode, want, body)
	}
	return body
}

func TestConsoleLoginCookie(t *testing.T) {
	tests := []struct {
		name       string
		opts       console.Options
		header     []string
		wantSecure bool
	}{
		{"plain HTTP", console.Options{}, nil, false},
		{"--console-secure-cookies", console.Options{SecureCookies: true}, nil, true},
		{"--trusted-proxy, https", console.Options{TrustProxy: true}, []string{"X-Forwarded-Proto", "https"}, true},
		{"--trusted-proxy, http", console.Options{TrustProxy: true}, []string{"X-Forwarded-Proto", "http"}, false},
		{"untrusted proxy, https", console.Options{}, []string{"X-Forwarded-Proto", "https"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newConsoleEnv(t, tt.opts)
			b := e.browser()
			ck := b.login(e.bobTok, tt.header...)
			if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Secure != tt.wantSecure || ck.MaxAge <= 0 {
				t.Errorf("session cookie = HttpOnly %v, SameSite %v, Secure %v, MaxAge %d; want HttpOnly, Strict, Secure %v, expiring",
					ck.HttpOnly, ck.SameSite, ck.Secure, ck.MaxAge, tt.wantSecure)
			}
			if body := b.must(200, "GET", "/org/proj/stacks", nil); !strings.Contains(body, "dev") {
				t.Errorf("GET /org/proj/stacks after login does not list stack dev:\n%s", body)
			}
			// Logout ends the session.
			b.must(http.StatusSeeOther, "POST", "/logout", url.Values{"csrf": {b.csrf}})
			if resp, _ := b.do("GET", "/org/proj/stacks", nil); resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login") {
				t.Errorf("GET /org/proj/stacks after logout = %d to %q, want 303 to /login", resp.StatusCode, resp.Header.Get("Location"))
			}
		})
	}
	e := newConsoleEnv(t, console.Options{})
	resp, _ := e.browser().do("POST", "/login", url.Values{"token": {"cdkx-wrong"}})
	if resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
		t.Errorf("POST /login with an unknown token = %d, cookies %v; want 401 and none", resp.StatusCode, resp.Cookies())
	}
}

// TestConsoleSessionsShared: sessions live in the database. A session made on one replica works on
// another and after a restart; the ID is stored only as its hash; logout on one replica ends it on
// every replica; revoking the token ends its sessions; an expired one is gone.
func TestConsoleSessionsShared(t *testing.T) {
	e := newConsoleEnv(t, console.Options{SessionLifetime: time.Hour})
	b := e.browser()
	ck := b.login(e.bobTok)
	other, err := Open(context.Background(), e.dbURL, Options{Now: e.clock.now, RequireSecondPerson: true, Console: &console.Options{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Close)
	ts := httptest.NewServer(other.Handler())
	t.Cleanup(ts.Close)
	b2 := &browser{t: t, base: ts.URL, client: b.client, cookie: ck}
	if body := b2.must(200, "GET", "/org/proj/stacks", nil); !strings.Contains(body, "dev") {
		t.Errorf("the session on the second replica does not list stack dev:\n%s", body)
	}

	var stored int
	if err := other.db.Pool().QueryRow(context.Background(),
		`SELECT count(*) FROM svc_console_sessions WHERE id_hash = $1 AND csrf <> ''`, sessionHash(ck.Value)).Scan(&stored); err != nil || stored != 1 {
		t.Errorf("sessions stored under the hash of the cookie's ID = %d (%v), want 1", stored, err)
	}
	var plain int
	if err := other.db.Pool().QueryRow(context.Background(),
		`SELECT count(*) FROM svc_console_sessions WHERE encode(id_hash, 'escape') LIKE '%' || $1 || '%'`, ck.Value).Scan(&plain); err != nil || plain != 0 {
		t.Errorf("sessions holding the cookie's ID itself = %d (%v), want 0", plain, err)
	}

	// Logout on the second replica ends the session on the first.
	b2.csrf = csrfOf(t, b2.must(200, "GET", "/org/proj/stacks", nil))
	b2.must(http.StatusSeeOther, "POST", "/logout", url.Values{"csrf": {b2.csrf}})
	if resp, _ := b.do("GET", "/org/proj/stacks", nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("GET on the first replica after logout on the second = %d, want 303 to /login", resp.StatusCode)
	}

	// Revoking the token ends its sessions, on every replica.
	b.login(e.bobTok)
	if err := e.srv.db.DeleteToken(context.Background(), "bob"); err != nil {
		t.Fatal(err)
	}
	b2.cookie = b.cookie
	if resp, _ := b2.do("GET", "/org/proj/stacks", nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("GET after the token was revoked = %d, want 303 to /login", resp.StatusCode)
	}

	// An expired session is refused, and removed by the next login.
	b.login(e.readerTok)
	e.clock.advance(time.Hour)
	if resp, _ := b.do("GET", "/org/proj/stacks", nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("GET after the session's lifetime = %d, want 303 to /login", resp.StatusCode)
	}
	b.login(e.readerTok)
	var left int
	if err := other.db.Pool().QueryRow(context.Background(), `SELECT count(*) FROM svc_console_sessions`).Scan(&left); err != nil || left != 1 {
		t.Errorf("sessions stored after the expired one's lifetime and a new login = %d (%v), want 1", left, err)
	}
}

// csrfOf returns the CSRF token of a console page.
func csrfOf(t *testing.T, body string) string {
	t.Helper()
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF field in the page:\n%s", body)
	}
	return m[1]
}

func TestConsoleHeaders(t *testing.T) {
	e := newConsoleEnv(t, console.Options{})
	e.createIn("org", dep("p1", "dev", state.StatusProposed))
	b := e.browser()
	check := func(path string) {
		t.Helper()
		resp, _ := b.do("GET", path, nil)
		csp := resp.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") || strings.Contains(csp, "unsafe-inline") {
			t.Errorf("GET %s: Content-Security-Policy %q, want a strict one", path, csp)
		}
		if got := resp.Header.Get("X-Frame-Options"); got != "DENY" {
			t.Errorf("GET %s: X-Frame-Options %q, want DENY", path, got)
		}
	}
	check("/login")
	b.login(e.bobTok)
	for _, p := range []string{"/", "/org/proj/stacks", "/org/proj/stacks/dev", "/org/proj/deployments/p1", "/org/proj/locks", "/org/proj/audit", "/no/such/page"} {
		check(p)
	}
}

// TestConsoleHTTPRules checks the console's rules through its pages: tenancy (404), a read-only
// session (no buttons, 403 on any POST even with a valid CSRF token), CSRF (403), the second-person
// rule (403 with its message), approve with a comment and unlock.
func TestConsoleHTTPRules(t *testing.T) {
	e := newConsoleEnv(t, console.Options{})
	e.createIn("org", dep("p1", "dev", state.StatusProposed), dep("p2", "dev", state.StatusProposed))
	e.createIn("other", dep("theirs", "dev", state.StatusProposed))
	bob, reader, alice := e.browser(), e.browser(), e.browser()
	bob.login(e.bobTok)
	reader.login(e.readerTok)
	alice.login(strings.TrimPrefix(e.token, "token "))
	before := dumpTables(t, e.env)

	// Tenancy: another organization's project and deployments are absent, read or acted on.
	bob.must(200, "GET", "/org/proj/deployments/p1", nil)
	for _, p := range []string{"/other/proj/stacks", "/other/proj/deployments/theirs", "/org/proj/deployments/theirs", "/other/proj/locks"} {
		bob.must(404, "GET", p, nil)
	}
	for _, p := range []string{"/other/proj/deployments/theirs/approve", "/org/proj/deployments/theirs/approve", "/org/proj/deployments/theirs/abort"} {
		bob.must(404, "POST", p, url.Values{"csrf": {bob.csrf}, "comment": {"mine now"}})
	}
	bob.must(404, "POST", "/other/proj/locks/unlock", url.Values{"csrf": {bob.csrf}, "stack": {"dev"}, "id": {"x"}})

	// A read-only session sees no button, and its forged POSTs are refused, even with its CSRF token.
	body := reader.must(200, "GET", "/org/proj/deployments/p1", nil)
	for _, button := range []string{"Approve</button>", "Reject</button>", "Abort</button>", "Redeploy</button>"} {
		if strings.Contains(body, button) {
			t.Errorf("the read-only session's deployment page shows %q", button)
		}
	}
	if !strings.Contains(bob.must(200, "GET", "/org/proj/deployments/p1", nil), "Approve</button>") {
		t.Errorf("bob's deployment page shows no Approve button")
	}
	for _, action := range []string{"approve", "reject", "abort", "redeploy"} {
		reader.must(403, "POST", "/org/proj/deployments/p1/"+action, url.Values{"csrf": {reader.csrf}})
	}
	reader.must(403, "POST", "/org/proj/locks/unlock", url.Values{"csrf": {reader.csrf}, "stack": {"dev"}, "id": {"x"}})

	// CSRF: a POST without the token, or with another session's, is refused.
	bob.must(403, "POST", "/org/proj/deployments/p1/approve", url.Values{"comment": {"lgtm"}})
	bob.must(403, "POST", "/org/proj/deployments/p1/approve", url.Values{"csrf": {reader.csrf}, "comment": {"lgtm"}})

	// The second-person rule: alice proposed p1 and cannot approve it.
	alice.must(200, "GET", "/org/proj/deployments/p1", nil)
	if body := alice.must(403, "POST", "/org/proj/deployments/p1/approve", url.Values{"csrf": {alice.csrf}, "comment": {"mine"}}); !strings.Contains(body, "cannot approve it: a second person") {
		t.Errorf("alice's approval of her own proposal: 403 without the rule's message:\n%s", body)
	}
	if diff := cmp.Diff(before, dumpTables(t, e.env)); diff != "" {
		t.Errorf("refused requests changed the database (-before +after):\n%s", diff)
	}

	// A second token approves with a comment; rejects the other with one.
	resp, _ := bob.do("POST", "/org/proj/deployments/p1/approve", url.Values{"csrf": {bob.csrf}, "comment": {"lgtm"}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/org/proj/deployments/p1" {
		t.Errorf("bob's approval = %d to %q, want 303 to the deployment", resp.StatusCode, resp.Header.Get("Location"))
	}
	bob.must(http.StatusSeeOther, "POST", "/org/proj/deployments/p2/reject", url.Values{"csrf": {bob.csrf}, "comment": {"too wide"}})
	if d := e.get("p1"); d.Status != state.StatusApproved || d.ApprovedBy != "bob" || d.ApprovalComment != "lgtm" {
		t.Errorf("p1 after bob's approval = %s approved by %q (%q), want APPROVED by bob with his comment", d.Status, d.ApprovedBy, d.ApprovalComment)
	}
	if d := e.get("p2"); d.Status != state.StatusRejected || d.RejectedBy != "bob" || d.RejectionComment != "too wide" || d.Error != "rejected: too wide" {
		t.Errorf("p2 after bob's rejection = %s rejected by %q (%q, %q), want REJECTED by bob with his comment", d.Status, d.RejectedBy, d.RejectionComment, d.Error)
	}
	bob.must(409, "POST", "/org/proj/deployments/p2/approve", url.Values{"csrf": {bob.csrf}})

	// Unlock of a held lock, with its confirmation page.
	holder := state.LockInfo{ID: "lock-1", Operation: "deploy", User: "dora", Host: "ci", PID: 7}
	e.must(200, "POST", "/api/stacks/org/proj/dev/update", e.token, map[string]any{"name": "proj", "cdkxLock": holder})
	if body := bob.must(200, "GET", "/org/proj/locks", nil); !strings.Contains(body, "lock-1") || !strings.Contains(body, "dora") {
		t.Errorf("the locks page does not show lock-1 held by dora:\n%s", body)
	}
	bob.must(200, "GET", "/org/proj/locks/unlock?stack=dev&id=lock-1", nil)
	bob.must(http.StatusSeeOther, "POST", "/org/proj/locks/unlock", url.Values{"csrf": {bob.csrf}, "stack": {"dev"}, "id": {"lock-1"}})
	if s := e.snapshot("dev"); s.Statuses != "cancelled" {
		t.Errorf("dev's updates after the unlock = %q, want cancelled", s.Statuses)
	}
	bob.must(404, "POST", "/org/proj/locks/unlock", url.Values{"csrf": {bob.csrf}, "stack": {"dev"}, "id": {"lock-1"}})
}

// TestConsoleBesideAPI checks that mounting the console leaves the API's answers as they were, sends
// every other path to the console, and bounds the console's bodies.
func TestConsoleBesideAPI(t *testing.T) {
	with := newConsoleEnv(t, console.Options{})
	without := newEnv(t)
	without.createStack("dev")
	for _, r := range []struct{ method, path string }{
		{"GET", "/healthz"},
		{"GET", "/api/user"},
		{"GET", "/api/stacks/org/proj/dev"},
		{"GET", "/api/nope"},
		{"GET", "/api"},
		{"PUT", "/api/stacks/org/proj/dev"},
		{"GET", "/api/cdkx/org/proj/deployments"},
	} {
		c1, b1 := with.do(r.method, r.path, with.token, nil)
		c2, b2 := without.do(r.method, r.path, without.token, nil)
		if c1 != c2 || (c1 != 200 && string(b1) != string(b2)) {
			t.Errorf("%s %s = %d %s with the console, %d %s without", r.method, r.path, c1, b1, c2, b2)
		}
	}
	if code, _ := without.do("GET", "/login", "", nil); code != 404 {
		t.Errorf("GET /login without the console = %d, want 404", code)
	}
	b := with.browser()
	if resp, body := b.do("GET", "/login", nil); resp.StatusCode != 200 || !strings.Contains(body, `name="token"`) {
		t.Errorf("GET /login = %d, want the login form:\n%s", resp.StatusCode, body)
	}
	big := url.Values{"token": {strings.Repeat("x", ConsoleBodyLimit)}}
	if resp, _ := b.do("POST", "/login", big); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("POST /login of %d bytes = %d, want 413", len(big.Encode()), resp.StatusCode)
	}
}

func TestConsoleEvents(t *testing.T) {
	e := newConsoleEnv(t, console.Options{})
	e.createIn("org", dep("r", "dev", state.StatusProposed))
	ctx := context.Background()
	st, err := e.srv.db.LookupStack(ctx, storage.StackPath{Org: "org", Project: "proj", Stack: "dev"}, false)
	if err != nil {
		t.Fatal(err)
	}
	var stored []storage.Event
	for i := int64(1); i <= 3; i++ {
		ev := state.Event{DeploymentID: "r", Seq: i, Stack: "dev", LogicalID: fmt.Sprintf("R%d", i), Status: "created"}
		data, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, storage.Event{Seq: i, Data: data})
	}
	if err := e.srv.db.InsertEvents(ctx, st.ID, "r", stored); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		after int
		want  []string
	}{{0, []string{"R1", "R2", "R3"}}, {2, []string{"R3"}}, {3, []string{}}} {
		events, err := e.src.Events(ctx, e.reader, orgScope, "r", tt.after)
		if err != nil {
			t.Fatalf("Events(after %d) = %v", tt.after, err)
		}
		got := []string{}
		for _, ev := range events {
			got = append(got, ev.LogicalID)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Events(after %d) (-want +got):\n%s", tt.after, diff)
		}
	}
	if events, err := e.src.Events(ctx, e.carol, otherScope, "r", 0); err != nil || len(events) != 0 {
		t.Errorf("Events(carol, other, r) = %v, %v; want none", events, err)
	}

	// The page's stream, through the server's handlers (its request log wraps the writer): the events
	// arrive while the deployment is still open, not when the stream ends.
	b := e.browser()
	b.login(e.bobTok)
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(sctx, http.MethodGet, e.ts.URL+"/org/proj/deployments/r/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.AddCookie(b.cookie)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET the event stream: %v", err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("GET the event stream = %d %s, want 200 text/event-stream", resp.StatusCode, ct)
	}
	var seen []string
	for sc := bufio.NewScanner(resp.Body); len(seen) < 3 && sc.Scan(); {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var ev struct {
				LogicalID string `json:"logicalId"`
			}
			if json.Unmarshal([]byte(data), &ev) == nil {
				seen = append(seen, ev.LogicalID)
			}
		}
	}
	if diff := cmp.Diff([]string{"R1", "R2", "R3"}, seen); diff != "" {
		t.Errorf("events read from the open stream within 10 s (-want +got):\n%s", diff)
	}
}

// TestConsoleAtScale measures the console's reads of a stack with 10,000 deployments (set
// CDKX_CONSOLE_SCALE=1 and -v; slow to set up) and prints each one's median and worst of 9: issue 23 asks
// for a page in under 200 ms (docs/performance.md). It checks the answers, not the times: timing is a
// measurement to read, not a test that fails on a loaded machine.
func TestConsoleAtScale(t *testing.T) {
	if os.Getenv("CDKX_CONSOLE_SCALE") == "" {
		t.Skip("set CDKX_CONSOLE_SCALE=1 to measure the console on 10,000 deployments")
	}
	e := newConsoleEnv(t, console.Options{})
	const n, batch = 10000, 1000
	for i := 0; i < n; i += batch {
		var ds []state.Deployment
		for j := i; j < i+batch; j++ {
			d := dep(fmt.Sprintf("d%05d", j), "dev", state.StatusProposed)
			if j%2 == 1 {
				d.Status = state.StatusPending
				d.Kind = state.KindPlan
			}
			ds = append(ds, d)
		}
		e.createIn("org", ds...)
	}
	ctx := context.Background()
	measure := func(name string, f func() error) {
		t.Helper()
		var took []time.Duration
		for range 9 {
			start := time.Now()
			if err := f(); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			took = append(took, time.Since(start))
		}
		slices.Sort(took)
		t.Logf("%s: median of 9 %v, worst %v", name, took[4], took[8])
	}
	var cursor string
	measure("first page", func() error {
		p, err := e.src.Deployments(ctx, e.bob, orgScope, console.Query{Stack: "dev"})
		cursor = p.Next
		return err
	})
	measure("a page deep in the history", func() error {
		_, err := e.src.Deployments(ctx, e.bob, orgScope, console.Query{Stack: "dev", Cursor: "100"})
		return err
	})
	measure("next page, deploys only", func() error {
		_, err := e.src.Deployments(ctx, e.bob, orgScope, console.Query{Stack: "dev", Cursor: cursor, Kinds: []state.DeploymentKind{state.KindDeploy}})
		return err
	})
	measure("stacks page", func() error { _, err := e.src.Stacks(ctx, e.bob, orgScope); return err })
	b := e.browser()
	b.login(e.bobTok)
	measure("GET the stack's page", func() error { b.must(200, "GET", "/org/proj/stacks/dev", nil); return nil })
	measure("GET the stacks page", func() error { b.must(200, "GET", "/org/proj/stacks", nil); return nil })
}
