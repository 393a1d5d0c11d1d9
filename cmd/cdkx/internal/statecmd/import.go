package statecmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/view"
	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// ImportOptions are the inputs of one `cdkx state import`.
type ImportOptions struct {
	F      *cli.Factory
	Config *cli.Config
	File   string // "-" or "": standard input
	Stack  string // only this stack of a multi-stack export
}

// NewCmdImport returns `state import`; runF replaces importRun in tests.
func NewCmdImport(f *cli.Factory, runF func(context.Context, *ImportOptions) error) *cobra.Command {
	opts := &ImportOptions{F: f}
	cmd := &cobra.Command{
		Use:   "import [--file FILE] [--stack S]",
		Short: "Replace stacks' state by what cdkx state export wrote",
		Long: `Import reads what cdkx state export printed (one stack, or {"stacks": [...]}) and makes it the
recorded state of those stacks in --state, each in one atomic commit recorded as a deployment of
kind "import". No provider is called. Use it to move state between backends, e.g. from the embedded
file to PostgreSQL:

  cdkx state export > state.json
  cdkx state import --state postgres://cdkx@db:5432/cdkx < state.json

The imported state must be valid (no operation pending: settle them with cdkx refresh where the
state comes from). Each stack's lock is taken first. With --json, each import's deployment record is
one JSON object on stdout (as cdkx deployments show --json prints it).`,
		Example: "  cdkx state export > state.json\n  cdkx state import --state postgres://cdkx@db:5432/cdkx < state.json",
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
			return importRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.File, "file", "-", "the export to read (- for standard input)")
	cmd.Flags().StringVar(&opts.Stack, "stack", "", "import only this stack of a multi-stack export")
	return cmd
}

// ParseExport reads one exported stack or {"stacks": [...]}, with numbers kept as json.Number.
func ParseExport(data []byte) ([]*state.Stack, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var probe map[string]json.RawMessage
	if err := dec.Decode(&probe); err != nil {
		return nil, fmt.Errorf("not a cdkx state export (JSON object expected): %w", err)
	}
	var exports []Export
	decode := func(raw []byte, into any) error {
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		d.DisallowUnknownFields()
		return d.Decode(into)
	}
	if raw, ok := probe["stacks"]; ok && len(probe) == 1 {
		if err := decode(raw, &exports); err != nil {
			return nil, fmt.Errorf("stacks: %w", err)
		}
	} else {
		var one Export
		if err := decode(data, &one); err != nil {
			return nil, fmt.Errorf("not a cdkx state export: %w", err)
		}
		exports = []Export{one}
	}
	out := make([]*state.Stack, 0, len(exports))
	for _, e := range exports {
		if e.Name == "" {
			return nil, errors.New("an exported stack has no name")
		}
		st := state.NewStack(e.Name)
		st.Version, st.Status, st.Dependencies, st.UpdatedAt = e.Version, e.Status, e.Dependencies, e.UpdatedAt
		if e.Outputs != nil {
			st.Outputs = e.Outputs
		}
		for _, r := range e.Resources {
			if _, dup := st.Resources[r.LogicalID]; dup {
				return nil, fmt.Errorf("stack %s: resource %s appears twice", e.Name, r.LogicalID)
			}
			st.Resources[r.LogicalID] = r
		}
		out = append(out, st)
	}
	return out, nil
}

func importRun(ctx context.Context, opts *ImportOptions) (err error) {
	f, cfg := opts.F, opts.Config
	var data []byte
	if opts.File == "" || opts.File == "-" {
		data, err = io.ReadAll(f.IO.In)
	} else {
		data, err = os.ReadFile(opts.File)
	}
	if err != nil {
		return fmt.Errorf("read the export: %w", err)
	}
	stacks, err := ParseExport(data)
	if err != nil {
		return err
	}
	if opts.Stack != "" {
		var only []*state.Stack
		for _, st := range stacks {
			if st.Name == opts.Stack {
				only = append(only, st)
			}
		}
		if len(only) == 0 {
			return fmt.Errorf("the export has no stack %q", opts.Stack)
		}
		stacks = only
	}
	return cli.WithBackend(ctx, f, cfg, func(b state.Backend) error {
		enc := view.JSONEncoder(f.IO.Out)
		var werr error
		_, err := operation.StateImport{Env: cli.Env(f, cfg, b, nil), Stacks: stacks,
			OnImported: func(st *state.Stack, d *state.Deployment) {
				if cfg.JSON {
					werr = errors.Join(werr, enc.Encode(view.DeploymentOf(d)))
					return
				}
				fmt.Fprintf(f.IO.ErrOut, "Imported stack %s: %d resource(s), now at version %d (deployment %s).\n", st.Name, len(st.Resources), d.Version, d.ID)
			}}.Run(ctx)
		if err != nil {
			return cli.RunError(f, cfg, err)
		}
		return werr
	})
}
