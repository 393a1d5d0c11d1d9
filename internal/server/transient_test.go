package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestTransientErrorMapping checks the mapping of PostgreSQL's transient errors, wrapped as the
// handlers return them, to 503 with Retry-After (no database needed).
func TestTransientErrorMapping(t *testing.T) {
	s := &Server{log: slog.New(slog.DiscardHandler)}
	for _, code := range []string{"40001", "40P01"} { // serialization failure, deadlock
		h := func(*http.Request, *call) (any, error) {
			return nil, fmt.Errorf("store checkpoint: %w", &pgconn.PgError{Code: code, Message: "conflict"})
		}
		rec := httptest.NewRecorder()
		s.serve(rec, httptest.NewRequest("PATCH", "/x", nil), h, &call{})
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
			t.Errorf("SQLSTATE %s: %d, Retry-After %q; want 503 with Retry-After", code, rec.Code, rec.Header().Get("Retry-After"))
		}
	}
	rec := httptest.NewRecorder()
	s.serve(rec, httptest.NewRequest("PATCH", "/x", nil), func(*http.Request, *call) (any, error) {
		return nil, &pgconn.PgError{Code: "23503"}
	}, &call{})
	if rec.Code != http.StatusInternalServerError || rec.Header().Get("Retry-After") != "" {
		t.Errorf("SQLSTATE 23503: %d, Retry-After %q; want 500 without Retry-After", rec.Code, rec.Header().Get("Retry-After"))
	}
}

// TestDeadlockIs503 induces a real deadlock (SQLSTATE 40P01) between a checkpoint request and another
// transaction, and checks that the request is answered 503 with Retry-After and changes nothing.
//
// The checkpoint handler locks the update's row (lockLease), then updates the stack's row
// (storeCheckpoint). The test's transaction first locks the stack's row, so the handler waits on it;
// then it asks for the update's row, which the handler holds: a cycle. PostgreSQL's deadlock detector
// runs in the backend whose wait outlasts deadlock_timeout first — the handler's, which waited first —
// and aborts that transaction; the test raises its own session's deadlock_timeout when it may, so
// that the handler is always the victim.
func TestDeadlockIs503(t *testing.T) {
	e := newEnv(t)
	e.createStack("dev")
	id, lease := e.startUpdate("dev", "update")
	path := "/api/stacks/org/proj/dev/update/" + id
	e.must(200, "PATCH", path+"/checkpointverbatim", lease, `{"version":3,"untypedDeployment":`+deployment1+`,"sequenceNumber":1}`)
	before := e.snapshot("dev")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := e.srv.db.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	// Superuser only (deadlock_timeout is a superuser setting); without it the handler, which waits
	// first, is still the first to run the detector.
	if _, err := conn.Exec(ctx, `SET deadlock_timeout = '30s'`); err != nil {
		t.Logf("SET deadlock_timeout: %v (continuing with the default)", err)
	}
	defer func() { _, _ = conn.Exec(context.Background(), `RESET deadlock_timeout`) }()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	var stackID int64
	if err := tx.QueryRow(ctx, `SELECT id FROM svc_stacks WHERE name = 'dev' FOR UPDATE`).Scan(&stackID); err != nil {
		t.Fatal(err)
	}

	type answer struct {
		code       int
		retryAfter string
		body       string
		err        error
	}
	done := make(chan answer, 1)
	go func() {
		body := `{"version":3,"untypedDeployment":` + strings.Replace(deployment1, `"m"`, `"n"`, 1) + `,"sequenceNumber":2}`
		req, err := http.NewRequestWithContext(ctx, "PATCH", e.ts.URL+path+"/checkpointverbatim", strings.NewReader(body))
		if err != nil {
			done <- answer{err: err}
			return
		}
		req.Header.Set("Authorization", lease)
		resp, err := e.ts.Client().Do(req)
		if err != nil {
			done <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		done <- answer{resp.StatusCode, resp.Header.Get("Retry-After"), string(data), err}
	}()

	// Wait until the handler's transaction waits for the stack's row lock.
	for {
		var waiting bool
		if err := e.srv.db.Pool().QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
WHERE datname = current_database() AND application_name = 'cdkx-server' AND wait_event_type = 'Lock'
  AND query LIKE '%FROM svc_stacks WHERE id = $1 FOR UPDATE%' AND pid <> $1)`, conn.Conn().PgConn().PID()).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		select {
		case a := <-done:
			t.Fatalf("the checkpoint was answered (%d %s) while the stack's row was locked", a.code, a.body)
		case <-ctx.Done():
			t.Fatal("the handler never waited for the stack's row lock")
		case <-time.After(10 * time.Millisecond):
		}
	}
	// Close the cycle: this waits until the detector aborts the handler's transaction.
	if _, err := tx.Exec(ctx, `SELECT 1 FROM svc_updates WHERE id = $1 FOR UPDATE`, id); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "40P01" {
			t.Fatalf("the test's transaction, not the handler's, was chosen as the deadlock victim: %v", err)
		}
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	a := <-done
	if a.err != nil {
		t.Fatal(a.err)
	}
	if a.code != http.StatusServiceUnavailable || a.retryAfter == "" {
		t.Errorf("checkpoint during a deadlock = %d (Retry-After %q) %s, want 503 with Retry-After", a.code, a.retryAfter, a.body)
	}
	var er errorResponse
	decode(t, []byte(a.body), &er)
	if er.Code != http.StatusServiceUnavailable || er.Message == "" {
		t.Errorf("error body = %+v, want code 503 and a message", er)
	}
	if diff := cmp.Diff(before, e.snapshot("dev")); diff != "" {
		t.Errorf("database changed (-before +after):\n%s", diff)
	}
	// The retry the 503 asks for succeeds.
	e.must(200, "PATCH", path+"/checkpointverbatim", lease, `{"version":3,"untypedDeployment":`+deployment1+`,"sequenceNumber":2}`)
	if got := e.snapshot("dev").Version; got != before.Version+1 {
		t.Errorf("version after the retry = %d, want %d", got, before.Version+1)
	}
}
