package operation

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// ClaimPollInterval is how often a waiting deployment asks for its turn.
const ClaimPollInterval = 250 * time.Millisecond

// QueueTimeoutError is returned when deployments were still queued behind others after the lock timeout:
// the first of them that was not at the head, where it stood and what was ahead (exit code 3).
type QueueTimeoutError struct {
	Queued  *state.QueuedError
	Timeout time.Duration
	// Abandoned is set when the waiting deployments were recorded ABORTED (they were this run's own, created
	// PENDING); approved ones stay APPROVED for an agent or a later run.
	Abandoned bool
}

// Error says where the deployment stood and what to do.
func (e *QueueTimeoutError) Error() string {
	what := "it stays APPROVED; run it later with cdkx deployments run " + e.Queued.ID + " or an agent"
	if e.Abandoned {
		what = "it was recorded ABORTED; run cdkx deploy again, or pass --lock-timeout 10m to wait longer"
	}
	return fmt.Sprintf("still queued after %s: %v; %s", e.Timeout, e.Queued, what)
}

// AbortedError is returned when a deployment was aborted (cdkx deployments abort) while this process
// waited for it or ran it (exit code 130). Nothing is rolled back.
type AbortedError struct {
	ID, By string
}

// Error names the deployment and who aborted it.
func (e *AbortedError) Error() string {
	return fmt.Sprintf("deployment %s was aborted by %s: the steps in flight were recorded as they ended; nothing was rolled back", e.ID, e.who())
}

// sibling is the error recorded on the other deployments of a run that an abort of e.ID ended before
// they ran.
func (e *AbortedError) sibling() string {
	return fmt.Sprintf("not run: deployment %s, of the same run, was aborted by %s", e.ID, e.who())
}

// who is By, or "someone" when the record does not say.
func (e *AbortedError) who() string {
	if e.By == "" {
		return "someone"
	}
	return e.By
}

// session is this process attached to stored deployments: heartbeats every state.HeartbeatEvery while
// it waits for their turn and while it runs them, and sees when someone aborts one of them (it then
// prints "Deployment ID aborted by WHO" through Env.Notice, once). An abort ends only the deployment it
// names when the run can stop one stack alone (perStack: a deploy, whose steps of each stack run under
// stackContext, engine.Options.StackContext): its stack starts no new step, the stacks that wait for it never start, the others run on. Otherwise —
// while waiting for the queue, before the engine, in a destroy, refresh or import, or once every
// deployment of the session is aborted — ctx is cancelled (cause *AbortedError), which stops the whole
// run as Ctrl-C does.
type session struct {
	env    Env
	ds     []*state.Deployment
	ctx    context.Context
	cancel context.CancelCauseFunc
	stop   chan struct{}
	done   chan struct{}

	mu       sync.Mutex
	snapshot map[string]state.Deployment // the records as the last heartbeat returned them
	// abortedBy holds the abort of each deployment someone aborted, by ID.
	abortedBy map[string]*AbortedError
	// stacks holds the context of each deployment's steps, by stack (stackContext): cancelled, cause its
	// *AbortedError, when that deployment is aborted.
	stacks map[string]stackCtx
	// perStack is set while the engine runs and can stop one stack alone (setPerStack).
	perStack bool
}

// stackCtx is the context of one stack's steps and its cancel.
type stackCtx struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// attach starts heartbeating ds (stored, PENDING or APPROVED, or RUNNING when claimed by the caller).
func (e Env) attach(ctx context.Context, ds []*state.Deployment) *session {
	sctx, cancel := context.WithCancelCause(ctx)
	s := &session{env: e, ds: ds, ctx: sctx, cancel: cancel, stop: make(chan struct{}), done: make(chan struct{}),
		snapshot: map[string]state.Deployment{}, abortedBy: map[string]*AbortedError{}, stacks: map[string]stackCtx{}}
	for _, d := range ds {
		c, cancel := context.WithCancelCause(sctx)
		s.stacks[d.Stack] = stackCtx{c, cancel}
	}
	s.beat()
	go func() {
		defer close(s.done)
		t := time.NewTicker(state.HeartbeatEvery)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				s.beat()
			}
		}
	}()
	return s
}

func (s *session) ids() []string {
	ids := make([]string, len(s.ds))
	for i, d := range s.ds {
		ids[i] = d.ID
	}
	return ids
}

// beat renews the heartbeats and notes the deployments someone aborted (see session).
func (s *session) beat() {
	got, err := s.env.Backend.HeartbeatDeployments(context.WithoutCancel(s.ctx), s.ids(), s.env.now().UTC())
	if err != nil {
		return // the next beat tries again; a backend that stays away fails the run's own writes
	}
	var news []*AbortedError
	s.mu.Lock()
	for _, d := range got {
		s.snapshot[d.ID] = d
		if s.abortedBy[d.ID] == nil && (d.Status == state.StatusAborted || d.Status == state.StatusRunning && d.AbortedBy != "") {
			ae := &AbortedError{ID: d.ID, By: d.AbortedBy}
			s.abortedBy[d.ID] = ae
			if sc, ok := s.stacks[d.Stack]; ok {
				sc.cancel(ae)
			}
			news = append(news, ae)
		}
	}
	s.cancelIfAborted()
	s.mu.Unlock()
	for _, ae := range news {
		s.env.notice("Deployment %s aborted by %s", ae.ID, ae.who())
	}
}

// cancelIfAborted cancels the session's context (cause: the first abort) when an abort cannot be left to
// the engine: the engine is not running the session per stack, or every deployment is aborted. The
// caller holds mu.
func (s *session) cancelIfAborted() {
	var first *AbortedError
	for _, d := range s.ds {
		if ae := s.abortedBy[d.ID]; ae != nil && first == nil {
			first = ae
		}
	}
	if first != nil && (!s.perStack || len(s.abortedBy) == len(s.ds)) {
		s.cancel(first)
	}
}

// setPerStack says whether the engine now runs the session's deployments stack by stack (an abort of one
// then stops only its stack): set while engine.Deploy runs.
func (s *session) setPerStack(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.perStack = on
	s.cancelIfAborted()
}

// stackContext returns the context of the steps of stack (engine.Options.StackContext): cancelled with
// the *AbortedError of its deployment, or with the session's.
func (s *session) stackContext(stack string) context.Context {
	if sc, ok := s.stacks[stack]; ok {
		return sc.ctx
	}
	return s.ctx
}

// aborted returns the abort that cancelled the session or, when none did, the first abort of one of its
// deployments (in the session's order); nil when none was aborted.
func (s *session) aborted() *AbortedError {
	var ae *AbortedError
	if errors.As(context.Cause(s.ctx), &ae) {
		return ae
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.ds {
		if ae := s.abortedBy[d.ID]; ae != nil {
			return ae
		}
	}
	return nil
}

// cancelled reports whether the session's context was cancelled by an abort (the whole run stopped).
func (s *session) cancelled() bool {
	var ae *AbortedError
	return errors.As(context.Cause(s.ctx), &ae)
}

// enter attaches to ds (stored, PENDING or APPROVED) and waits for their turn (claim; own says whether
// they are this run's own, recorded ABORTED when the wait ends without a claim). On success the caller
// runs the session (run) and detaches it.
func (e Env) enter(ctx context.Context, ds []*state.Deployment, notify func(*state.QueuedError), own bool) (*session, error) {
	s := e.attach(ctx, ds)
	if err := s.claim(notify, own); err != nil {
		s.detach()
		return nil, err
	}
	return s, nil
}

// run runs f, the claimed work, with the session's context (cancelled by an abort request) and records how
// each deployment ended. A run that an abort request interrupted (or stopped before the engine) returns
// the *AbortedError.
func (s *session) run(f func(ctx context.Context) (*engine.Result, error)) (*engine.Result, error) {
	res, err := f(s.ctx)
	var outcome map[string]*state.Deployment
	if res != nil {
		outcome = res.Deployments
	}
	if ae := s.aborted(); ae != nil && err == nil && (res == nil || res.Interrupted) {
		err = ae
	}
	if ferr := s.finish(outcome, err); ferr != nil && err == nil {
		err = ferr
	}
	return res, err
}

// detach stops the heartbeats.
func (s *session) detach() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
		<-s.done
	}
	s.cancel(nil)
}

// claim waits until every deployment of the session is at the head of its stack's queue and makes them
// RUNNING (all at once), asking every ClaimPollInterval, up to the lock policy's timeout. notify, when set,
// is told where the first waiting deployment stands each time that changes. abandon says whether the
// deployments are this run's own PENDING ones, recorded ABORTED when the wait ends without a claim.
func (s *session) claim(notify func(*state.QueuedError), abandon bool) error {
	deadline := s.env.now().Add(s.env.Lock.Timeout)
	last := -1
	for {
		err := s.env.Backend.ClaimDeployments(s.ctx, s.ids(), s.env.runner(), s.env.now().UTC())
		if err == nil {
			now := s.env.now().UTC()
			for _, d := range s.ds {
				d.Status, d.StartedAt = state.StatusRunning, now
			}
			return nil
		}
		var qe *state.QueuedError
		if !errors.As(err, &qe) {
			if ae := s.aborted(); ae != nil {
				s.abandon(abandon, ae.sibling())
				return ae
			}
			s.abandon(abandon, "not run: "+err.Error())
			return err
		}
		if s.env.abortDeadRunner(s.ctx, qe.Ahead) {
			continue
		}
		if qe.Position != last && notify != nil {
			notify(qe)
		}
		last = qe.Position
		if !s.env.now().Add(ClaimPollInterval).Before(deadline) {
			s.abandon(abandon, fmt.Sprintf("gave up waiting for its turn after %s (position %d in the queue of stack %s)", s.env.Lock.Timeout, qe.Position, qe.Stack))
			return &QueueTimeoutError{Queued: qe, Timeout: s.env.Lock.Timeout, Abandoned: abandon}
		}
		select {
		case <-s.ctx.Done():
			if ae := s.aborted(); ae != nil {
				s.abandon(abandon, ae.sibling())
				return ae
			}
			s.abandon(abandon, "not run: interrupted while waiting for its turn")
			return s.ctx.Err()
		case <-time.After(ClaimPollInterval):
		}
	}
}

// abandon records the session's PENDING deployments ABORTED with why, when they are its own.
func (s *session) abandon(own bool, why string) {
	if !own {
		return
	}
	for _, d := range s.ds {
		_, _ = s.env.Backend.UpdateDeployment(context.WithoutCancel(s.ctx), d.ID, state.Transition{
			From: []state.DeploymentStatus{state.StatusPending}, To: state.StatusAborted, By: s.env.CreatedBy,
			Error: why, At: s.env.now().UTC()})
	}
}

// finish records the outcome of each RUNNING deployment of the session: outcome gives it for those the
// engine ran; the others (the run stopped before the engine: a plan error, a stale proposal) end FAILED
// with runErr, or ABORTED when they or the session were aborted or interrupted.
func (s *session) finish(outcome map[string]*state.Deployment, runErr error) error {
	now := s.env.now().UTC()
	var first error
	for _, d := range s.ds {
		status, version, msg := state.StatusFailed, d.StateVersion, ""
		if runErr != nil {
			msg = runErr.Error()
		}
		s.mu.Lock()
		own := s.abortedBy[d.ID]
		s.mu.Unlock()
		if o := outcome[d.Stack]; o != nil && o.Status.Terminal() {
			status, version, msg = o.Status, o.Version, o.Error
		} else if own != nil {
			status, msg = state.StatusAborted, own.Error()
		} else if ae := s.aborted(); ae != nil && s.cancelled() {
			status, msg = state.StatusAborted, ae.sibling()
		} else if s.ctx.Err() != nil || errors.Is(runErr, context.Canceled) {
			status, msg = state.StatusAborted, "interrupted before any provider call"
		} else if runErr == nil {
			status = state.StatusCompleted
		}
		if own != nil && status == state.StatusAborted {
			msg = own.Error()
		}
		d.Status, d.FinishedAt, d.Version, d.Error = status, now, version, msg
		if err := s.env.Backend.FinishDeployment(context.WithoutCancel(s.ctx), d.ID, s.env.runner(), status, now, version, msg); err != nil && first == nil {
			first = fmt.Errorf("record the end of deployment %s: %w", d.ID, err)
		}
	}
	return first
}

// runner names this process in the deployments it claims: "user@host pid N on MACHINE" (engine.MachineID),
// so that a later run on the same machine can tell that it died (abortDeadRunner).
func (e Env) runner() string {
	h := e.Lock.Holder
	machine := h.Machine
	if machine == "" {
		machine = engine.MachineID()
	}
	return fmt.Sprintf("%s@%s pid %d on %s", h.User, h.Host, h.PID, machine)
}

var runnerPattern = regexp.MustCompile(` pid (\d+) on (\S+)$`)

// abortDeadRunners applies abortDeadRunner to the RUNNING deployments of stacks (of every stack when
// empty).
func (e Env) abortDeadRunners(ctx context.Context, stacks []string) error {
	running, err := e.Backend.ListDeployments(ctx, state.DeploymentFilter{Statuses: []state.DeploymentStatus{state.StatusRunning}})
	if err != nil {
		return err
	}
	for _, d := range running {
		if len(stacks) == 0 || slices.Contains(stacks, d.Stack) {
			e.abortDeadRunner(ctx, d)
		}
	}
	return nil
}

// abortDeadRunner records d ABORTED when it is RUNNING for a process of this machine that no longer
// exists (killed: it will never heartbeat again), instead of waiting state.DeadAfter for the queue to see
// it; it reports whether it did.
func (e Env) abortDeadRunner(ctx context.Context, d state.Deployment) bool {
	m := runnerPattern.FindStringSubmatch(d.Runner)
	if d.Status != state.StatusRunning || m == nil {
		return false
	}
	pid, err := strconv.Atoi(m[1])
	if err != nil {
		return false
	}
	holder := state.LockInfo{PID: pid, Machine: m[2], HeartbeatAt: d.HeartbeatAt}
	if dead, why := engine.Stale(holder, engine.MachineID(), e.now()); dead && strings.Contains(why, "process") {
		_, err := e.Backend.UpdateDeployment(context.WithoutCancel(ctx), d.ID, state.Transition{
			From: []state.DeploymentStatus{state.StatusRunning}, To: state.StatusAborted, By: e.CreatedBy,
			// Its runner is dead and was on this machine: this process speaks for it (state.CheckTransition).
			Runner: d.Runner,
			Error:  "its run stopped without finishing: " + why, At: e.now().UTC()})
		return err == nil
	}
	return false
}
