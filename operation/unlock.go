package operation

import (
	"context"
	"fmt"
	"time"

	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// LockStore is what Locks, Unlock and Cancel need of a state backend: its held locks and their removal.
type LockStore interface {
	// Locks returns every held lock, ordered by stack.
	Locks(ctx context.Context) ([]state.LockInfo, error)
	// Unlock releases the stack's lock if id holds it.
	Unlock(ctx context.Context, stack, id string) error
}

// HeldLock is a held lock with cdkx's verdict on it: Stale when a run would take it over on its own, and
// Why (e.g. "its process (pid 42) on this machine is gone"; "" when not stale).
type HeldLock struct {
	state.LockInfo
	Stale bool
	Why   string
}

// Locks returns the locks b holds, ordered by stack, each judged at now as a run on machine would judge it
// (engine.Stale; machine is engine.MachineID() of this process, "" when unknown).
func Locks(ctx context.Context, b LockStore, machine string, now time.Time) ([]HeldLock, error) {
	locks, err := b.Locks(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]HeldLock, 0, len(locks))
	for _, l := range locks {
		stale, why := engine.Stale(l, machine, now)
		out = append(out, HeldLock{LockInfo: l, Stale: stale, Why: why})
	}
	return out, nil
}

// Unlock removes every lock whose ID is ID, whoever holds it (cdkx unlock ID --force): only for a holder
// known to be gone, since two runs changing one stack at once can leave state and providers disagreeing.
type Unlock struct {
	Backend LockStore
	// ID is the lock ID to remove (state.LockInfo.ID).
	ID string
	// OnRemoved, when set, is told of each lock removed, as it is removed.
	OnRemoved func(state.LockInfo)
}

// Run removes the locks and returns them, in stack order. No lock with ID is an error that says how to list
// them; a failed removal ends the run (the locks removed before it stay removed).
func (u Unlock) Run(ctx context.Context) ([]state.LockInfo, error) {
	locks, err := u.Backend.Locks(ctx)
	if err != nil {
		return nil, err
	}
	var removed []state.LockInfo
	for _, l := range locks {
		if l.ID != u.ID {
			continue
		}
		if err := u.Backend.Unlock(ctx, l.Stack, l.ID); err != nil {
			return removed, err
		}
		removed = append(removed, l)
		if u.OnRemoved != nil {
			u.OnRemoved(l)
		}
	}
	if len(removed) == 0 {
		return nil, fmt.Errorf("no lock with ID %s; cdkx unlock lists the held locks", u.ID)
	}
	return removed, nil
}
