//go:build e2e

package e2e

// Recovery of a stack whose holder died, on `cdkx server` with its defaults: the cdkx client holds a
// 20 s lease (service.Lease) that it renews every ~7 s; a create of an update on a stack whose active
// update's lease has expired takes it over at once (no human `cdkx cancel`, no waiting for the collector).

import (
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/backend/postgres/postgrestest"
	"github.com/cdkx-dev/cdkx/pkg/backend/service"
)

// TestServiceKilledClientDefaults kills (SIGKILL) a deploy in the middle of its update on a server
// started with no flags, then runs `cdkx deploy --lock-timeout 2m`: it must complete within 60 s of the
// kill, with the killed run's update cancelled before the new one started and complete state.
func TestServiceKilledClientDefaults(t *testing.T) {
	dbURL := postgrestest.FreshSchema(t)
	bin := svcBuild(t)
	token := svcToken(t, bin, dbURL)
	srv := svcStartServer(t, bin, dbURL)
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

	r := svcExec(bin, dir, env, "deploy", "--state", srv.URL, "--lock-timeout", "2m")
	if r.err != nil {
		t.Fatal(r.err)
	}
	recovered := r.end.Sub(killedAt)
	t.Logf("deploy --lock-timeout 2m started %s after the kill, exit %d, done %s after the kill",
		r.start.Sub(killedAt).Round(time.Millisecond), r.code, recovered.Round(time.Millisecond))
	if r.code != 0 {
		t.Fatalf("deploy --lock-timeout 2m exited %d:\n%s", r.code, r.output())
	}
	if recovered > time.Minute {
		t.Errorf("the stack was free again and deployed %s after the kill; want within 60 s", recovered.Round(time.Millisecond))
	}

	db := svcConnect(t, dbURL)
	if dead, next := svcTakenOver(t, svcUpdates(t, db, "Big"), killed, r.pid); dead != nil {
		t.Logf("the killed run's update %s was cancelled %s after the kill (taken over by the next create); the next update started %s later",
			dead.id, dead.completed.Sub(killedAt).Round(time.Millisecond), next.started.Sub(*dead.completed).Round(time.Millisecond))
	}
	svcCheckBig(t, db, bin, dir, env, srv.URL)
}

// TestServiceLiveHolderKept runs a deploy that lasts more than two of the client's 20 s leases (a front
// that holds each commit 21 s, longer than a lease) on a server with its defaults, and a second deploy of the same stack
// with --lock-timeout 2m beside it: the first is never taken over (it succeeds, its update succeeded) and
// the second starts its update only after the first completed.
func TestServiceLiveHolderKept(t *testing.T) {
	dbURL := postgrestest.FreshSchema(t)
	bin := svcBuild(t)
	token := svcToken(t, bin, dbURL)
	srv := svcStartServer(t, bin, dbURL)
	slow := svcNewFront(t, srv)
	slow.setDelay(150 * time.Millisecond)
	env := svcClientEnv(token)
	commit := "/commit"
	slow.delayOnly.Store(&commit)   // lease renewals go through at once: only the work is slow
	slow.setDelay(25 * time.Second) // longer than the lease: a holder stuck in a slow call is alive while it renews; two commits (group commit may make no more) outlast 2 leases + 5 s
	dir := t.TempDir()
	svcWriteAssembly(t, dir, []string{"Big"}, svcBigResources, "v1")
	holder := svcStart(t, bin, dir, env, "deploy", "--state", slow.URL, "--concurrency", "1")
	db := svcConnect(t, dbURL)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		running := slices.ContainsFunc(svcUpdates(t, db, "Big"), func(u svcUpdate) bool { return u.pid == holder.pid() && u.status == "running" })
		if running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the holder's update is not running within a minute:\n%s", holder.output())
		}
	}

	waiter := svcExec(bin, dir, env, "deploy", "--state", srv.URL, "--lock-timeout", "2m")
	code, out := holder.wait(svcProcTimeout)
	t.Logf("holder (pid %d) exit %d after %s; waiter (pid %d) exit %d after %s", holder.pid(), code,
		holder.took().Round(time.Millisecond), waiter.pid, waiter.code, waiter.took.Round(time.Millisecond))
	if code != 0 {
		t.Fatalf("the holder exited %d:\n%s", code, out)
	}
	t.Logf("holder ran %s–%s; waiter ran %s–%s", holder.start.Format("15:04:05.000"), holder.ended().Format("15:04:05.000"),
		waiter.start.Format("15:04:05.000"), waiter.end.Format("15:04:05.000"))

	if waiter.err != nil || waiter.code != 0 {
		t.Fatalf("the waiting deploy exited %d (%v):\n%s", waiter.code, waiter.err, waiter.output())
	}

	updates := svcUpdates(t, db, "Big")
	var first, second *svcUpdate
	for i := range updates {
		switch updates[i].pid {
		case holder.pid():
			first = &updates[i]
		case waiter.pid:
			second = &updates[i]
		}
		if updates[i].status != "succeeded" {
			t.Errorf("update %s (pid %d) is %s, want succeeded: a live holder was taken over", updates[i].id, updates[i].pid, updates[i].status)
		}
	}
	if first == nil || second == nil || first.completed == nil || second.started == nil {
		t.Fatalf("svc_updates lacks the holder's (pid %d) or the waiter's (pid %d) update: %+v", holder.pid(), waiter.pid, updates)
	}
	if held := first.completed.Sub(*first.started); held < 2*service.Lease+5*time.Second {
		t.Errorf("the holder's update was held only %s: too short to show a lease survives its renewals (want > %s)",
			held.Round(time.Millisecond), 2*service.Lease+5*time.Second)
	} else {
		t.Logf("the holder's update was held %s, %.1f leases of %s", held.Round(time.Millisecond), float64(held)/float64(service.Lease), service.Lease)
	}
	if second.started.Before(*first.completed) {
		t.Errorf("the waiter's update started at %s, before the holder's completed at %s", second.started, first.completed)
	}
	t.Logf("%d updates, all succeeded; the waiter's update started %s after the holder's completed", len(updates),
		second.started.Sub(*first.completed).Round(time.Millisecond))
	svcCheckBig(t, db, bin, dir, env, srv.URL)
}

// svcTakenOver finds the update of the killed process and that of the next run among updates and checks
// that the first was cancelled before the second started; it returns both, or nils after reporting.
func svcTakenOver(t *testing.T, updates []svcUpdate, killed, nextPID int) (dead, next *svcUpdate) {
	t.Helper()
	for i := range updates {
		switch updates[i].pid {
		case killed:
			dead = &updates[i]
		case nextPID:
			next = &updates[i]
		}
	}
	switch {
	case dead == nil || next == nil || next.started == nil:
		t.Errorf("svc_updates lacks the killed run's update (pid %d) or the started update of the next run (pid %d): %+v", killed, nextPID, updates)
	case dead.status != "cancelled" || dead.completed == nil:
		t.Errorf("the killed run's update %s is %s, want cancelled", dead.id, dead.status)
	case next.started.Before(*dead.completed):
		t.Errorf("the next run's update started at %s, before the dead update was cancelled at %s", next.started, dead.completed)
	default:
		return dead, next
	}
	return nil, nil
}
