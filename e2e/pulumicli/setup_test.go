//go:build e2e && linux

package pulumicli

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The versions of the Pulumi CLI and of the YAML language host the tests run; go.mod requires the same.
const (
	pulumiVersion = "v3.259.0"
	yamlVersion   = "v1.38.0"
	pulumiPkg     = "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi"
	yamlPkg       = "github.com/pulumi/pulumi-yaml/cmd/pulumi-language-yaml"
)

// buildTimeout bounds the build of the two binaries: about 10 minutes on 2 cores with an empty Go build
// cache, seconds with a warm one.
const buildTimeout = 30 * time.Minute

// postgresEnv names the PostgreSQL database the cdkx server of the tests uses (scripts/test.sh sets it).
const postgresEnv = "CDKX_TEST_POSTGRES_URL"

// pulumiBinaries returns the folder holding the pulumi and pulumi-language-yaml binaries of pulumiVersion
// and yamlVersion, building them when they are not cached yet. The cache is
// os.UserCacheDir()/cdkx/pulumi-<version>-yaml-<version>/: the two binaries, then a file named stamp,
// written last, so that a build killed halfway is built again rather than taken for a cached one. The
// build runs `go build` in this module (its go.mod pins both versions; tools.go imports the two main
// packages), fetching from the Go module proxy what the module cache lacks.
func pulumiBinaries() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no user cache directory to keep the Pulumi CLI in (set XDG_CACHE_HOME or HOME): %w", err)
	}
	dir := filepath.Join(cache, "cdkx", "pulumi-"+pulumiVersion+"-yaml-"+yamlVersion)
	stamp := filepath.Join(dir, "stamp")
	if _, err := os.Stat(stamp); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	start := time.Now()
	ldflags := "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=" + pulumiVersion +
		" -X github.com/pulumi/pulumi-yaml/pkg/version.Version=" + strings.TrimPrefix(yamlVersion, "v")
	build := exec.CommandContext(ctx, "go", "build", "-ldflags", ldflags, "-o", dir+string(filepath.Separator), pulumiPkg, yamlPkg)
	build.Env = append(os.Environ(), "GOWORK=off")
	build.WaitDelay = 10 * time.Second
	fmt.Fprintf(os.Stderr, "pulumicli: building the Pulumi CLI %s and pulumi-language-yaml %s into %s (first run only; ~10 min on 2 cores)\n",
		pulumiVersion, yamlVersion, dir)
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s %s (in e2e/pulumicli, timeout %s): %w\n%s", pulumiPkg, yamlPkg, buildTimeout, err, out)
	}
	for _, bin := range []string{"pulumi", "pulumi-language-yaml"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return "", fmt.Errorf("go build succeeded but left no %s: %w", bin, err)
		}
	}
	stampText := fmt.Sprintf("pulumi %s, pulumi-language-yaml %s, built in %s\n", pulumiVersion, yamlVersion, time.Since(start).Round(time.Second))
	if err := os.WriteFile(stamp, []byte(stampText), 0o644); err != nil {
		return "", err
	}
	fmt.Fprintf(os.Stderr, "pulumicli: %s", stampText)
	return dir, nil
}

// postgresURL returns the test database's URL. Without one the test is skipped when run by hand, and fails
// under CI=true (scripts/test.sh always provides one, so a missing one there is a bug of the script).
func postgresURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv(postgresEnv)
	if u != "" {
		return u
	}
	msg := postgresEnv + " is not set; start a PostgreSQL with `bash scripts/pg-up.sh DIR` and export the URL it prints"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + " (CI=true: scripts/test.sh must set it)")
	}
	t.Skip(msg)
	return ""
}

// freshSchema creates a schema of its own (cdkx_pulumicli_<random>) in the test database, dropped at the
// end of the test, and returns the URL that opens it.
func freshSchema(t *testing.T) string {
	t.Helper()
	base := postgresURL(t)
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Fatalf("%s = %q: want a postgres:// URL", postgresEnv, base)
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	schema := "cdkx_pulumicli_" + hex.EncodeToString(rnd[:])
	admin := func(sql string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Fatalf("connect to %s: %v", postgresEnv, err)
		}
		defer func() { _ = conn.Close(ctx) }()
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	admin("CREATE SCHEMA " + schema)
	t.Cleanup(func() { admin("DROP SCHEMA " + schema + " CASCADE") })
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// buildCdkx builds the cdkx binary of this checkout (../../cmd/cdkx) into a temporary folder, so that each
// run tests the server as it is now.
func buildCdkx(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "cdkx")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/cdkx")
	build.Dir = filepath.Join("..", "..") // the cdkx module's root
	build.Env = append(os.Environ(), "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/cdkx: %v\n%s", err, out)
	}
	return bin
}

// cleanEnv is the parent's environment without its PULUMI_ and CDKX_ variables, plus extra.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PULUMI_") && !strings.HasPrefix(kv, "CDKX_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// result is what a finished process left.
type result struct {
	args           []string
	code           int // exit code; -1 when it did not exit by itself (killed, timed out, not started)
	stdout, stderr string
	took           time.Duration
	err            error // why it did not run or exited abnormally (timeout, signal); nil with any exit code
}

func (r result) output() string {
	return fmt.Sprintf("$ %s\n(exit %d after %s, err %v)\n--- stdout\n%s--- stderr\n%s", strings.Join(r.args, " "), r.code,
		r.took.Round(time.Millisecond), r.err, r.stdout, r.stderr)
}

// newCmd prepares a process in a process group of its own, killed (the whole group, by the process's
// PID) when ctx ends.
func newCmd(ctx context.Context, dir string, env []string, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { killGroup(cmd); return nil }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// killGroup sends SIGKILL to a process started by newCmd and to everything it started, each by its PID:
// first its descendants (the Pulumi CLI starts its language host in a process group of its own, which
// would outlive a CLI killed with -9), then its process group.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	for _, pid := range descendants(cmd.Process.Pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}

// live holds the PIDs of the processes started by newCmd that are still running under their *exec.Cmd
// (servers, background commands): reapOrphans leaves them alone.
var live = struct {
	sync.Mutex
	pids map[int]bool
}{pids: map[int]bool{}}

// orphans counts the processes reapOrphans killed (guarded by live).
var orphans int

func setLive(cmd *exec.Cmd, running bool) {
	live.Lock()
	defer live.Unlock()
	if running {
		live.pids[cmd.Process.Pid] = true
	} else {
		delete(live.pids, cmd.Process.Pid)
	}
}

// becomeSubreaper makes this process the parent of every orphan among its descendants (Linux
// PR_SET_CHILD_SUBREAPER), so that reapOrphans finds them: a Pulumi CLI's language host outlives a CLI killed
// with -9, and sometimes one that exited.
func becomeSubreaper(t *testing.T) {
	const prSetChildSubreaper = 36
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		t.Fatalf("prctl(PR_SET_CHILD_SUBREAPER): %v", errno)
	}
}

// reapOrphans kills (with their descendants, each by PID) and reaps the children of this process that no
// *exec.Cmd waits for: orphans re-parented here by becomeSubreaper.
func reapOrphans() {
	live.Lock()
	defer live.Unlock()
	for _, pid := range procChildren()[os.Getpid()] {
		if live.pids[pid] {
			continue
		}
		for _, d := range descendants(pid) {
			_ = syscall.Kill(d, syscall.SIGKILL)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, 0, nil)
		orphans++
	}
}

// descendants lists the PIDs of the processes below pid, read from /proc (Linux).
func descendants(pid int) []int {
	children := procChildren()
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// procChildren maps each PID to its children's, read from /proc/PID/stat.
func procChildren() map[int][]int {
	entries, _ := os.ReadDir("/proc")
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces and parentheses, so parse after the last ')'.
		rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
		fields := strings.Fields(rest)
		if len(fields) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(fields[1]); err == nil {
			children[ppid] = append(children[ppid], p)
		}
	}
	return children
}

// run runs name args in dir within timeout and kills what is left of its process group afterwards.
func run(dir string, env []string, timeout time.Duration, name string, args ...string) result {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := newCmd(ctx, dir, env, name, args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // whatever of its process group is left
	}
	reapOrphans()
	return finish(ctx, cmd, append([]string{filepath.Base(name)}, args...), start, err, stdout.String(), stderr.String())
}

func finish(ctx context.Context, cmd *exec.Cmd, args []string, start time.Time, err error, stdout, stderr string) result {
	r := result{args: args, code: -1, stdout: stdout, stderr: stderr, took: time.Since(start)}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		r.err = fmt.Errorf("killed after %s: %w", r.took.Round(time.Millisecond), ctx.Err())
	case errors.As(err, &exit) && exit.ExitCode() >= 0:
		r.code = exit.ExitCode()
	case err != nil:
		r.err = err
	default:
		r.code = 0
	}
	return r
}

// server is a `cdkx server` process.
type server struct {
	cmd  *exec.Cmd
	url  string        // http://127.0.0.1:PORT
	done chan struct{} // closed once the process has exited

	mu    sync.Mutex
	lines []string // its stderr
}

func (s *server) log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.lines, "\n")
}

// startServer creates a token and starts `cdkx server` on a free port of 127.0.0.1 with its own schema of
// the test database and a service secrets key (CDKX_SERVER_SECRETS_KEY); it is killed when the test ends.
// It returns the server and the token.
func startServer(t *testing.T, cdkx string) (*server, string) {
	t.Helper()
	dbURL := freshSchema(t)
	tok := run(t.TempDir(), cleanEnv(), 2*time.Minute, cdkx, "server", "token", "create", "pulumi-e2e", "--database-url", dbURL)
	if tok.code != 0 {
		t.Fatalf("cdkx server token create:\n%s", tok.output())
	}
	lines := strings.Split(strings.TrimSpace(tok.stdout), "\n")
	token := strings.TrimSpace(lines[len(lines)-1])

	key := make([]byte, 32)
	_, _ = rand.Read(key)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := newCmd(ctx, t.TempDir(), cleanEnv("CDKX_SERVER_SECRETS_KEY="+base64.StdEncoding.EncodeToString(key)),
		cdkx, "server", "--listen", "127.0.0.1:0", "--database-url", dbURL)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	setLive(cmd, true)
	s := &server{cmd: cmd, done: make(chan struct{})}
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
		setLive(cmd, false)
	}()
	t.Cleanup(func() {
		select {
		case <-s.done:
		default:
			killGroup(cmd)
		}
		cancel()
		<-s.done
		if t.Failed() {
			t.Logf("cdkx server log:\n%s", s.log())
		}
	})
	select {
	case a := <-addr:
		s.url = a
		if !strings.HasPrefix(a, "http") {
			s.url = "http://" + a
		}
	case <-s.done:
		t.Fatalf("cdkx server exited before listening:\n%s", s.log())
	case <-time.After(30 * time.Second):
		t.Fatalf("cdkx server did not listen within 30 s:\n%s", s.log())
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(s.url + "/healthz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("cdkx server at %s: /healthz did not answer 200 within 30 s (%v)", s.url, err)
		}
	}
	return s, token
}
