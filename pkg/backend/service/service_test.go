package service_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cdkx-dev/cdkx/internal/server"
	"github.com/cdkx-dev/cdkx/pkg/backend/postgres/postgrestest"
	"github.com/cdkx-dev/cdkx/pkg/backend/service"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/pkg/state/statetest"
)

// newService starts a state service configured by opts on a fresh PostgreSQL schema behind httptest and
// returns its URL and an API token.
func newService(tb testing.TB, opts server.Options) (string, string) {
	tb.Helper()
	srv, err := server.Open(context.Background(), postgrestest.FreshSchema(tb), opts)
	if err != nil {
		tb.Fatalf("server.Open() = %v", err)
	}
	tb.Cleanup(srv.Close)
	ts := httptest.NewServer(srv.Handler())
	tb.Cleanup(ts.Close)
	tok, err := srv.CreateToken(context.Background(), "ci")
	if err != nil {
		tb.Fatal(err)
	}
	return ts.URL, tok
}

func open(tb testing.TB, url, token string) *service.Backend {
	tb.Helper()
	b, err := service.Open(context.Background(), url, service.Options{Token: token, Project: "proj"})
	if err != nil {
		tb.Fatalf("service.Open() = %v", err)
	}
	return b
}

// TestContract runs the contract suite; the service stamps deployment times with its own clock and
// records the token's name ("ci") as who did what.
func TestContract(t *testing.T) {
	statetest.Run(t, func(t *testing.T) state.Backend {
		url, tok := newService(t, server.Options{})
		return open(t, url, tok)
	}, statetest.ServerClock(), statetest.RecordsUser("ci"))
}

// TestStateMachine runs the state machine's (from, to, who) table on a state service started with
// --require-second-person as the policy says; each person is a client with an API token of that name.
func TestStateMachine(t *testing.T) {
	statetest.RunStateMachine(t, func(t *testing.T, p state.Policy) func(string) state.Backend {
		srv, err := server.Open(context.Background(), postgrestest.FreshSchema(t), server.Options{RequireSecondPerson: p.RequireSecondPerson})
		if err != nil {
			t.Fatalf("server.Open() = %v", err)
		}
		t.Cleanup(srv.Close)
		ts := httptest.NewServer(srv.Handler())
		t.Cleanup(ts.Close)
		clients := map[string]state.Backend{}
		return func(name string) state.Backend {
			if b, ok := clients[name]; ok {
				return b
			}
			b := open(t, ts.URL, mustToken(t, srv, name))
			t.Cleanup(func() { _ = b.Close() })
			clients[name] = b
			return b
		}
	})
}

// TestLostLease cancels a holder's update from another client (what `cdkx cancel` does) and checks that
// the holder's next commit fails with a lost-lock error and stores nothing, and that the stack can be
// locked again.
func TestLostLease(t *testing.T) {
	url, tok := newService(t, server.Options{})
	ctx := context.Background()
	a, other := open(t, url, tok), open(t, url, tok)
	defer func() { _ = a.Close(); _ = other.Close() }()
	holder := state.LockInfo{ID: "lock-a", Stack: "web", Operation: "deploy", User: "alice", Host: "ci", PID: 1}
	if err := a.Lock(ctx, holder); err != nil {
		t.Fatal(err)
	}
	put := []state.Change{{Kind: state.PutResource, Resource: &state.Resource{LogicalID: "x", Type: "Cdkx::Core::Data", Provider: "cdkx"}}}
	if v, err := a.Commit(ctx, "d1", "web", put, nil); err != nil || v != 1 {
		t.Fatalf("Commit() = %d, %v; want version 1", v, err)
	}
	if err := other.Unlock(ctx, "web", "lock-a"); err != nil {
		t.Fatalf("Unlock(web, lock-a) from another client = %v", err)
	}
	_, err := a.Commit(ctx, "d1", "web", put, nil)
	if err == nil || !strings.Contains(err.Error(), "lost the lock of stack web") {
		t.Fatalf("Commit() after the update was cancelled = %v, want a lost-lock error", err)
	}
	if err := a.Heartbeat(ctx, "web", "lock-a", time.Now()); err == nil {
		t.Errorf("Heartbeat() after the update was cancelled = nil, want an error")
	}
	st, err := other.GetStack(ctx, "web")
	if err != nil || st.Version != 1 {
		t.Errorf("GetStack(web) = version %v, %v; want 1", st, err)
	}
	// The run that lost its lock must not end as if it had succeeded: its Unlock says so.
	if err := a.Unlock(ctx, "web", "lock-a"); err == nil || !strings.Contains(err.Error(), "lost the lock of stack web") {
		t.Errorf("Unlock() of a lost lock = %v, want the lost-lock error", err)
	}
	if err := other.Lock(ctx, state.LockInfo{ID: "lock-b", Stack: "web", Operation: "deploy"}); err != nil {
		t.Errorf("Lock(web) after the cancel = %v", err)
	}
}

// TestLeaseRenewal runs a service whose leases last 2 s and holds a lock for 3.5 s: the background
// renewal keeps it, and a commit afterwards succeeds.
func TestLeaseRenewal(t *testing.T) {
	url, tok := newService(t, server.Options{Lease: 2 * time.Second})
	b := open(t, url, tok)
	defer func() { _ = b.Close() }()
	ctx := context.Background()
	if err := b.Lock(ctx, state.LockInfo{ID: "l", Stack: "web", Operation: "deploy"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3500 * time.Millisecond)
	if _, err := b.Commit(ctx, "d", "web", nil, nil); err != nil {
		t.Errorf("Commit() 3.5 s into a 2 s lease = %v, want the renewal to have kept it", err)
	}
	if err := b.Unlock(ctx, "web", "l"); err != nil {
		t.Error(err)
	}
}

// twice is a Doer that sends every POST and PATCH twice and returns the second answer: a retry after an
// answer lost on the way back.
type twice struct{}

func (twice) Do(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost && req.Method != http.MethodPatch {
		return http.DefaultClient.Do(req)
	}
	first := req.Clone(req.Context())
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		first.Body = body
	}
	resp, err := http.DefaultClient.Do(first)
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return http.DefaultClient.Do(req)
}

// TestRetriedDeploymentCalls sends every changing deployment call twice: each takes effect once and the
// retry answers as the first attempt did.
func TestRetriedDeploymentCalls(t *testing.T) {
	url, tok := newService(t, server.Options{})
	b, err := service.Open(context.Background(), url, service.Options{Token: tok, Project: "proj", Client: twice{}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Close() }()
	ctx := context.Background()
	d1 := &state.Deployment{ID: "d1", Stack: "web", Kind: state.KindDeploy, Status: state.StatusPending, Snapshot: []byte(`{}`)}
	d2 := &state.Deployment{ID: "d2", Stack: "web", Kind: state.KindDeploy, Status: state.StatusProposed}
	if err := b.CreateDeployments(ctx, []*state.Deployment{d1, d2}); err != nil {
		t.Fatalf("CreateDeployments() = %v", err)
	}
	if d1.Seq != 1 || d2.Seq != 2 || d1.CreatedBy != "ci" {
		t.Errorf("CreateDeployments() set seq %d, %d, createdBy %q; want 1, 2, ci", d1.Seq, d2.Seq, d1.CreatedBy)
	}
	if err := b.ClaimDeployments(ctx, []string{"d1"}, "r", time.Now()); err != nil {
		t.Fatalf("ClaimDeployments(d1) = %v", err)
	}
	if _, err := b.RequestAbort(ctx, "d1", "me", time.Now()); err != nil {
		t.Fatalf("RequestAbort(d1) = %v", err)
	}
	if err := b.FinishDeployment(ctx, "d1", "r", state.StatusAborted, time.Now(), 1, "aborted"); err != nil {
		t.Fatalf("FinishDeployment(d1) = %v", err)
	}
	if _, err := b.UpdateDeployment(ctx, "d2", state.Transition{From: []state.DeploymentStatus{state.StatusProposed}, To: state.StatusApproved}); err != nil {
		t.Fatalf("UpdateDeployment(d2, approve) = %v", err)
	}
	if d, err := b.ClaimNext(ctx, nil, "agent", time.Now()); err != nil || d == nil || d.ID != "d2" {
		t.Fatalf("ClaimNext() = %v, %v; want d2", d, err)
	}
	all, err := b.ListDeployments(ctx, state.DeploymentFilter{})
	if err != nil || len(all) != 2 || all[0].Status != state.StatusRunning || all[1].Status != state.StatusAborted {
		t.Errorf("ListDeployments() = %+v, %v; want d2 RUNNING and d1 ABORTED", all, err)
	}
}

// TestRequireSecondPerson checks that a service with RequireSecondPerson refuses a proposer's approval of
// their own proposal with a message that says why, and takes another token's.
func TestRequireSecondPerson(t *testing.T) {
	srv, err := server.Open(context.Background(), postgrestest.FreshSchema(t), server.Options{RequireSecondPerson: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	alice, bob := open(t, ts.URL, mustToken(t, srv, "alice")), open(t, ts.URL, mustToken(t, srv, "bob"))
	ctx := context.Background()
	p := &state.Deployment{ID: "p", Stack: "web", Kind: state.KindDeploy, Status: state.StatusProposed}
	if err := alice.CreateDeployments(ctx, []*state.Deployment{p}); err != nil {
		t.Fatal(err)
	}
	approve := state.Transition{From: []state.DeploymentStatus{state.StatusProposed}, To: state.StatusApproved}
	_, err = alice.UpdateDeployment(ctx, "p", approve)
	if !errors.As(err, new(*state.ForbiddenError)) || !strings.Contains(err.Error(), "second person") {
		t.Errorf("alice approves her own proposal = %v, want a *state.ForbiddenError (a 403) that names the second-person rule", err)
	}
	d, err := bob.UpdateDeployment(ctx, "p", approve)
	if err != nil || d.ApprovedBy != "bob" {
		t.Errorf("bob approves = %+v, %v; want approved by bob", d, err)
	}
}

func mustToken(t *testing.T, srv *server.Server, name string) string {
	t.Helper()
	tok, err := srv.CreateToken(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// BenchmarkPages pages a stack's history of 10,000 deployments (statetest.BenchmarkPages) through a
// state service on the test database (CDKX_TEST_POSTGRES_URL): HTTP and JSON included.
func BenchmarkPages(b *testing.B) {
	url, tok := newService(b, server.Options{})
	be := open(b, url, tok)
	defer func() { _ = be.Close() }()
	statetest.BenchmarkPages(b, be)
}
