package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

// LockPollInterval is how often LockStacks retries a held lock while it waits.
const LockPollInterval = 200 * time.Millisecond

// HeartbeatInterval is how often a held lock's heartbeat is refreshed.
const HeartbeatInterval = 10 * time.Second

// LockStacks takes the lock of each stack for info (stacks in sorted order, so that two runs never wait
// for each other in a circle). A held lock is retried every LockPollInterval until timeout has passed;
// timeout 0 fails at once. The error is then the last *state.LockedError, naming the holder. onWait, when
// not nil, is called once per stack that has to be waited for, with its holder. While held,
// each lock's heartbeat is refreshed every HeartbeatInterval. release unlocks them all and stops the
// heartbeat; it is safe to call once.
func LockStacks(ctx context.Context, b state.Backend, stacks []string, info state.LockInfo, timeout time.Duration,
	onWait func(holder state.LockInfo)) (func(), error) {
	sorted := append([]string(nil), stacks...)
	sort.Strings(sorted)
	deadline := time.Now().Add(timeout)
	var held []string
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
			if !errors.As(err, &le) || time.Now().Add(LockPollInterval).After(deadline) {
				unlock()
				if le != nil {
					return nil, err
				}
				return nil, fmt.Errorf("lock stack %s: %w", s, err)
			}
			if !waited && onWait != nil {
				onWait(le.Holder)
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
