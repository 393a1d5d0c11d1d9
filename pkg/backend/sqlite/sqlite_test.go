package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/backend/internal/commitqueue"
	"github.com/cdkx-dev/cdkx/pkg/backend/internal/sqlschema"
	"github.com/cdkx-dev/cdkx/pkg/backend/internal/sqlschema/sqlschematest"

	"github.com/google/go-cmp/cmp"
	"github.com/pressly/goose/v3"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/pkg/state/statetest"
)

func TestContract(t *testing.T) {
	statetest.Run(t, func(t *testing.T) state.Backend {
		t.Helper()
		return openTemp(t)
	})
}

// TestStateMachine runs the state machine's (from, to, who) table on SQLite, with the policy set as
// cdkx.json's "approval" sets it.
func TestStateMachine(t *testing.T) {
	statetest.RunStateMachine(t, func(t *testing.T, p state.Policy) func(string) state.Backend {
		b := openTemp(t)
		t.Cleanup(func() { _ = b.Close() })
		b.SetPolicy(p)
		return func(string) state.Backend { return b }
	})
}

// openTemp opens a backend on a new file in a temporary directory.
func openTemp(t *testing.T) *Backend {
	t.Helper()
	b, err := Open(t.Context(), filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatalf("Open() = %v", err)
	}
	return b
}

// mustOpen opens path, closing it at the end of the test.
func mustOpen(t *testing.T, path string) *Backend {
	t.Helper()
	b, err := Open(t.Context(), path)
	if err != nil {
		t.Fatalf("Open(%q) = %v", path, err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

var cmpTimes = cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })

func TestReopenKeepsState(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "nested", "dirs", "state.db")
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)

	b := mustOpen(t, path)
	res := &state.Resource{
		LogicalID: "zone", Type: "Cdkx::PowerDNS::Zone", Provider: "powerdns", PhysicalID: "example.org.",
		Inputs:  resource.Properties{"name": "example.org.", "ttl": json.Number("3600")},
		Outputs: resource.Properties{"crn": "crn:zone"}, Status: "CREATE_COMPLETE", UpdatedAt: t0,
	}
	if _, err := b.Commit(ctx, "d1", "web", []state.Change{{Kind: state.PutResource, Resource: res}},
		[]state.Event{{Time: t0, LogicalID: "zone", Status: "CREATE_COMPLETE"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Commit(ctx, "d1", "web", []state.Change{{Kind: state.PutStack, Status: "CREATE_COMPLETE",
		Outputs: resource.Properties{"zone": "example.org."}, Dependencies: []string{"net"}}}, nil); err != nil {
		t.Fatal(err)
	}
	dep := &state.Deployment{ID: "d1", Stack: "web", Kind: state.KindDeploy, Status: state.StatusPending,
		Snapshot: []byte(`{"Resources":{}}`), CreatedAt: t0,
		Plan: &state.Plan{Create: 1, SnapshotHash: state.SnapshotHash([]byte(`{"Resources":{}}`))}}
	if err := b.CreateDeployments(ctx, []*state.Deployment{dep}); err != nil {
		t.Fatal(err)
	}
	lock := state.LockInfo{ID: "l1", Stack: "web", Operation: "deploy", User: "alice", Host: "ci", PID: 42,
		StartedAt: t0, HeartbeatAt: t0}
	if err := b.Lock(ctx, lock); err != nil {
		t.Fatal(err)
	}
	wantStack, err := b.GetStack(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	wantEvents, err := b.Events(ctx, "d1")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}

	b = mustOpen(t, path)
	gotStack, err := b.GetStack(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantStack, gotStack, cmpTimes); diff != "" {
		t.Errorf("GetStack(web) after reopen (-want +got):\n%s", diff)
	}
	gotEvents, err := b.Events(ctx, "d1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantEvents, gotEvents, cmpTimes); diff != "" {
		t.Errorf("Events(d1) after reopen (-want +got):\n%s", diff)
	}
	gotDep, err := b.GetDeployment(ctx, "d1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(dep, gotDep, cmpTimes); diff != "" {
		t.Errorf("GetDeployment(d1) after reopen (-want +got):\n%s", diff)
	}
	var le *state.LockedError
	if err := b.Lock(ctx, state.LockInfo{ID: "l2", Stack: "web"}); !errors.As(err, &le) {
		t.Fatalf("Lock(l2) after reopen = %v, want *state.LockedError", err)
	}
	if diff := cmp.Diff(lock, le.Holder, cmpTimes); diff != "" {
		t.Errorf("lock holder after reopen (-want +got):\n%s", diff)
	}
	if v, err := b.Commit(ctx, "d2", "web", nil, nil); err != nil || v != 3 {
		t.Errorf("Commit() after reopen = %d, %v, want version 3", v, err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	notDB := filepath.Join(dir, "notes.txt")
	content := strings.Repeat("these are not the tables you are looking for\n", 200)
	if err := os.WriteFile(notDB, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		path string
		want []string // substrings of the error
	}{
		{"not a database", notDB, []string{notDB, "not a SQLite database", "move it aside"}},
		{"directory", dir, []string{dir, "is a directory"}},
		{"parent is a file", filepath.Join(blocker, "state.db"), []string{blocker, "create directory"}},
		{"question mark", filepath.Join(dir, "a?b.db"), []string{"must not contain '?'"}},
		{"empty", "", []string{"empty path"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Open(t.Context(), tt.path)
			if err == nil {
				_ = b.Close()
				t.Fatalf("Open(%q) = nil error, want one", tt.path)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Open(%q) = %q, want it to mention %q", tt.path, err, w)
				}
			}
		})
	}
	got, err := os.ReadFile(notDB)
	if err != nil || string(got) != content {
		t.Errorf("Open changed the file that is not a database (err %v)", err)
	}
}

func TestOpenPermissionDenied(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores file permissions")
	}
	dir := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "state.db")
	b, err := Open(t.Context(), path)
	if err == nil {
		_ = b.Close()
		t.Fatalf("Open(%q) in a read-only directory = nil error, want one", path)
	}
	if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "permission") &&
		!strings.Contains(err.Error(), "writable") {
		t.Errorf("Open(%q) = %q, want the path and a permission hint", path, err)
	}
}

func TestMigrationsIdempotent(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "state.db")
	schema := func() (string, []int64) {
		t.Helper()
		b := mustOpen(t, path)
		defer func() { _ = b.Close() }()
		var tables []string
		rows, err := b.r.QueryContext(ctx, `SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			tables = append(tables, s)
		}
		var versions []int64
		vrows, err := b.r.QueryContext(ctx, `SELECT version_id FROM goose_db_version ORDER BY id`)
		if err != nil {
			t.Fatal(err)
		}
		defer vrows.Close()
		for vrows.Next() {
			var v int64
			if err := vrows.Scan(&v); err != nil {
				t.Fatal(err)
			}
			versions = append(versions, v)
		}
		return strings.Join(tables, "\n"), versions
	}
	schema1, versions1 := schema()
	schema2, versions2 := schema()
	if diff := cmp.Diff(schema1, schema2); diff != "" {
		t.Errorf("schema after the second Open (-first +second):\n%s", diff)
	}
	if diff := cmp.Diff([]int64{0, 1, 2, 3, 4, 5, 6}, versions2); diff != "" || !slices.Equal(versions1, versions2) {
		t.Errorf("goose versions = %v then %v, want [0 1 2 3 4 5 6] both times", versions1, versions2)
	}
}

// TestOpenRefusesNewerSchema: a database migrated by a newer cdkx is refused by Open and by OpenReadOnly,
// naming the path and what to do.
func TestOpenRefusesNewerSchema(t *testing.T) {
	for name, open := range map[string]func(context.Context, string) (*Backend, error){"Open": Open, "OpenReadOnly": OpenReadOnly} {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			path := filepath.Join(t.TempDir(), "state.db")
			b := mustOpen(t, path)
			if err := b.wr.do(func(conn *sql.Conn) error {
				_, err := conn.ExecContext(ctx, `INSERT INTO goose_db_version (version_id, is_applied) VALUES (99, 1)`)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			b2, err := open(ctx, path)
			if err == nil {
				_ = b2.Close()
				t.Fatalf("%s() of a newer schema = nil error, want one", name)
			}
			if !strings.Contains(err.Error(), "upgrade cdkx") || !strings.Contains(err.Error(), path) {
				t.Errorf("%s() = %q, want the path and \"upgrade cdkx\"", name, err)
			}
		})
	}
}

func TestPragmas(t *testing.T) {
	b := openTemp(t)
	defer func() { _ = b.Close() }()
	tests := []struct {
		pragma string
		want   string
	}{
		{"journal_mode", "wal"},
		{"synchronous", "1"}, // NORMAL
		{"foreign_keys", "1"},
		{"busy_timeout", "5000"},
	}
	for _, tt := range tests {
		var got string
		if err := b.wr.do(func(conn *sql.Conn) error {
			return conn.QueryRowContext(t.Context(), "PRAGMA "+tt.pragma).Scan(&got)
		}); err != nil {
			t.Fatalf("PRAGMA %s: %v", tt.pragma, err)
		}
		if got != tt.want {
			t.Errorf("PRAGMA %s = %q, want %q", tt.pragma, got, tt.want)
		}
	}
	var got string
	if err := b.r.QueryRowContext(t.Context(), "PRAGMA query_only").Scan(&got); err != nil || got != "1" {
		t.Errorf("reader PRAGMA query_only = %q, %v, want 1", got, err)
	}
}

// TestTwoBackendsOnOneFile stands for two processes sharing the file: their Commits serialize through
// SQLite's write lock (BEGIN IMMEDIATE and the busy timeout) without a lost update.
func TestTwoBackendsOnOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	backends := []*Backend{mustOpen(t, path), mustOpen(t, path)}
	const perWorker = 15
	var mu sync.Mutex // guards versions
	var versions []int64
	var wg sync.WaitGroup
	for i, b := range backends {
		for w := range 3 {
			wg.Go(func() {
				for j := range perWorker {
					id := fmt.Sprintf("r%d-%d-%d", i, w, j)
					v, err := b.Commit(context.Background(), "d", "web", []state.Change{{Kind: state.PutResource,
						Resource: &state.Resource{LogicalID: id, Status: "CREATE_COMPLETE"}}},
						[]state.Event{{Status: "CREATE_COMPLETE", LogicalID: id}})
					if err != nil {
						t.Errorf("Commit(%s) = %v", id, err)
						return
					}
					mu.Lock()
					versions = append(versions, v)
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	slices.Sort(versions)
	for i, v := range versions {
		if v != int64(i+1) {
			t.Fatalf("sorted versions[%d] = %d, want %d (versions %v)", i, v, i+1, versions)
		}
	}
	evs, err := backends[0].Events(t.Context(), "d")
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != len(versions) || evs[len(evs)-1].Seq != int64(len(versions)) {
		t.Errorf("Events(d) = %d events ending at seq %d, want %d", len(evs), evs[len(evs)-1].Seq, len(versions))
	}
}

// TestGroupFailureIsolated writes a group in which one Commit fails (its event's Seq is taken) through the
// backend's own writer: the group's transaction rolls back whole, then each Commit is written alone, so
// the others commit with their own versions and the failed one leaves nothing behind. A Commit whose
// context ended while queued is not written.
func TestGroupFailureIsolated(t *testing.T) {
	ctx := t.Context()
	b := openTemp(t)
	defer func() { _ = b.Close() }()
	if _, err := b.Commit(ctx, "d", "web", nil, []state.Event{{Seq: 5, Status: "X"}}); err != nil {
		t.Fatal(err)
	}
	req := func(ctx context.Context, id string, seq int64) *commitqueue.Request {
		r, err := commitqueue.Prepare(ctx, "d", "web", []state.Change{{Kind: state.PutResource, Resource: &state.Resource{LogicalID: id}}},
			[]state.Event{{Seq: seq, Status: id}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	cancelled, cancel := context.WithCancel(ctx)
	late := req(ctx, "late", 0)
	late.Ctx = cancelled
	cancel()
	batch := []*commitqueue.Request{req(ctx, "a", 0), req(ctx, "dup", 5), late, req(ctx, "b", 0)}
	if err := b.writeTx([]*commitqueue.Request{batch[0], batch[1], batch[3]}); err == nil {
		t.Fatal("writeTx of a group with a taken event seq = nil, want an error")
	}
	if s, _ := b.GetStack(ctx, "web"); s.Version != 1 {
		t.Fatalf("after the failed group transaction: version %d, want 1 (nothing written)", s.Version)
	}
	q := &commitqueue.Queue{Write: b.writeTx}
	for _, r := range batch {
		q.Submit(r) // one at a time: the same as the replay of a failed group
	}
	type result struct {
		Version int64
		Failed  bool
	}
	var got []result
	for _, r := range batch {
		got = append(got, result{r.Version, r.Err != nil})
	}
	want := []result{{2, false}, {0, true}, {0, true}, {3, false}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if !errors.Is(late.Err, context.Canceled) {
		t.Errorf("cancelled request's error = %v, want context.Canceled", late.Err)
	}
	s, err := b.GetStack(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for id := range s.Resources {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if diff := cmp.Diff([]string{"a", "b"}, ids); diff != "" || s.Version != 3 {
		t.Errorf("after the group: version %d, resources (-want +got):\n%s", s.Version, diff)
	}
}

func TestCloseWaitsForCommits(t *testing.T) {
	b := openTemp(t)
	var wg sync.WaitGroup
	var mu sync.Mutex // guards committed
	committed := 0
	for i := range 20 {
		wg.Go(func() {
			_, err := b.Commit(context.Background(), "d", "web", []state.Change{{Kind: state.PutResource,
				Resource: &state.Resource{LogicalID: strconv.Itoa(i)}}}, nil)
			if err == nil {
				mu.Lock()
				committed++
				mu.Unlock()
			} else if !errors.Is(err, errClosed) {
				t.Errorf("Commit() = %v, want nil or errClosed", err)
			}
		})
	}
	time.Sleep(time.Millisecond)
	if err := b.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	wg.Wait()
	if _, err := b.Commit(context.Background(), "d", "web", nil, nil); !errors.Is(err, errClosed) {
		t.Errorf("Commit() after Close = %v, want errClosed", err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close() = %v", err)
	}
	b2 := mustOpen(t, b.Path())
	s, err := b2.GetStack(t.Context(), "web")
	if err != nil {
		t.Fatal(err)
	}
	if int(s.Version) != committed || len(s.Resources) != committed {
		t.Errorf("after reopen: version %d with %d resources, want %d committed", s.Version, len(s.Resources), committed)
	}
}

// TestSurvivesKill commits from a child process that then kills itself with SIGKILL, without Close:
// every Commit that returned is in the file.
func TestSurvivesKill(t *testing.T) {
	if path := os.Getenv("CDKX_SQLITE_KILL_CHILD"); path != "" {
		killChild(path)
		return
	}
	if testing.Short() {
		t.Skip("runs a child process")
	}
	path := filepath.Join(t.TempDir(), "state.db")
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestSurvivesKill$")
	cmd.Env = append(os.Environ(), "CDKX_SQLITE_KILL_CHILD="+path)
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child = %v, want killed by SIGKILL; output:\n%s", err, out)
	}
	committed, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("child output %q: %v", out, err)
	}

	b := mustOpen(t, path)
	var check string
	if err := b.r.QueryRowContext(t.Context(), "PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Errorf("integrity_check = %q, %v, want ok", check, err)
	}
	s, err := b.GetStack(t.Context(), "web")
	if err != nil {
		t.Fatal(err)
	}
	if s.Version != int64(committed) || len(s.Resources) != committed {
		t.Errorf("after SIGKILL: version %d with %d resources, want %d", s.Version, len(s.Resources), committed)
	}
}

// killChild commits 500 times, prints how many returned, and kills its own process.
func killChild(path string) {
	b, err := Open(context.Background(), path)
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	n := 0
	for i := range 500 {
		if _, err := b.Commit(context.Background(), "d", "web", []state.Change{{Kind: state.PutResource,
			Resource: &state.Resource{LogicalID: strconv.Itoa(i)}}}, nil); err != nil {
			break
		}
		n++
	}
	fmt.Println(n)
	_ = os.Stdout.Sync()
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

// TestPanicDoesNotWedgeCommits recovers from a panic inside a Commit's transaction (the clock is read
// under the write lock), as an engine worker does, and checks that later Commits still go through.
func TestPanicDoesNotWedgeCommits(t *testing.T) {
	b := openTemp(t)
	defer func() { _ = b.Close() }()
	b.now = func() time.Time { panic("clock broke") }
	func() {
		defer func() {
			if p := recover(); p != "clock broke" {
				t.Errorf("recover() = %v, want the clock's panic", p)
			}
		}()
		_, _ = b.Commit(t.Context(), "d", "web", nil, nil)
	}()
	b.now = time.Now
	done := make(chan error)
	go func() {
		_, err := b.Commit(t.Context(), "d", "web", nil, nil)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Commit() after a recovered panic = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Commit() after a recovered panic is stuck")
	}
}

// TestMigrateDeploymentQueue migrates a file at schema version 2 holding runs of the old model: they are
// numbered in start order, their creation time is their start time, only the newest RUNNING run of each
// stack stays RUNNING (and is aborted by the next claim of its stack once DeadAfter passes), and runs that
// never started have no start time.
func TestMigrateDeploymentQueue(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := openPool(ctx, path, writerParams(), 1)
	if err != nil {
		t.Fatal(err)
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, db, sqlschema.Migrations(), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 2); err != nil {
		t.Fatal(err)
	}
	sqlschematest.SeedOldRuns(t, func(query string, args ...any) error {
		_, err := db.ExecContext(ctx, query, args...)
		return err
	})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	b := mustOpen(t, path)
	sqlschematest.CheckMigratedRuns(ctx, t, b)
}

// TestOneRunningPerStackInTheDatabase checks that the schema itself refuses a second RUNNING deployment in
// a stack, whatever a client does.
func TestOneRunningPerStackInTheDatabase(t *testing.T) {
	ctx := t.Context()
	b := openTemp(t)
	defer func() { _ = b.Close() }()
	var ds []*state.Deployment
	for _, id := range []string{"d1", "d2", "e1"} {
		ds = append(ds, &state.Deployment{ID: id, Stack: map[bool]string{true: "web", false: "api"}[id[0] == 'd'],
			Kind: state.KindDeploy, Status: state.StatusPending})
	}
	if err := b.CreateDeployments(ctx, ds); err != nil {
		t.Fatal(err)
	}
	if err := b.ClaimDeployments(ctx, []string{"d1", "e1"}, "ci", time.Now()); err != nil {
		t.Fatal(err)
	}
	err := b.wr.do(func(conn *sql.Conn) error {
		_, err := conn.ExecContext(ctx, `UPDATE deployments SET status = 'RUNNING' WHERE id = 'd2'`)
		return err
	})
	if sqliteCode(err) != sqlite3.SQLITE_CONSTRAINT {
		t.Errorf("a second RUNNING deployment in stack web: %v, want a constraint violation", err)
	}
}

// TestTwoBackendsClaim races agents of two Backends on one file (two processes) for 20 deployments in 2
// stacks: each deployment is claimed once, in creation order per stack.
func TestTwoBackendsClaim(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "state.db")
	backends := []*Backend{mustOpen(t, path), mustOpen(t, path)}
	const n = 20
	var ds []*state.Deployment
	for i := range n {
		ds = append(ds, &state.Deployment{ID: fmt.Sprintf("d%02d", i), Stack: []string{"web", "api"}[i%2],
			Kind: state.KindDeploy, Status: state.StatusApproved})
	}
	if err := backends[0].CreateDeployments(ctx, ds); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex // guards order and done
	order := map[string][]string{}
	done := 0
	var wg sync.WaitGroup
	for i, b := range backends {
		for g := range 4 {
			wg.Go(func() {
				deadline := time.Now().Add(time.Minute)
				for time.Now().Before(deadline) {
					d, err := b.ClaimNext(ctx, nil, fmt.Sprintf("agent-%d-%d", i, g), time.Now())
					if err != nil {
						t.Errorf("ClaimNext() = %v", err)
						return
					}
					mu.Lock()
					if d != nil {
						order[d.Stack] = append(order[d.Stack], d.ID)
					}
					finishedAll := done == n
					mu.Unlock()
					if d == nil {
						if finishedAll {
							return
						}
						time.Sleep(time.Millisecond)
						continue
					}
					if err := b.FinishDeployment(ctx, d.ID, d.Runner, state.StatusCompleted, time.Now(), 1, ""); err != nil {
						t.Errorf("FinishDeployment(%s) = %v", d.ID, err)
						return
					}
					mu.Lock()
					done++
					mu.Unlock()
				}
				t.Error("the queues did not drain within a minute")
			})
		}
	}
	wg.Wait()
	for s, stack := range []string{"web", "api"} {
		var want []string
		for i := s; i < n; i += 2 {
			want = append(want, ds[i].ID)
		}
		if diff := cmp.Diff(want, order[stack]); diff != "" {
			t.Errorf("claims of stack %s in order (-want +got):\n%s", stack, diff)
		}
	}
}
