package operation

import (
	"context"
	"errors"
	"fmt"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

// ErrNoService is returned by Cancel on a backend whose locks are not leases of a state service (SQLite,
// PostgreSQL): nothing there can stop the holder.
var ErrNoService = errors.New("cdkx cancel needs a state service (--state https://…); with local state, stop the running cdkx (Ctrl-C), or remove a dead holder's lock with cdkx unlock ID --force")

// Cancel ends the active update of a stack on the state service (cdkx cancel STACK): the stack's lock is
// removed at once, and the run that held it stops at its next step with "lost the lock of stack STACK".
type Cancel struct {
	Backend CancelStore
	Stack   string
}

// CancelStore is what Cancel needs of a backend: its locks and the abilities it declares.
type CancelStore interface {
	LockStore
	Abilities() state.Abilities
}

// Run removes the stack's lock and returns its holder. Errors: ErrNoService on local state, one that says
// the stack has no running update when it is not locked, or the backend's.
func (c Cancel) Run(ctx context.Context) (state.LockInfo, error) {
	if !c.Backend.Abilities().CancelOthers {
		return state.LockInfo{}, ErrNoService
	}
	locks, err := c.Backend.Locks(ctx)
	if err != nil {
		return state.LockInfo{}, err
	}
	for _, l := range locks {
		if l.Stack != c.Stack {
			continue
		}
		if err := c.Backend.Unlock(ctx, l.Stack, l.ID); err != nil {
			return state.LockInfo{}, err
		}
		return l, nil
	}
	return state.LockInfo{}, fmt.Errorf("stack %s has no running update to cancel", c.Stack)
}
