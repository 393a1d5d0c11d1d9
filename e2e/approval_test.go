//go:build e2e

package e2e

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestTTYApproval answers the confirmation of deploy and destroy on a real terminal (tmux, as TestTTY) at 80
// and 120 columns: "n" exits 1 and changes nothing, Ctrl-C exits 130 at once and changes nothing, "y" runs
// the plan. Deploy shows the plan as diff does before the question; destroy lists what it deletes. The
// screens are compared with golden files under testdata/tty/.
func TestTTYApproval(t *testing.T) {
	e := newTTYEnv(t)
	for _, width := range []int{80, 120} {
		t.Run(fmt.Sprintf("deploy-%d", width), func(t *testing.T) { ttyApproveDeploy(t, e, width) })
	}
}

var question = regexp.MustCompile(`(?m)^Do you want to perform these actions\? \(y/N\)$`)

// answer runs command on a width×40 terminal in dir, waits for the question, types keys and returns the
// last screen and the exit code. The shell traps SIGINT, so that Ctrl-C reaches cdkx and the shell lives
// on to print its exit code.
func answer(t *testing.T, e ttyEnv, width int, dir, command string, keys ...string) (string, int) {
	t.Helper()
	tm := startTmux(t, width, 40, dir, e.environ(), "trap : INT; "+command)
	tm.WaitFor(question, time.Minute, nil)
	asked := time.Now()
	tm.Send(keys...)
	final := tm.WaitFor(exited, time.Minute, nil)
	if slices.Contains(keys, "C-c") && time.Since(asked) > 5*time.Second {
		t.Errorf("Ctrl-C at the question took %s to end cdkx, want at once", time.Since(asked))
	}
	return final, exitCode(t, final)
}

// rrsets returns the names of zone's A record sets at PowerDNS, sorted.
func rrsets(t *testing.T, e ttyEnv, zone string) []string {
	t.Helper()
	z, err := e.p.zone(zone)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	if z == nil {
		return names
	}
	for _, rr := range z.RRSets {
		if rr.Type == "A" {
			names = append(names, rr.Name)
		}
	}
	slices.Sort(names)
	return names
}

// ttyApproveDeploy deploys three record sets, then a version that deletes one and changes another's TTL:
// deploy asks, and is answered "n", then Ctrl-C, then "y"; then destroy asks, answered "n" and "y".
func ttyApproveDeploy(t *testing.T, e ttyEnv, width int) {
	dir := t.TempDir()
	zone := fmt.Sprintf("tty-approve%d.test.", width)
	e.zone(t, zone)
	v1 := zoneAssembly("Appr", zone, 3)
	writeTTYAssembly(t, dir, "Appr", v1)
	e.cdkx(t, dir, "deploy") // creates only: no question, even without a terminal
	before := rrsets(t, e, zone)
	if len(before) != 3 {
		t.Fatalf("after the first deploy: A record sets %v, want 3", before)
	}

	v2 := map[string]any{}
	var ids []string
	for id, r := range v1 {
		v2[id] = r
		if strings.HasPrefix(id, "ApprRecord") {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	delete(v2, ids[0])                                                     // r001 is deleted
	v2[ids[1]].(map[string]any)["properties"].(map[string]any)["ttl"] = 60 // r002 is updated
	writeTTYAssembly(t, dir, "Appr", v2)

	for _, tc := range []struct {
		name string
		keys []string
		code int
	}{
		{"n", []string{"n", "Enter"}, 1},
		{"ctrl-c", []string{"C-c"}, 130},
	} {
		screen, code := answer(t, e, width, dir, "cdkx deploy --concurrency 1", tc.keys...)
		if code != tc.code {
			t.Errorf("deploy answered %s exited %d, want %d:\n%s", tc.name, code, tc.code, screen)
		}
		if got := rrsets(t, e, zone); !slices.Equal(got, before) {
			t.Errorf("after deploy answered %s: A record sets %v, want %v (nothing changed)", tc.name, got, before)
		}
		if strings.Contains(screen, "IN_PROGRESS") {
			t.Errorf("deploy answered %s started a step:\n%s", tc.name, screen)
		}
		assertScreen(t, masked(screen), fmt.Sprintf("approve-deploy-%s-%d.golden", tc.name, width))
	}

	screen, code := answer(t, e, width, dir, "cdkx deploy --concurrency 1", "y", "Enter")
	if code != 0 {
		t.Fatalf("deploy answered y exited %d:\n%s", code, screen)
	}
	if got := rrsets(t, e, zone); !slices.Equal(got, before[1:]) {
		t.Errorf("after deploy answered y: A record sets %v, want %v", got, before[1:])
	}
	assertScreen(t, masked(screen), fmt.Sprintf("approve-deploy-y-%d.golden", width))

	screen, code = answer(t, e, width, dir, "cdkx destroy", "n", "Enter")
	if code != 1 || len(rrsets(t, e, zone)) != 2 {
		t.Errorf("destroy answered n exited %d with A record sets %v, want 1 and two left:\n%s", code, rrsets(t, e, zone), screen)
	}
	assertScreen(t, masked(screen), fmt.Sprintf("approve-destroy-n-%d.golden", width))

	screen, code = answer(t, e, width, dir, "cdkx destroy", "y", "Enter")
	if ok, _ := e.p.zoneExists(zone); code != 0 || ok {
		t.Errorf("destroy answered y exited %d, zone still there: %t:\n%s", code, ok, screen)
	}
}
