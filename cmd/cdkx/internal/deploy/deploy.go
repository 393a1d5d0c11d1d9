// Package deploy implements `cdkx deploy`: plan the selected stacks against state and apply the plan.
package deploy

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/project"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/view"
	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/pkg/diag"
	"github.com/cdkx-dev/cdkx/planner"
)

// Options are the inputs of one `cdkx deploy`.
type Options struct {
	F      *cli.Factory
	Config *cli.Config
	project.PlanFlags
	// Refresh reads every resource from its provider first and plans against what exists (--refresh).
	Refresh bool
	// NoRollback keeps the partial progress of a failed deploy (--no-rollback).
	NoRollback bool
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
resource and what it depends on; reading another stack's outputs pulls in that whole stack. --exclude
ID leaves that resource and everything that depends on it alone, and wins over --target. Resources
left out get no provider call and no state change; resources gone from the assembly are deleted only
when selected; a stack covered only partly keeps its recorded outputs.

Exit codes: 0 ok, 1 error, 3 a stack is locked, 4 a resource failed, 130 interrupted.`,
		Example: "  cdkx deploy\n  cdkx deploy App --concurrency 20\n  cdkx deploy --json > events.jsonl\n" +
			"  cdkx deploy --target App/WwwRecordSet --exclude App/MailRecordSet",
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
	return cmd
}

func deployRun(ctx context.Context, opts *Options) (err error) {
	f, cfg := opts.F, opts.Config
	l, err := project.LoadAssembly(f, cfg, "nothing was deployed")
	if err != nil {
		return err
	}
	stacks, err := project.SelectStacks(l.Assembly, opts.Stacks, opts.Exclusively)
	if err != nil {
		return err
	}
	b, err := f.OpenBackend(ctx, cfg.State)
	if err != nil {
		return err
	}
	defer func() {
		// Closing writes the last WAL checkpoint; a failure there is worth knowing.
		if cerr := b.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	start := f.Now()
	d := operation.Deploy{Env: project.Env(f, cfg, b, l.Registry), Assembly: l.Assembly, Graph: l.Graph,
		Selection: opts.Selection(stacks), Refresh: opts.Refresh, NoRollback: opts.NoRollback,
		OnPlan: func(p *planner.Plan, ds diag.Diagnostics) {
			project.ShowPlanDiagnostics(f, cfg, p, ds, "nothing was deployed")
		}}
	res, plan, err := d.Run(ctx)
	if err != nil {
		return project.RunError(f, cfg, err)
	}
	outputs := map[string]map[string]any{}
	for _, name := range plan.Stacks {
		if st := res.Stacks[name]; st != nil && len(st.Outputs) > 0 {
			outputs[name] = st.Outputs
		}
	}
	err = project.Finish(f, cfg, "deploy", res, f.Now().Sub(start), outputs)
	if !cfg.JSON && err == nil {
		view.Outputs(f.IO.Out, plan.Stacks, outputs)
	}
	return err
}
