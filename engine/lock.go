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
	if holder.Machine != "" && holder.Machine == machine && holder.PID > 0 && !processExists(holder.PID) {
		return true, fmt.Sprintf("its process (pid %d) on this machine is gone", holder.PID)
	}
	if age := now.Sub(holder.HeartbeatAt); age > StaleAfter {
		return true, fmt.Sprintf("no heartbeat for %s (limit %s)", age.Round(time.Second), StaleAfter)
	}
	return false, ""
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
// state.LeasedLocks, whose server expires them): released by its holder's ID
// (a compare-and-delete, so two runs cannot both take it) and taken again; notify is called with the old
// holder and the reason. Any other held lock is retried every LockPollInterval until timeout has passed;
// timeout 0 fails at once. The error is then the last *state.LockedError, naming the holder. notify, when
// not nil, is also called once per stack that has to be waited for, with its holder and reason "". Once a
// stack's lock is held, the deployments of that stack still recorded RUNNING belong to runs that died
// (AbortDeadRuns): they are recorded ABORTED, with why. While held,
// each lock's heartbeat is refreshed every HeartbeatInterval. release unlocks them all and stops the
// heartbeat; it is safe to call once.
func LockStacks(ctx context.Context, b state.Backend, stacks []string, info state.LockInfo, timeout time.Duration,
	notify func(holder state.LockInfo, takeover string)) (func(), error) {
	if info.Machine == "" {
		info.Machine = MachineID()
	}
	sorted := append([]string(nil), stacks...)
	sort.Strings(sorted)
	deadline := time.Now().Add(timeout)
	var held []string
	tookOver := map[string]string{} // stack → why its stale lock was taken over
	unlock := func() {
		for _, s := range held {
			_ = b.Unlock(context.WithoutCancel(ctx), s, info.ID)
		}
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
			_, leased := b.(state.LeasedLocks)
			if errors.As(err, &le) && !leased {
				if stale, why := Stale(le.Holder, info.Machine, time.Now()); stale {
					if uerr := b.Unlock(ctx, s, le.Holder.ID); uerr != nil {
						unlock()
						return nil, fmt.Errorf("take over the stale lock of stack %s: %w", s, uerr)
					}
					if notify != nil {
						notify(le.Holder, why)
					}
					tookOver[s] = fmt.Sprintf("its lock was taken over: %s (holder %s, pid %d on %s)", why, le.Holder.User, le.Holder.PID, le.Holder.Host)
					continue
				}
			}
			if !errors.As(err, &le) || time.Now().Add(LockPollInterval).After(deadline) {
				unlock()
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
				unlock()
				return nil, ctx.Err()
			case <-time.After(LockPollInterval):
			}
		}
	}
	for _, s := range held {
		why := tookOver[s]
		if why == "" {
			why = "it stopped without finishing (killed, or its lock expired) and its lock was released"
		}
		if err := AbortDeadRuns(ctx, b, s, why, time.Now()); err != nil {
			unlock()
			return nil, err
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
	return func() {
		close(stop)
		<-stopped
		unlock()
	}, nil
}

// AbortDeadRuns records every deployment of stack still RUNNING as ABORTED, with "run aborted: <why>" as its
// error. Call it only while holding the stack's lock: a run records its deployments only under that lock,
// so a RUNNING one found then belongs to a run that is gone (killed, or its lock taken over or expired).
// A run that is killed stays RUNNING in history until the next run of its stack calls this.
func AbortDeadRuns(ctx context.Context, b state.Backend, stack, why string, now time.Time) error {
	ds, err := b.ListDeployments(ctx, stack, 0)
	if err != nil {
		return fmt.Errorf("list deployments of stack %s: %w", stack, err)
	}
	for _, d := range ds {
		if d.Status != state.StatusRunning {
			continue
		}
		if err := b.FinishDeployment(ctx, d.ID, state.StatusAborted, now.UTC(), d.Version, "run aborted: "+why); err != nil {
			return fmt.Errorf("record the dead run %s of stack %s as aborted: %w", d.ID, stack, err)
		}
	}
	return nil
}
