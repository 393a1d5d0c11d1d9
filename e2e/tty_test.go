//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/golden"
)

// The tests here run the real cdkx binary on a real pseudo-terminal, the pane of a private tmux server, at
// 80 and 120 columns, against the PowerDNS of TestScripts (same variables), and compare what the screen
// shows with golden files under testdata/tty/ (go test -tags e2e -run TestTTY ./e2e/ -update rewrites
// them). Clock times and durations are masked; --concurrency 1 makes the order of the rows stable.

// tmux is a tmux server of one session running one command on a terminal of a given size. Its helpers
// (Send, Screen, History, WaitFor) are meant for every test that needs a terminal.
type tmux struct {
	t      *testing.T
	socket string
}

// startTmux runs command (a shell command line) in dir on a width×height terminal of a private tmux server
// with exactly env as its environment; when the command ends, the pane shows "[exit N]" and stays until
// the test ends (the server is killed then). The test is skipped when tmux is not installed.
func startTmux(t *testing.T, width, height int, dir string, env []string, command string) *tmux {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (apt-get install tmux)")
	}
	tm := &tmux{t: t, socket: filepath.Join(t.TempDir(), "tmux.sock")}
	line := command + `; echo "[exit $?]"; exec sleep 3600`
	cmd := exec.Command("tmux", "-S", tm.socket, "-f", "/dev/null", "new-session", "-d", "-x", strconv.Itoa(width),
		"-y", strconv.Itoa(height), "-c", dir, "sh", "-c", line)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", tm.socket, "kill-server").Run() })
	return tm
}

func (tm *tmux) run(args ...string) string {
	tm.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", tm.socket}, args...)...).Output()
	if err != nil {
		tm.t.Fatalf("tmux %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}

// Send types keys into the pane, as tmux send-keys names them ("y", "Enter", "C-c").
func (tm *tmux) Send(keys ...string) {
	tm.t.Helper()
	tm.run(append([]string{"send-keys", "-t", "0"}, keys...)...)
}

// Screen returns the lines the terminal shows now, without colours, trailing blank lines dropped.
func (tm *tmux) Screen() string {
	tm.t.Helper()
	return trimScreen(tm.run("capture-pane", "-p", "-t", "0"))
}

// History returns everything the terminal shows and scrolled off its top, trailing blank lines dropped.
func (tm *tmux) History() string {
	tm.t.Helper()
	return trimScreen(tm.run("capture-pane", "-p", "-t", "0", "-S", "-", "-E", "-"))
}

// WaitFor waits up to timeout for the screen to match re and returns it; each screen seen meanwhile goes
// to seen, when not nil.
func (tm *tmux) WaitFor(re *regexp.Regexp, timeout time.Duration, seen func(screen string)) string {
	tm.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s := tm.Screen()
		if seen != nil {
			seen(s)
		}
		if re.MatchString(s) {
			return s
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("after %s the screen does not match %s:\n%s", timeout, re, s)
		}
		time.Sleep(40 * time.Millisecond)
	}
}

func trimScreen(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return strings.Join(lines, "\n") + "\n"
}

var (
	clockTime = regexp.MustCompile(`\b\d\d:\d\d:\d\d\b`)
	duration  = regexp.MustCompile(`\b(\d+h)?(\d+m)?\d+(\.\d+)?(ms|s)\b`)
	loopback  = regexp.MustCompile(`127\.0\.0\.1:\d+`)
	hexRun    = regexp.MustCompile(`\b[0-9a-f]{8,}\b`)
)

// masked returns screen with clock times, durations (as 9s), the PowerDNS port and runs of lowercase hex
// digits (the UUIDs of Cdkx::Core::Data, shortened to their ends) masked.
func masked(screen string) string {
	screen = clockTime.ReplaceAllString(screen, "hh:mm:ss")
	screen = duration.ReplaceAllString(screen, "9s")
	screen = hexRun.ReplaceAllStringFunc(screen, func(h string) string {
		if strings.ContainsAny(h, "abcdef") {
			return "xxxxxxxx"
		}
		return h
	})
	return loopback.ReplaceAllString(screen, "127.0.0.1:PORT")
}

// ttyEnv is what the tmux server and the cdkx it runs see: the PowerDNS of the suite, cdkx on PATH, UTC,
// and no CI (which would turn the live view off).
type ttyEnv struct {
	bin string
	p   pdns
}

// The cdkx binary of the TTY tests, built once.
var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

func newTTYEnv(t *testing.T) ttyEnv {
	t.Helper()
	p := pdns{apiURL: os.Getenv("PDNS_API_URL"), apiKey: envOr("PDNS_API_KEY", "e2e-key"),
		serverID: envOr("PDNS_SERVER_ID", "localhost"), dnsPort: envOr("PDNS_DNS_PORT", "15353")}
	if p.apiURL == "" {
		t.Skip("PDNS_API_URL is unset: start PowerDNS with scripts/pdns-up.sh DIR (see TestScripts)")
	}
	if err := p.ping(); err != nil {
		t.Fatalf("PowerDNS at %s does not answer: %v", p.apiURL, err)
	}
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "cdkx-tty-bin")
		if buildErr != nil {
			return
		}
		build := exec.Command("go", "build", "-o", filepath.Join(buildDir, "cdkx"), "./cmd/cdkx")
		build.Dir = ".."
		if out, err := build.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/cdkx: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return ttyEnv{bin: buildDir, p: p}
}

func (e ttyEnv) environ() []string {
	return []string{"PATH=" + e.bin + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"TZ=UTC", "LANG=C.UTF-8", "PDNS_API_URL=" + e.p.apiURL, "PDNS_API_KEY=" + e.p.apiKey, "PDNS_SERVER_ID=" + e.p.serverID}
}

// zone makes sure zone does not exist before the test, nor after it.
func (e ttyEnv) zone(t *testing.T, zone string) {
	t.Helper()
	if ok, _ := e.p.zoneExists(zone); ok {
		if err := e.p.deleteZone(zone); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if ok, _ := e.p.zoneExists(zone); ok {
			_ = e.p.deleteZone(zone)
		}
	})
}

// cdkx runs cdkx in dir without a terminal and fails the test unless it exits 0.
func (e ttyEnv) cdkx(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(e.bin, "cdkx"), args...)
	cmd.Dir, cmd.Env = dir, e.environ()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cdkx %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// writeTTYAssembly writes a one-stack cloud assembly to dir/cdkx.out: stack's resources by logical ID.
func writeTTYAssembly(t *testing.T, dir, stack string, resources map[string]any) {
	t.Helper()
	out := filepath.Join(dir, "cdkx.out")
	manifest := map[string]any{"version": "1.0.0", "artifacts": map[string]any{
		stack: map[string]any{"type": "cdkx:stack", "properties": map[string]any{"templateFile": stack + ".json"}, "displayName": stack}}}
	for name, v := range map[string]any{"manifest.json": manifest, stack + ".json": map[string]any{"resources": resources}} {
		b, err := json.MarshalIndent(v, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// zoneAssembly returns a zone (logical ID <stack>Zone) and n A record sets r001…, each depending on it,
// their logical IDs ending in a hash as the CDK's do.
func zoneAssembly(stack, zone string, n int) map[string]any {
	res := map[string]any{stack + "Zone": map[string]any{"type": "PowerDNS::DNS::Zone", "provider": "powerdns",
		"properties": map[string]any{"name": zone, "kind": "Native", "nameservers": []string{"ns1." + zone}}}}
	for i := 1; i <= n; i++ {
		res[fmt.Sprintf("%sRecord%03d%08X", stack, i, crc32.ChecksumIEEE([]byte(zone))+uint32(i))] = record(stack, fmt.Sprintf("r%03d.%s", i, zone), []any{fmt.Sprintf("127.0.%d.%d", i/250, i%250+1)})
	}
	return res
}

func record(stack, name string, records []any, dependsOn ...string) map[string]any {
	return map[string]any{"type": "PowerDNS::DNS::RecordSet", "provider": "powerdns",
		"properties": map[string]any{"zoneId": map[string]any{"ref": stack + "Zone", "attr": "zoneId"}, "name": name,
			"type": "A", "ttl": 300, "records": records},
		"dependsOn": append([]string{stack + "Zone"}, dependsOn...)}
}

var (
	footer  = regexp.MustCompile(`(?m)^Deploying · (\d+)/300 · (\d+) in flight · \d+(m\d+)?s$`)
	running = regexp.MustCompile(`(?m)^ +\d+s  \S+ +\S+ +\S+ +CREATE_IN_PROGRESS`)
	exited  = regexp.MustCompile(`(?m)^\[exit (\d+)\]$`)
)

// assertScreen compares a masked screen with testdata/tty/name (rewritten with -update).
func assertScreen(t *testing.T, screen, name string) {
	t.Helper()
	golden.Assert(t, screen, filepath.Join("tty", name))
}

// exitCode returns the "[exit N]" of a screen.
func exitCode(t *testing.T, screen string) int {
	t.Helper()
	m := exited.FindStringSubmatch(screen)
	if m == nil {
		t.Fatalf("no exit code on the screen:\n%s", screen)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func TestTTY(t *testing.T) {
	e := newTTYEnv(t)
	for _, width := range []int{80, 120} {
		t.Run(fmt.Sprintf("deploy300-%d", width), func(t *testing.T) { ttyDeploy300(t, e, width) })
		t.Run(fmt.Sprintf("rollback-%d", width), func(t *testing.T) { ttyRollback(t, e, width) })
		t.Run(fmt.Sprintf("noop-%d", width), func(t *testing.T) { ttyNoop(t, e, width) })
	}
}

// ttyDeploy300 deploys a zone and 299 record sets: the footer and the steps in flight are redrawn in place
// while it runs (never scrolled into the history), and the last screen shows the last rows and the summary.
func ttyDeploy300(t *testing.T, e ttyEnv, width int) {
	dir := t.TempDir()
	zone := fmt.Sprintf("tty-bulk%d.test.", width)
	e.zone(t, zone)
	writeTTYAssembly(t, dir, "Bulk", zoneAssembly("Bulk", zone, 299))
	tm := startTmux(t, width, 40, dir, e.environ(), "cdkx deploy --concurrency 1")
	mid := map[string]bool{} // done counts seen in a footer with a step in flight above it
	final := tm.WaitFor(exited, 3*time.Minute, func(s string) {
		lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
		m := footer.FindStringSubmatch(lines[len(lines)-1])
		if m == nil || m[2] == "0" {
			return
		}
		if !running.MatchString(lines[len(lines)-2]) {
			t.Errorf("the line above the footer is no step in flight:\n%s", s)
		}
		if !mid[m[1]] && len(mid) < 3 {
			// The footer is drawn over, not scrolled: it is the history's only one.
			if h := tm.History(); len(footer.FindAllString(h, -1)) > 1 {
				t.Errorf("the history holds %d footers, want 1:\n%s", len(footer.FindAllString(h, -1)), h)
			}
		}
		mid[m[1]] = true
	})
	if len(mid) < 2 {
		t.Errorf("saw the footer with a step in flight at %d step counts, want 2 or more (updated in place)", len(mid))
	}
	if code := exitCode(t, final); code != 0 {
		t.Fatalf("cdkx deploy exited %d:\n%s", code, tm.History())
	}
	if h := tm.History(); footer.MatchString(h) || running.MatchString(h) {
		t.Errorf("the live region was left on the terminal:\n%s", h)
	}
	assertScreen(t, masked(final), fmt.Sprintf("deploy300-%d.golden", width))
}

// ttyRollback deploys a new stack where one record set gets content PowerDNS rejects (through a {ref}, so
// no schema check sees it): it fails, the two record sets that depend on it are skipped, and what was
// created is rolled back (deleted).
func ttyRollback(t *testing.T, e ttyEnv, width int) {
	dir := t.TempDir()
	stack := "Dns"
	zone := fmt.Sprintf("tty-rollback%d.test.", width)
	e.zone(t, zone)
	// One chain, so that the order of the rows is the same in every run: Zone ← Record001 ← Address ← Bad
	// ← the two dependents.
	res := zoneAssembly(stack, zone, 1)
	var first string
	for id := range res {
		if strings.HasPrefix(id, stack+"Record") {
			first = id
		}
	}
	res["DnsAddressD4C1B2A0"] = map[string]any{"type": "Cdkx::Core::Data", "provider": "cdkx", "properties": map[string]any{"input": "not-an-ip"},
		"dependsOn": []string{first}}
	res["DnsBadRecordSetWithALongerLogicalId0B5E7A11"] = record(stack, "bad."+zone, []any{map[string]any{"ref": "DnsAddressD4C1B2A0", "attr": "output"}}, "DnsAddressD4C1B2A0")
	for _, n := range []string{"DnsDependentOne6C2F9E33", "DnsDependentTwo7D3A0F44"} {
		res[n] = record(stack, strings.ToLower(n[3:15])+"."+zone, []any{"127.0.0.9"}, "DnsBadRecordSetWithALongerLogicalId0B5E7A11")
	}
	writeTTYAssembly(t, dir, stack, res)
	tm := startTmux(t, width, 40, dir, e.environ(), "cdkx deploy --concurrency 1")
	final := tm.WaitFor(exited, time.Minute, nil)
	if code := exitCode(t, final); code != 4 {
		t.Fatalf("cdkx deploy exited %d, want 4:\n%s", code, final)
	}
	for _, want := range []string{"ROLLBACK_COMPLETE", "2 skipped because dependency Dns/DnsBadRecordSet"} {
		if !strings.Contains(final, want) {
			t.Errorf("the screen lacks %q:\n%s", want, final)
		}
	}
	assertScreen(t, masked(final), fmt.Sprintf("rollback-%d.golden", width))
}

// ttyNoop deploys a stack of 11 resources again without a change: one screen says so, no row each.
func ttyNoop(t *testing.T, e ttyEnv, width int) {
	dir := t.TempDir()
	zone := fmt.Sprintf("tty-noop%d.test.", width)
	e.zone(t, zone)
	writeTTYAssembly(t, dir, "Same", zoneAssembly("Same", zone, 10))
	e.cdkx(t, dir, "deploy")
	tm := startTmux(t, width, 40, dir, e.environ(), "cdkx deploy --concurrency 1")
	final := tm.WaitFor(exited, time.Minute, nil)
	if code := exitCode(t, final); code != 0 {
		t.Fatalf("cdkx deploy exited %d:\n%s", code, final)
	}
	if h := tm.History(); h != final || bytes.Count([]byte(h), []byte("\n")) > 40 {
		t.Errorf("a no-op deploy does not fit on one screen:\n%s", h)
	}
	assertScreen(t, masked(final), fmt.Sprintf("noop-%d.golden", width))
}
