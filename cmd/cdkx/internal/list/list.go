// Package list implements `cdkx list`: print the stacks and resources of a cloud assembly.
package list

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/view"
	"github.com/cdkx-dev/cdkx/pkg/diag"
)

// Options are the inputs of one `cdkx list`.
type Options struct {
	F      *cli.Factory
	Config *cli.Config
}

// NewCmdList returns the list command; runF replaces listRun in tests.
func NewCmdList(f *cli.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{F: f}
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the stacks and resources of the cloud assembly",
		Long: `List prints every stack of the assembly (its dependencies and outputs) and every resource with
its type and provider. It reads any assembly the TypeScript cdkx writes, including the legacy
flat template layout; problems that would stop a deploy are printed on stderr but do not stop
the listing. Exit 1 when it reports an error (then a deploy would stop too), 0 otherwise.`,
		Example: "  cdkx list --app testdata/examples/dns/cdkx.out\n  cdkx list --app testdata/examples/platform/cdkx.out --json",
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
			return listRun(cmd.Context(), opts)
		},
	}
}

type jsonResource struct {
	LogicalID string   `json:"logicalId"`
	Type      string   `json:"type"`
	Provider  string   `json:"provider"`
	DependsOn []string `json:"dependsOn,omitempty"`
}

type jsonStack struct {
	ID           string         `json:"id"`
	TemplateFile string         `json:"templateFile"`
	Dependencies []string       `json:"dependencies,omitempty"`
	Outputs      []string       `json:"outputs,omitempty"`
	Resources    []jsonResource `json:"resources"`
}

// listRun prints what the assembly holds, names sanitized (see view.Sanitize); it returns an exit error of
// code 1 after printing when the assembly has errors.
func listRun(_ context.Context, opts *Options) error {
	f, cfg := opts.F, opts.Config
	a, ds := assembly.Load(cfg.App)
	ds.Sort()
	if a == nil {
		view.Diagnostics(f.IO.ErrOut, ds, true, f.IO.Color && !cfg.NoColor)
		return &cli.ExitError{Code: cli.ExitErr}
	}
	if cfg.JSON {
		out := struct {
			Stacks []jsonStack       `json:"stacks"`
			Assets []string          `json:"assets,omitempty"`
			Issues []diag.Diagnostic `json:"problems,omitempty"`
		}{Stacks: []jsonStack{}, Issues: ds}
		for _, s := range a.Stacks {
			js := jsonStack{ID: s.ID, TemplateFile: s.TemplateFile, Dependencies: s.Dependencies, Resources: []jsonResource{}}
			js.Outputs = slices.Sorted(maps.Keys(s.Outputs)) // a map: sorted, so that every run prints the same bytes
			for _, r := range s.Resources {
				js.Resources = append(js.Resources, jsonResource{LogicalID: r.LogicalID, Type: r.Type, Provider: r.Provider, DependsOn: r.DependsOn})
			}
			out.Stacks = append(out.Stacks, js)
		}
		for _, as := range a.Assets {
			out.Assets = append(out.Assets, as.ID)
		}
		if err := view.JSONEncoder(f.IO.Out).Encode(out); err != nil {
			return err
		}
		return exitOnErrors(ds)
	}
	tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
	for _, s := range a.Stacks {
		extra := ""
		if len(s.Dependencies) > 0 {
			extra = " (depends on " + strings.Join(s.Dependencies, ", ") + ")"
		}
		if s.Missing {
			extra += " (template missing)"
		}
		fmt.Fprintf(tw, "%s\t%d resource(s)\t%d output(s)\n", view.Sanitize(s.ID+extra), len(s.Resources), len(s.Outputs))
		for _, r := range s.Resources {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", view.Sanitize(r.LogicalID), view.Sanitize(r.Type), view.Sanitize(r.Provider))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	view.Diagnostics(f.IO.ErrOut, ds, cfg.Verbose || ds.HasErrors(), f.IO.Color && !cfg.NoColor)
	return exitOnErrors(ds)
}

// exitOnErrors returns the exit error of code 1 when ds has errors (already printed), else nil.
func exitOnErrors(ds diag.Diagnostics) error {
	if ds.HasErrors() {
		return &cli.ExitError{Code: cli.ExitErr}
	}
	return nil
}
