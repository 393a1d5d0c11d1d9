// Package statecmd implements `cdkx state`: export recorded state as JSON and import it back.
package statecmd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/view"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// ExportOptions are the inputs of one `cdkx state export`.
type ExportOptions struct {
	F       *cli.Factory
	Config  *cli.Config
	Stack   string
	Version int64
}

// NewCmdState returns the `state` command group.
func NewCmdState(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "state", Short: "Export and import recorded state",
		Example: "  cdkx state export > state.json\n  cdkx state import --state postgres://cdkx@db:5432/cdkx < state.json"}
	cmd.AddCommand(NewCmdExport(f, nil), NewCmdImport(f, nil))
	return cmd
}

// NewCmdExport returns `state export`; runF replaces exportRun in tests.
func NewCmdExport(f *cli.Factory, runF func(context.Context, *ExportOptions) error) *cobra.Command {
	opts := &ExportOptions{F: f}
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Print a stack's state as JSON",
		Long: `Export prints the recorded state of a stack as JSON on stdout: its version, status, outputs and
every resource with its type, provider, physical ID, last applied inputs, outputs, direct
dependencies and status. --version N prints the stack as it was at version N.
Without --stack every stack is printed, as {"stacks": [...]}.`,
		Example: "  cdkx state export\n  cdkx state export --stack App --version 3 > app-v3.json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := cli.LoadConfig(cmd.Flags(), f.Getenv)
			if err != nil {
				return err
			}
			opts.Config = cfg
			if opts.Version < 0 {
				return fmt.Errorf("--version must be a positive state version, got %d", opts.Version)
			}
			if opts.Version > 0 && opts.Stack == "" {
				return errors.New("--version needs --stack: versions count per stack")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return exportRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Stack, "stack", "", "the stack to export (default: every stack)")
	cmd.Flags().Int64Var(&opts.Version, "version", 0, "the state version to export (default: the current one)")
	return cmd
}

// Export is the JSON shape of one exported stack.
type Export struct {
	Name         string              `json:"name"`
	Version      int64               `json:"version"`
	Status       string              `json:"status,omitempty"`
	Outputs      resource.Properties `json:"outputs"`
	Dependencies []string            `json:"dependencies,omitempty"`
	Resources    []*state.Resource   `json:"resources"`
	UpdatedAt    time.Time           `json:"updatedAt,omitzero"`
}

// ToExport converts a stack's state to its export shape, resources sorted by logical ID.
func ToExport(st *state.Stack) Export {
	out := Export{Name: st.Name, Version: st.Version, Status: st.Status, Outputs: st.Outputs,
		Dependencies: st.Dependencies, Resources: st.SortedResources(), UpdatedAt: st.UpdatedAt}
	if out.Outputs == nil {
		out.Outputs = resource.Properties{}
	}
	return out
}

func exportRun(ctx context.Context, opts *ExportOptions) error {
	b, err := opts.F.OpenReadOnly(ctx, opts.Config.State)
	if err != nil {
		return err
	}
	defer func() { _ = b.Close() }() // read only: nothing to lose
	enc := view.JSONEncoder(opts.F.IO.Out)
	enc.SetIndent("", "  ")
	if opts.Stack == "" {
		names, err := b.ListStacks(ctx)
		if err != nil {
			return err
		}
		all := struct {
			Stacks []Export `json:"stacks"`
		}{Stacks: []Export{}}
		for _, n := range names {
			st, err := b.GetStack(ctx, n)
			if err != nil {
				return err
			}
			all.Stacks = append(all.Stacks, ToExport(st))
		}
		return enc.Encode(all)
	}
	var st *state.Stack
	if opts.Version > 0 {
		st, err = b.GetStackVersion(ctx, opts.Stack, opts.Version)
	} else {
		st, err = b.GetStack(ctx, opts.Stack)
	}
	if errors.Is(err, state.ErrNotFound) {
		names, _ := b.ListStacks(ctx)
		return fmt.Errorf("stack %s has no version %d (stacks with state: %s)", opts.Stack, opts.Version, strings.Join(names, ", "))
	}
	if err != nil {
		return err
	}
	return enc.Encode(ToExport(st))
}
