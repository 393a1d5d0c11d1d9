package state

import (
	"fmt"
	"time"
)

// StaleLock tells whether holder's lock may be taken over at now, and why, by a process on machine (a
// MachineID: boot and PID namespace, "" when unknown): its holder runs on the same machine and its process
// is gone (exists(PID) false), or its heartbeat is older than limit. A PID alone never decides: a PID that
// exists may have been reused, so only a missing one on the same machine counts, and on another machine
// only the heartbeat does. A backend whose Abilities().LeasedLocks is set expires its locks itself: its
// clients never take one over, whatever this says.
func StaleLock(holder LockInfo, machine string, now time.Time, limit time.Duration, exists func(pid int) bool) (bool, string) {
	if holder.Machine != "" && holder.Machine == machine && holder.PID > 0 && !exists(holder.PID) {
		return true, fmt.Sprintf("its process (pid %d) on this machine is gone", holder.PID)
	}
	if age := now.Sub(holder.HeartbeatAt); age > limit {
		return true, fmt.Sprintf("no heartbeat for %s (limit %s)", age.Round(time.Second), limit)
	}
	return false, ""
}
