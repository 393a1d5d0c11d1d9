// Package importcmd implements `cdkx import`: bring an existing object under cdkx's management.
package importcmd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// Options are the inputs of one `cdkx import`.
type Options struct {
	F          *cli.Factory
	Config     *cli.Config
	ID         string // Stack/LogicalID or a logical ID unique across the stacks
	PhysicalID string
}

// NewCmdImport returns the import command; runF replaces importRun in tests.
func NewCmdImport(f *cli.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{F: f}
	return &cobra.Command{
		Use:   "import STACK/LOGICAL_ID PHYSICAL_ID",
		Short: "Bring an existing object under cdkx's management",
		Long: `Import records an object that already exists at its provider as the resource the assembly declares
under STACK/LOGICAL_ID (or a LOGICAL_ID unique across the stacks), like terraform import. The object
is read by its provider ID (PowerDNS: a zone's canonical name, e.g. example.test.; a record set's
<zone>/<name>/<type>; RabbitMQ: see its README section), and its live properties become the recorded
inputs: run cdkx diff next to see how the template differs, and cdkx deploy to make it match.
Nothing is changed at the provider.`,
		Example: "  cdkx import Zones/ZonesExampleZone5F3A9C21 example.test.",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := cli.LoadConfig(cmd.Flags(), f.Getenv)
			if err != nil {
				return err
			}
			opts.Config, opts.ID, opts.PhysicalID = cfg, args[0], args[1]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return importRun(cmd.Context(), opts)
		},
	}
}

func importRun(ctx context.Context, opts *Options) error {
	f, cfg := opts.F, opts.Config
	l, err := cli.LoadAssembly(f, cfg, "nothing was imported")
	if err != nil {
		return err
	}
	stack, r, err := find(l.Assembly, opts.ID)
	if err != nil {
		return err
	}
	return cli.WithBackend(ctx, f, cfg, func(b state.Backend) error {
		return importWith(ctx, opts, l, stack, r, b)
	})
}

// importWith imports opts.PhysicalID as resource r of stack through backend b.
func importWith(ctx context.Context, opts *Options, l *cli.Loaded, stack *assembly.Stack, r *assembly.Resource, b state.Backend) error {
	f, cfg := opts.F, opts.Config
	start := f.Now()
	res, err := operation.Import{Env: cli.Env(f, cfg, b, l.Registry), Stack: stack.ID, Resource: r, PhysicalID: opts.PhysicalID}.Run(ctx)
	if errors.Is(err, engine.ErrManaged) {
		return fmt.Errorf("%w; destroy it with cdkx destroy --target %s/%s first to import another object", err, stack.ID, r.LogicalID)
	}
	if err != nil {
		return cli.RunError(f, cfg, err)
	}
	if cfg.JSON {
		return cli.Finish(f, cfg, "import", res, f.Now().Sub(start), nil)
	}
	if err := res.Err(); err != nil {
		return &cli.ExitError{Code: cli.ExitCode(err), Err: err}
	}
	fmt.Fprintf(f.IO.ErrOut, "\nImported %s as %s/%s. Run cdkx diff to see how the template differs from it.\n", opts.PhysicalID, stack.ID, r.LogicalID)
	return nil
}

// find resolves Stack/LogicalID, or a logical ID unique across the stacks.
func find(a *assembly.Assembly, id string) (*assembly.Stack, *assembly.Resource, error) {
	if stackID, logical, ok := strings.Cut(id, "/"); ok {
		s := a.Stack(stackID)
		if s == nil {
			return nil, nil, fmt.Errorf("no stack %q in the assembly", stackID)
		}
		if r := s.Resource(logical); r != nil {
			return s, r, nil
		}
		return nil, nil, fmt.Errorf("stack %s declares no resource %q; cdkx list shows them", stackID, logical)
	}
	var hits []string
	var stack *assembly.Stack
	var res *assembly.Resource
	for _, s := range a.Stacks {
		if r := s.Resource(id); r != nil {
			hits, stack, res = append(hits, s.ID+"/"+id), s, r
		}
	}
	switch len(hits) {
	case 1:
		return stack, res, nil
	case 0:
		return nil, nil, fmt.Errorf("no resource %q in the assembly; cdkx list shows them", id)
	}
	return nil, nil, fmt.Errorf("%q is in several stacks (%s); name one as Stack/LogicalID", id, strings.Join(hits, ", "))
}
