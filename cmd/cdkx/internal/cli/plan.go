package cli

import (
	"github.com/spf13/pflag"

	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/view"
	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/pkg/diag"
	"github.com/cdkx-dev/cdkx/planner"
)

// PlanFlags choose what a deploy or a diff covers: the named stacks (positional arguments), --exclusively,
// --replace, --target and --exclude.
type PlanFlags struct {
	Stacks      []string
	Exclusively bool
	// Replace are the --replace IDs: resources replaced even though nothing changed.
	Replace []string
	// Target holds --target and --exclude.
	Target TargetFlags
}

// Register adds --exclusively, --replace, --target and --exclude to fs.
func (p *PlanFlags) Register(fs *pflag.FlagSet) {
	fs.StringArrayVar(&p.Replace, "replace", nil, "replace this resource (Stack/LogicalID, or a LogicalID unique across the stacks) even if nothing changed; repeatable")
	fs.BoolVarP(&p.Exclusively, "exclusively", "e", false, "only the named stacks, not the stacks they depend on")
	p.Target.Register(fs, false)
}

// Loaded is a validated assembly with the providers it was validated against and the dependency graph
// of all its stacks.
type Loaded struct {
	*assembly.Assembly
	Registry *engine.Registry
	// Graph is the graph of every stack, built by validation; MakePlan reuses it when a run covers them all.
	Graph *planner.Graph
	// Files are the manifest and templates as read, for the snapshot of the run's deployments.
	Files map[string][]byte
}

// LoadAssembly reads and validates the assembly of cfg.App against the providers of f, printing the
// diagnostics on stderr. With errors it prints how many and what happens next (e.g. "nothing was
// deployed") and returns an ExitError with code ExitErr.
func LoadAssembly(f *Factory, cfg *Config, consequence string) (*Loaded, error) {
	reg := f.Providers()
	a, files, g, ds := operation.Load(cfg.App, reg)
	view.Diagnostics(f.IO.ErrOut, ds, cfg.Verbose, f.IO.Color && !cfg.NoColor)
	if a == nil {
		view.DiagnosticsFooter(f.IO.ErrOut, ds, consequence)
		return nil, &ExitError{Code: ExitErr}
	}
	return &Loaded{Assembly: a, Registry: reg, Graph: g, Files: files}, nil
}

// Selection returns what the plan flags select among stacks (the selected stacks, in deployment order).
func (p *PlanFlags) Selection(stacks []string) operation.Selection {
	return operation.Selection{Stacks: stacks, Targets: p.Target.Targets, Excludes: p.Target.Excludes, Replace: p.Replace}
}

// ShowPlanDiagnostics prints a plan's diagnostics and, when targeting is in effect, its warning line; when
// the plan failed (p nil), the footer that says how many errors and what happens next.
func ShowPlanDiagnostics(f *Factory, cfg *Config, p *planner.Plan, ds diag.Diagnostics, consequence string) {
	view.Diagnostics(f.IO.ErrOut, ds, cfg.Verbose, f.IO.Color && !cfg.NoColor)
	if p == nil {
		view.DiagnosticsFooter(f.IO.ErrOut, ds, consequence)
		return
	}
	view.WarnTargeting(f.IO.ErrOut, p.Selection)
}
