// Package outputs implements `cdkx outputs`: print stacks' recorded outputs.
package outputs

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/view"
	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// Options are the inputs of one `cdkx outputs`.
type Options struct {
	F      *cli.Factory
	Config *cli.Config
	// Name is the argument: "" (every stack), STACK or STACK.KEY.
	Name string
	// Raw prints one output's value alone: a string unquoted, anything else as JSON (--raw).
	Raw bool
}

// NewCmdOutputs returns the outputs command; runF replaces outputsRun in tests.
func NewCmdOutputs(f *cli.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{F: f}
	cmd := &cobra.Command{
		Use:   "outputs [STACK | STACK.KEY]",
		Short: "Print the outputs of deployed stacks",
		Long: `Outputs prints the outputs recorded in state: of every deployed stack when no argument is given, of
one stack (STACK), or one output's value (STACK.KEY). Lines read Stack.Key = value, values as JSON;
with --json, a JSON object {stack: {key: value}}, or the value alone for STACK.KEY.

With --raw (STACK.KEY only), the value alone for scripts, like terraform output -raw: a string
without quotes, anything else as JSON, then one newline. Nothing is deployed and no provider is
called; a folder without state stays without.`,
		Example: `  cdkx outputs
  cdkx outputs App
  cdkx outputs App.WwwFqdn --raw
  dig @127.0.0.1 "$(cdkx outputs App.WwwFqdn --raw)"`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := cli.LoadConfig(cmd.Flags(), f.Getenv)
			if err != nil {
				return err
			}
			opts.Config = cfg
			if len(args) == 1 {
				opts.Name = args[0]
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return outputsRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Raw, "raw", false, "print one output's value alone (STACK.KEY): a string without quotes, else JSON")
	return cmd
}

func outputsRun(ctx context.Context, opts *Options) error {
	if opts.Raw && opts.Name == "" {
		return fmt.Errorf("--raw prints one output: name it as STACK.KEY, e.g. cdkx outputs App.WwwFqdn --raw")
	}
	b, err := opts.F.OpenReadOnly(ctx, opts.Config.State)
	if err != nil {
		return err
	}
	defer func() { _ = b.Close() }() // read only: nothing to lose
	deployed, err := b.ListStacks(ctx)
	if err != nil {
		return err
	}
	if opts.Name == "" {
		return printStacks(ctx, opts, b, deployed)
	}
	stack, key := split(opts.Name, deployed)
	if stack == "" {
		return noStack(opts.Name, deployed, opts.Config.State)
	}
	if key == "" {
		if opts.Raw {
			return fmt.Errorf("--raw prints one output: name it as STACK.KEY, e.g. cdkx outputs %s.KEY --raw", stack)
		}
		return printStacks(ctx, opts, b, []string{stack})
	}
	st, err := b.GetStack(ctx, stack)
	if err != nil {
		return err
	}
	v, ok := st.Outputs[key]
	if !ok {
		keys := slices.Sorted(maps.Keys(st.Outputs))
		if len(keys) == 0 {
			return fmt.Errorf("stack %s has no outputs", stack)
		}
		return fmt.Errorf("stack %s has no output %q%s (outputs: %s)", stack, key, operation.Suggest(key, keys), strings.Join(keys, ", "))
	}
	return printValue(opts.F.IO.Out, v, opts.Raw, opts.Config.JSON)
}

// split parses name as STACK or STACK.KEY against the deployed stacks: a deployed stack named name
// exactly, else the longest deployed stack followed by "." and a key; stack is "" when none fits.
func split(name string, deployed []string) (stack, key string) {
	if slices.Contains(deployed, name) {
		return name, ""
	}
	for i := strings.LastIndex(name, "."); i > 0; i = strings.LastIndex(name[:i], ".") {
		if slices.Contains(deployed, name[:i]) {
			return name[:i], name[i+1:]
		}
	}
	return "", ""
}

// noStack is the error for a name that matches no deployed stack, with the nearest one.
func noStack(name string, deployed []string, location string) error {
	if len(deployed) == 0 {
		return fmt.Errorf("no stack has state in %s: deploy first (cdkx deploy), or pass --state", location)
	}
	guess, _, _ := strings.Cut(name, ".")
	return fmt.Errorf("stack %s has no state%s (deployed stacks: %s)", guess, operation.Suggest(guess, deployed), strings.Join(deployed, ", "))
}

// printStacks prints the outputs of names as Stack.Key = value lines, or one JSON object.
func printStacks(ctx context.Context, opts *Options, b state.Backend, names []string) error {
	all := map[string]map[string]any{}
	for _, n := range names {
		st, err := b.GetStack(ctx, n)
		if err != nil {
			return err
		}
		all[n] = st.Outputs
		if all[n] == nil {
			all[n] = map[string]any{}
		}
	}
	if opts.Config.JSON {
		return view.JSONEncoder(opts.F.IO.Out).Encode(all) // maps marshal with sorted keys
	}
	switch {
	case len(names) == 0:
		fmt.Fprintf(opts.F.IO.ErrOut, "No stack has state in %s yet: nothing to print.\n", opts.Config.State)
	case len(names) == 1 && len(all[names[0]]) == 0:
		fmt.Fprintf(opts.F.IO.ErrOut, "Stack %s has no outputs.\n", view.Sanitize(names[0]))
	}
	view.Outputs(opts.F.IO.Out, names, all)
	return nil
}

// printValue prints one output's value: raw (a string as is, else JSON), as JSON, or as view.Value shows
// it; always followed by one newline.
func printValue(w io.Writer, v any, raw, asJSON bool) error {
	if s, ok := v.(string); ok && raw {
		_, err := fmt.Fprintln(w, s)
		return err
	}
	if raw || asJSON {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(w, string(b))
		return err
	}
	_, err := fmt.Fprintln(w, view.Value(v))
	return err
}
