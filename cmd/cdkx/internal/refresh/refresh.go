// Package refresh implements `cdkx refresh`: read every resource from its provider and record drift.
package refresh

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// Options are the inputs of one `cdkx refresh`.
type Options struct {
	F      *cli.Factory
	Config *cli.Config
	Stacks []string
}

// NewCmdRefresh returns the refresh command; runF replaces refreshRun in tests.
func NewCmdRefresh(f *cli.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{F: f}
	return &cobra.Command{
		Use:   "refresh [STACK...]",
		Short: "Read every resource from its provider and record drift",
		Long: `Refresh reads every resource recorded in state for the stacks (all stacks with state when none is
named) from its provider, and records what it finds as a deployment of kind "refresh": IN_SYNC,
MODIFIED (changed outside cdkx: the recorded inputs take the live values, so that the next diff
shows the change that corrects them) or DELETED (gone: the record goes, the next deploy creates it
again). It also settles operations an interrupted run left pending. Nothing is changed at the
providers.`,
		Example: "  cdkx refresh\n  cdkx refresh App --json",
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := cli.LoadConfig(cmd.Flags(), f.Getenv)
			if err != nil {
				return err
			}
			opts.Config, opts.Stacks = cfg, args
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return refreshRun(cmd.Context(), opts)
		},
	}
}

func refreshRun(ctx context.Context, opts *Options) error {
	f, cfg := opts.F, opts.Config
	return cli.WithBackend(ctx, f, cfg, func(b state.Backend) error {
		start := f.Now()
		res, err := operation.Refresh{Env: cli.Env(f, cfg, b, f.Providers()), Stacks: opts.Stacks}.Run(ctx)
		if err != nil {
			return cli.RunError(f, cfg, err)
		}
		return cli.Finish(f, cfg, "refresh", res, f.Now().Sub(start), nil)
	})
}
