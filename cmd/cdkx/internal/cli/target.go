package cli

import (
	"github.com/spf13/pflag"
)

// TargetFlags are the --target and --exclude flags of deploy, diff and destroy (see planner.Select and
// planner.SelectDestroy).
type TargetFlags struct {
	Targets  []string
	Excludes []string
}

// Register adds --target and --exclude to fs. For destroy the direction reverses: a target takes its
// dependents with it, an excluded resource keeps its dependencies.
func (t *TargetFlags) Register(fs *pflag.FlagSet, destroy bool) {
	target := "only this resource (Stack/LogicalID, or a LogicalID unique across the stacks) and what it depends on; repeatable"
	exclude := "leave this resource and everything that depends on it alone; repeatable, wins over --target"
	if destroy {
		target = "destroy only this resource (Stack/LogicalID, or a LogicalID unique across the stacks) and everything that depends on it; repeatable"
		exclude = "keep this resource and everything it depends on; repeatable, wins over --target"
	}
	fs.StringArrayVar(&t.Targets, "target", nil, target)
	fs.StringArrayVar(&t.Excludes, "exclude", nil, exclude)
}

// Active reports whether --target or --exclude was given.
func (t *TargetFlags) Active() bool {
	return len(t.Targets)+len(t.Excludes) > 0
}
