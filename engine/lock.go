package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

// LockPollInterval is how often LockStacks retries a held lock while it waits.
const LockPollInterval = 200 * time.Millisecond

// HeartbeatInterval is how often a held lock's heartbeat is refreshed.
const HeartbeatInterval = 10 * time.Second

// StaleAfter is how long a lock may go without a heartbeat before it is taken over: six missed beats.
const StaleAfter = 6 * HeartbeatInterval

// Stale tells whether a held lock can be taken over, and why: its holder runs on this machine (same boot
// and PID namespace: machine is MachineID()) and its process no longer exists, or its heartbeat is older
// than StaleAfter. A PID alone never decides: a PID that exists may have been reused, so only a missing
// one on the same machine counts, and on another machine only the heartbeat does.
func Stale(holder state.LockInfo, machine string, now time.Time) (bool, string) {
	return state.StaleLock(holder, machine, now, StaleAfter, processExists)
}

// MachineID identifies this operating system instance and PID namespace ("<boot id>/<pid namespace>"), or
// "" where /proc does not tell.
func MachineID() string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(boot)) + "/" + ns
}

// processExists reports whether a process with pid exists (signal 0: EPERM still means it exists).
func processExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// LockStacks takes the lock of each stack for info (stacks in sorted order, so that two runs never wait
// for each other in a circle). A lock whose holder is Stale is taken over (except on a backend with
// state.Abilities.LeasedLocks, whose server expires them): released by its holder's ID
// (a compare-and-delete, so two runs cannot both take it) and taken again; notify is called with the old
// holder and the reason. Any other held lock is retried every LockPollInterval until timeout has passed;
// timeout 0 fails at once. The error is then the last *state.LockedError, naming the holder. notify, when
// not nil, is also called once per stack that has to be waited for, with its holder and reason "". (The
// deployment record of a run that died is made ABORTED by the deployment queue, once its heartbeat stops:
// state.Deployments.ClaimDeployments.) While held,
// each lock's heartbeat is refreshed every HeartbeatInterval. release stops the heartbeat and unlocks them
// all; it is safe to call once. Its error joins the stacks' Unlock errors: a lock the run lost while it
// held it (a state service's update cancelled with `cdkx cancel`, or its lease expired) is such an error,
// so that a run never reports success for work whose lock was taken from it.
func LockStacks(ctx context.Context, b state.Backend, stacks []string, info state.LockInfo, timeout time.Duration,
	notify func(holder state.LockInfo, takeover string)) (func() error, error) {
	if info.Machine == "" {
		info.Machine = MachineID()
	}
	sorted := append([]string(nil), stacks...)
	sort.Strings(sorted)
	deadline := time.Now().Add(timeout)
	var held []string
	unlock := func() error {
		var errs []error
		for _, s := range held {
			errs = append(errs, b.Unlock(context.WithoutCancel(ctx), s, info.ID))
		}
		return errors.Join(errs...)
	}
	for _, s := range sorted {
		li := info
		li.Stack = s
		waited := false
		for {
			err := b.Lock(ctx, li)
			if err == nil {
				held = append(held, s)
				break
			}
			var le *state.LockedError
			leased := b.Abilities().LeasedLocks
			if errors.As(err, &le) && !leased {
				if stale, why := Stale(le.Holder, info.Machine, time.Now()); stale {
					if uerr := b.Unlock(ctx, s, le.Holder.ID); uerr != nil {
						_ = unlock()
						return nil, fmt.Errorf("take over the stale lock of stack %s: %w", s, uerr)
					}
					if notify != nil {
						notify(le.Holder, why)
					}
					continue
				}
			}
			if !errors.As(err, &le) || time.Now().Add(LockPollInterval).After(deadline) {
				_ = unlock()
				if le != nil {
					return nil, err
				}
				return nil, fmt.Errorf("lock stack %s: %w", s, err)
			}
			if !waited && notify != nil {
				notify(le.Holder, "")
			}
			waited = true
			select {
			case <-ctx.Done():
				_ = unlock()
				return nil, ctx.Err()
			case <-time.After(LockPollInterval):
			}
		}
	}
	stop := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(HeartbeatInterval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case now := <-t.C:
				for _, s := range held {
					_ = b.Heartbeat(context.WithoutCancel(ctx), s, info.ID, now.UTC())
				}
			}
		}
	}()
	return func() error {
		close(stop)
		<-stopped
		return unlock()
	}, nil
}
