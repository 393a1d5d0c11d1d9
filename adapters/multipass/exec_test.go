//go:build unix

package multipass_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cdkx-dev/cdkx/adapters/multipass"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// helperEnv makes the test binary, run by Exec, act as a small stand-in command (helper) instead of
// running the tests.
const helperEnv = "CDKX_MULTIPASS_EXEC_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(helper(os.Args[1:]))
	}
	_ = os.Setenv(helperEnv, "1") // inherited by the commands Exec runs; tests never read it
	// A -race binary sleeps 1 s when it exits, to flush reports; the helpers report nothing.
	_ = os.Setenv("GORACE", "atexit_sleep_ms=0")
	os.Exit(m.Run())
}

// helper is the stand-in command: its first argument says what it does.
func helper(args []string) int {
	switch args[0] {
	case "echo-stdin": // copies stdin to stdout
		_, _ = io.Copy(os.Stdout, os.Stdin)
		return 0
	case "fail": // fail CODE MESSAGE: prints MESSAGE on stderr and exits with CODE
		code, _ := strconv.Atoi(args[1])
		_, _ = os.Stderr.WriteString(args[2])
		return code
	case "flood": // flood stdout|stderr BYTES
		n, _ := strconv.Atoi(args[2])
		w := os.Stdout
		if args[1] == "stderr" {
			w = os.Stderr
		}
		_, _ = w.Write(bytes.Repeat([]byte("x"), n))
		return 0
	case "wait-interrupt": // wait-interrupt READYFILE: says it is ready, then exits 7 on SIGINT
		c := make(chan os.Signal, 1)
		signal.Notify(c, os.Interrupt)
		if err := os.WriteFile(args[1], []byte("ready"), 0o600); err != nil {
			return 1
		}
		select {
		case <-c:
			_, _ = os.Stdout.WriteString("got an interrupt")
			return 7
		case <-time.After(time.Minute):
			return 1
		}
	}
	return 100
}

func self(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// TestExec runs real commands: stdin reaches them, stdout and the exit code come back, and output beyond
// the caps is an error.
func TestExec(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		cmd    multipass.Command
		stdout string
		code   int
		tooBig string // the stream of an *OutputTooLargeError
	}{
		{"stdin", multipass.Command{Args: []string{"echo-stdin"}, Stdin: []byte("#cloud-config\n")}, "#cloud-config\n", 0, ""},
		{"no stdin", multipass.Command{Args: []string{"echo-stdin"}}, "", 0, ""},
		{"exit code", multipass.Command{Args: []string{"fail", "2", "info failed"}}, "", 2, ""},
		{"stdout at the cap", multipass.Command{Args: []string{"flood", "stdout", strconv.Itoa(multipass.MaxStdout)}}, strings.Repeat("x", multipass.MaxStdout), 0, ""},
		{"stdout over the cap", multipass.Command{Args: []string{"flood", "stdout", strconv.Itoa(multipass.MaxStdout + 1)}}, "", 0, "stdout"},
		{"stderr over the cap", multipass.Command{Args: []string{"flood", "stderr", strconv.Itoa(multipass.MaxStderr + 1)}}, "", 0, "stderr"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, err := multipass.Exec(t.Context(), self(t), tc.cmd)
			if tc.tooBig != "" {
				var te *multipass.OutputTooLargeError
				if !errors.As(err, &te) || te.Stream != tc.tooBig {
					t.Fatalf("Exec = %v, want an *OutputTooLargeError on %s", err, tc.tooBig)
				}
				if len(out.Stdout) > multipass.MaxStdout || len(out.Stderr) > multipass.MaxStderr {
					t.Errorf("kept %d and %d bytes, beyond the caps", len(out.Stdout), len(out.Stderr))
				}
				return
			}
			if err != nil {
				t.Fatalf("Exec = %v", err)
			}
			if string(out.Stdout) != tc.stdout || out.ExitCode != tc.code {
				t.Errorf("Exec = %d bytes %.40q, exit %d; want %d bytes %.40q, exit %d", len(out.Stdout), out.Stdout, out.ExitCode, len(tc.stdout), tc.stdout, tc.code)
			}
		})
	}
}

// TestExecInterrupt: when the context ends, the command gets SIGINT (and can stop cleanly).
func TestExecInterrupt(t *testing.T) {
	t.Parallel()
	ready := filepath.Join(t.TempDir(), "ready")
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		defer cancel()
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
			if _, err := os.Stat(ready); err == nil {
				return
			}
			time.Sleep(5 * time.Millisecond) // polling for the child's file, bounded
		}
	}()
	out, err := multipass.Exec(ctx, self(t), multipass.Command{Args: []string{"wait-interrupt", ready}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Exec = %v, want context.Canceled", err)
	}
	if string(out.Stdout) != "got an interrupt" || out.ExitCode != 7 {
		t.Errorf("Exec = %q, exit %d; want the child to have handled SIGINT (exit 7)", out.Stdout, out.ExitCode)
	}
}

// TestMissingBinary: a binary that does not exist is a *MissingBinaryError naming MULTIPASS_BIN.
func TestMissingBinary(t *testing.T) {
	t.Parallel()
	for _, bin := range []string{filepath.Join(t.TempDir(), "multipass"), "cdkx-no-such-multipass"} {
		p, err := multipass.New(multipass.Config{Bin: bin})
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Preflight(t.Context(), resource.PreflightRequest{})
		var mb *multipass.MissingBinaryError
		if !errors.As(err, &mb) || mb.Bin != bin || !strings.Contains(err.Error(), "MULTIPASS_BIN") || !strings.Contains(err.Error(), "install Multipass") {
			t.Errorf("Preflight with %s = %v, want a *MissingBinaryError naming MULTIPASS_BIN", bin, err)
		}
	}
}

// TestCommandError: a failed command's error quotes its stderr, sanitized and capped, and maps the
// exit codes and messages to kinds.
func TestCommandError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		code   int
		stderr string
		kind   error
	}{
		{2, "info failed: instance \"dev\" does not exist\n", resource.ErrNotFound},
		{2, "launch failed: instance \"dev\" already exists\n", resource.ErrAlreadyExists},
		{3, "list failed: cannot connect to the multipass socket\n", resource.ErrUnreachable},
		{5, "Timed out waiting for instance launch.\n", multipass.ErrTimeout},
		{1, "Mount source path \"/x\" does not exist\n", nil},
	} {
		_, p := newScript(t, step{Args: "delete --purge dev", Code: tc.code, Stderr: tc.stderr})
		err := p.Delete(t.Context(), resource.DeleteRequest{Type: multipass.TypeInstance, PhysicalID: "dev"})
		if tc.kind == resource.ErrNotFound {
			if err != nil {
				t.Errorf("Delete of a missing instance = %v, want success", err)
			}
			continue
		}
		var ce *multipass.CommandError
		if !errors.As(err, &ce) || ce.ExitCode != tc.code || !strings.Contains(err.Error(), strings.TrimSpace(tc.stderr)) {
			t.Errorf("Delete = %v, want a *CommandError with exit %d quoting %q", err, tc.code, tc.stderr)
		}
		if tc.kind != nil && !errors.Is(err, tc.kind) {
			t.Errorf("Delete = %v, want it to match %v", err, tc.kind)
		}
	}
	_, p := newScript(t, step{Args: "delete --purge dev", Code: 2, Stderr: "delete failed: \x1b]0;pwned\x07" + strings.Repeat("y", 5000)})
	err := p.Delete(t.Context(), resource.DeleteRequest{Type: multipass.TypeInstance, PhysicalID: "dev"})
	if err == nil || strings.ContainsAny(err.Error(), "\x1b\x07") || len(err.Error()) > 2300 || !strings.Contains(err.Error(), "more bytes") {
		t.Errorf("Delete = %d bytes %.80q, want it sanitized and capped", len(err.Error()), err)
	}
}
