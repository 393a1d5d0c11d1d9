package multipass_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cdkx-dev/cdkx/adapters/multipass"
)

// step is one expected invocation of the multipass binary and its canned answer.
type step struct {
	Args  string // the arguments joined with spaces
	Stdin string // what it must read on stdin ("" for nothing)
	// The answer: stdout (a testdata file when it starts with "@"), stderr and exit code, or err when
	// the command could not run.
	Stdout, Stderr string
	Code           int
	Err            error
}

// script is a fake multipass: it answers the steps in order and fails the test on any other invocation,
// and on steps left over when the test ends.
type script struct {
	t     *testing.T
	mu    sync.Mutex
	steps []step
	next  int
}

// newScript returns a provider whose binary is a script of steps.
func newScript(t *testing.T, steps ...step) (*script, *multipass.Provider) {
	t.Helper()
	s := &script{t: t, steps: steps}
	t.Cleanup(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.next < len(s.steps) {
			t.Errorf("%d expected multipass invocations did not happen, the first: multipass %s", len(s.steps)-s.next, s.steps[s.next].Args)
		}
	})
	p, err := multipass.New(multipass.Config{Bin: "/opt/mp/multipass", Exec: s.exec, PollInterval: time.Second})
	if err != nil {
		t.Fatalf("New = %v", err)
	}
	return s, p
}

func (s *script) exec(_ context.Context, bin string, cmd multipass.Command) (multipass.Output, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	got := strings.Join(cmd.Args, " ")
	if bin != "/opt/mp/multipass" {
		s.t.Errorf("binary = %q, want /opt/mp/multipass", bin)
	}
	if s.next >= len(s.steps) {
		s.t.Errorf("unexpected invocation: multipass %s", got)
		return multipass.Output{ExitCode: 99}, nil
	}
	want := s.steps[s.next]
	s.next++
	if got != want.Args {
		s.t.Errorf("invocation %d = multipass %s, want multipass %s", s.next, got, want.Args)
	}
	if string(cmd.Stdin) != want.Stdin {
		s.t.Errorf("stdin of multipass %s = %q, want %q", got, cmd.Stdin, want.Stdin)
	}
	if want.Err != nil {
		return multipass.Output{ExitCode: -1}, want.Err
	}
	stdout := want.Stdout
	if strings.HasPrefix(stdout, "@") {
		b, err := os.ReadFile(filepath.Join("testdata", stdout[1:]))
		if err != nil {
			s.t.Fatalf("fixture: %v", err)
		}
		stdout = string(b)
	}
	return multipass.Output{Stdout: []byte(stdout), Stderr: []byte(want.Stderr), ExitCode: want.Code}, nil
}

// info is `info NAME --format json` answered with a testdata file.
func info(name, file string) step {
	return step{Args: "info " + name + " --format json", Stdout: "@" + file}
}

// infoMissing is `info NAME --format json` of an instance that does not exist, as multipass answers it.
func infoMissing(name string) step {
	return step{Args: "info " + name + " --format json", Code: 2, Stderr: `info failed: instance "` + name + `" does not exist` + "\n"}
}

// versionOK is `version --format json` with the daemon answering.
var versionOK = step{Args: "version --format json", Stdout: "@version.json"}
