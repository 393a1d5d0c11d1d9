// Package deploy implements `cdkx deploy`: plan the selected stacks against state and apply the plan.
package deploy

import (
	"context"
	"errors"
	"slices"

	"github.com/spf13/cobra"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/view"
	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/pkg/diag"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/planner"
)

// Options are the inputs of one `cdkx deploy`.
type Options struct {
	F      *cli.Factory
	Config *cli.Config
	cli.PlanFlags
	// Refresh reads every resource from its provider first and plans against what exists (--refresh).
	Refresh bool
	// NoRollback keeps the partial progress of a failed deploy (--no-rollback).
	NoRollback bool
	// NoWait only queues the deployments for an agent (--no-wait); Propose records them as proposals
	// (--propose) with Message (--message).
	NoWait, Propose bool
	Message         string
}

// NewCmdDeploy returns the deploy command; runF replaces deployRun in tests.
func NewCmdDeploy(f *cli.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{F: f}
	cmd := &cobra.Command{
		Use:   "deploy [STACK...]",
		Short: "Deploy stacks of the cloud assembly",
		Long: `Deploy plans the selected stacks (all when none is named; with the stacks they depend on unless
--exclusively) against recorded state and applies the plan: each resource is created, updated,
replaced or left alone in dependency order, resources gone from the assembly are deleted last.
Operations an interrupted run left pending are settled first, by reading the providers. When a
resource fails, the other branches finish and then what this run changed is rolled back (created
objects deleted, updated ones restored; --no-rollback keeps it). The live event table goes to
stderr, stack outputs to stdout.

--target ID (Stack/LogicalID, or a LogicalID unique across the stacks; repeatable) deploys only that
resource and what it depends on; reading another stack's outputs pulls in that whole stack.
--exclude ID leaves that resource and everything that depends on it alone, and wins over --target.
Resources left out get no provider call and no state change; resources gone from the assembly are
deleted only when selected; a stack covered only partly keeps its recorded outputs.

Before a plan that replaces or deletes a resource runs (--require-approval destructive, the default;
"any" asks before any change, "never" never asks; also "requireApproval" in cdkx.json), deploy shows
the plan as diff does and asks "Do you want to perform these actions? (y/N)": only y or yes goes on,
and Ctrl-C at the question exits 130 at once. Without a terminal, or with CI set, such a run exits 1
before any provider call unless --yes (--auto-approve) is given.

Each run is a deployment record per stack (cdkx deployments list). A deploy queues its deployments
behind the stack's running and queued ones and runs them here when their turn comes, waiting up to
--lock-timeout. --no-wait only queues them, for "cdkx agent"; --propose records them as proposals
with their plan, for someone to approve (cdkx deployments approve ID --run): no provider is called
and no place in the queue is taken. A stack the plan leaves unchanged (no resource and no output to
change) gets no deployment, with or without --no-wait and --propose: "Stack X: no changes" is
printed instead (--json: {"stack": "X", "noChanges": true}, or "unchanged" in the summary).
Deployments that run later keep sensitive values encrypted with CDKX_SECRETS_PASSPHRASE.

Exit codes: 0 ok, 1 error, 3 a stack is locked or still queued, 4 a resource failed, 130
interrupted or aborted.`,
		Example: "  cdkx deploy --app testdata/examples/dns/cdkx.out\n" +
			"  cdkx deploy App --app testdata/examples/dns/cdkx.out --concurrency 20 --json > events.jsonl\n" +
			"  cdkx deploy --app testdata/examples/dns/cdkx.out --target App/AppWwwRecordSet1E6C2A94 \\\n" +
			"      --exclude App/AppMailRecordSet9F1B3C65\n" +
			"  cdkx deploy --yes                   # in CI: replacements and deletions run without asking\n" +
			"  cdkx deploy --require-approval any  # ask before any change\n" +
			"  cdkx deploy --propose --message \"lower the TTL\" --json\n" +
			"  cdkx deploy --no-wait --lock-timeout 10m",
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := cli.LoadConfig(cmd.Flags(), f.Getenv)
			if err != nil {
				return err
			}
			opts.Config, opts.Stacks = cfg, args
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return deployRun(cmd.Context(), opts)
		},
	}
	opts.Register(cmd.Flags())
	cmd.Flags().BoolVar(&opts.Refresh, "refresh", false, "read every resource from its provider first, so that drift is corrected")
	cmd.Flags().BoolVar(&opts.NoRollback, "no-rollback", false, "on a failure, keep what this run changed instead of rolling it back")
	cmd.Flags().BoolVar(&opts.NoWait, "no-wait", false, "only queue the deployments (PENDING) for cdkx agent, print them and exit")
	cmd.Flags().BoolVar(&opts.Propose, "propose", false, "record the deployments as proposals (PROPOSED) with their plan, print them and exit")
	cmd.Flags().StringVar(&opts.Message, "message", "", "what the proposal is for (with --propose)")
	cli.AddApprovalFlags(cmd.Flags())
	cmd.Flags().Bool("show-unchanged", false, "list unchanged resources in the event view (they are only counted otherwise)")
	cmd.MarkFlagsMutuallyExclusive("no-wait", "propose")
	return cmd
}

func deployRun(ctx context.Context, opts *Options) error {
	l, err := cli.LoadAssembly(opts.F, opts.Config, "nothing was deployed")
	if err != nil {
		return err
	}
	stacks, err := operation.SelectStacks(l.Assembly, opts.Stacks, opts.Exclusively)
	if err != nil {
		return err
	}
	return cli.WithBackend(ctx, opts.F, opts.Config, func(b state.Backend) error {
		return deployWith(ctx, opts, l, stacks, b)
	})
}

// deployWith records or runs the deploy of stacks of l on backend b.
func deployWith(ctx context.Context, opts *Options, l *cli.Loaded, stacks []string, b state.Backend) error {
	f, cfg := opts.F, opts.Config
	env := cli.Env(f, cfg, b, l.Registry)
	if opts.Propose || opts.NoWait {
		status := state.StatusPending
		if opts.Propose {
			status = state.StatusProposed
		}
		rec := operation.Record{Env: env, Assembly: l.Assembly, Graph: l.Graph, Files: l.Files, Selection: opts.Selection(stacks),
			Status: status, Kind: state.KindDeploy, Message: opts.Message, Refresh: opts.Refresh, NoRollback: opts.NoRollback,
			Passphrase: cfg.Passphrase,
			OnPlan: func(p *planner.Plan, ds diag.Diagnostics) {
				cli.ShowPlanDiagnostics(f, cfg, p, ds, "nothing was recorded")
			}}
		if opts.NoWait { // it runs unattended later: approve it now; a proposal is approved by someone else
			rec.Confirm = cli.ApprovePlan(ctx, f, cfg)
		}
		ds, _, err := rec.Run(ctx)
		if err != nil {
			return cli.RunError(f, cfg, err)
		}
		return view.Recorded(f.IO.Out, cfg.JSON, ds, unchanged(opts.Selection(stacks).Stacks, ds))
	}
	start := f.Now()
	d := operation.Deploy{Passphrase: cfg.Passphrase, Env: env, Files: l.Files, Assembly: l.Assembly, Graph: l.Graph,
		Selection: opts.Selection(stacks), Refresh: opts.Refresh, NoRollback: opts.NoRollback,
		OnPlan: func(p *planner.Plan, ds diag.Diagnostics) {
			cli.ShowPlanDiagnostics(f, cfg, p, ds, "nothing was deployed")
		},
		Confirm: cli.ApprovePlan(ctx, f, cfg)}
	res, plan, err := d.Run(ctx)
	if err != nil && (res == nil || !errors.As(err, new(*operation.AbortedError))) {
		return cli.RunError(f, cfg, err)
	}
	// A deployment aborted while the run went on: its notice was printed; the summary says what ran.
	outputs := operation.Outputs(res, plan)
	var ran []*state.Deployment
	if res != nil {
		for _, d := range res.Deployments {
			ran = append(ran, d)
		}
	}
	err = cli.FinishSummary(f, cfg, view.Summary{Command: "deploy", Result: res, Elapsed: f.Now().Sub(start), Outputs: outputs,
		Unchanged: unchanged(plan.Stacks, ran)})
	if !cfg.JSON && err == nil {
		view.Outputs(f.IO.Out, plan.Stacks, outputs)
	}
	return err
}

// unchanged returns the stacks of names that have no deployment among ds: those the plan left unchanged.
func unchanged(names []string, ds []*state.Deployment) []string {
	var out []string
	for _, n := range names {
		if !slices.ContainsFunc(ds, func(d *state.Deployment) bool { return d.Stack == n }) {
			out = append(out, n)
		}
	}
	return out
}
