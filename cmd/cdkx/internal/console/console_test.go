package console

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/apptest"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/pkg/backend/sqlite"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

func TestNewCmdConsole(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		args       []string
		wantListen string
		wantErr    string
	}{
		{name: "default", wantListen: "127.0.0.1:0"},
		{name: "loopback port", args: []string{"--listen", "127.0.0.1:8099"}, wantListen: "127.0.0.1:8099"},
		{name: "IPv6 loopback", args: []string{"--listen", "[::1]:0"}, wantListen: "[::1]:0"},
		{name: "localhost", args: []string{"--listen", "localhost:0"}, wantListen: "localhost:0"},
		{name: "every interface", args: []string{"--listen", "0.0.0.0:8099"}, wantErr: "refusing to listen on 0.0.0.0:8099"},
		{name: "a public address", args: []string{"--listen", "192.0.2.7:80"}, wantErr: "refusing to listen on 192.0.2.7:80"},
		{name: "no port", args: []string{"--listen", "127.0.0.1"}, wantErr: "refusing to listen"},
		{name: "a state service", args: []string{"--state", "https://cdkx.example"}, wantErr: "--state is a state service"},
		{name: "an argument", args: []string{"extra"}, wantErr: "unknown command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got *Options
			err := apptest.Execute(NewCmdConsole(apptest.Factory(), func(_ context.Context, o *Options) error { got = o; return nil }), tt.args...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || got != nil {
					t.Fatalf("console %q = %v (run: %t), want error %q", tt.args, err, got != nil, tt.wantErr)
				}
				return
			}
			if err != nil || got == nil || got.Listen != tt.wantListen {
				t.Fatalf("console %q = %v, options %+v; want listen %q", tt.args, err, got, tt.wantListen)
			}
		})
	}
}

// login opens the one-time URL with a cookie jar and returns the client and the page it lands on.
func login(t *testing.T, loginURL string) (*http.Client, string) {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	return c, get(t, c, loginURL, http.StatusOK)
}

func get(t *testing.T, c *http.Client, u string, want int) string {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), "GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != want {
		t.Fatalf("GET %s = %d, want %d:\n%s", u, resp.StatusCode, want, b)
	}
	return string(b)
}

// stateWithProposal returns a SQLite state file with one proposal of stack "web".
func stateWithProposal(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	b, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Close() }()
	if err := b.CreateDeployments(context.Background(), []*state.Deployment{{ID: "0b5e0000-0000-4000-8000-000000000001", Stack: "web",
		Kind: state.KindDeploy, Status: state.StatusProposed, CreatedBy: "alice@laptop", Message: "<b>hello</b>"}}); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestConsoleRun(t *testing.T) {
	t.Parallel()
	path := stateWithProposal(t)
	var out, errOut bytes.Buffer
	f := &cli.Factory{IO: &cli.IOStreams{Out: &out, ErrOut: &errOut}, Getenv: func(string) string { return "" }, Now: time.Now,
		OpenBackend: func(ctx context.Context, location string) (state.Backend, error) { return sqlite.Open(ctx, location) }}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- consoleRun(ctx, &Options{F: f, Config: &cli.Config{State: path}, Listen: "127.0.0.1:0", Ready: func(u string) { ready <- u }})
	}()
	var u string
	select {
	case u = <-ready:
	case err := <-done:
		t.Fatalf("console ended at once: %v", err)
	}
	if !regexp.MustCompile(`^http://127\.0\.0\.1:\d+/login\?token=[A-Za-z0-9_-]{32}$`).MatchString(u) {
		t.Errorf("login URL %q", u)
	}
	c, page := login(t, u)
	if !strings.Contains(page, ">web</a>") || !strings.Contains(page, "local/default") {
		t.Errorf("the landing page is not the stacks of local/default:\n%s", page)
	}
	base := strings.SplitN(u, "/login", 2)[0]
	page = get(t, c, base+"/local/default/deployments/0b5e0000-0000-4000-8000-000000000001", http.StatusOK)
	if !strings.Contains(page, `data-status="PROPOSED"`) || !strings.Contains(page, "&lt;b&gt;hello&lt;/b&gt;") || !strings.Contains(page, ">Approve<") {
		t.Errorf("the deployment page:\n%s", page)
	}
	// The URL is used up: a second browser gets the login page again.
	if again := get(t, &http.Client{Timeout: 10 * time.Second}, u, http.StatusUnauthorized); !strings.Contains(again, "Login failed") {
		t.Errorf("the one-time URL a second time:\n%s", again)
	}
	if strings.TrimSpace(out.String()) != u {
		t.Errorf("stdout %q, want the login URL alone", out.String())
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("console after cancel: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("console did not stop")
	}
}

// TestConsoleEndToEnd builds cdkx, runs `cdkx console` on a SQLite file, logs in with the URL it prints,
// reads a page and stops it with SIGINT, as Ctrl-C would.
func TestConsoleEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the cdkx binary")
	}
	t.Parallel()
	path := stateWithProposal(t)
	bin := filepath.Join(t.TempDir(), "cdkx")
	build := exec.CommandContext(context.Background(), "go", "build", "-o", bin, "../../")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.CommandContext(context.Background(), bin, "console", "--state", path)
	cmd.Dir = t.TempDir()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	var u string
	select {
	case u = <-lines:
	case <-time.After(20 * time.Second):
		t.Fatalf("no login URL in 20 s; stderr:\n%s", stderr.String())
	}
	if !strings.HasPrefix(u, "http://127.0.0.1:") {
		t.Fatalf("first line %q, want the login URL; stderr:\n%s", u, stderr.String())
	}
	c, page := login(t, u)
	if !strings.Contains(page, ">web</a>") {
		t.Errorf("stacks page:\n%s", page)
	}
	base := strings.SplitN(u, "/login", 2)[0]
	if page := get(t, c, base+"/local/default/stacks/web", http.StatusOK); !strings.Contains(page, "PROPOSED") {
		t.Errorf("stack page:\n%s", page)
	}
	if err := syscall.Kill(pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		if code := cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("cdkx console exited %d after SIGINT; stderr:\n%s", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cdkx console did not stop on SIGINT")
	}
	_ = os.Remove(bin)
}
