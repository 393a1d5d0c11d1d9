package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/internal/console"
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
		got[id] = fmt.Sprintf("%s approved=%q rejected=%q aborted=%q error=%q", d.Status, d.ApprovedBy, d.RejectedBy, d.AbortedBy, d.Error)
	}
	want := map[string]string{
		"p1": `ABORTED approved="bob" rejected="" aborted="bob" error="aborted by bob"`,
		"p2": `REJECTED approved="" rejected="bob" aborted="" error="rejected: too wide"`,
		"p3": `PROPOSED approved="" rejected="" aborted="" error=""`,
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
	if err != nil || d.Plan == nil || d.Plan.Create != 1 || d.Snapshot != nil {
		t.Errorf("Deployment(d0) = %+v, %v; want it with its plan and without its snapshot", d, err)
	}
}
