// Package outputs implements `cdkx outputs`: print stacks' recorded outputs.
package outputs

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/view"
)

// Options are the inputs of one `cdkx outputs`.
type Options struct {
	F      *cli.Factory
	Config *cli.Config
	Stack  string
}

// NewCmdOutputs returns the outputs command; runF replaces outputsRun in tests.
func NewCmdOutputs(f *cli.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{F: f}
	return &cobra.Command{
		Use:   "outputs [STACK]",
		Short: "Print stacks' outputs from state",
		Long:  "Outputs prints the recorded outputs of a stack (every stack when none is named) as Stack.Key = value lines, or as a JSON object {stack: {key: value}} with --json.",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := cli.LoadConfig(cmd.Flags(), f.Getenv)
			if err != nil {
				return err
			}
			opts.Config = cfg
			if len(args) == 1 {
				opts.Stack = args[0]
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return outputsRun(cmd.Context(), opts)
		},
	}
}

func outputsRun(ctx context.Context, opts *Options) error {
	b, err := opts.F.OpenReadOnly(ctx, opts.Config.State)
	if err != nil {
		return err
	}
	defer func() { _ = b.Close() }() // read only: nothing to lose
	names := []string{opts.Stack}
	if opts.Stack == "" {
		if names, err = b.ListStacks(ctx); err != nil {
			return err
		}
	}
	all := map[string]map[string]any{}
	for _, n := range names {
		st, err := b.GetStack(ctx, n)
		if err != nil {
			return err
		}
		if st.Version == 0 {
			return fmt.Errorf("stack %s has no state; deploy it first", n)
		}
		all[n] = st.Outputs
	}
	if opts.Config.JSON {
		return json.NewEncoder(opts.F.IO.Out).Encode(all)
	}
	view.Outputs(opts.F.IO.Out, names, all)
	return nil
}
