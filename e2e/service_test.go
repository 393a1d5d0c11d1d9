//go:build e2e

package e2e

// The TestService* tests run the real cdkx binary against real `cdkx server` processes on PostgreSQL:
// each server works on a schema of its own of the database CDKX_TEST_POSTGRES_URL names (the tests skip
// without it), and the assemblies hold only Cdkx::Core::Data resources, which need no provider API.
//
//	export CDKX_TEST_POSTGRES_URL=$(bash scripts/pg-up.sh /tmp/pg-e2e | tail -n 1)
//	go test -tags e2e -run TestService -v ./e2e/
//
// Where a test needs two replicas, a front (svcFront: a round-robin reverse proxy on 127.0.0.1, in this
// file) spreads the requests over them and skips a replica whose connection is refused, so that killing
// one is survivable. The front can also hold each request for a while, which makes a deploy of a few
// hundred resources last seconds: long enough to kill or cancel something in the middle of it.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdkx-dev/cdkx/pkg/backend/postgres/postgrestest"
)

// svcProject is the service project every test's stacks belong to (CDKX_PROJECT).
const svcProject = "svc-e2e"

// svcProcTimeout bounds every cdkx process a test runs.
const svcProcTimeout = 3 * time.Minute

// TestServiceConcurrentClients runs 20 deploys of one stack at once through a front on two replicas,
// each setting a property to a value of its own: 15 wait for the lock (--lock-timeout 2m), 5 do not
// (--lock-timeout 0). The waiting ones all succeed; the others succeed or exit 3 naming a holder. The
// service's tables then show one update at a time, all succeeded, one per successful run and none for a
// locked-out one, and checkpoint versions 1..N without a gap, in the order of the updates; the final
// state holds the value of the run that completed last.
func TestServiceConcurrentClients(t *testing.T) {
	dbURL := postgrestest.FreshSchema(t)
	bin := svcBuild(t)
	token := svcToken(t, bin, dbURL)
	a, b := svcStartServer(t, bin, dbURL), svcStartServer(t, bin, dbURL)
	front := svcNewFront(t, a, b)
	env := svcClientEnv(token)

	const waiting, impatient, resources = 15, 5, 3
	type run struct {
		value string
		wait  bool
		res   svcResult
	}
	runs := make([]*run, waiting+impatient)
	for i := range runs {
		runs[i] = &run{value: fmt.Sprintf("run-%02d", i), wait: i < waiting}
	}
	var wg sync.WaitGroup
	start := time.Now()
	for i, r := range runs {
		dir := t.TempDir()
		svcWriteAssembly(t, dir, []string{"Shared"}, resources, r.value)
		timeout := "2m"
		if !r.wait {
			timeout = "0"
		}
		wg.Go(func() {
			if !r.wait {
				// Let the first waiting runs take the lock, so that the impatient ones meet a held one.
				time.Sleep(time.Duration(300+100*(i-waiting)) * time.Millisecond)
			}
			r.res = svcExec(bin, dir, env, "deploy", "--state", front.URL, "--lock-timeout", timeout)
		})
	}
	wg.Wait()
	wall := time.Since(start)

	byPID := map[int]*run{}
	var ok, locked []*run
	var took []time.Duration
	for _, r := range runs {
		if r.res.err != nil {
			t.Fatalf("deploy %s: %v", r.value, r.res.err)
		}
		byPID[r.res.pid] = r
		took = append(took, r.res.took)
		switch {
		case r.res.code == 0:
			ok = append(ok, r)
		case r.res.code == 3 && !r.wait:
			locked = append(locked, r)
		case r.wait:
			t.Errorf("deploy %s (--lock-timeout 2m) exited %d, want 0:\n%s", r.value, r.res.code, r.res.output())
		default:
			t.Errorf("deploy %s (--lock-timeout 0) exited %d, want 0 or 3:\n%s", r.value, r.res.code, r.res.output())
		}
	}
	slices.Sort(took)
	t.Logf("20 deploys of one stack through the front in %s: %d exited 0, %d exited 3 (locked); per run min %s, median %s, max %s; front served %v, refused %d, 502 %d",
		wall.Round(time.Millisecond), len(ok), len(locked), took[0].Round(time.Millisecond), took[len(took)/2].Round(time.Millisecond),
		took[len(took)-1].Round(time.Millisecond), front.servedCounts(), front.refused.Load(), front.failed.Load())
	// Exit 3 names what holds the stack: the lock's holder (pid), or the deployment ahead in the stack's
	// queue (with its runner's pid once RUNNING).
	holderPID := regexp.MustCompile(`\(pid (\d+),| pid (\d+)\)`)
	for _, r := range locked {
		out := r.res.output()
		if !strings.Contains(out, "is locked") && !strings.Contains(out, "still queued") {
			t.Errorf("deploy %s exited 3 without naming the holder or the queue:\n%s", r.value, out)
			continue
		}
		m := holderPID.FindStringSubmatch(out)
		if m == nil {
			continue // queued behind a deployment that was not running yet
		}
		pid, _ := strconv.Atoi(m[1] + m[2])
		if h := byPID[pid]; h == nil || h == r {
			t.Errorf("deploy %s names holder pid %d, which is none of the other runs", r.value, pid)
		}
	}

	db := svcConnect(t, dbURL)
	updates := svcUpdates(t, db, "Shared")
	if len(updates) != len(ok) {
		t.Errorf("stack Shared has %d updates, want %d (one per successful run)", len(updates), len(ok))
	}
	seen := map[int]bool{}
	minGap := time.Duration(-1)
	for i, u := range updates {
		r := byPID[u.pid]
		switch {
		case r == nil:
			t.Errorf("update %s (pid %d) belongs to no run", u.id, u.pid)
		case r.res.code != 0:
			t.Errorf("update %s belongs to %s, which exited %d: a locked-out run must create no update", u.id, r.value, r.res.code)
		}
		if seen[u.pid] {
			t.Errorf("pid %d has two updates", u.pid)
		}
		seen[u.pid] = true
		if u.kind != "update" || u.status != "succeeded" || u.started == nil || u.completed == nil {
			t.Errorf("update %s: kind %s, status %s, started %v, completed %v; want a completed update that succeeded", u.id, u.kind, u.status, u.started, u.completed)
			continue
		}
		if i == 0 || updates[i-1].completed == nil {
			continue
		}
		if gap := u.started.Sub(*updates[i-1].completed); minGap < 0 || gap < minGap {
			minGap = gap
		}
		if u.started.Before(*updates[i-1].completed) {
			t.Errorf("updates %s [%s, %s] and %s [%s, %s] overlap", updates[i-1].id, updates[i-1].started.Format(time.RFC3339Nano),
				updates[i-1].completed.Format(time.RFC3339Nano), u.id, u.started.Format(time.RFC3339Nano), u.completed.Format(time.RFC3339Nano))
		}
	}
	cps, stackVersion := svcCheckpoints(t, db, "Shared")
	svcCheckGapless(t, cps, stackVersion)
	// The checkpoints of each update come in one block, and the blocks in the order of the updates.
	order := map[string]int{}
	for i, u := range updates {
		order[u.id] = i
	}
	perUpdate := map[string]int{}
	for i, c := range cps {
		perUpdate[c.update]++
		if i > 0 && order[c.update] < order[cps[i-1].update] {
			t.Errorf("checkpoint %d (update %s) comes after checkpoint %d of a later update %s", c.version, c.update, cps[i-1].version, cps[i-1].update)
		}
	}
	for _, u := range updates {
		if perUpdate[u.id] == 0 {
			t.Errorf("update %s (pid %d) stored no checkpoint, though its run changed the stack", u.id, u.pid)
		}
	}
	t.Logf("database: %d updates, all succeeded, shortest time from one's completion to the next one's start %s; checkpoint versions 1..%d, stack version %d",
		len(updates), minGap, len(cps), stackVersion)

	var last *svcUpdate
	for i, u := range updates {
		if u.completed != nil && (last == nil || u.completed.After(*last.completed)) {
			last = &updates[i]
		}
	}
	if last == nil {
		t.Fatal("no completed update to compare the final state with")
	}
	want := byPID[last.pid]
	if want == nil {
		t.Fatalf("the last completed update %s belongs to no run", last.id)
	}
	st := svcExport(t, bin, t.TempDir(), env, front.URL)["Shared"]
	svcCheckComplete(t, st, "Shared", resources)
	for _, r := range st.Resources {
		if got := r.value(); got != want.value {
			t.Errorf("%s holds value %q, want %q (the run whose update completed last)", r.LogicalID, got, want.value)
		}
	}
	if st.Version != stackVersion {
		t.Errorf("exported version %d, want the stack's version %d", st.Version, stackVersion)
	}
	t.Logf("final state: version %d, value %q of the last completed run", st.Version, want.value)
}

// TestServiceParallelStacks deploys the 50 stacks of one assembly at once, one cdkx process per stack,
// through a front on two replicas: every deploy succeeds, and the service holds 50 stacks at version 1 or
// more with all their resources.
func TestServiceParallelStacks(t *testing.T) {
	dbURL := postgrestest.FreshSchema(t)
	bin := svcBuild(t)
	token := svcToken(t, bin, dbURL)
	a, b := svcStartServer(t, bin, dbURL), svcStartServer(t, bin, dbURL)
	front := svcNewFront(t, a, b)
	env := svcClientEnv(token)

	const stacks, resources = 50, 4
	var names []string
	for i := range stacks {
		names = append(names, fmt.Sprintf("Stack%02d", i))
	}
	dir := t.TempDir()
	svcWriteAssembly(t, dir, names, resources, "v1")
	results := make([]svcResult, stacks)
	var wg sync.WaitGroup
	start := time.Now()
	for i, name := range names {
		wg.Go(func() { results[i] = svcExec(bin, dir, env, "deploy", name, "--state", front.URL) })
	}
	wg.Wait()
	wall := time.Since(start)
	var slowest time.Duration
	failed := 0
	for i, r := range results {
		slowest = max(slowest, r.took)
		if r.err != nil || r.code != 0 {
			failed++
			t.Errorf("deploy %s exited %d (%v):\n%s", names[i], r.code, r.err, r.output())
		}
	}
	t.Logf("%d stacks deployed in parallel in %s (slowest process %s), %d failed; front served %v, 502 %d",
		stacks, wall.Round(time.Millisecond), slowest.Round(time.Millisecond), failed, front.servedCounts(), front.failed.Load())

	db := svcConnect(t, dbURL)
	var count, deployed, succeeded int
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := db.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE version > 0) FROM svc_stacks WHERE project = $1`, svcProject).Scan(&count, &deployed); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(ctx, `SELECT count(*) FROM svc_updates WHERE kind = 'update' AND status = 'succeeded'`).Scan(&succeeded); err != nil {
		t.Fatal(err)
	}
	if count != stacks || deployed != stacks || succeeded != stacks {
		t.Errorf("svc_stacks holds %d stacks, %d of them deployed, with %d succeeded updates; want %d of each", count, deployed, succeeded, stacks)
	}
	exported := svcExport(t, bin, t.TempDir(), env, front.URL)
	if len(exported) != stacks {
		t.Errorf("state export lists %d stacks, want %d", len(exported), stacks)
	}
	for _, name := range names {
		svcCheckComplete(t, exported[name], name, resources)
	}
	t.Logf("svc_stacks: %d stacks, %d deployed; state export: %d stacks of %d resources", count, deployed, len(exported), resources)
}

// TestServiceKilledClient kills (SIGKILL) a deploy in the middle of its update, on a server whose
// collector runs every second (the client's lease is its own 20 s: --lease applies to clients that ask
// for none). A deploy right after it exits 3 naming the dead holder; one with --lock-timeout 1m waits
// until the dead update is cancelled (by the collector or by its own create, whichever comes first), then
// settles what the killed run left pending and finishes: every resource exactly once.
func TestServiceKilledClient(t *testing.T) {
	dbURL := postgrestest.FreshSchema(t)
	bin := svcBuild(t)
	token := svcToken(t, bin, dbURL)
	srv := svcStartServer(t, bin, dbURL, "--lease", "3s", "--lease-grace", "1s", "--gc-interval", "1s")
	front := svcNewFront(t, srv)
	env := svcClientEnv(token)
	dir, live, release := svcStartBigDeploy(t, bin, env, front, 1)
	killed := live.pid()
	if err := live.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	release()
	killedAt := time.Now()
	code, out := live.wait(time.Minute)
	t.Logf("killed the deploy (pid %d, exit %d) after %d creates started", killed, code, live.creates())
	if strings.Contains(out, "Deploy complete") {
		t.Fatalf("the deploy completed before it was killed:\n%s", out)
	}

	r := svcExec(bin, dir, env, "deploy", "--state", srv.URL, "--lock-timeout", "0")
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Logf("deploy --lock-timeout 0, %s after the kill: exit %d in %s", r.start.Sub(killedAt).Round(time.Millisecond), r.code, r.took.Round(time.Millisecond))
	if r.code != 3 || !strings.Contains(r.output(), fmt.Sprintf("(pid %d,", killed)) {
		t.Errorf("deploy --lock-timeout 0 right after the kill exited %d, want 3 naming the killed holder (pid %d):\n%s", r.code, killed, r.output())
	}

	r = svcExec(bin, dir, env, "deploy", "--state", srv.URL, "--lock-timeout", "1m")
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Logf("deploy --lock-timeout 1m: exit %d in %s, done %s after the kill", r.code, r.took.Round(time.Millisecond), r.end.Sub(killedAt).Round(time.Millisecond))
	if r.code != 0 {
		t.Fatalf("deploy --lock-timeout 1m exited %d:\n%s", r.code, r.output())
	}
	if !strings.Contains(r.output(), "Waiting up to 1m0s for the lock of stack Big") {
		t.Errorf("deploy --lock-timeout 1m did not wait for the dead holder's lock:\n%s", r.output())
	}
	if m := regexp.MustCompile(`Settling (\d+) operation\(s\) left pending`).FindStringSubmatch(r.output()); m != nil {
		t.Logf("the deploy settled %s operation(s) the killed run left pending", m[1])
	} else {
		t.Logf("the killed run left nothing pending")
	}

	db := svcConnect(t, dbURL)
	updates := svcUpdates(t, db, "Big")
	if dead, next := svcTakenOver(t, updates, killed, r.pid); dead != nil {
		t.Logf("the killed run's update %s was cancelled %s after the kill; the waiting deploy's update started %s later",
			dead.id, dead.completed.Sub(killedAt).Round(time.Millisecond), next.started.Sub(*dead.completed).Round(time.Millisecond))
	}
	for _, u := range updates {
		if u.pid != killed && u.status != "succeeded" {
			t.Errorf("update %s (pid %d) is %s, want succeeded", u.id, u.pid, u.status)
		}
	}
	st := svcCheckBig(t, db, bin, dir, env, srv.URL)
	t.Logf("final state: %d resources at version %d (%d updates)", len(st.Resources), st.Version, len(updates))
}

// TestServiceReplicaKilled kills (SIGKILL) one of two replicas behind the front in the middle of a
// deploy of 300 resources: the front sends everything to the other one, the client retries what the dead
// replica never answered, and the deploy succeeds with complete state.
func TestServiceReplicaKilled(t *testing.T) {
	dbURL := postgrestest.FreshSchema(t)
	bin := svcBuild(t)
	token := svcToken(t, bin, dbURL)
	a, b := svcStartServer(t, bin, dbURL), svcStartServer(t, bin, dbURL)
	front := svcNewFront(t, a, b)
	env := svcClientEnv(token)
	dir, live, release := svcStartBigDeploy(t, bin, env, front, 2)
	before := front.servedCounts()
	a.kill()
	release()
	t.Logf("killed replica 0 (pid %d) after %d creates started; the replicas had served %v", a.cmd.Process.Pid, live.creates(), before)
	code, out := live.wait(2 * time.Minute)
	after := front.servedCounts()
	t.Logf("deploy exit %d in %s, longest pause between two creates %s; replicas served %v in all; front: %d connections refused, %d answered 502",
		code, live.took().Round(time.Millisecond), live.longestGap().Round(time.Millisecond), after, front.refused.Load(), front.failed.Load())
	if code != 0 {
		t.Fatalf("the deploy exited %d after replica 0 was killed:\n%s", code, out)
	}
	if after[1] <= before[1] || front.refused.Load() == 0 {
		t.Errorf("replica 1 served %d requests after the kill and the front saw %d refused connections: the kill did not land mid-deploy",
			after[1]-before[1], front.refused.Load())
	}
	db := svcConnect(t, dbURL)
	st := svcCheckBig(t, db, bin, dir, env, front.URL)
	t.Logf("final state: %d resources at version %d", len(st.Resources), st.Version)
}

// TestServicePostgresRestart restarts the server's PostgreSQL (a private cluster of scripts/pg-up.sh)
// in the middle of a deploy: while it is down the service answers 503 with Retry-After, the client's
// retries carry the deploy over, and state is complete afterwards.
func TestServicePostgresRestart(t *testing.T) {
	postgrestest.URL(t) // this test runs with the others, when a test database is configured
	pg := svcPGUp(t)
	bin := svcBuild(t)
	token := svcToken(t, bin, pg.url)
	srv := svcStartServer(t, bin, pg.url, "--gc-interval", "1s")
	slow := svcNewFront(t, srv)
	slow.setDelay(15 * time.Millisecond)
	env := svcClientEnv(token)
	dir, live, release := svcStartBigDeploy(t, bin, env, slow, 1)
	downAt := time.Now()
	pg.ctl(t, "stop -m fast -w -t 30")
	stopped := time.Now()
	release() // the deploy goes on against a service whose database is down
	type probe struct {
		path, retryAfter string
		code             int
	}
	var probes []probe
	for time.Since(stopped) < 3*time.Second {
		for _, path := range []string{"/api/user", "/api/stacks/organization/" + svcProject + "/Big", "/healthz"} {
			code, ra, err := svcProbe(srv.URL+path, token)
			if err != nil {
				t.Errorf("GET %s while PostgreSQL is down: %v", path, err)
				continue
			}
			probes = append(probes, probe{path, ra, code})
		}
		time.Sleep(250 * time.Millisecond)
	}
	pg.ctl(t, fmt.Sprintf("start -w -t 30 -l '%s/postgres.log' -o '-c listen_addresses=127.0.0.1 -p %d -c unix_socket_directories=%s'", pg.dir, pg.port, pg.dir))
	upAt := time.Now()
	t.Logf("PostgreSQL stopped in %s, down for %s in all; the deploy had started %d creates when it went down",
		stopped.Sub(downAt).Round(time.Millisecond), upAt.Sub(downAt).Round(time.Millisecond), live.creates())
	byAnswer := map[string]int{}
	for _, p := range probes {
		key := fmt.Sprintf("%s %d Retry-After %q", p.path, p.code, p.retryAfter)
		byAnswer[key]++
		if p.code != http.StatusServiceUnavailable || p.retryAfter == "" {
			if byAnswer[key] == 1 {
				t.Errorf("GET %s while PostgreSQL is down answered %d with Retry-After %q, want 503 with Retry-After", p.path, p.code, p.retryAfter)
			}
		}
	}
	t.Logf("probes while down: %v", byAnswer)

	code, out := live.wait(2 * time.Minute)
	t.Logf("deploy exit %d in %s, done %s after PostgreSQL was back; longest pause between two creates %s",
		code, live.took().Round(time.Millisecond), live.ended().Sub(upAt).Round(time.Millisecond), live.longestGap().Round(time.Millisecond))
	before, down, after := srv.statuses(live.start, downAt), srv.statuses(downAt, upAt), srv.statuses(upAt, time.Now())
	t.Logf("server answers by status: before the stop %v; while down %v (503: %d, 500: %d); after the restart %v (503: %d, 500: %d)",
		before, down, down[503], down[500], after, after[503], after[500])
	if code != 0 {
		t.Errorf("the deploy exited %d across the PostgreSQL restart:\n%s", code, out)
	}
	if n := down[500] + after[500]; n > 0 {
		t.Errorf("the server answered 500 %d times (%d while PostgreSQL was down, %d after it was back); a database that does not answer is a transient 503 with Retry-After",
			n, down[500], after[500])
	}

	// The collector works again once PostgreSQL is back: its errors stop.
	time.Sleep(2 * time.Second)
	n1, at1 := srv.count("collector: take the lock"), time.Since(upAt)
	time.Sleep(3 * time.Second)
	n2, at2 := srv.count("collector: take the lock"), time.Since(upAt)
	t.Logf("collector errors: %d by %s after the restart, %d by %s", n1, at1.Round(time.Second), n2, at2.Round(time.Second))
	if n2 > n1 {
		t.Errorf("the collector still fails %s after PostgreSQL came back (%d more errors in 3 s): its pinned connection died with the restart and is never replaced:\n%s",
			time.Since(upAt).Round(time.Second), n2-n1, srv.grep("collector"))
	}

	if code == 0 {
		st := svcCheckBig(t, svcConnect(t, pg.url), bin, dir, env, srv.URL)
		t.Logf("final state: %d resources at version %d", len(st.Resources), st.Version)
	}
}

// TestServiceCancel cancels a running deploy with `cdkx cancel STACK` from another process: cancel
// exits 0, the deploy stops with "lost the lock of stack" (no panic), and the next deploy succeeds and
// leaves nothing to change.
func TestServiceCancel(t *testing.T) {
	dbURL := postgrestest.FreshSchema(t)
	bin := svcBuild(t)
	token := svcToken(t, bin, dbURL)
	srv := svcStartServer(t, bin, dbURL)
	front := svcNewFront(t, srv)
	// The deploy is held mid-run until cdkx cancel (which talks to the service directly) has landed.
	env := svcClientEnv(token)
	dir, live, release := svcStartBigDeploy(t, bin, env, front, 1)
	pid := live.pid()
	c := svcExec(bin, dir, env, "cancel", "Big", "--state", srv.URL)
	release()
	if c.err != nil {
		t.Fatal(c.err)
	}
	t.Logf("cdkx cancel Big: exit %d in %s, after %d creates were recorded", c.code, c.took.Round(time.Millisecond), live.creates())
	if c.code != 0 || !strings.Contains(c.output(), "Cancelled the update of stack Big") {
		t.Errorf("cdkx cancel Big exited %d, want 0 with \"Cancelled the update of stack Big\":\n%s", c.code, c.output())
	}
	code, out := live.wait(time.Minute)
	t.Logf("the cancelled deploy exited %d, %s after cancel returned, having recorded %d creates",
		code, live.ended().Sub(c.end).Round(time.Millisecond), live.creates())
	if code == 0 || !strings.Contains(out, "lost the lock of stack Big") {
		t.Errorf("the cancelled deploy exited %d, want non-zero with \"lost the lock of stack Big\":\n%s", code, out)
	}
	if strings.Contains(out, "Deploy complete") {
		t.Errorf("the cancelled deploy reports \"Deploy complete\" for an update the service recorded as cancelled:\n%s", out)
	}
	if strings.Contains(out, "panic:") || strings.Contains(out, "goroutine ") {
		t.Errorf("the cancelled deploy panicked:\n%s", out)
	}

	r := svcExec(bin, dir, env, "deploy", "--state", srv.URL)
	if r.err != nil || r.code != 0 {
		t.Fatalf("deploy after the cancel exited %d (%v):\n%s", r.code, r.err, r.output())
	}
	d := svcExec(bin, dir, env, "diff", "--state", srv.URL, "--detailed-exitcode")
	if d.err != nil || d.code != 0 {
		t.Errorf("diff after the next deploy exited %d (%v), want 0 (no changes):\n%s", d.code, d.err, d.output())
	}
	t.Logf("next deploy: exit 0 in %s; diff --detailed-exitcode: exit %d", r.took.Round(time.Millisecond), d.code)

	db := svcConnect(t, dbURL)
	updates := svcUpdates(t, db, "Big")
	for _, u := range updates {
		want := "succeeded"
		if u.pid == pid {
			want = "cancelled"
		}
		if u.status != want {
			t.Errorf("update %s (pid %d) is %s, want %s", u.id, u.pid, u.status, want)
		}
	}
	st := svcCheckBig(t, db, bin, dir, env, srv.URL)
	t.Logf("final state: %d resources at version %d, %d updates", len(st.Resources), st.Version, len(updates))
}

// TestServiceCancelAtComplete cancels an update whose steps are all committed but whose completion has
// not reached the service: the run does not say "Deploy complete" for an update the service recorded as
// cancelled; it exits non-zero with the lost lock, and state holds every committed step.
func TestServiceCancelAtComplete(t *testing.T) {
	dbURL := postgrestest.FreshSchema(t)
	bin := svcBuild(t)
	token := svcToken(t, bin, dbURL)
	srv := svcStartServer(t, bin, dbURL)
	front := svcNewFront(t, srv)
	held, release := front.holdAfter(0, "/complete")
	defer release()
	env := svcClientEnv(token)
	dir := t.TempDir()
	svcWriteAssembly(t, dir, []string{"Big"}, svcBigResources, "v1")
	live := svcStart(t, bin, dir, env, "deploy", "--state", front.URL)
	select {
	case <-held:
	case <-live.done:
		t.Fatalf("the deploy ended before its completion was held:\n%s", live.output())
	case <-time.After(time.Minute):
		t.Fatalf("the deploy did not complete its update within a minute:\n%s", live.output())
	}
	c := svcExec(bin, dir, env, "cancel", "Big", "--state", srv.URL)
	release()
	if c.err != nil || c.code != 0 {
		t.Fatalf("cdkx cancel Big exited %d (%v):\n%s", c.code, c.err, c.output())
	}
	code, out := live.wait(time.Minute)
	t.Logf("the deploy cancelled at its completion exited %d, having recorded %d creates", code, live.creates())
	if code == 0 || !strings.Contains(out, "lost the lock of stack Big") || strings.Contains(out, "Deploy complete") {
		t.Errorf("the deploy exited %d, want non-zero with \"lost the lock of stack Big\" and no \"Deploy complete\":\n%s", code, out)
	}
	db := svcConnect(t, dbURL)
	if updates := svcUpdates(t, db, "Big"); len(updates) != 1 || updates[0].status != "cancelled" {
		t.Errorf("updates of stack Big: %+v, want one, cancelled", updates)
	}
	svcCheckBig(t, db, bin, dir, env, srv.URL)
}

// svcBuild builds cdkx into a temporary directory of the test.
func svcBuild(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "cdkx")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/cdkx")
	build.Dir = ".." // the module root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/cdkx: %v\n%s", err, out)
	}
	return bin
}

// svcClientEnv is the environment of cdkx clients: the parent's without its CDKX_ variables, plain
// output, and the token and project of the service.
func svcClientEnv(token string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CDKX_") {
			env = append(env, kv)
		}
	}
	return append(env, "CI=true", "NO_COLOR=1", "CDKX_TOKEN="+token, "CDKX_PROJECT="+svcProject)
}

// svcToken creates an API token in the service database at dbURL.
func svcToken(t *testing.T, bin, dbURL string) string {
	t.Helper()
	r := svcExec(bin, t.TempDir(), svcClientEnv(""), "server", "token", "create", "e2e", "--database-url", dbURL)
	if r.err != nil || r.code != 0 {
		t.Fatalf("cdkx server token create exited %d (%v):\n%s", r.code, r.err, r.output())
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// svcServer is a `cdkx server` process.
type svcServer struct {
	cmd  *exec.Cmd
	URL  string        // http://127.0.0.1:PORT
	done chan struct{} // closed once the process has exited

	mu    sync.Mutex
	lines []string // its stderr: the listening line, then slog JSON records
}

// svcStartServer starts `cdkx server` on a free port of 127.0.0.1 with the database dbURL and flags,
// waits until /healthz answers 200, and stops it (SIGTERM, then SIGKILL) when the test ends.
func svcStartServer(t *testing.T, bin, dbURL string, flags ...string) *svcServer {
	t.Helper()
	args := append([]string{"server", "--listen", "127.0.0.1:0", "--database-url", dbURL}, flags...)
	cmd := exec.Command(bin, args...)
	cmd.Env = svcClientEnv("")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &svcServer{cmd: cmd, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			line := sc.Text()
			if a, ok := strings.CutPrefix(line, "cdkx server listening on "); ok {
				addr <- strings.TrimSpace(a)
			}
			s.mu.Lock()
			s.lines = append(s.lines, line)
			s.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, stderr)
		_ = cmd.Wait()
	}()
	t.Cleanup(s.stop)
	select {
	case s.URL = <-addr:
	case <-s.done:
		t.Fatalf("cdkx server exited before listening:\n%s", s.text())
	case <-time.After(30 * time.Second):
		t.Fatalf("cdkx server did not listen within 30 s:\n%s", s.text())
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if code, _, err := svcProbe(s.URL+"/healthz", ""); err == nil && code == http.StatusOK {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("cdkx server at %s is not healthy within 30 s:\n%s", s.URL, s.text())
		}
	}
}

// stop ends the server by its PID: SIGTERM, and SIGKILL when it is still running 15 s later.
func (s *svcServer) stop() {
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(15 * time.Second):
		_ = s.cmd.Process.Signal(syscall.SIGKILL)
		<-s.done
	}
}

// kill ends the server with SIGKILL, as a crash would, and waits for it.
func (s *svcServer) kill() {
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
}

func (s *svcServer) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.lines, "\n")
}

// statuses counts the requests the server logged as answered in [from, to), by HTTP status.
func (s *svcServer) statuses(from, to time.Time) map[int]int {
	s.mu.Lock()
	lines := slices.Clone(s.lines)
	s.mu.Unlock()
	out := map[int]int{}
	for _, l := range lines {
		var rec struct {
			Time   time.Time `json:"time"`
			Msg    string    `json:"msg"`
			Status int       `json:"status"`
		}
		if json.Unmarshal([]byte(l), &rec) == nil && rec.Msg == "request" && !rec.Time.Before(from) && rec.Time.Before(to) {
			out[rec.Status]++
		}
	}
	return out
}

// count returns how many log records have the message msg.
func (s *svcServer) count(msg string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, l := range s.lines {
		var rec struct {
			Msg string `json:"msg"`
		}
		if json.Unmarshal([]byte(l), &rec) == nil && rec.Msg == msg {
			n++
		}
	}
	return n
}

// grep returns the log lines holding s, the last 10 at most.
func (s *svcServer) grep(sub string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, l := range s.lines {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out[max(0, len(out)-10):], "\n")
}

// svcProbe sends GET url (with the API token unless it is empty) and returns the status and Retry-After.
func svcProbe(rawURL, token string) (int, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", rawURL, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "token "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), nil
}

// svcFront is a round-robin reverse proxy on 127.0.0.1 in front of replicas. A request goes to the next
// replica in turn; when that one refuses the connection (it is dead), to the one after it. Each request
// may be held for delay first.
type svcFront struct {
	URL     string
	targets []string // host:port of the replicas
	tr      *http.Transport
	next    atomic.Uint64
	delay   atomic.Int64 // nanoseconds
	// delayOnly, when set, limits the delay to requests whose path ends with it (e.g. "/commit").
	delayOnly atomic.Pointer[string]
	// hold, when set, holds requests once its commits are answered (holdAfterCommits).
	hold    atomic.Pointer[svcHold]
	served  []atomic.Int64
	refused atomic.Int64 // connections a replica refused
	failed  atomic.Int64 // requests answered 502 (the replica failed mid-request)
}

func svcNewFront(t *testing.T, replicas ...*svcServer) *svcFront {
	t.Helper()
	f := &svcFront{served: make([]atomic.Int64, len(replicas)),
		tr: &http.Transport{DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext, MaxIdleConnsPerHost: 100, IdleConnTimeout: 30 * time.Second}}
	for _, r := range replicas {
		u, err := url.Parse(r.URL)
		if err != nil {
			t.Fatal(err)
		}
		f.targets = append(f.targets, u.Host)
	}
	rp := &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.Out.URL.Scheme, pr.Out.URL.Host = "http", f.targets[0] },
		Transport: f,
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, _ error) {
			f.failed.Add(1)
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() {
		_ = hs.Close()
		f.tr.CloseIdleConnections()
	})
	f.URL = "http://" + ln.Addr().String()
	return f
}

func (f *svcFront) setDelay(d time.Duration) { f.delay.Store(int64(d)) }

// svcHold holds the front's requests after some commits: a point in a run that a test reaches without
// racing the run (a fast run cannot finish before the test acts).
type svcHold struct {
	commits  atomic.Int64 // commits still let through
	path     string       // the suffix of the paths held ("": every path)
	once     sync.Once
	held     chan struct{} // closed when the first request is held
	released chan struct{}
}

// holdAfter makes the front hold every request whose path ends with path ("": every request) that
// arrives once n commit requests ("…/commit") have been answered, until release is called; held is closed
// when the first request is held.
func (f *svcFront) holdAfter(n int, path string) (held <-chan struct{}, release func()) {
	h := &svcHold{path: path, held: make(chan struct{}), released: make(chan struct{})}
	h.commits.Store(int64(n))
	f.hold.Store(h)
	var once sync.Once
	return h.held, func() { once.Do(func() { close(h.released) }) }
}

func (f *svcFront) servedCounts() []int64 {
	out := make([]int64, len(f.served))
	for i := range f.served {
		out[i] = f.served[i].Load()
	}
	return out
}

// RoundTrip sends req to the next replica that accepts the connection.
func (f *svcFront) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	hold := f.hold.Load()
	if hold != nil && hold.commits.Load() <= 0 && strings.HasSuffix(req.URL.Path, hold.path) {
		hold.once.Do(func() { close(hold.held) })
		select {
		case <-req.Context().Done():
			return nil, req.Context().Err()
		case <-hold.released:
		}
	}
	if only := f.delayOnly.Load(); only != nil && !strings.HasSuffix(req.URL.Path, *only) {
		// not delayed
	} else if d := time.Duration(f.delay.Load()); d > 0 {
		select {
		case <-req.Context().Done():
			return nil, req.Context().Err()
		case <-time.After(d):
		}
	}
	first := int(f.next.Add(1) - 1)
	var err error
	for i := range f.targets {
		k := (first + i) % len(f.targets)
		out := req.Clone(req.Context())
		out.URL.Host, out.Host = f.targets[k], f.targets[k]
		out.Body, out.GetBody, out.ContentLength = nil, nil, 0
		if body != nil {
			out.Body = io.NopCloser(bytes.NewReader(body))
			out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
			out.ContentLength = int64(len(body))
		}
		var resp *http.Response
		if resp, err = f.tr.RoundTrip(out); err == nil {
			f.served[k].Add(1)
			if hold != nil && strings.HasSuffix(req.URL.Path, "/commit") {
				hold.commits.Add(-1)
			}
			return resp, nil
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return nil, err
		}
		f.refused.Add(1)
	}
	return nil, err
}

// svcResult is how a cdkx process ended.
type svcResult struct {
	code           int
	stdout, stderr string
	pid            int
	start, end     time.Time
	took           time.Duration
	err            error // the process could not run
}

func (r svcResult) output() string { return r.stdout + r.stderr }

// svcExec runs cdkx with args in dir and returns how it ended; it never calls t (goroutines use it).
func svcExec(bin, dir string, env []string, args ...string) svcResult {
	ctx, cancel := context.WithTimeout(context.Background(), svcProcTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env, cmd.WaitDelay = dir, env, 10*time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	r := svcResult{start: time.Now()}
	if err := cmd.Start(); err != nil {
		return svcResult{code: -1, err: err}
	}
	r.pid = cmd.Process.Pid
	err := cmd.Wait()
	r.end = time.Now()
	r.took = r.end.Sub(r.start)
	r.stdout, r.stderr = stdout.String(), stderr.String()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		r.code, r.err = -1, err
	}
	if ctx.Err() != nil {
		r.err = fmt.Errorf("cdkx %s did not end within %s", strings.Join(args, " "), svcProcTimeout)
	}
	return r
}

// svcLive is a cdkx process running in the background, whose stderr is read as it comes.
type svcLive struct {
	cmd    *exec.Cmd
	cancel context.CancelFunc
	start  time.Time
	done   chan struct{}

	mu      sync.Mutex
	out     strings.Builder
	stdout  bytes.Buffer
	started int // resource creates started (Data: CREATE_COMPLETE lines, see svcStart)
	last    time.Time
	gap     time.Duration // the longest time between two of them
	code    int
	end     time.Time
}

// svcStart starts cdkx with args in dir; the process is killed when the test ends if still running.
func svcStart(t *testing.T, bin, dir string, env []string, args ...string) *svcLive {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), svcProcTimeout)
	l := &svcLive{cancel: cancel, done: make(chan struct{})}
	l.cmd = exec.CommandContext(ctx, bin, args...)
	l.cmd.Dir, l.cmd.Env, l.cmd.WaitDelay = dir, env, 10*time.Second
	l.cmd.Stdout = &lockedWriter{mu: &l.mu, w: &l.stdout}
	stderr, err := l.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	l.start = time.Now()
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(l.done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			line := sc.Text()
			l.mu.Lock()
			l.out.WriteString(line + "\n")
			// A Data create shows only its CREATE_COMPLETE (a state-only provider's call has no pending
			// record), so that line counts as its start.
			if (strings.Contains(line, "CREATE_IN_PROGRESS") || strings.Contains(line, "CREATE_COMPLETE")) &&
				strings.Contains(line, "Cdkx::Core::Data") {
				now := time.Now()
				if l.started++; l.started > 1 {
					l.gap = max(l.gap, now.Sub(l.last))
				}
				l.last = now
			}
			l.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, stderr)
		err := l.cmd.Wait()
		l.mu.Lock()
		defer l.mu.Unlock()
		l.end = time.Now()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			l.code = ee.ExitCode()
		case err != nil:
			l.code = -1
			fmt.Fprintf(&l.out, "(wait: %v)\n", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-l.done
	})
	return l
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

func (l *svcLive) pid() int { return l.cmd.Process.Pid }

func (l *svcLive) creates() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.started
}

// longestGap is the longest time between two resource creates starting.
func (l *svcLive) longestGap() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.gap
}

func (l *svcLive) output() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stdout.String() + l.out.String()
}

// wait waits for the process to end (killing it after timeout) and returns its exit code and output.
func (l *svcLive) wait(timeout time.Duration) (int, string) {
	select {
	case <-l.done:
	case <-time.After(timeout):
		l.cancel()
		<-l.done
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.code, l.stdout.String() + l.out.String()
}

func (l *svcLive) ended() time.Time {
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.end
}

func (l *svcLive) took() time.Duration { return l.ended().Sub(l.start) }

// svcWriteAssembly writes dir/cdkx.out with the stacks, each of n Cdkx::Core::Data resources whose
// input carries value.
func svcWriteAssembly(t *testing.T, dir string, stacks []string, n int, value string) {
	t.Helper()
	out := filepath.Join(dir, "cdkx.out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	artifacts := map[string]any{}
	files := map[string]any{}
	for _, s := range stacks {
		artifacts[s] = map[string]any{"type": "cdkx:stack", "properties": map[string]any{"templateFile": s + ".json"}, "displayName": s}
		resources := map[string]any{}
		for i := range n {
			resources[fmt.Sprintf("Item%04d%08X", i, i)] = map[string]any{"type": "Cdkx::Core::Data", "provider": "cdkx",
				"properties": map[string]any{"input": map[string]any{"n": i, "value": value}},
				"metadata":   map[string]any{"cdkx:path": fmt.Sprintf("%s/Item%04d", s, i)}}
		}
		files[s+".json"] = map[string]any{"resources": resources}
	}
	files["manifest.json"] = map[string]any{"version": "1.0.0", "artifacts": artifacts}
	for name, v := range files {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// svcStackState is a stack as `cdkx state export` prints it.
type svcStackState struct {
	Name      string             `json:"name"`
	Version   int64              `json:"version"`
	Resources []svcResourceState `json:"resources"`
}

// svcResourceState is a resource as `cdkx state export` prints it.
type svcResourceState struct {
	LogicalID  string          `json:"logicalId"`
	PhysicalID string          `json:"physicalId"`
	Status     string          `json:"status"`
	Inputs     map[string]any  `json:"inputs"`
	Pending    json.RawMessage `json:"pending"`
}

// value is the value the resource's input carries (svcWriteAssembly).
func (r svcResourceState) value() string {
	in, _ := r.Inputs["input"].(map[string]any)
	v, _ := in["value"].(string)
	return v
}

// svcBigResources is the size of stack "Big", the slow deploy the fault tests interrupt.
const svcBigResources = 300

// svcStartBigDeploy writes an assembly of stack "Big" (svcBigResources resources) into a new directory and
// starts `cdkx deploy --state front.URL --concurrency concurrency` there. It returns once the deploy is
// held mid-run: its first commit (the stack's CREATE_IN_PROGRESS) went through and its second, a batch of
// creates, waits in front until release is called. The fault a test makes before release thus always
// lands mid-run, however fast the creates are: 300 state-only creates take well under a second, and group
// commit may write them all in that second commit, so holding any later request could hold the run's
// completion instead.
func svcStartBigDeploy(t *testing.T, bin string, env []string, front *svcFront, concurrency int) (dir string, live *svcLive, release func()) {
	t.Helper()
	dir = t.TempDir()
	svcWriteAssembly(t, dir, []string{"Big"}, svcBigResources, "v1")
	held, release := front.holdAfter(1, "/commit")
	t.Cleanup(release)
	live = svcStart(t, bin, dir, env, "deploy", "--state", front.URL, "--concurrency", strconv.Itoa(concurrency))
	select {
	case <-held:
	case <-live.done:
		t.Fatalf("the deploy ended before it was held mid-run:\n%s", live.output())
	case <-time.After(time.Minute):
		t.Fatalf("the deploy did not reach its third commit within a minute:\n%s", live.output())
	}
	return dir, live, release
}

// svcCheckBig checks stack "Big" at the end of a fault test: its checkpoints are gapless and its exported
// state has every resource exactly once. It returns the exported state.
func svcCheckBig(t *testing.T, db *pgx.Conn, bin, dir string, env []string, state string) *svcStackState {
	t.Helper()
	cps, version := svcCheckpoints(t, db, "Big")
	svcCheckGapless(t, cps, version)
	st := svcExport(t, bin, dir, env, state)["Big"]
	svcCheckComplete(t, st, "Big", svcBigResources)
	return st
}

// svcExport runs `cdkx state export` against the service at state and returns the stacks by name.
func svcExport(t *testing.T, bin, dir string, env []string, state string) map[string]*svcStackState {
	t.Helper()
	r := svcExec(bin, dir, env, "state", "export", "--state", state)
	if r.err != nil || r.code != 0 {
		t.Fatalf("cdkx state export exited %d (%v):\n%s", r.code, r.err, r.output())
	}
	var all struct {
		Stacks []*svcStackState `json:"stacks"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &all); err != nil {
		t.Fatalf("cdkx state export: %v\n%s", err, r.stdout)
	}
	out := map[string]*svcStackState{}
	for _, s := range all.Stacks {
		out[s.Name] = s
	}
	return out
}

// svcCheckComplete checks that the stack holds the n resources of svcWriteAssembly exactly once each,
// created and settled.
func svcCheckComplete(t *testing.T, st *svcStackState, name string, n int) {
	t.Helper()
	if st == nil {
		t.Errorf("stack %s is not in the exported state", name)
		return
	}
	seen := map[string]int{}
	for _, r := range st.Resources {
		seen[r.LogicalID]++
		if r.PhysicalID == "" || len(r.Pending) > 0 && string(r.Pending) != "null" || !strings.HasSuffix(r.Status, "_COMPLETE") {
			t.Errorf("stack %s: %s has physical ID %q, status %s, pending %s; want created and settled", name, r.LogicalID, r.PhysicalID, r.Status, r.Pending)
		}
	}
	var missing []string
	for i := range n {
		id := fmt.Sprintf("Item%04d%08X", i, i)
		if seen[id] != 1 {
			missing = append(missing, fmt.Sprintf("%s×%d", id, seen[id]))
		}
	}
	if len(missing) > 0 || len(st.Resources) != n {
		t.Errorf("stack %s holds %d resources, want each of the %d exactly once; wrong: %s", name, len(st.Resources), n, strings.Join(missing[:min(len(missing), 10)], ", "))
	}
}

// svcConnect opens a connection to the service database at dbURL for the test.
func svcConnect(t *testing.T, dbURL string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatalf("connect to the service database: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// svcUpdate is a row of svc_updates, with the PID of the cdkx process it was created for.
type svcUpdate struct {
	id, kind, status   string
	pid                int
	created            time.Time
	started, completed *time.Time
}

// svcUpdates returns the updates of stack, by start time.
func svcUpdates(t *testing.T, db *pgx.Conn, stack string) []svcUpdate {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows, err := db.Query(ctx, `SELECT u.id, u.kind, u.status, coalesce((u.request->'cdkxLock'->>'pid')::int, 0), u.created_at, u.started_at, u.completed_at
FROM svc_updates u JOIN svc_stacks s ON s.id = u.stack_id WHERE s.project = $1 AND s.name = $2 ORDER BY u.started_at NULLS LAST, u.created_at`, svcProject, stack)
	if err != nil {
		t.Fatal(err)
	}
	var out []svcUpdate
	for rows.Next() {
		var u svcUpdate
		if err := rows.Scan(&u.id, &u.kind, &u.status, &u.pid, &u.created, &u.started, &u.completed); err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

type svcCheckpoint struct {
	version int64
	update  string
}

// svcCheckpoints returns the checkpoints of stack by version, and the stack's version.
func svcCheckpoints(t *testing.T, db *pgx.Conn, stack string) ([]svcCheckpoint, int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var version int64
	if err := db.QueryRow(ctx, `SELECT version FROM svc_stacks WHERE project = $1 AND name = $2`, svcProject, stack).Scan(&version); err != nil {
		t.Fatalf("stack %s: %v", stack, err)
	}
	rows, err := db.Query(ctx, `SELECT c.version, c.update_id FROM svc_checkpoints c JOIN svc_stacks s ON s.id = c.stack_id
WHERE s.project = $1 AND s.name = $2 ORDER BY c.version`, svcProject, stack)
	if err != nil {
		t.Fatal(err)
	}
	var out []svcCheckpoint
	for rows.Next() {
		var c svcCheckpoint
		if err := rows.Scan(&c.version, &c.update); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out, version
}

// svcCheckGapless checks that the checkpoint versions are 1..N and N is the stack's version.
func svcCheckGapless(t *testing.T, cps []svcCheckpoint, stackVersion int64) {
	t.Helper()
	for i, c := range cps {
		if c.version != int64(i+1) {
			t.Errorf("checkpoint %d has version %d, want %d: versions must run 1..N without a gap", i+1, c.version, i+1)
			return
		}
	}
	if int64(len(cps)) != stackVersion {
		t.Errorf("%d checkpoints, but the stack is at version %d", len(cps), stackVersion)
	}
}

// svcPG is a private PostgreSQL cluster of scripts/pg-up.sh, which a test may stop and start.
type svcPG struct {
	dir, bin, url string
	port          int
}

// svcPGUp starts a private cluster in a new folder under /tmp, stopped and removed when the test ends;
// the test is skipped when no initdb is installed.
func svcPGUp(t *testing.T) *svcPG {
	t.Helper()
	if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb"); len(m) == 0 {
		t.Skip("no initdb under /usr/lib/postgresql/*/bin: scripts/pg-up.sh cannot start a private PostgreSQL to restart")
	}
	dir, err := os.MkdirTemp("/tmp", "cdkx-e2e-pg-")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		down := exec.CommandContext(ctx, "bash", filepath.Join(root, "scripts", "pg-down.sh"), dir)
		if out, err := down.CombinedOutput(); err != nil {
			t.Errorf("pg-down.sh %s: %v\n%s", dir, err, out)
		}
		_ = os.RemoveAll(dir)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	up := exec.CommandContext(ctx, "bash", filepath.Join(root, "scripts", "pg-up.sh"), dir)
	up.Env = append(os.Environ(), "PG_PORT="+strconv.Itoa(port))
	var stdout, stderr bytes.Buffer
	up.Stdout, up.Stderr, up.WaitDelay = &stdout, &stderr, 10*time.Second
	if err := up.Run(); err != nil {
		t.Fatalf("pg-up.sh %s: %v\n%s%s", dir, err, stdout.String(), stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	bin, err := os.ReadFile(filepath.Join(dir, "bin"))
	if err != nil {
		t.Fatal(err)
	}
	return &svcPG{dir: dir, bin: strings.TrimSpace(string(bin)), url: lines[len(lines)-1], port: port}
}

// ctl runs pg_ctl ARGS -D DIR/data as the postgres user (as pg-up.sh does), its output kept in DIR.
func (p *svcPG) ctl(t *testing.T, args string) {
	t.Helper()
	sh := fmt.Sprintf("'%s/pg_ctl' -D '%s/data' %s >'%s/pg_ctl.out' 2>&1", p.bin, p.dir, args, p.dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", sh)
	if os.Geteuid() == 0 {
		cmd = exec.CommandContext(ctx, "su", "postgres", "-s", "/bin/bash", "-c", sh)
	}
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		out, _ := os.ReadFile(filepath.Join(p.dir, "pg_ctl.out"))
		t.Fatalf("pg_ctl %s: %v\n%s", args, err, out)
	}
}
