// Package agent implements `cdkx agent`: a worker that drains the deployment queues.
package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/view"
	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/pkg/diag"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/planner"
)

// IdlePoll is how often an idle agent looks for work.
const IdlePoll = time.Second

// NewCmdAgent returns the agent command.
func NewCmdAgent(f *cli.Factory) *cobra.Command {
	var once bool
	var stacks []string
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
			return cli.WithBackend(cmd.Context(), f, cfg, func(b state.Backend) error {
				a := operation.Agent{Env: cli.Env(f, cfg, b, f.Providers()), Stacks: stacks, Passphrase: cfg.Passphrase,
					OnPlan: func(p *planner.Plan, ds diag.Diagnostics) {
						cli.ShowPlanDiagnostics(f, cfg, p, ds, "the deployment was not run")
					}}
				return loop(cmd.Context(), f, cfg, a, once)
			})
		},
	}
	cmd.Flags().BoolVar(&once, "once", false, "exit when every queue is empty")
	cmd.Flags().StringArrayVar(&stacks, "stack", nil, "only these stacks' queues (repeatable)")
	return cmd
}

func loop(ctx context.Context, f *cli.Factory, cfg *cli.Config, a operation.Agent, once bool) error {
	ran, failed := 0, 0
	for {
		start := f.Now()
		d, res, err := a.Step(ctx)
		switch {
		case errors.Is(err, operation.ErrNoDeployment):
			if once {
				if !cfg.JSON {
					fmt.Fprintf(f.IO.ErrOut, "Agent: no deployment left to run; ran %d, %d did not complete.\n", ran, failed)
				}
				if failed > 0 {
					return &cli.ExitError{Code: cli.ExitFailed}
				}
				return nil
			}
			select {
			case <-ctx.Done():
				return &cli.ExitError{Code: cli.ExitInterrupted}
			case <-time.After(IdlePoll):
			}
			continue
		case d == nil && err != nil:
			return err // the backend failed
		}
		ran++
		if d.Status != state.StatusCompleted {
			failed++
		}
		if !cfg.JSON {
			fmt.Fprintf(f.IO.ErrOut, "Agent: deployment %s of stack %s (created by %s) ended %s in %s", view.Sanitize(d.ID), view.Sanitize(d.Stack), view.Sanitize(d.CreatedBy), d.Status,
				f.Now().Sub(start).Round(time.Millisecond))
			if d.Error != "" {
				fmt.Fprintf(f.IO.ErrOut, ": %s", view.Sanitize(d.Error))
			}
			fmt.Fprintln(f.IO.ErrOut)
		}
		if res != nil {
			cli.Events(f, cfg, nil, nil, nil).Summary(view.Summary{Command: "deploy", Result: res, Elapsed: f.Now().Sub(start)})
		}
		var ae *operation.AbortedError
		if errors.As(err, &ae) {
			continue // someone aborted that deployment; the agent goes on
		}
		if ctx.Err() != nil {
			return &cli.ExitError{Code: cli.ExitInterrupted}
		}
	}
}
