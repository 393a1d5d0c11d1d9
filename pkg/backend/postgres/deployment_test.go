package postgres

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/cdkx-dev/cdkx/pkg/backend/internal/sqlschema"
	"github.com/cdkx-dev/cdkx/pkg/backend/postgres/postgrestest"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// TestQueueAcrossBackends has CI jobs create deployments on two stacks while agents of two Backends (two
// pools, as two cdkx processes or server replicas have) drain the queues: every deployment runs exactly
// once, each stack's in Seq order, and never two of one stack at once.
func TestQueueAcrossBackends(t *testing.T) {
	u := postgrestest.FreshSchema(t)
	backends := []*Backend{mustOpen(t, u), mustOpen(t, u)}
	const creators, perCreator, agentsPerBackend = 4, 10, 3
	const total = creators * perCreator
	ctx := context.Background()

	var mu sync.Mutex // guards claimed, created and finished
	claimed := map[string][]state.Deployment{}
	created, finished := 0, 0
	var wg sync.WaitGroup
	for c := range creators {
		wg.Go(func() {
			b := backends[c%2]
			for i := 0; i < perCreator; {
				n := min(1+i%2, perCreator-i) // batches of one or two, over both stacks
				var ds []*state.Deployment
				for j := range n {
					ds = append(ds, &state.Deployment{ID: fmt.Sprintf("c%d-%02d", c, i+j), Stack: []string{"web", "api"}[(c+i+j)%2],
						Kind: state.KindDeploy, Status: []state.DeploymentStatus{state.StatusPending, state.StatusApproved}[j%2]})
				}
				if err := b.CreateDeployments(ctx, ds); err != nil {
					t.Errorf("CreateDeployments() = %v", err)
					return
				}
				mu.Lock()
				created += n
				mu.Unlock()
				i += n
			}
		})
	}
	for bi, b := range backends {
		for a := range agentsPerBackend {
			wg.Go(func() {
				runner := fmt.Sprintf("agent-%d-%d", bi, a)
				deadline := time.Now().Add(time.Minute)
				for time.Now().Before(deadline) {
					d, err := b.ClaimNext(ctx, nil, runner, time.Now())
					if err != nil {
						t.Errorf("ClaimNext() by %s = %v", runner, err)
						return
					}
					if d == nil {
						mu.Lock()
						drained := created == total && finished == total
						mu.Unlock()
						if drained {
							return
						}
						time.Sleep(time.Millisecond)
						continue
					}
					run, err := b.ListDeployments(ctx, state.DeploymentFilter{Stack: d.Stack, Statuses: []state.DeploymentStatus{state.StatusRunning}})
					if err != nil || len(run) != 1 || run[0].ID != d.ID {
						t.Errorf("%s claimed %s; RUNNING in stack %s: %v, %v; want only it", runner, d.ID, d.Stack, run, err)
					}
					mu.Lock()
					claimed[d.Stack] = append(claimed[d.Stack], *d)
					mu.Unlock()
					if err := b.FinishDeployment(ctx, d.ID, d.Runner, state.StatusCompleted, time.Now(), 1, ""); err != nil {
						t.Errorf("FinishDeployment(%s) = %v", d.ID, err)
						return
					}
					mu.Lock()
					finished++
					mu.Unlock()
				}
				t.Errorf("%s: the queues did not drain within a minute", runner)
			})
		}
	}
	wg.Wait()

	all, err := backends[0].ListDeployments(ctx, state.DeploymentFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != total {
		t.Fatalf("ListDeployments() = %d deployments, want %d", len(all), total)
	}
	for _, stack := range []string{"web", "api"} {
		var want, got []string
		for _, d := range slices.Backward(all) {
			if d.Stack == stack {
				want = append(want, d.ID)
				if d.Status != state.StatusCompleted {
					t.Errorf("%s is %s, want COMPLETED", d.ID, d.Status)
				}
			}
		}
		for _, d := range claimed[stack] {
			got = append(got, d.ID)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("deployments of %s in claim order (-want Seq order +got):\n%s", stack, diff)
		}
	}
}

// TestOneRunningPerStackInTheDatabase checks that the schema itself refuses a second RUNNING deployment in
// a stack, whatever a client does.
func TestOneRunningPerStackInTheDatabase(t *testing.T) {
	ctx := t.Context()
	u := postgrestest.FreshSchema(t)
	b := mustOpen(t, u)
	ds := []*state.Deployment{
		{ID: "d1", Stack: "web", Kind: state.KindDeploy, Status: state.StatusPending},
		{ID: "d2", Stack: "web", Kind: state.KindDeploy, Status: state.StatusPending},
	}
	if err := b.CreateDeployments(ctx, ds); err != nil {
		t.Fatal(err)
	}
	if err := b.ClaimDeployments(ctx, []string{"d1"}, "ci", time.Now()); err != nil {
		t.Fatal(err)
	}
	_, err := b.pool.Exec(ctx, `UPDATE deployments SET status = 'RUNNING' WHERE id = 'd2'`)
	if pgCode(err) != codeUniqueViolation {
		t.Errorf("a second RUNNING deployment in stack web: %v, want a unique violation", err)
	}
}

// TestMigrateDeploymentQueue migrates a schema at version 2 holding runs of the old model: they are
// numbered in start order, their creation time is their start time, and only the newest RUNNING run of
// each stack stays RUNNING, attached to a process since it started.
func TestMigrateDeploymentQueue(t *testing.T) {
	ctx := t.Context()
	u := postgrestest.FreshSchema(t)
	cfg, err := pgx.ParseConfig(u)
	if err != nil {
		t.Fatal(err)
	}
	db := stdlib.OpenDB(*cfg)
	defer func() { _ = db.Close() }()
	p, err := goose.NewProvider(goose.DialectPostgres, db, sqlschema.Migrations(), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 2); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	for _, r := range []struct {
		id, stack, status string
		started           int
	}{
		{"o1", "web", "COMPLETED", 1}, {"o2", "web", "RUNNING", 2}, {"a1", "api", "RUNNING", 2},
		{"o3", "web", "RUNNING", 3}, {"a2", "api", "PROPOSED", 5},
	} {
		if _, err := db.ExecContext(ctx, `INSERT INTO deployments (id, stack, kind, status, created_by, snapshot_hash, started_at)
VALUES ($1, $2, 'deploy', $3, 'alice@ci', 'h', $4)`, r.id, r.stack, r.status, sqlschema.Nanos(ms(r.started))); err != nil {
			t.Fatal(err)
		}
	}

	b := mustOpen(t, u)
	got, err := b.ListDeployments(ctx, state.DeploymentFilter{})
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		ID                   string
		Seq                  int64
		Status               state.DeploymentStatus
		CreatedAt, StartedAt time.Time
		HeartbeatAt          time.Time
		Aborted              bool
	}
	var rows []row
	for _, d := range got {
		rows = append(rows, row{d.ID, d.Seq, d.Status, d.CreatedAt, d.StartedAt, d.HeartbeatAt, d.Error != ""})
	}
	want := []row{
		{"a2", 5, state.StatusProposed, ms(5), time.Time{}, time.Time{}, false},
		{"o3", 4, state.StatusRunning, ms(3), ms(3), ms(3), false},
		{"o2", 3, state.StatusAborted, ms(2), ms(2), time.Time{}, true},
		{"a1", 2, state.StatusRunning, ms(2), ms(2), ms(2), false},
		{"o1", 1, state.StatusCompleted, ms(1), ms(1), time.Time{}, false},
	}
	if diff := cmp.Diff(want, rows, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
		t.Errorf("deployments after the migration (-want +got):\n%s", diff)
	}
	if _, err := p.DownTo(ctx, 2); err != nil {
		t.Errorf("migrating down to version 2: %v", err)
	}
}
