package operation

import (
	"context"

	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/pkg/diag"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/planner"
)

// Diff plans the selected stacks of a validated assembly against recorded state and changes nothing (cdkx
// diff): every provider of the plan's resources checks its credentials and what it would refuse, by reads
// only. With Refresh, every resource is read from its provider first (nothing written) so that the plan
// shows drift; with Record, the plan is recorded as a deployment of kind plan per stack, in its queue.
type Diff struct {
	Env
	Assembly *assembly.Assembly
	// Graph is the dependency graph of every stack (from validation), reused when the plan covers them all.
	Graph *planner.Graph
	// Files are the assembly's files, for the snapshot of recorded plans.
	Files map[string][]byte
	Selection
	// Read is the state of stacks already read (ReadAhead), by name; the others are read from Backend.
	Read    map[string]*state.Stack
	Refresh bool
	Record  bool
	// Passphrase seals a recorded plan's sensitive values (CDKX_SECRETS_PASSPHRASE).
	Passphrase string
	// OnPending, when set and Refresh is not, is told how many operations an interrupted run left pending
	// in the selected stacks (only when there are some): the plan does not settle them.
	OnPending func(n int)
	// OnPlan, when set, receives the plan (nil when it has errors) and its diagnostics, before recording.
	OnPlan func(*planner.Plan, diag.Diagnostics)
	// OnRecorded, when set, is told of each recorded plan deployment.
	OnRecorded func(*state.Deployment)
}

// Run returns the plan. Errors: *PlanError when the plan has errors (OnPlan has its diagnostics),
// *SettleError when Refresh could not read a resource, a provider's preflight error, Record's errors, or
// a state error.
func (d Diff) Run(ctx context.Context) (*planner.Plan, error) {
	st, err := loadState(ctx, d.Backend, d.Assembly, d.Stacks, d.Read)
	if err != nil {
		return nil, err
	}
	if d.Refresh {
		if st, err = (Settle{Env: d.Env, Stacks: st, Names: d.Stacks, Full: true, DryRun: true}).Run(ctx); err != nil {
			return nil, err
		}
	} else if n := pendingIn(st, d.Stacks); n > 0 && d.OnPending != nil {
		d.OnPending(n)
	}
	plan, ds, err := CheckedPlan(ctx, d.Assembly, d.Graph, d.Selection, st, d.Providers)
	if err != nil {
		return nil, err
	}
	if d.OnPlan != nil {
		d.OnPlan(plan, ds)
	}
	if plan == nil {
		return nil, &PlanError{Diagnostics: ds}
	}
	if d.Record {
		recorded, _, err := d.RecordPlan(ctx, Record{Assembly: d.Assembly, Graph: d.Graph, Files: d.Files,
			Selection: d.Selection, Passphrase: d.Passphrase})
		if err != nil {
			return plan, err
		}
		for _, r := range recorded {
			if d.OnRecorded != nil {
				d.OnRecorded(r)
			}
		}
	}
	return plan, nil
}

// pendingIn counts the pending operations recorded in the named stacks.
func pendingIn(st map[string]*state.Stack, names []string) int {
	var stacks []*state.Stack
	for _, n := range names {
		if s := st[n]; s != nil {
			stacks = append(stacks, s)
		}
	}
	return engine.PendingOperations(stacks)
}
