package service

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/pkg/stateapi"
)

// Lease renewal.
const (
	// Lease is the lifetime of the lease this client asks start for ("leaseSeconds", a cdkx extension of
	// StartUpdateRequest; a server that does not know it grants its own, 300 s by default). Short, so that
	// the stack of a client killed with -9 is free again about Lease after its last renewal: the next
	// create of an update on the stack takes over an expired lease. The client renews it once a third of
	// it has run out, leaving two thirds (about 13 s) for retries through a server or network outage.
	Lease = 20 * time.Second
	// minRenewEvery bounds how often a lease is renewed.
	minRenewEvery = 200 * time.Millisecond
	// renewRetry is the wait before retrying a renewal that failed for a transient reason.
	renewRetry = time.Second
)

// lease is an update this backend started: the stack's lock, held while the update runs.
type lease struct {
	info  state.LockInfo
	path  string // …/{kind}/{updateID}
	kind  string
	b     *Backend
	token string

	mu       sync.Mutex
	expires  time.Time
	duration time.Duration // what start granted; renewals ask for as much
	ver      int64         // the stack's version as of this lease's last commit
	seq      int64         // the last sequence number sent
	lost     error
	halt     chan struct{} // nil unless renewInBackground ran
	halted   chan struct{}
	stopOnce sync.Once
}

func (l *lease) auth() string { return "update-token " + l.token }

func (l *lease) version() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ver
}

func (l *lease) setVersion(v int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ver = v
}

func (l *lease) nextSequence() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	return l.seq
}

// err is the error that ended the lease, or nil while it holds.
func (l *lease) err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost
}

// lose records that the service refused the lease (403: expired; 409: the update is no longer running,
// e.g. cancelled; 401: its token is unknown) and returns the error to report, or nil for any other
// error.
func (l *lease) lose(err error) error {
	var ae *APIError
	if !errors.As(err, &ae) || (ae.Status != http.StatusForbidden && ae.Status != http.StatusConflict && ae.Status != http.StatusUnauthorized) {
		return nil
	}
	if ae.Status == http.StatusConflict && strings.Contains(ae.Message, "read the stack again") {
		return nil // a commit against a stale base version: the lease still holds
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost == nil {
		l.lost = fmt.Errorf("lost the lock of stack %s: the state service ended its update (%s): it was cancelled (cdkx cancel), or its lease expired and was collected; state is saved up to version %d; run the command again",
			l.info.Stack, ae.Message, l.ver)
	}
	return l.lost
}

// renewInBackground starts renewLoop; stop ends it.
func (l *lease) renewInBackground() {
	l.halt, l.halted = make(chan struct{}), make(chan struct{})
	go l.renewLoop()
}

// stop ends the background renewal, if any, and waits for it.
func (l *lease) stop() {
	if l.halt == nil {
		return
	}
	l.stopOnce.Do(func() {
		close(l.halt)
		<-l.halted
	})
}

// renewLoop renews the lease once a third of it has run out, until stop or until the service refuses it.
func (l *lease) renewLoop() {
	defer close(l.halted)
	for {
		l.mu.Lock()
		wait := time.Until(l.expires) - 2*l.duration/3
		l.mu.Unlock()
		wait = max(wait, minRenewEvery)
		select {
		case <-l.halt:
			return
		case <-time.After(wait):
		}
		if err := l.renew(context.Background(), time.Time{}); err != nil {
			if l.err() != nil {
				return
			}
			select {
			case <-l.halt:
				return
			case <-time.After(renewRetry):
			}
		}
	}
}

// renew extends the lease by its duration; heartbeat, when set, is reported as the holder's heartbeat.
func (l *lease) renew(ctx context.Context, heartbeat time.Time) error {
	l.mu.Lock()
	secs := max(int(l.duration/time.Second), 1)
	l.mu.Unlock()
	body := stateapi.RenewUpdateLeaseRequest{Duration: secs}
	if !heartbeat.IsZero() {
		body.HeartbeatAt = &heartbeat
	}
	var resp stateapi.RenewUpdateLeaseResponse
	sent := time.Now()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := l.b.send(ctx, "POST", l.path+"/renew_lease", l.auth(), body, &resp); err != nil {
		if lost := l.lose(err); lost != nil {
			return lost
		}
		return err
	}
	l.mu.Lock()
	l.expires = sent.Add(time.Until(time.Unix(resp.TokenExpiration, 0))) // on this machine's clock
	l.mu.Unlock()
	return nil
}

// updateKind is the service update kind of a cdkx lock operation.
func updateKind(operation string) string {
	switch operation {
	case "destroy":
		return "destroy"
	case "refresh":
		return "refresh"
	default:
		return "update"
	}
}

// begin creates and starts an update for info (the stack created first if needed) and returns its
// lease, not yet renewed; a *state.LockedError when another update is active.
func (b *Backend) begin(ctx context.Context, info state.LockInfo) (*lease, error) {
	if err := b.ensureStack(ctx, info.Stack); err != nil {
		return nil, err
	}
	kind := updateKind(info.Operation)
	var created stateapi.UpdateProgramResponse
	create := stateapi.UpdateProgramRequest{Name: b.project, Runtime: "cdkx",
		Metadata: stateapi.UpdateMetadata{Message: "cdkx " + info.Operation, Environment: map[string]string{}}, CdkxLock: &info}
	var err error
	for attempt := 0; ; attempt++ {
		err = b.call(ctx, "POST", b.stackPath(info.Stack)+"/"+kind, create, &created)
		if !isStatus(err, http.StatusConflict) {
			break
		}
		holders, herr := b.holders(ctx, info.Stack)
		if herr != nil {
			return nil, fmt.Errorf("stack %s is locked; and reading its holder failed: %w", info.Stack, herr)
		}
		switch {
		case len(holders) == 0 && attempt < 3:
			continue // the holder finished between the two requests: create again
		case len(holders) == 0:
		case holders[0].info.ID == info.ID && holders[0].status == "not started":
			// Our own create, whose answer was lost: start it.
			created.UpdateID, kind, err = holders[0].updateID, holders[0].kind, nil
		default:
			return nil, &state.LockedError{Holder: holders[0].info}
		}
		break
	}
	if err != nil {
		return nil, fmt.Errorf("lock stack %s: %w", info.Stack, err)
	}
	path := b.stackPath(info.Stack) + "/" + kind + "/" + url.PathEscape(created.UpdateID)
	var started stateapi.StartUpdateResponse
	sent := time.Now()
	// No tags: the stack keeps those set with `pulumi stack tag set`.
	start := stateapi.StartUpdateRequest{LeaseSeconds: int(Lease / time.Second)}
	if err := b.call(ctx, "POST", path, start, &started); err != nil {
		// Never leave a created update behind: it would hold the stack for an hour.
		_ = b.call(context.WithoutCancel(ctx), "POST", path+"/cancel", nil, nil)
		return nil, fmt.Errorf("lock stack %s: start the update: %w", info.Stack, err)
	}
	exp := time.Unix(started.TokenExpiration, 0)
	l := &lease{info: info, path: path, kind: kind, b: b, token: started.Token, ver: started.Version,
		expires: sent.Add(time.Until(exp)), duration: max(time.Until(exp), time.Second)}
	return l, nil
}

// Lock takes the stack's lock for info: an update of the service, started, whose lease this backend
// renews in the background until Unlock. Locking again with the ID that holds it is a no-op. A
// *state.LockedError names another holder.
func (b *Backend) Lock(ctx context.Context, info state.LockInfo) error {
	b.mu.Lock()
	held := b.leases[info.Stack]
	b.mu.Unlock()
	if held != nil && held.info.ID == info.ID && held.err() == nil {
		return nil
	}
	l, err := b.begin(ctx, info)
	if err != nil {
		return err
	}
	l.renewInBackground()
	b.mu.Lock()
	old := b.leases[info.Stack]
	b.leases[info.Stack] = l
	delete(b.failed, info.Stack)
	b.mu.Unlock()
	if old != nil {
		old.stop()
	}
	return nil
}

// Unlock releases the stack's lock if id holds it: this backend's own update is completed (failed when
// its deployment failed), another holder's is cancelled (API token), which makes that holder's next call
// fail with a lost lock. Unlocking its own update that the service ended first (cancelled with `cdkx
// cancel`, or its lease expired and was collected) returns the lost-lock error: the run that held it must
// not report success.
func (b *Backend) Unlock(ctx context.Context, stack, id string) error {
	b.mu.Lock()
	l := b.leases[stack]
	if l != nil && l.info.ID == id {
		delete(b.leases, stack)
	} else {
		l = nil
	}
	failed := b.failed[stack]
	b.mu.Unlock()
	if l != nil {
		l.stop()
		if lost := l.err(); lost != nil {
			return lost // the service ended the update before this run did: the run does not end well
		}
		status := "succeeded"
		if failed {
			status = "failed"
		}
		err := b.send(ctx, "POST", l.path+"/complete", l.auth(), stateapi.CompleteUpdateRequest{Status: status}, nil)
		if lost := l.lose(err); lost != nil {
			return lost
		}
		if err != nil {
			return fmt.Errorf("unlock stack %s: complete the update: %w", stack, err)
		}
		return nil
	}
	holders, err := b.holders(ctx, stack)
	if err != nil {
		return fmt.Errorf("unlock stack %s: %w", stack, err)
	}
	for _, h := range holders {
		if h.info.ID != id {
			continue
		}
		err := b.call(ctx, "POST", b.stackPath(stack)+"/"+h.kind+"/"+url.PathEscape(h.updateID)+"/cancel", nil, nil)
		if err != nil && !isStatus(err, http.StatusConflict) {
			return fmt.Errorf("unlock stack %s: cancel update %s: %w", stack, h.updateID, err)
		}
	}
	return nil
}

// Heartbeat renews the lease of the holder id and reports its heartbeat time; the error of a lost lease,
// or a *state.LockedError when another holds the stack.
func (b *Backend) Heartbeat(ctx context.Context, stack, id string, at time.Time) error {
	b.mu.Lock()
	l := b.leases[stack]
	b.mu.Unlock()
	if l != nil && l.info.ID == id {
		if err := l.err(); err != nil {
			return err
		}
		return l.renew(ctx, at)
	}
	holders, err := b.holders(ctx, stack)
	if err != nil {
		return fmt.Errorf("heartbeat of stack %s: %w", stack, err)
	}
	if len(holders) > 0 {
		return &state.LockedError{Holder: holders[0].info}
	}
	return fmt.Errorf("heartbeat of stack %s: lock %s is not held", stack, id)
}

// holder is an active update of the service, as the lock listing gives it.
type holder struct {
	info     state.LockInfo
	updateID string
	kind     string
	status   string
}

// holders returns the active updates of stack ("" for every stack), ordered by stack.
func (b *Backend) holders(ctx context.Context, stack string) ([]holder, error) {
	q := url.Values{}
	if stack != "" {
		q.Set("stack", stack)
	}
	var resp stateapi.LocksResponse
	if err := b.call(ctx, "GET", b.cdkxPath()+"/locks?"+q.Encode(), nil, &resp); err != nil {
		return nil, fmt.Errorf("read lock holders: %w", err)
	}
	var out []holder
	for _, a := range resp.Locks {
		info, err := a.Holder() // an update the Pulumi CLI created stands for the lock itself
		if err != nil {
			return nil, fmt.Errorf("read %w", err)
		}
		out = append(out, holder{info: info, updateID: a.UpdateID, kind: a.Kind, status: a.Status})
	}
	return out, nil
}

// Locks returns every held lock of the project, ordered by stack.
func (b *Backend) Locks(ctx context.Context) ([]state.LockInfo, error) {
	hs, err := b.holders(ctx, "")
	if err != nil {
		return nil, err
	}
	out := make([]state.LockInfo, len(hs))
	for i, h := range hs {
		out[i] = h.info
	}
	return out, nil
}

// Abilities declares the service's locks leases that it expires by itself (a holder that stops renewing
// loses its lock when the lease runs out; clients never take one over) and Unlock with another holder's ID
// a cancel of that holder's update.
func (b *Backend) Abilities() state.Abilities {
	return state.Abilities{LeasedLocks: true, CancelOthers: true}
}
