package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// A step is one change to (or read of) one object. It knows its pending operation, its provider call and
// the state change it makes; it never calls a provider or writes state itself. The executor alone runs
// steps, so the sequence "take the slot → make the pending record durable → call the provider → record
// the result" exists once.
type step interface {
	// subject names what the step works on and which provider it calls.
	subject() subject
	// begin returns the record to make durable before the call (with its Pending operation set) and the
	// *_IN_PROGRESS event. A nil record means the call changes nothing at the provider (a read): nothing is
	// written before it. cur is the resource's current record (nil when there is none).
	begin(cur *state.Resource, now time.Time) (*state.Resource, Event)
	// call makes the provider call. ctx is not cancelled by an interrupt: a call that started finishes.
	call(ctx context.Context, p Provider) error
	// succeeded returns the state change after a successful call.
	succeeded(cur *state.Resource) stepOutcome
	// failed returns the state change after a failed call (err is the provider's error).
	failed(cur *state.Resource, err error) stepOutcome
}

// subject is what a step works on. Only the step constructors (newCreateStep and the others in steps.go)
// make one, through newSubject.
type subject struct {
	stack, logicalID, typ string
	// provider is the provider called (for an object left by a replacement, the old object's provider).
	provider string
	turn
	// invalid is the first invariant of its step that the constructor found broken, or nil. The executor
	// records it as the step's failure without calling the provider.
	invalid error
}

// turn is how a step waits for its turn to call its provider.
type turn struct {
	// serial are the keys (resource.SerialKey, resolved) whose changes must run one at a time.
	serial []string
	// rank orders steps waiting for a concurrency slot: higher first (planner.Step.Rank).
	rank int
}

// newSubject returns the subject of a step of kind (for errors, e.g. "create") on logicalID in stack: an
// object of typ at provider. It checks that none of them is empty and that each of checks holds (a
// message of the invariant broken, or ""); the first broken one becomes subject.invalid.
func newSubject(kind, stack, logicalID, typ, provider string, t turn, checks ...string) subject {
	sub := subject{stack: stack, logicalID: logicalID, typ: typ, provider: provider, turn: t}
	switch {
	case stack == "" || logicalID == "":
		sub.invalid = fmt.Errorf("engine: %s step without a stack or logical ID (%q/%q)", kind, stack, logicalID)
	case typ == "" || provider == "":
		sub.invalid = fmt.Errorf("engine: %s step of %s/%s without a type or provider (%q, %q)", kind, stack, logicalID, typ, provider)
	}
	for _, c := range checks {
		if sub.invalid == nil && c != "" {
			sub.invalid = fmt.Errorf("engine: %s step of %s/%s: %s", kind, stack, logicalID, c)
		}
	}
	return sub
}

// unless returns "" when ok holds and why when it does not: an invariant for newSubject.
func unless(ok bool, why string) string {
	if ok {
		return ""
	}
	return why
}

// stepOutcome is the state change a step makes once its call has answered.
type stepOutcome struct {
	// next is the resource's record from now on; nil with drop false keeps the record as it is.
	next *state.Resource
	// drop removes the resource's record.
	drop bool
	// event is the durable event of the change; its Stack, LogicalID and Type default to the subject's.
	event Event
	// count is the status the run's counts add one to ("": none).
	count Status
}

// Boundary is a point in a step's execution where a process can die; tests crash a run there (see
// Options.AtBoundary) to show that recovery leaves no orphaned object.
type Boundary int

// The boundaries of a step.
const (
	// BoundaryPending: the pending record is durable and the provider has not been called.
	BoundaryPending Boundary = iota + 1
	// BoundaryCalled: the provider has answered and its result is not recorded yet.
	BoundaryCalled
)

// errNotStarted is returned by executor.run for a step it did not start because the run was interrupted
// (before or while it waited for a concurrency slot). The walker counts it as not started.
var errNotStarted = errors.New("not started: the run was interrupted")

// executor runs steps. It alone takes concurrency slots (global, per provider, per serial key), writes
// pending records, calls providers and records results. Its fields are set by newExecutor and read-only
// after, except those guarded by mu and the atomics.
type executor struct {
	reg     *Registry
	ledger  *ledger
	tally   *tally
	now     func() time.Time
	callCtx context.Context // provider calls: an interrupt does not cancel them
	at      func(Boundary, string, string)
	global  *slots
	limits  map[string]*slots // per provider (absent: only the global limit)
	local   map[string]bool   // providers whose objects exist only in state (ProviderInfo.StateOnly)
	// inFlight counts provider calls in flight (Options.InFlight when set).
	inFlight *atomic.Int64
	assets   AssetResolver // Options.Assets

	mu     sync.Mutex
	serial map[string]chan struct{} // serial key → its one slot; guarded by mu
	down   map[string]downMark      // providers found unreachable, until a time; guarded by mu
}

func newExecutor(ctx context.Context, opts Options, l *ledger, t *tally) *executor {
	x := &executor{reg: opts.Providers, ledger: l, tally: t, now: opts.Now, callCtx: context.WithoutCancel(ctx),
		at: opts.AtBoundary, global: newSlots(opts.Concurrency), limits: map[string]*slots{},
		inFlight: opts.InFlight, assets: opts.Assets, serial: map[string]chan struct{}{}, down: map[string]downMark{}, local: map[string]bool{}}
	if x.inFlight == nil {
		x.inFlight = new(atomic.Int64)
	}
	for _, name := range opts.Providers.Names() {
		n := opts.ProviderConcurrency[name]
		info, _ := opts.Providers.Info(name)
		x.local[name] = info.StateOnly
		if n <= 0 {
			n = info.DefaultConcurrency
		}
		if n > 0 && n < opts.Concurrency {
			x.limits[name] = newSlots(n)
		}
	}
	return x
}

// run executes one step: it waits for the step's serial keys, its provider's slot and a global slot (in
// that order, so that a queue never holds slots that others could use), then makes the pending record
// durable, calls the provider and records the outcome. An interrupt (ctx cancelled) before the slots are
// held returns errNotStarted: no new step starts after Ctrl-C, not even one already waiting for a slot.
// It returns nil on success, the provider's error after recording the failure, or a *StateError when
// state could not be written (then the provider was not called, or its result could not be recorded).
func (x *executor) run(ctx context.Context, s step) error {
	sub := s.subject()
	if err := x.ledger.failed(); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return errNotStarted
	}
	if sub.invalid != nil {
		return x.settle(sub, s, sub.invalid) // a step that breaks its invariants calls nothing
	}
	prov, err := x.reg.Provider(sub.provider)
	if err == nil {
		err = x.providerDown(sub.provider)
	}
	if err != nil {
		return x.settle(sub, s, err) // nothing was called, so nothing is pending
	}
	prov = withAssets(prov, x.assets) // the one place asset paths become this machine's
	if x.local[sub.provider] {
		// Objects that exist only in state: the call changes nothing outside, so it needs neither a slot
		// nor a pending record; its outcome is the first record of the change.
		return x.settle(sub, s, s.call(x.callCtx, prov))
	}
	release, ok := x.acquire(ctx, sub)
	if !ok {
		return errNotStarted
	}
	defer release()
	if ctx.Err() != nil { // the slot came as the step's context ended
		return errNotStarted
	}
	if err := x.providerDown(sub.provider); err != nil {
		return x.settle(sub, s, err) // marked down while this step waited for its slot
	}
	if pending, e := s.begin(x.ledger.current(sub.stack, sub.logicalID), x.now().UTC()); pending != nil {
		if err := x.ledger.put(sub.stack, pending, x.stamp(sub, e)); err != nil {
			return err
		}
	}
	x.boundary(BoundaryPending, sub)
	x.inFlight.Add(1)
	// The call is not cancelled by an interrupt, but it is told of it: an adapter may end a call that
	// makes no more progress (resource.WithInterrupt).
	err = s.call(resource.WithInterrupt(x.callCtx, ctx.Done()), prov)
	x.inFlight.Add(-1)
	x.noteResult(sub.provider, err)
	x.boundary(BoundaryCalled, sub)
	return x.settle(sub, s, err)
}

// settle records a step's outcome: a success is queued and not waited for (the step's dependents may start
// at once: each waits for its own pending record, which the commit pipeline makes durable only after this one); a
// failure is a Failure of the run, recorded before run returns.
func (x *executor) settle(sub subject, s step, callErr error) error {
	cur := x.ledger.current(sub.stack, sub.logicalID)
	if callErr == nil {
		o := s.succeeded(cur)
		x.tally.done(o.count)
		x.ledger.applyAsync(sub.stack, sub.logicalID, o.next, o.drop, x.stamp(sub, o.event))
		return nil
	}
	o := s.failed(cur, callErr)
	e := x.stamp(sub, o.event)
	if !errors.Is(callErr, resource.ErrInterrupted) {
		// A call ended by the run's interrupt is recorded as it ended, but the run is interrupted, not
		// failed: no rollback, and the next deploy settles or repeats the step.
		x.tally.fail(Failure{Stack: sub.stack, LogicalID: sub.logicalID, Type: e.Type, Status: e.Status, Err: callErr})
	}
	if err := x.ledger.apply(sub.stack, sub.logicalID, o.next, o.drop, e); err != nil {
		return err
	}
	return callErr
}

func (x *executor) stamp(sub subject, e Event) Event {
	if e.Stack == "" {
		e.Stack = sub.stack
	}
	if e.LogicalID == "" {
		e.LogicalID = sub.logicalID
	}
	if e.Type == "" {
		e.Type = sub.typ
	}
	return e
}

func (x *executor) boundary(b Boundary, sub subject) {
	if x.at != nil {
		x.at(b, sub.stack, sub.logicalID)
	}
}

// acquire takes the step's serial keys (sorted, so two steps never wait for each other in a circle), its
// provider's slot and a global slot — the slots by the step's rank — and returns their release. ok is
// false, with nothing held, when ctx is cancelled first.
func (x *executor) acquire(ctx context.Context, sub subject) (release func(), ok bool) {
	var held []chan struct{}
	var took []*slots
	release = func() {
		for i := len(took) - 1; i >= 0; i-- {
			took[i].release()
		}
		for i := len(held) - 1; i >= 0; i-- {
			<-held[i]
		}
	}
	take := func(c chan struct{}) bool {
		select {
		case c <- struct{}{}:
			held = append(held, c)
			return true
		case <-ctx.Done():
			return false
		}
	}
	keys := slices.Clone(sub.serial)
	slices.Sort(keys)
	for _, k := range slices.Compact(keys) {
		if !take(x.serialSlot(k)) {
			release()
			return nil, false
		}
	}
	// A step that holds serial keys goes before every step that holds none: the changes queued behind
	// it on those keys cannot start until it is done (priority inheritance, so that a chain such as a
	// load balancer's targets is never parked behind independent work).
	rank := sub.rank
	if len(keys) > 0 {
		rank += serialBoost
	}
	for _, s := range []*slots{x.limits[sub.provider], x.global} {
		if s == nil {
			continue
		}
		if !s.acquire(ctx, rank) {
			release()
			return nil, false
		}
		took = append(took, s)
	}
	if ctx.Err() != nil {
		release()
		return nil, false
	}
	return release, true
}

// serialBoost raises the slot rank of a step that holds serial keys above any plan rank.
const serialBoost = 1 << 30

func (x *executor) serialSlot(key string) chan struct{} {
	x.mu.Lock()
	defer x.mu.Unlock()
	c, ok := x.serial[key]
	if !ok {
		c = make(chan struct{}, 1)
		x.serial[key] = c
	}
	return c
}

// serialKeys resolves a schema's SerialKeys for one change: each key is "provider/group=value", the value
// taken from the change's inputs (a string as it is, any other value as its canonical JSON, so that "5"
// and 5 give the same key), or the object's physical ID for a key without a property. A key whose value
// is missing is left out.
func serialKeys(provider string, s resource.Schema, inputs resource.Properties, physicalID string) []string {
	var out []string
	for _, k := range s.Serialize {
		v := physicalID
		if k.Property != "" {
			v = ""
			switch p := inputs[k.Property].(type) {
			case nil:
			case string: // an ID written as a string ("5") names the same object as the number 5
				v = p
			default:
				v = string(resource.Canonical(p))
			}
		}
		if v != "" {
			out = append(out, provider+"/"+k.Group+"="+v)
		}
	}
	return out
}

// DownFor is how long a provider that gave no response to any attempt of a call (resource.ErrUnreachable)
// is treated as down: the calls of that window fail at once, naming the first failure, instead of each
// spending its own retries on a server that is not there. The next call after it tries again.
const DownFor = 30 * time.Second

// ProviderDownError fails a call that was not made because its provider was unreachable moments before.
type ProviderDownError struct {
	Provider string
	Cause    error
}

// Error names the provider and the failure that marked it down.
func (e *ProviderDownError) Error() string {
	return fmt.Sprintf("not attempted: provider %s is unreachable (%v)", e.Provider, e.Cause)
}

// Unwrap returns the failure that marked the provider down.
func (e *ProviderDownError) Unwrap() error { return e.Cause }

type downMark struct {
	until time.Time
	cause error
}

// providerDown returns a *ProviderDownError while provider is marked down, else nil.
func (x *executor) providerDown(provider string) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if d, ok := x.down[provider]; ok && x.now().Before(d.until) {
		return &ProviderDownError{Provider: provider, Cause: d.cause}
	}
	return nil
}

// noteResult marks provider down when err says it was unreachable.
func (x *executor) noteResult(provider string, err error) {
	var pd *ProviderDownError
	if err == nil || !errors.Is(err, resource.ErrUnreachable) || errors.As(err, &pd) {
		return
	}
	x.mu.Lock()
	x.down[provider] = downMark{until: x.now().Add(DownFor), cause: err}
	x.mu.Unlock()
}
