// Package cancel implements `cdkx cancel STACK`: cancel the active update of a stack on the state service.
package cancel

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/view"
	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// Options are the inputs of one `cdkx cancel`.
type Options struct {
	IO     *cli.IOStreams
	Config *cli.Config
	// Open opens the state backend (cli.Factory.OpenBackend).
	Open  func(ctx context.Context, location string) (state.Backend, error)
	Stack string
}

// NewCmdCancel returns the cancel command; runF replaces cancelRun in tests.
func NewCmdCancel(f *cli.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{IO: f.IO, Open: f.OpenBackend}
	cmd := &cobra.Command{
		Use:   "cancel STACK",
		Short: "Cancel the running update of a stack on the state service",
		Long: `Cancel ends the active update of STACK on the state service (--state https://…): the stack is
unlocked at once, and the cdkx run that held it stops at its next step with "lost the lock of stack
STACK". What it committed before stays; calls it had in flight are recorded as pending operations,
which the next deploy reconciles.

With local state (a SQLite file or PostgreSQL) there is no service to cancel through: stop the
running cdkx with Ctrl-C, or remove a dead holder's lock with "cdkx unlock ID --force".

With --json, the lock that was removed is one JSON object on stdout.`,
		Example: "  CDKX_STATE=https://cdkx.example.org CDKX_TOKEN=… cdkx cancel App",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := cli.LoadConfig(cmd.Flags(), f.Getenv)
			if err != nil {
				return err
			}
			opts.Config, opts.Stack = cfg, args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return cancelRun(cmd.Context(), opts)
		},
	}
	return cmd
}

func cancelRun(ctx context.Context, opts *Options) error {
	b, err := opts.Open(ctx, opts.Config.State)
	if err != nil {
		return err
	}
	defer func() { _ = b.Close() }()
	l, err := operation.Cancel{Backend: b, Stack: opts.Stack}.Run(ctx)
	if err != nil {
		return err
	}
	if opts.Config.JSON {
		return view.JSONEncoder(opts.IO.Out).Encode(view.LockJSON{LockInfo: l, Cancelled: true})
	}
	fmt.Fprintf(opts.IO.ErrOut, "Cancelled the update of stack %s: %s\n", l.Stack, l)
	return nil
}
