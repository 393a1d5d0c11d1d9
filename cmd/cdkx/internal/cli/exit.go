package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/view"
	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/pkg/diag"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// Exit codes: the CI contract (engine-semantics.md).
const (
	ExitOK          = 0
	ExitErr         = 1
	ExitChanges     = 2 // diff --detailed-exitcode found changes
	ExitLocked      = 3 // the stack is locked past --lock-timeout
	ExitFailed      = 4 // a resource failed
	ExitInterrupted = 130
)

// ExitError ends a command with Code after the command printed what it had to say; Err, when set, is
// printed by main.
type ExitError struct {
	Code int
	Err  error
}

// Error returns Err's text, or the code.
func (e *ExitError) Error() string {
	if e.Err != nil {
		return e.Err.Error()
	}
	return fmt.Sprintf("exit status %d", e.Code)
}

// Unwrap returns Err.
func (e *ExitError) Unwrap() error { return e.Err }

// ErrSilent is returned when the command already printed the problem; main prints nothing more.
var ErrSilent = errors.New("silent")

// ExitCode maps an error returned by a command to the process exit code.
func ExitCode(err error) int {
	var ee *ExitError
	var le *state.LockedError
	var fe *engine.FailedError
	var dl *diag.ListError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.Code
	case errors.As(err, &le), errors.As(err, new(*operation.QueueTimeoutError)):
		return ExitLocked
	case errors.As(err, new(*resource.CredentialsError)):
		return ExitErr // a provider refused the credentials before anything was changed
	case errors.As(err, new(*operation.AbortedError)):
		return ExitInterrupted
	case errors.Is(err, engine.ErrInterrupted), errors.Is(err, context.Canceled):
		return ExitInterrupted
	case errors.As(err, &fe):
		return ExitFailed
	case errors.As(err, &dl):
		return ExitErr
	}
	return ExitErr
}

// LockWaitNotice returns the callback that tells the user, on stderr, whose lock a run is waiting for, or
// whose stale lock it took over.
func LockWaitNotice(io *IOStreams, cfg *Config) func(holder state.LockInfo, takeover string) {
	return func(holder state.LockInfo, takeover string) {
		if takeover != "" {
			fmt.Fprintf(io.ErrOut, "Took over the lock of stack %s, held by %s: %s\n", view.Sanitize(holder.Stack), view.Sanitize(holder.String()), view.Sanitize(takeover))
			return
		}
		fmt.Fprintf(io.ErrOut, "Waiting up to %s for the lock of stack %s, held by %s\n", cfg.LockTimeout, view.Sanitize(holder.Stack), view.Sanitize(holder.String()))
	}
}

// QueueWaitNotice returns the operation.LockPolicy.Queued of the CLI: one line on stderr each time the
// waiting deployment's place in its stack's queue changes (nothing with --json).
func QueueWaitNotice(io *IOStreams, cfg *Config) func(*state.QueuedError) {
	return func(q *state.QueuedError) {
		if cfg.JSON {
			return
		}
		fmt.Fprintf(io.ErrOut, "Waiting up to %s for the turn of deployment %s in the queue of stack %s: position %d, behind %s %s (%s, by %s)\n",
			cfg.LockTimeout, view.Sanitize(q.ID), view.Sanitize(q.Stack), q.Position, view.Sanitize(string(q.Ahead.Kind)), view.Sanitize(q.Ahead.ID),
			q.Ahead.Status, view.Sanitize(q.Ahead.CreatedBy))
	}
}
