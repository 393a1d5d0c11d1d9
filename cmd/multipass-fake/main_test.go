package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// binary is the fake built once for the package by TestMain, named multipass as on a PATH.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "multipass-fake-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "multipass")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// fakeEnv is a test's configuration of the fake: a fresh state folder and log file.
type fakeEnv struct {
	dir, log string
	vars     []string
}

func newFakeEnv(t *testing.T, vars ...string) fakeEnv {
	t.Helper()
	root := t.TempDir()
	e := fakeEnv{dir: filepath.Join(root, "state"), log: filepath.Join(root, "calls.jsonl")}
	e.vars = append([]string{
		"MULTIPASS_FAKE_DIR=" + e.dir,
		"MULTIPASS_FAKE_LOG=" + e.log,
		"MULTIPASS_FAKE_LAUNCH_SECONDS=0.05",
		"MULTIPASS_FAKE_NETWORKS=en0",
	}, vars...)
	return e
}

func (e fakeEnv) command(t *testing.T, stdin string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), binary, args...)
	cmd.Env = append(os.Environ(), e.vars...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	return cmd
}

// run runs the fake to its end and returns its exit code, stdout and stderr.
func (e fakeEnv) run(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := e.command(t, stdin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errb.String()
	case err != nil:
		t.Fatalf("running multipass %q: %v", args, err)
	}
	return 0, out.String(), errb.String()
}

type listed struct {
	List []struct {
		Name  string   `json:"name"`
		State string   `json:"state"`
		IPv4  []string `json:"ipv4"`
	} `json:"list"`
}

func (e fakeEnv) list(t *testing.T) listed {
	t.Helper()
	code, out, errs := e.run(t, "", "list", "--format", "json")
	if code != 0 {
		t.Fatalf("list = %d %s", code, errs)
	}
	var l listed
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		t.Fatalf("list output %q: %v", out, err)
	}
	return l
}

type logLine struct {
	Args  []string `json:"args"`
	Stdin *string  `json:"stdin"`
}

func (e fakeEnv) logLines(t *testing.T) []logLine {
	t.Helper()
	f, err := os.Open(e.log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []logLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l logLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		lines = append(lines, l)
	}
	return lines
}

// TestConcurrentProcesses launches instances from several processes at once: each launch succeeds,
// the state keeps every instance Running with its own address, and the log has one line per process.
func TestConcurrentProcesses(t *testing.T) {
	t.Parallel()
	e := newFakeEnv(t)
	const n = 8
	var wg sync.WaitGroup
	type res struct {
		code     int
		out, err string
	}
	results := make([]res, n)
	for i := range n {
		wg.Go(func() {
			code, out, errs := e.run(t, "", "launch", "--name", fmt.Sprintf("vm%d", i), "--cpus", "1")
			results[i] = res{code, out, errs}
		})
	}
	wg.Wait()
	for i, r := range results {
		if want := fmt.Sprintf("\x1b[0ELaunched: vm%d\n\x1b[2K\x1b[0A\x1b[0E", i); r.code != 0 || !strings.HasSuffix(r.out, want) {
			t.Errorf("launch vm%d = %d %q %q, want 0 %q", i, r.code, r.out, r.err, want)
		}
	}
	l := e.list(t)
	if len(l.List) != n {
		t.Fatalf("list has %d instances, want %d: %+v", len(l.List), n, l)
	}
	ips := map[string]string{}
	for _, in := range l.List {
		if in.State != "Running" || len(in.IPv4) != 1 {
			t.Errorf("%s: %s %v, want Running with one address", in.Name, in.State, in.IPv4)
			continue
		}
		if other, dup := ips[in.IPv4[0]]; dup {
			t.Errorf("%s and %s share %s", in.Name, other, in.IPv4[0])
		}
		ips[in.IPv4[0]] = in.Name
	}
	if got := len(e.logLines(t)); got != n+1 {
		t.Errorf("log has %d lines, want %d (the launches and the list)", got, n+1)
	}
}

// TestKilledLaunchStillRuns kills a launching process with SIGKILL while its instance is Starting: the
// instance becomes Running at its ready time all the same, as the real daemon goes on launching.
func TestKilledLaunchStillRuns(t *testing.T) {
	t.Parallel()
	const launch = time.Second
	e := newFakeEnv(t, "MULTIPASS_FAKE_LAUNCH_SECONDS=1")
	cmd := e.command(t, "", "launch", "--name", "dev")
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Poll until the launch is recorded (bounded), then kill the client.
	var state string
	for deadline := time.Now().Add(10 * time.Second); ; {
		code, out, _ := e.run(t, "", "info", "dev", "--format", "json")
		if code == 0 {
			var got struct {
				Info map[string]struct {
					State string `json:"state"`
				} `json:"info"`
			}
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatal(err)
			}
			state = got.Info["dev"].State
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the launch was not recorded within 10s")
		}
		time.Sleep(10 * time.Millisecond) // poll interval
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("launch ended with %v, want killed by SIGKILL", err)
	}
	if time.Since(start) < launch && state != "Starting" {
		t.Errorf("before the ready time the instance is %s, want Starting", state)
	}
	// Poll until Running, bounded by the ready time plus a margin.
	for deadline := start.Add(launch + 10*time.Second); ; {
		l := e.list(t)
		if len(l.List) == 1 && l.List[0].State == "Running" && len(l.List[0].IPv4) == 1 {
			if time.Since(start) < launch {
				t.Errorf("Running after %v, before the launch time %v", time.Since(start), launch)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("instance after the ready time: %+v, want dev Running with an address", l)
		}
		time.Sleep(20 * time.Millisecond) // poll interval
	}
}

// TestLogAndCloudInitFromStdin checks the log lines of MULTIPASS_FAKE_LOG (the arguments, and stdin only
// when it was read) and that `--cloud-init -` takes the user data from stdin.
func TestLogAndCloudInitFromStdin(t *testing.T) {
	t.Parallel()
	e := newFakeEnv(t)
	userData := "#cloud-config\npackages:\n  - nginx\n"
	if code, out, errs := e.run(t, userData, "launch", "jammy", "--name", "web", "--cloud-init", "-"); code != 0 || !strings.Contains(out, "\x1b[0ELaunched: web\n") {
		t.Fatalf("launch = %d %q %q", code, out, errs)
	}
	if code, _, errs := e.run(t, "ignored", "version", "--format", "json"); code != 0 {
		t.Fatalf("version = %d %q", code, errs)
	}
	if code, _, _ := e.run(t, "", "delete", "--purge", "nope"); code != 2 {
		t.Fatalf("delete nope = %d, want 2", code)
	}
	want := []logLine{
		{Args: []string{"launch", "jammy", "--name", "web", "--cloud-init", "-"}, Stdin: &userData},
		{Args: []string{"version", "--format", "json"}},
		{Args: []string{"delete", "--purge", "nope"}},
	}
	if d := cmp.Diff(want, e.logLines(t)); d != "" {
		t.Errorf("log (-want +got):\n%s", d)
	}
	b, err := os.ReadFile(filepath.Join(e.dir, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Instances map[string]struct {
			CloudInit string `json:"cloudInit"`
		} `json:"instances"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	if got := st.Instances["web"].CloudInit; got != userData {
		t.Errorf("recorded cloud-init = %q, want stdin's %q", got, userData)
	}
}

// TestUsageAndConfiguration checks the fake's own usage (no arguments: exit 2 as multipass; --help:
// exit 0), that it names its environment variables, and that a malformed one is refused with exit 1.
func TestUsageAndConfiguration(t *testing.T) {
	t.Parallel()
	e := newFakeEnv(t)
	for _, tt := range []struct {
		args []string
		code int
	}{{nil, 2}, {[]string{"--help"}, 0}} {
		code, out, _ := e.run(t, "", tt.args...)
		if code != tt.code {
			t.Errorf("multipass %q = %d, want %d", tt.args, code, tt.code)
		}
		for _, v := range []string{"MULTIPASS_FAKE_DIR", "MULTIPASS_FAKE_NETWORKS", "MULTIPASS_FAKE_LAUNCH_SECONDS",
			"MULTIPASS_FAKE_FAIL_LAUNCH", "MULTIPASS_FAKE_DAEMON_DOWN", "MULTIPASS_FAKE_LOG"} {
			if !strings.Contains(out, v) {
				t.Errorf("multipass %q does not mention %s:\n%s", tt.args, v, out)
			}
		}
	}
	bad := newFakeEnv(t, "MULTIPASS_FAKE_LAUNCH_SECONDS=soon")
	code, _, errs := bad.run(t, "", "list")
	if code != 1 || !strings.Contains(errs, "MULTIPASS_FAKE_LAUNCH_SECONDS") {
		t.Errorf("with a bad MULTIPASS_FAKE_LAUNCH_SECONDS: %d %q, want 1 naming the variable", code, errs)
	}
	down := newFakeEnv(t, "MULTIPASS_FAKE_DAEMON_DOWN=1")
	if code, _, errs := down.run(t, "", "list", "--format", "json"); code != 2 || errs != "list failed: cannot connect to the multipass socket\n" {
		t.Errorf("list with the daemon down = %d %q, want 2 and the socket message", code, errs)
	}
}
