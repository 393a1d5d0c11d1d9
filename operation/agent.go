package operation

import (
	"context"
	"errors"
	"time"

	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/pkg/diag"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/planner"
)

// IdlePoll is how often an idle agent looks for work (Agent.Poll's default).
const IdlePoll = time.Second

// Agent runs the deployments queued for agents (APPROVED ones, and PENDING ones queued with --no-wait)
// from their snapshots, one at a time, with provider credentials from this process's environment. Several
// agents share the queues safely: each deployment is claimed by one of them (state.Deployments.ClaimNext).
type Agent struct {
	Env
	// Stacks limits the agent to these stacks (all when empty).
	Stacks []string
	// Passphrase opens sealed values (CDKX_SECRETS_PASSPHRASE).
	Passphrase string
	// OnPlan, when set, receives the plan of each deployment run and its diagnostics.
	OnPlan func(*planner.Plan, diag.Diagnostics)
	// Poll returns the channel whose ticks wake an idle Serve, and its stop (nil: a ticker of IdlePoll).
	Poll func() (<-chan time.Time, func())
	// OnRan, when set, is told of each deployment Serve ran: as it ended, the engine's result (nil when the
	// run stopped before the engine) and how long it took.
	OnRan func(d *state.Deployment, res *engine.Result, took time.Duration)
}

// Step claims the next deployment and runs it; first, the RUNNING deployments of its stacks whose runner
// was a process of this machine that is gone (a killed agent or deploy) are recorded ABORTED at once, as
// deployments run does, instead of holding their queue until their heartbeat is state.DeadAfter old. It returns the deployment as it ended, the engine's result
// (nil when the run stopped before the engine) and the run's error; ErrNoDeployment when no queue holds a
// deployment for an agent.
func (a Agent) Step(ctx context.Context) (*state.Deployment, *engine.Result, error) {
	if err := a.abortDeadRunners(ctx, a.Stacks); err != nil {
		return nil, nil, err
	}
	d, err := a.Backend.ClaimNext(ctx, a.Stacks, a.runner(), a.now().UTC())
	if err != nil {
		return nil, nil, err
	}
	if d == nil {
		return nil, nil, ErrNoDeployment
	}
	res, _, err := RunDeployment{Env: a.Env, Deployment: d, Claimed: true, Passphrase: a.Passphrase, OnPlan: a.OnPlan}.Run(ctx)
	if got, gerr := a.Backend.GetDeployment(context.WithoutCancel(ctx), d.ID); gerr == nil {
		got.Snapshot = nil
		d = got
	}
	return d, res, err
}

// Served counts what Serve ran: Ran deployments, of which Failed did not complete (failed, refused or
// aborted).
type Served struct {
	Ran, Failed int
}

// Serve runs Step until no queue holds a deployment for an agent, when once, or until ctx is done: idle,
// it looks again at each tick of Poll. A deployment someone aborted does not stop it. It returns what it
// ran and nil (once, the queues empty), ctx's error (interrupted), or the backend's error.
func (a Agent) Serve(ctx context.Context, once bool) (Served, error) {
	var served Served
	var tick <-chan time.Time
	for {
		start := a.now()
		d, res, err := a.Step(ctx)
		switch {
		case errors.Is(err, ErrNoDeployment):
			if once {
				return served, nil
			}
			if tick == nil {
				var stop func()
				tick, stop = a.poll()
				defer stop()
			}
			select {
			case <-ctx.Done():
				return served, ctx.Err()
			case <-tick:
			}
			continue
		case d == nil && err != nil:
			return served, err
		}
		served.Ran++
		if d.Status != state.StatusCompleted {
			served.Failed++
		}
		if a.OnRan != nil {
			a.OnRan(d, res, a.now().Sub(start))
		}
		var ae *AbortedError
		if errors.As(err, &ae) {
			continue // someone aborted that deployment; the agent goes on
		}
		if ctx.Err() != nil {
			return served, ctx.Err()
		}
	}
}

func (a Agent) poll() (<-chan time.Time, func()) {
	if a.Poll != nil {
		return a.Poll()
	}
	t := time.NewTicker(IdlePoll)
	return t.C, t.Stop
}
