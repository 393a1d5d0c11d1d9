package cli

import (
	"os"

	"github.com/google/uuid"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

// LockHolder describes this process as the holder of stack locks: a new lock ID, the user, the host and
// the PID (the operation and times are the caller's).
func LockHolder() state.LockInfo {
	info := state.LockInfo{ID: uuid.NewString(), User: UserName(), PID: os.Getpid()}
	info.Host, _ = os.Hostname()
	return info
}
