package server

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/cdkx-dev/cdkx/internal/server/storage"
	"github.com/cdkx-dev/cdkx/pkg/backend/postgres/postgrestest"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// TestMigrateDeploymentQueue stores deployment records as the service kept them before the queue
// (migration 3), two of them RUNNING on one stack, and opens the server: the records get a status, a seq
// in start order and their creation time, all but the newest RUNNING of the stack are ABORTED, and the
// database refuses a second RUNNING deployment from then on. The migration can be undone.
func TestMigrateDeploymentQueue(t *testing.T) {
	ctx := context.Background()
	url, pool, p := migrationProvider(t)
	if _, err := p.UpTo(ctx, 3); err != nil {
		t.Fatalf("migrate to 3: %v", err)
	}
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	if _, err := pool.Exec(ctx, `INSERT INTO svc_stacks (org, project, name, created_at) VALUES ('org', 'proj', 'dev', $1), ('org', 'proj', 'prod', $1)`, t0); err != nil {
		t.Fatal(err)
	}
	old := []struct {
		id, stack string
		status    state.DeploymentStatus
		at        int
	}{{"old-run", "dev", state.StatusRunning, 1}, {"done", "dev", state.StatusCompleted, 0}, {"new-run", "dev", state.StatusRunning, 2}, {"prod-run", "prod", state.StatusRunning, 3}}
	for _, o := range old {
		// The record as the service stored it then: pkg/state.Deployment before the queue.
		started := t0.Add(time.Duration(o.at) * time.Minute)
		d := map[string]any{"id": o.id, "stack": o.stack, "kind": "deploy", "status": o.status, "createdBy": "u@h",
			"cdkxVersion": "v0", "startedAt": started, "version": 0}
		if _, err := pool.Exec(ctx, `INSERT INTO svc_deployments (id, stack_id, record, snapshot, started_at)
SELECT $1, id, $3, 'snap', $4 FROM svc_stacks WHERE name = $2`, o.id, o.stack, d, started); err != nil {
			t.Fatal(err)
		}
	}

	e := &env{t: t, clock: &clock{t: t0.Add(time.Hour)}}
	var err error
	if e.srv, err = Open(ctx, url, Options{Now: e.clock.now}); err != nil {
		t.Fatalf("Open() = %v", err)
	}
	defer e.srv.Close()
	want := map[string]struct {
		status state.DeploymentStatus
		seq    int64
	}{"done": {state.StatusCompleted, 1}, "old-run": {state.StatusAborted, 2}, "new-run": {state.StatusRunning, 3}, "prod-run": {state.StatusRunning, 4}}
	rows, err := e.srv.db.Pool().Query(ctx, `SELECT id, status, seq, record FROM svc_deployments`)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		var id string
		var status state.DeploymentStatus
		var seq int64
		var rec state.Deployment
		if err := rows.Scan(&id, &status, &seq, &rec); err != nil {
			t.Fatal(err)
		}
		n++
		w := want[id]
		if status != w.status || seq != w.seq || rec.Status != w.status || rec.Seq != w.seq || !rec.CreatedAt.Equal(rec.StartedAt) {
			t.Errorf("%s after the migration = %s seq %d, record %+v; want %s seq %d, created at its start", id, status, seq, rec, w.status, w.seq)
		}
		if status == state.StatusRunning && !rec.HeartbeatAt.Equal(rec.StartedAt) {
			t.Errorf("%s: heartbeatAt %v, want its start %v", id, rec.HeartbeatAt, rec.StartedAt)
		}
		if id == "old-run" && (rec.Error == "" || rec.FinishedAt.IsZero()) {
			t.Errorf("old-run = %+v, want an error and a finish time", rec)
		}
	}
	if err := rows.Err(); err != nil || n != len(want) {
		t.Fatalf("read %d deployments (%v), want %d", n, err, len(want))
	}
	if _, err := e.srv.db.Pool().Exec(ctx, `UPDATE svc_deployments SET status = 'RUNNING' WHERE id = 'old-run'`); !storage.UniqueViolation(err) {
		t.Errorf("a second RUNNING deployment of dev = %v, want a unique violation", err)
	}
	// The next deployment gets the next seq; the stale RUNNING ones (no heartbeat for an hour) are
	// aborted by the first claim of their stack.
	e.ts = httptest.NewServer(e.srv.Handler())
	defer e.ts.Close()
	tok, err := e.srv.CreateToken(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	e.token = "token " + tok
	if got := e.create(dep("next", "dev", state.StatusPending)); got[0].Seq != 5 {
		t.Errorf("seq of the first new deployment = %d, want 5", got[0].Seq)
	}
	e.must(200, "POST", deps+"/claim", e.token, map[string]any{"ids": []string{"next"}})
	if d := e.get("new-run"); d.Status != state.StatusAborted {
		t.Errorf("new-run after a claim an hour later = %s, want ABORTED", d.Status)
	}
	// The migration goes down (deployments never started get their creation time) and up again.
	if _, err := p.DownTo(ctx, 3); err != nil {
		t.Fatalf("migrate down to 3: %v", err)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatalf("migrate up again: %v", err)
	}
}

// migrationProvider returns the URL of a fresh schema, a pool on it and a goose provider of the service's migrations on
// it, to migrate step by step; both are closed when the test ends.
func migrationProvider(t *testing.T) (string, *pgxpool.Pool, *goose.Provider) {
	t.Helper()
	url := postgrestest.FreshSchema(t)
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	db := stdlib.OpenDBFromPool(pool)
	t.Cleanup(func() { _ = db.Close() })
	p, err := storage.Migrations(db)
	if err != nil {
		t.Fatal(err)
	}
	return url, pool, p
}
