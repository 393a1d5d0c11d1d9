package cli

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/google/uuid"

	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// Lock takes the locks of stacks for a command doing operation (deploy, destroy, refresh), as this
// process, waiting up to --lock-timeout and telling the user whom it waits for or whose stale lock it takes
// over. A lock still held after that is an *ExitError with code ExitLocked naming the holder. release
// returns the error of a lock lost while it was held (engine.LockStacks).
func Lock(ctx context.Context, f *Factory, cfg *Config, b state.Backend, stacks []string, operation string) (func() error, error) {
	now := f.Now().UTC()
	info := LockHolder()
	info.Operation, info.StartedAt, info.HeartbeatAt = operation, now, now
	release, err := engine.LockStacks(ctx, b, stacks, info, cfg.LockTimeout, LockWaitNotice(f.IO, cfg))
	var le *state.LockedError
	if errors.As(err, &le) {
		return nil, &ExitError{Code: ExitLocked, Err: fmt.Errorf("%w; wait for it to finish, or pass --lock-timeout 10m to wait", err)}
	}
	return release, err
}

// LockHolder describes this process as the holder of stack locks: a new lock ID, the user, the host and
// the PID (the operation and times are the caller's).
func LockHolder() state.LockInfo {
	info := state.LockInfo{ID: uuid.NewString(), User: UserName(), PID: os.Getpid()}
	info.Host, _ = os.Hostname()
	return info
}
