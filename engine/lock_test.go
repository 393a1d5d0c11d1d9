package engine_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// deadPID returns the PID of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.CommandContext(context.Background(), "true")
	if err := cmd.Run(); err != nil {
		t.Skipf("cannot run true: %v", err)
	}
	return cmd.Process.Pid
}

func TestStale(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 7, 0, 0, 0, time.UTC)
	me := engine.MachineID()
	if me == "" {
		t.Skip("no /proc: machine identity unknown")
	}
	dead := deadPID(t)
	tests := []struct {
		name   string
		holder state.LockInfo
		want   bool
	}{
		{"alive, fresh heartbeat", state.LockInfo{PID: os.Getpid(), Machine: me, HeartbeatAt: now}, false},
		{"dead process on this machine", state.LockInfo{PID: dead, Machine: me, HeartbeatAt: now}, true},
		{"dead PID on another machine: heartbeat decides", state.LockInfo{PID: dead, Machine: "other", HeartbeatAt: now}, false},
		{"unknown machine: heartbeat decides", state.LockInfo{PID: dead, HeartbeatAt: now.Add(-time.Minute)}, false},
		{"alive PID (maybe reused) but no heartbeat for long", state.LockInfo{PID: os.Getpid(), Machine: me, HeartbeatAt: now.Add(-2 * time.Minute)}, true},
	}
	for _, tt := range tests {
		if got, why := engine.Stale(tt.holder, me, now); got != tt.want {
			t.Errorf("%s: Stale() = %t (%s), want %t", tt.name, got, why, tt.want)
		}
	}
}

func TestLockStacksTakesOverStaleLocks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := openBackend(t)
	now := time.Now().UTC()
	me := engine.MachineID()
	if me == "" {
		t.Skip("no /proc: machine identity unknown")
	}
	holders := []state.LockInfo{
		{ID: "crashed", Stack: "A", Operation: "deploy", User: "ci", Host: "h", PID: deadPID(t), Machine: me, StartedAt: now, HeartbeatAt: now},
		{ID: "silent", Stack: "B", Operation: "deploy", User: "ci", Host: "far", PID: 1, Machine: "elsewhere", StartedAt: now, HeartbeatAt: now.Add(-5 * time.Minute)},
	}
	for _, h := range holders {
		if err := b.Lock(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	var took []string
	release, err := engine.LockStacks(ctx, b, []string{"A", "B"}, state.LockInfo{ID: "me", Operation: "deploy", PID: os.Getpid()}, 0,
		func(h state.LockInfo, why string) {
			if why != "" {
				took = append(took, h.ID)
			}
		})
	if err != nil {
		t.Fatalf("LockStacks: %v", err)
	}
	if len(took) != 2 {
		t.Errorf("took over %v, want both stale locks", took)
	}
	locks, _ := b.Locks(ctx)
	for _, l := range locks {
		if l.ID != "me" || l.Machine != me {
			t.Errorf("lock of %s held by %s (machine %q), want me on this machine", l.Stack, l.ID, l.Machine)
		}
	}
	if err := release(); err != nil {
		t.Errorf("release() = %v", err)
	}
	if locks, _ := b.Locks(ctx); len(locks) != 0 {
		t.Errorf("after release: %d locks held, want 0", len(locks))
	}

	// A live holder is not taken over: exit 3 material.
	live := state.LockInfo{ID: "live", Stack: "A", Operation: "deploy", PID: os.Getpid(), Machine: me, StartedAt: now, HeartbeatAt: now}
	if err := b.Lock(ctx, live); err != nil {
		t.Fatal(err)
	}
	_, err = engine.LockStacks(ctx, b, []string{"A"}, state.LockInfo{ID: "me2"}, 0, nil)
	var le *state.LockedError
	if !errors.As(err, &le) || le.Holder.ID != "live" {
		t.Errorf("LockStacks on a live lock = %v, want *LockedError naming live", err)
	}
}
