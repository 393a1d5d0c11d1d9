// Package destroy implements `cdkx destroy`: delete every object that state records for the stacks.
package destroy

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/view"
	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/planner"
)

// Options are the inputs of one `cdkx destroy`.
type Options struct {
	F      *cli.Factory
	Config *cli.Config
	Stacks []string
	Force  bool
	// Target holds --target and --exclude.
	Target cli.TargetFlags
}

// NewCmdDestroy returns the destroy command; runF replaces destroyRun in tests.
func NewCmdDestroy(f *cli.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{F: f}
	cmd := &cobra.Command{
		Use:   "destroy [STACK...]",
		Short: "Delete everything state records for the stacks",
		Long: `Destroy deletes every object recorded in state for the named stacks (all stacks with state when
none is named), plus the stacks that depend on them. It is driven by state, not by the assembly:
resources already removed from the assembly are deleted too. Objects go in reverse dependency
order, independent ones in parallel; a failure stops only what depends on it, and every failure
is reported.

--target ID (Stack/LogicalID, or a LogicalID unique across the stacks; repeatable) destroys only
that resource and everything that depends on it (by state's recorded dependencies; a resource in a
stack that depends on another stack counts as depending on all of it). --exclude ID keeps that
resource and everything it depends on, and wins over --target.

On a terminal destroy lists what it will delete and asks "Do you want to perform these actions?
(y/N)"; only y or yes goes on, and Ctrl-C at the question exits 130 at once. Without a terminal, or
with CI set, it refuses (exit 1, nothing deleted) unless --force or --yes is given.`,
		Example: "  cdkx destroy\n  cdkx destroy App --yes\n" +
			"  cdkx destroy --target App/AppWwwRecordSet1E6C2A94 --force",
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := cli.LoadConfig(cmd.Flags(), f.Getenv)
			if err != nil {
				return err
			}
			opts.Config, opts.Stacks = cfg, args
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return destroyRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVarP(&opts.Force, "force", "f", false, "do not ask for confirmation (the same as --yes)")
	opts.Target.Register(cmd.Flags(), true)
	cli.AddYesFlags(cmd.Flags())
	return cmd
}

func destroyRun(ctx context.Context, opts *Options) error {
	f, cfg := opts.F, opts.Config
	return cli.WithBackend(ctx, f, cfg, func(b state.Backend) error { return destroyWith(ctx, opts, b) })
}

// destroyWith runs the destroy on the open backend b.
func destroyWith(ctx context.Context, opts *Options, b state.Backend) error {
	f, cfg := opts.F, opts.Config
	d := operation.Destroy{Env: cli.Env(f, cfg, b, f.Providers()), Stacks: opts.Stacks,
		Targets: opts.Target.Targets, Excludes: opts.Target.Excludes,
		OnSelection: func(sel *planner.Selection) { view.WarnTargeting(f.IO.ErrOut, sel) },
		Confirm:     cli.ApproveDestroy(ctx, f, cfg, opts.Force)}
	start := f.Now()
	res, err := d.Run(ctx)
	if err != nil {
		return cli.RunError(f, cfg, err)
	}
	return cli.Finish(f, cfg, "destroy", res, f.Now().Sub(start), nil)
}
