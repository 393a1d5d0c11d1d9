// Package validate implements `cdkx validate`: check the cloud assembly as a deploy would, without state,
// network or provider calls.
package validate

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/view"
	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/pkg/diag"
)

// Options are the inputs of one `cdkx validate`.
type Options struct {
	F      *cli.Factory
	Config *cli.Config
}

// NewCmdValidate returns the validate command; runF replaces validateRun in tests.
func NewCmdValidate(f *cli.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{F: f}
	return &cobra.Command{
		Use:   "validate",
		Short: "Check the cloud assembly without deploying it",
		Long: `Validate reads the cloud assembly and checks it as a deploy does before its first provider call: the
manifest and templates, references (dependsOn, {ref, attr}, {stackRef, outputKey}), every resource
against its provider's schema, and dependency cycles. It reads no state, opens no network connection
and calls no provider, so it runs anywhere, before any credentials exist.

It prints every problem on stderr (warnings too) and one line on stdout when the assembly is valid.
Exit 0 when it is valid (warnings allowed), 1 when it has errors.

With --json: one object on stdout, {"app", "valid", "stacks", "resources", "errors", "warnings",
"diagnostics": [{"severity", "summary", "detail", "file", "path", "line", "column"}]}; "stacks" and
"resources" count the valid assembly and are 0 when it has errors.`,
		Example: `  cdkx validate --app testdata/examples/dns/cdkx.out
  cdkx validate --app testdata/examples/platform/cdkx.out --json | jq .diagnostics`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := cli.LoadConfig(cmd.Flags(), f.Getenv)
			if err != nil {
				return err
			}
			opts.Config = cfg
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return validateRun(cmd.Context(), opts)
		},
	}
}

// Result is what --json prints: the verdict, the assembly's size and every diagnostic, sorted.
type Result struct {
	App         string            `json:"app"`
	Valid       bool              `json:"valid"`
	Stacks      int               `json:"stacks"`
	Resources   int               `json:"resources"`
	Errors      int               `json:"errors"`
	Warnings    int               `json:"warnings"`
	Diagnostics []diag.Diagnostic `json:"diagnostics"`
}

func validateRun(_ context.Context, opts *Options) error {
	f, cfg := opts.F, opts.Config
	a, _, _, ds := operation.Load(cfg.App, f.Providers())
	res := Result{App: cfg.App, Valid: a != nil, Errors: len(ds.Errors()), Diagnostics: ds}
	res.Warnings = len(ds) - res.Errors
	if res.Diagnostics == nil {
		res.Diagnostics = []diag.Diagnostic{}
	}
	if a != nil {
		res.Stacks = len(a.Stacks)
		for _, s := range a.Stacks {
			res.Resources += len(s.Resources)
		}
	}
	if cfg.JSON {
		if err := view.JSONEncoder(f.IO.Out).Encode(res); err != nil {
			return err
		}
	} else {
		view.Diagnostics(f.IO.ErrOut, ds, true, f.IO.Color && !cfg.NoColor)
		if a == nil {
			view.DiagnosticsFooter(f.IO.ErrOut, ds, "a deploy would stop before any provider call")
		} else {
			fmt.Fprintf(f.IO.Out, "✓ %s: %s, %s valid%s\n", view.Sanitize(cfg.App), plural(res.Stacks, "stack"),
				plural(res.Resources, "resource"), warnings(res.Warnings))
		}
	}
	if a == nil {
		return &cli.ExitError{Code: cli.ExitErr}
	}
	return nil
}

// plural renders "1 stack" or "3 stacks".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// warnings renders " (2 warnings)", or "" for none.
func warnings(n int) string {
	if n == 0 {
		return ""
	}
	return " (" + plural(n, "warning") + ")"
}
