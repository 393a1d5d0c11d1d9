// Package agent implements `cdkx agent`: a worker that drains the deployment queues.
package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/view"
	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/pkg/diag"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/planner"
)

// Options are the inputs of one `cdkx agent`.
type Options struct {
	F      *cli.Factory
	Config *cli.Config
	// Once exits when no queue holds a deployment for an agent (--once).
	Once bool
	// Stacks limits the agent to these stacks' queues (--stack; all when empty).
	Stacks []string
	// Poll returns the ticker an idle agent looks for work on, and its stop (nil: every
	// operation.IdlePoll).
	Poll func() (<-chan time.Time, func())
}

// NewCmdAgent returns the agent command; runF replaces agentRun in tests.
func NewCmdAgent(f *cli.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{F: f}
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run queued deployments: approved ones, and those queued with deploy --no-wait",
		Long: `Agent drains the deployment queues of the state backend: it runs, one at a time and in each stack's
creation order, the APPROVED deployments and the PENDING ones queued with "cdkx deploy --no-wait",
each from its snapshot, with provider credentials from this process's environment (read at run time,
never stored in a snapshot) and CDKX_SECRETS_PASSPHRASE for encrypted values. Several agents may run
against one backend: each deployment is claimed by exactly one. --once exits when no queue holds a
deployment for an agent; without it the agent keeps polling until interrupted.

Exit codes (--once): 0 every deployment it ran completed, 1 error, 4 one failed or was refused, 130
interrupted or aborted.`,
		Example: "  cdkx agent --once\n  cdkx agent --stack App --stack Zones",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := cli.LoadConfig(cmd.Flags(), f.Getenv)
			if err != nil {
				return err
			}
			opts.Config = cfg
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return agentRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Once, "once", false, "exit when every queue is empty")
	cmd.Flags().StringArrayVar(&opts.Stacks, "stack", nil, "only these stacks' queues (repeatable)")
	return cmd
}

func agentRun(ctx context.Context, opts *Options) error {
	f, cfg := opts.F, opts.Config
	return cli.WithBackend(ctx, f, cfg, func(b state.Backend) error {
		a := operation.Agent{Env: cli.Env(f, cfg, b, f.Providers()), Stacks: opts.Stacks, Passphrase: cfg.Passphrase, Poll: opts.Poll,
			OnPlan: func(p *planner.Plan, ds diag.Diagnostics) {
				cli.ShowPlanDiagnostics(f, cfg, p, ds, "the deployment was not run")
			},
			OnRan: func(d *state.Deployment, res *engine.Result, took time.Duration) {
				if !cfg.JSON {
					fmt.Fprintf(f.IO.ErrOut, "Agent: deployment %s of stack %s (created by %s) ended %s in %s", view.Sanitize(d.ID), view.Sanitize(d.Stack),
						view.Sanitize(d.CreatedBy), d.Status, took.Round(time.Millisecond))
					if d.Error != "" {
						fmt.Fprintf(f.IO.ErrOut, ": %s", view.Sanitize(d.Error))
					}
					fmt.Fprintln(f.IO.ErrOut)
				}
				if res != nil {
					cli.Events(f, cfg, nil, nil, nil).Summary(view.Summary{Command: "deploy", Result: res, Elapsed: took})
				}
			}}
		served, err := a.Serve(ctx, opts.Once)
		switch {
		case ctx.Err() != nil:
			return &cli.ExitError{Code: cli.ExitInterrupted}
		case err != nil:
			return err // the backend failed
		}
		if !cfg.JSON {
			fmt.Fprintf(f.IO.ErrOut, "Agent: no deployment left to run; ran %d, %d did not complete.\n", served.Ran, served.Failed)
		}
		if served.Failed > 0 {
			return &cli.ExitError{Code: cli.ExitFailed}
		}
		return nil
	})
}
