package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/backend/postgres/postgrestest"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/pkg/state/statetest"
)

// mustOpen opens url, closing the backend at the end of the test.
func mustOpen(tb testing.TB, url string) *Backend {
	tb.Helper()
	b, err := Open(context.Background(), url)
	if err != nil {
		tb.Fatalf("Open() = %v", err)
	}
	tb.Cleanup(func() { _ = b.Close() })
	return b
}

func TestContract(t *testing.T) {
	postgrestest.URL(t)
	statetest.Run(t, func(t *testing.T) state.Backend {
		t.Helper()
		return mustOpen(t, postgrestest.FreshSchema(t))
	})
}

// TestStateMachine runs the state machine's (from, to, who) table on PostgreSQL, with the policy set as
// cdkx.json's "approval" sets it.
func TestStateMachine(t *testing.T) {
	postgrestest.URL(t)
	statetest.RunStateMachine(t, func(t *testing.T, p state.Policy) func(string) state.Backend {
		b := mustOpen(t, postgrestest.FreshSchema(t))
		b.SetPolicy(p)
		return func(string) state.Backend { return b }
	})
}

func put(id string, n int) state.Change {
	return state.Change{Kind: state.PutResource, Resource: &state.Resource{
		LogicalID: id, Type: "Cdkx::Test::Thing", Provider: "test", PhysicalID: "phys-" + id,
		Inputs:  resource.Properties{"n": json.Number(strconv.Itoa(n))},
		Outputs: resource.Properties{"crn": "crn:test:" + id}, Status: "CREATE_COMPLETE",
	}}
}

// TestTwoBackendsConcurrentCommits commits from 20 goroutines on each of two Backends (two pools, as two
// cdkx processes have) to one stack, and to two stacks under one deployment: versions stay contiguous
// and unique, no resource is lost, and events are numbered 1..N without a gap or a duplicate.
func TestTwoBackendsConcurrentCommits(t *testing.T) {
	u := postgrestest.FreshSchema(t)
	backends := []*Backend{mustOpen(t, u), mustOpen(t, u)}
	const goroutines, perGoroutine = 20, 10

	var mu sync.Mutex // guards versions
	versions := map[string][]int64{}
	var wg sync.WaitGroup
	for bi, b := range backends {
		for g := range goroutines {
			wg.Go(func() {
				for i := range perGoroutine {
					id := fmt.Sprintf("r-%d-%d-%d", bi, g, i)
					// Half the goroutines write "web", the others "api"; all under deployment "d".
					stack := []string{"web", "api"}[g%2]
					v, err := b.Commit(context.Background(), "d", stack, []state.Change{put(id, i)},
						[]state.Event{{Time: time.Unix(int64(i), 0), LogicalID: id, Status: "CREATE_COMPLETE"}})
					if err != nil {
						t.Errorf("Commit(%s) on backend %d = %v", id, bi, err)
						return
					}
					mu.Lock()
					versions[stack] = append(versions[stack], v)
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	perStack := len(backends) * goroutines / 2 * perGoroutine
	for _, stack := range []string{"web", "api"} {
		got := versions[stack]
		slices.Sort(got)
		want := make([]int64, perStack)
		for i := range want {
			want[i] = int64(i + 1)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("versions of %s returned by concurrent Commits, sorted (-want +got):\n%s", stack, diff)
		}
		for bi, b := range backends {
			s, err := b.GetStack(t.Context(), stack)
			if err != nil {
				t.Fatal(err)
			}
			if s.Version != int64(perStack) || len(s.Resources) != perStack {
				t.Errorf("backend %d: GetStack(%s) = version %d with %d resources, want %d and %d",
					bi, stack, s.Version, len(s.Resources), perStack, perStack)
			}
			replayed, err := b.GetStackVersion(t.Context(), stack, s.Version)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(s, replayed, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
				t.Errorf("GetStackVersion(%s, latest) (-want GetStack +got):\n%s", stack, diff)
			}
		}
	}
	evs, err := backends[1].Events(t.Context(), "d")
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2*perStack {
		t.Errorf("len(Events(d)) = %d, want %d", len(evs), 2*perStack)
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("Events(d)[%d].Seq = %d, want %d", i, e.Seq, i+1)
		}
	}
}

// TestLockContentionAcrossBackends has 10 goroutines on each of two Backends race for one stack's lock,
// round after round: exactly one wins each round, and every loser is told who won.
func TestLockContentionAcrossBackends(t *testing.T) {
	u := postgrestest.FreshSchema(t)
	backends := []*Backend{mustOpen(t, u), mustOpen(t, u)}
	const perBackend, rounds = 10, 5
	for round := range rounds {
		var mu sync.Mutex // guards winners and holders
		var winners []string
		holders := map[string]int{}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for bi, b := range backends {
			for g := range perBackend {
				wg.Go(func() {
					id := fmt.Sprintf("lock-%d-%d-%d", round, bi, g)
					<-start
					err := b.Lock(context.Background(), state.LockInfo{ID: id, Stack: "web", Operation: "deploy",
						User: "u", Host: "h" + strconv.Itoa(bi), PID: g})
					var le *state.LockedError
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						winners = append(winners, id)
					case errors.As(err, &le):
						holders[le.Holder.ID]++
					default:
						t.Errorf("Lock(%s) = %v", id, err)
					}
				})
			}
		}
		close(start)
		wg.Wait()
		if len(winners) != 1 {
			t.Fatalf("round %d: %d goroutines took the lock (%q), want exactly 1", round, len(winners), winners)
		}
		if want := map[string]int{winners[0]: 2*perBackend - 1}; !cmp.Equal(want, holders) {
			t.Errorf("round %d: holders named by LockedError = %v, want %v", round, holders, want)
		}
		locks, err := backends[round%2].Locks(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(locks) != 1 || locks[0].ID != winners[0] {
			t.Errorf("round %d: Locks() = %+v, want only %s", round, locks, winners[0])
		}
		// A compare-and-delete by a loser changes nothing; the winner's releases the lock.
		if err := backends[0].Unlock(t.Context(), "web", "not-the-holder"); err != nil {
			t.Fatal(err)
		}
		if err := backends[1].Unlock(t.Context(), "web", winners[0]); err != nil {
			t.Fatal(err)
		}
		if locks, err := backends[0].Locks(t.Context()); err != nil || len(locks) != 0 {
			t.Fatalf("round %d: Locks() after Unlock = %+v, %v; want none", round, locks, err)
		}
	}
}

// schemaVersions returns the rows of goose's version table: version → how many times it is recorded.
func schemaVersions(t *testing.T, u string) map[int64]int {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	rows, err := conn.Query(t.Context(), `SELECT version_id FROM goose_db_version WHERE is_applied`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]int{}
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		got[v]++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestMigrationsIdempotent opens a new schema from 6 goroutines at once (they serialize on the migration
// lock), then again: every migration is applied exactly once, and state survives reopening.
func TestMigrationsIdempotent(t *testing.T) {
	u := postgrestest.FreshSchema(t)
	known, err := knownVersion()
	if err != nil {
		t.Fatal(err)
	}
	if known != 6 {
		t.Errorf("knownVersion() = %d, want 6 (the SQLite backend's schema version)", known)
	}
	want := map[int64]int{0: 1}
	for v := int64(1); v <= known; v++ {
		want[v] = 1
	}

	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			b, err := Open(context.Background(), u)
			if err != nil {
				t.Errorf("concurrent Open() = %v", err)
				return
			}
			_ = b.Close()
		})
	}
	wg.Wait()
	if diff := cmp.Diff(want, schemaVersions(t, u)); diff != "" {
		t.Errorf("applied migrations after concurrent Opens (-want +got):\n%s", diff)
	}

	b := mustOpen(t, u)
	if _, err := b.Commit(t.Context(), "d", "web", []state.Change{put("a", 1)}, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = mustOpen(t, u)
	if s, err := b.GetStack(t.Context(), "web"); err != nil || s.Version != 1 || len(s.Resources) != 1 {
		t.Errorf("GetStack(web) after reopening = %+v, %v; want version 1 with 1 resource", s, err)
	}
	if diff := cmp.Diff(want, schemaVersions(t, u)); diff != "" {
		t.Errorf("applied migrations after reopening (-want +got):\n%s", diff)
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	u := postgrestest.FreshSchema(t)
	b := mustOpen(t, u)
	_ = b.Close()
	conn, err := pgx.Connect(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	if _, err := conn.Exec(t.Context(), `INSERT INTO goose_db_version (version_id, is_applied) VALUES (99, true)`); err != nil {
		t.Fatal(err)
	}
	_, err = Open(t.Context(), u)
	if !errors.Is(err, errNewerSchema) || !strings.Contains(err.Error(), "upgrade cdkx") {
		t.Errorf("Open(schema at version 99) = %v, want an error saying to upgrade cdkx", err)
	}
}

// freePort returns a loopback TCP port nothing listens on (it was free a moment ago).
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return port
}

// TestBadURL checks that failures to open say what is wrong and what to do, and never show the
// password. The cases that need a server run only with CDKX_TEST_POSTGRES_URL.
func TestBadURL(t *testing.T) {
	const secret = "s3cr3t-pw"
	port := freePort(t)
	tests := []struct {
		name   string
		url    func(t *testing.T) string
		online bool
		want   []string
	}{
		{"not a url", func(*testing.T) string { return "postgres://u:" + secret + "@127.0.0.1:notaport/db" },
			false, []string{"not valid", "postgres://user:password@host:5432/database"}},
		{"nothing listening", func(*testing.T) string {
			return fmt.Sprintf("postgres://u:%s@127.0.0.1:%d/cdkx?sslmode=disable", secret, port)
		}, false, []string{fmt.Sprintf("postgres://u@127.0.0.1:%d/cdkx", port), "no PostgreSQL server is listening", "start PostgreSQL"}},
		{"unknown host", func(*testing.T) string {
			return "postgres://u:" + secret + "@no-such-host.invalid:5432/cdkx?sslmode=disable&connect_timeout=2"
		}, false, []string{"no-such-host.invalid", "check the host"}},
		{"missing database", func(t *testing.T) string {
			u, _ := url.Parse(postgrestest.URL(t))
			u.Path = "/no_such_db_for_cdkx"
			u.User = url.UserPassword(u.User.Username(), secret)
			return u.String()
		}, true, []string{`database "no_such_db_for_cdkx" does not exist`, "createdb", "no_such_db_for_cdkx"}},
		{"unknown role", func(t *testing.T) string {
			u, _ := url.Parse(postgrestest.URL(t))
			u.User = url.UserPassword("no_such_role_for_cdkx", secret)
			return u.String()
		}, true, []string{`user "no_such_role_for_cdkx"`, "check the user"}},
		{"missing schema", func(t *testing.T) string {
			u, _ := url.Parse(postgrestest.URL(t))
			q := u.Query()
			q.Set("search_path", "no_such_schema_for_cdkx")
			u.RawQuery = q.Encode()
			return u.String()
		}, true, []string{"search_path", "CREATE SCHEMA"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.online {
				postgrestest.URL(t)
			}
			u := tt.url(t)
			b, err := Open(t.Context(), u)
			if err == nil {
				_ = b.Close()
				t.Fatalf("Open(%s) = nil error, want one", tt.name)
			}
			msg := err.Error()
			if strings.Contains(msg, secret) {
				t.Errorf("Open(%s) error shows the password: %v", tt.name, msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("Open(%s) = %q, want it to contain %q", tt.name, msg, w)
				}
			}
		})
	}
}

// TestFailedCommitIsAtomic makes the last statement of a Commit fail at the server (an event Seq already
// stored): nothing of the Commit remains, the version is not consumed, and the next Commit works.
func TestFailedCommitIsAtomic(t *testing.T) {
	b := mustOpen(t, postgrestest.FreshSchema(t))
	ctx := t.Context()
	if _, err := b.Commit(ctx, "d", "web", []state.Change{put("a", 1)}, []state.Event{{Seq: 5, Status: "X"}}); err != nil {
		t.Fatal(err)
	}
	before, err := b.GetStack(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Commit(ctx, "d", "web", []state.Change{put("b", 2), {Kind: state.DeleteResource, LogicalID: "a"},
		{Kind: state.PutStack, Status: "BROKEN"}}, []state.Event{{Status: "Y"}, {Seq: 5, Status: "again"}})
	if err == nil || !strings.Contains(err.Error(), "event seq 5 of deployment \"d\" is already stored") {
		t.Fatalf("Commit(duplicate seq) = %v, want an error naming the seq", err)
	}
	after, err := b.GetStack(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("GetStack(web) after a failed Commit (-before +after):\n%s", diff)
	}
	if evs, err := b.Events(ctx, "d"); err != nil || len(evs) != 1 {
		t.Errorf("Events(d) after a failed Commit = %v, %v; want 1 event", evs, err)
	}
	if v, err := b.Commit(ctx, "d", "web", nil, []state.Event{{Status: "Z"}}); err != nil || v != 2 {
		t.Errorf("Commit() after a failed Commit = %d, %v; want version 2", v, err)
	}
	if evs, err := b.Events(ctx, "d"); err != nil || len(evs) != 2 || evs[1].Seq != 6 {
		t.Errorf("Events(d) = %v, %v; want seqs 5 and 6", evs, err)
	}
}

// TestFailureInGroupFailsOnlyItsCommit sends many concurrent Commits, one of which fails at the server:
// it may share a group with others, which must still succeed.
func TestFailureInGroupFailsOnlyItsCommit(t *testing.T) {
	b := mustOpen(t, postgrestest.FreshSchema(t))
	if _, err := b.Commit(t.Context(), "d", "web", nil, []state.Event{{Seq: 1, Status: "X"}}); err != nil {
		t.Fatal(err)
	}
	const n = 40
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var evs []state.Event
			if i == n/2 {
				evs = []state.Event{{Seq: 1, Status: "duplicate"}}
			}
			_, errs[i] = b.Commit(context.Background(), "d", "web", []state.Change{put("r"+strconv.Itoa(i), i)}, evs)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if (err != nil) != (i == n/2) {
			t.Errorf("Commit %d = %v, want an error only for Commit %d", i, err, n/2)
		}
	}
	if s, err := b.GetStack(t.Context(), "web"); err != nil || s.Version != n || len(s.Resources) != n-1 {
		t.Errorf("GetStack(web) = version %d with %d resources, %v; want %d and %d", s.Version, len(s.Resources), err, n, n-1)
	}
}

// TestClosed checks that methods called after Close fail, and that Close is idempotent.
func TestClosed(t *testing.T) {
	b := mustOpen(t, postgrestest.FreshSchema(t))
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("Close() again = %v", err)
	}
	if _, err := b.Commit(t.Context(), "d", "web", nil, nil); !errors.Is(err, errClosed) {
		t.Errorf("Commit() after Close = %v, want errClosed", err)
	}
	if _, err := b.GetStack(t.Context(), "web"); !errors.Is(err, errClosed) {
		t.Errorf("GetStack() after Close = %v, want errClosed", err)
	}
}

func TestLocationHidesPassword(t *testing.T) {
	raw := postgrestest.FreshSchema(t)
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	b := mustOpen(t, raw)
	want := fmt.Sprintf("postgres://%s@%s/%s", u.User.Username(), u.Host, strings.TrimPrefix(u.Path, "/"))
	if got := b.Location(); got != want {
		t.Errorf("Location() = %q, want %q", got, want)
	}
	if pw, ok := u.User.Password(); ok && strings.Contains(b.Location(), pw) {
		t.Errorf("Location() = %q shows the password", b.Location())
	}
}
