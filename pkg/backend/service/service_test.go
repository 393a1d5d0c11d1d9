package service_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/backend/postgres/postgrestest"
	"github.com/cdkx-dev/cdkx/pkg/backend/service"
	"github.com/cdkx-dev/cdkx/pkg/server"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/pkg/state/statetest"
)

// newService starts a state service configured by opts on a fresh PostgreSQL schema behind httptest and
// returns its URL and an API token.
func newService(t *testing.T, opts server.Options) (string, string) {
	t.Helper()
	srv, err := server.Open(context.Background(), postgrestest.FreshSchema(t), opts)
	if err != nil {
		t.Fatalf("server.Open() = %v", err)
	}
	t.Cleanup(srv.Close)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	tok, err := srv.CreateToken(context.Background(), "ci")
	if err != nil {
		t.Fatal(err)
	}
	return ts.URL, tok
}

func open(t *testing.T, url, token string) *service.Backend {
	t.Helper()
	b, err := service.Open(context.Background(), url, service.Options{Token: token, Project: "proj"})
	if err != nil {
		t.Fatalf("service.Open() = %v", err)
	}
	return b
}

func TestContract(t *testing.T) {
	statetest.Run(t, func(t *testing.T) state.Backend {
		url, tok := newService(t, server.Options{})
		return open(t, url, tok)
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
	if err := a.Unlock(ctx, "web", "lock-a"); err != nil {
		t.Errorf("Unlock() of a lost lock = %v, want nil", err)
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
