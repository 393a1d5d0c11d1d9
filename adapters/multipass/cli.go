package multipass

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/text"
)

// Size caps of what one multipass command may print: more is an error (*OutputTooLargeError), so that a
// broken or hostile binary can neither exhaust memory nor swell an error. `info --format json` of one
// instance is about 1 KiB; the caps leave room for thousands of instances and mounts.
const (
	MaxStdout = 4 << 20  // bytes
	MaxStderr = 64 << 10 // bytes
)

// interruptGrace is how long a command interrupted by its context (SIGINT) may take to exit before it is
// killed (exec.Cmd.WaitDelay).
const interruptGrace = 10 * time.Second

// Exit codes of the multipass client (include/multipass/cli/return_codes.h, and timeout_exit_code in
// include/multipass/constants.h).
const (
	ExitCommandLineError = 1 // the arguments were refused before the daemon was asked
	ExitCommandFail      = 2 // the daemon refused or failed the command
	ExitDaemonFail       = 3 // the daemon did not answer (gRPC UNAVAILABLE): multipassd is not running
	ExitTimeout          = 5 // --timeout passed before the command finished (launch, start, restart)
)

// Command is one invocation of the multipass binary: its arguments (after the binary's name) and what it
// reads on stdin (nil: nothing, stdin is the null device).
type Command struct {
	Args  []string
	Stdin []byte
}

// Output is how one invocation ended: what it printed and its exit code (0 success, -1 killed by a
// signal).
type Output struct {
	Stdout, Stderr []byte
	ExitCode       int
}

// ExecFunc runs one invocation of the binary bin. Its error says that the command could not run or did
// not end by itself (the binary is missing, ctx ended, an output exceeded its cap); a command that ran and
// failed answers a non-zero Output.ExitCode and no error. Exec is the real one; tests supply their own.
type ExecFunc func(ctx context.Context, bin string, cmd Command) (Output, error)

// OutputTooLargeError is returned when a command printed more than MaxStdout or MaxStderr bytes.
type OutputTooLargeError struct {
	Stream string // "stdout" or "stderr"
	Limit  int    // bytes
}

// Error names the stream and the cap.
func (e *OutputTooLargeError) Error() string {
	return fmt.Sprintf("printed more than %d bytes on %s", e.Limit, e.Stream)
}

// Exec runs bin with cmd's arguments through os/exec under ctx: when ctx ends, the command gets SIGINT
// (as a terminal's Ctrl-C would send it, so that multipass stops its request cleanly) and is killed
// interruptGrace later. The child runs in a process group of its own (unix), so that a Ctrl-C at cdkx's
// terminal reaches it only this way: the engine lets provider calls finish on a first interrupt. Stdout
// and stderr are captured up to MaxStdout and MaxStderr bytes; more is an *OutputTooLargeError.
func Exec(ctx context.Context, bin string, cmd Command) (Output, error) {
	c := exec.CommandContext(ctx, bin, cmd.Args...)
	c.Cancel = func() error {
		if err := c.Process.Signal(os.Interrupt); err != nil {
			return c.Process.Kill() // no SIGINT on this system (Windows)
		}
		return nil
	}
	c.WaitDelay = interruptGrace
	detach(c)
	if cmd.Stdin != nil {
		c.Stdin = bytes.NewReader(cmd.Stdin)
	}
	stdout := &cappedBuffer{limit: MaxStdout}
	stderr := &cappedBuffer{limit: MaxStderr}
	c.Stdout, c.Stderr = stdout, stderr
	err := c.Run()
	// ProcessState is nil when the command did not start; its ExitCode is then -1.
	out := Output{Stdout: stdout.buf.Bytes(), Stderr: stderr.buf.Bytes(), ExitCode: c.ProcessState.ExitCode()}
	switch {
	case ctx.Err() != nil:
		return out, ctx.Err()
	case stdout.over:
		return out, &OutputTooLargeError{Stream: "stdout", Limit: MaxStdout}
	case stderr.over:
		return out, &OutputTooLargeError{Stream: "stderr", Limit: MaxStderr}
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return out, err
	}
	return out, nil
}

// cappedBuffer keeps the first limit bytes written to it and notes that more came; it never fails a
// write, so that the child is never blocked or killed by a full pipe.
type cappedBuffer struct {
	buf   bytes.Buffer
	limit int
	over  bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.limit - b.buf.Len(); room < len(p) {
		b.over = true
		if room > 0 {
			b.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return b.buf.Write(p)
}

// CommandError is a multipass command that ran and exited with a non-zero code. Stderr is what it said,
// as multipass prints it (e.g. `info failed: instance "dev" does not exist`); Error shows it capped and
// sanitized (text.ProviderMessage).
type CommandError struct {
	Args     []string
	ExitCode int
	Stderr   string
	// Kind is resource.ErrNotFound (the instance does not exist), resource.ErrAlreadyExists (launch: the
	// name is taken), resource.ErrUnreachable (the daemon did not answer), ErrTimeout or nil, so that
	// errors.Is works on the error.
	Kind error
}

// ErrTimeout is the Kind of a command that exited with ExitTimeout (its --timeout passed).
var ErrTimeout = errors.New("timed out")

// Error renders e.g. `multipass info dev --format json: exit status 2: info failed: instance "dev" does
// not exist`.
func (e *CommandError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = "(nothing on stderr)"
	}
	return fmt.Sprintf("%s: exit status %d: %s", commandLine(e.Args), e.ExitCode, text.ProviderMessage(msg))
}

// Unwrap returns Kind.
func (e *CommandError) Unwrap() error { return e.Kind }

// commandLine renders "multipass ARGS…" for errors, each argument capped and sanitized (a cloud-init
// path or an image name come from the template).
func commandLine(args []string) string {
	parts := make([]string, 0, len(args)+1)
	parts = append(parts, Name)
	for _, a := range args {
		parts = append(parts, text.Sanitize(text.Cap(a, 256)))
	}
	return strings.Join(parts, " ")
}

// runner runs multipass commands and maps how they end to errors.
type runner struct {
	bin  string
	exec ExecFunc
}

// run runs multipass with args (and stdin, when not nil) and returns its stdout. A missing binary is an
// error that names MULTIPASS_BIN and how to install Multipass; a non-zero exit is a *CommandError.
func (r runner) run(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	out, err := r.exec(ctx, r.bin, Command{Args: args, Stdin: stdin})
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			return nil, &MissingBinaryError{Bin: r.bin, Err: err}
		}
		return nil, fmt.Errorf("%s: %w", commandLine(args), err)
	}
	if out.ExitCode != 0 {
		return nil, commandError(args, out)
	}
	return out.Stdout, nil
}

// commandError decodes a failed command by its exit code first, then by the daemon's messages
// (src/daemon/daemon.cpp): `instance "NAME" does not exist` (NOT_FOUND) and `instance "NAME" already
// exists`.
func commandError(args []string, out Output) *CommandError {
	stderr := string(out.Stderr)
	e := &CommandError{Args: args, ExitCode: out.ExitCode, Stderr: stderr}
	switch {
	case out.ExitCode == ExitDaemonFail:
		e.Kind = resource.ErrUnreachable
	case out.ExitCode == ExitTimeout:
		e.Kind = ErrTimeout
	case strings.Contains(stderr, "does not exist") && strings.Contains(stderr, `instance "`):
		e.Kind = resource.ErrNotFound
	case strings.Contains(stderr, "already exists") && strings.Contains(stderr, `instance "`):
		e.Kind = resource.ErrAlreadyExists
	}
	return e
}

// MissingBinaryError is returned when the multipass binary cannot be found or run.
type MissingBinaryError struct {
	Bin string
	Err error
}

// Error says where cdkx looked and what to do.
func (e *MissingBinaryError) Error() string {
	where := fmt.Sprintf("%q on PATH", e.Bin)
	if strings.ContainsRune(e.Bin, os.PathSeparator) || strings.ContainsRune(e.Bin, '/') {
		where = fmt.Sprintf("%q", e.Bin)
	}
	return fmt.Sprintf("multipass: the Multipass command was not found (looked for %s); nothing was changed: install Multipass (https://canonical.com/multipass/install) or set %s to its path (%v)",
		text.Sanitize(where), EnvBin, e.Err)
}

// Unwrap returns the lookup's error.
func (e *MissingBinaryError) Unwrap() error { return e.Err }
