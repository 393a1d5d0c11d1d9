package operation

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/pkg/diag"
	"github.com/cdkx-dev/cdkx/planner"
)

// Load reads the assembly in dir and validates it for deployment in one pass: format, references,
// provider schemas and dependency cycles. It returns every diagnostic, the files it read (what a
// deployment's snapshot pins) and the dependency graph of all stacks that the cycle check built
// (planner.Input.Graph reuses it); the assembly is nil when any diagnostic is an error.
func Load(dir string, reg *engine.Registry) (*assembly.Assembly, map[string][]byte, *planner.Graph, diag.Diagnostics) {
	a, files, ds := assembly.LoadWithFiles(dir)
	if a == nil {
		ds.Sort()
		return nil, nil, nil, ds
	}
	a, g, ds := Validate(a, ds, reg)
	if a == nil {
		return nil, nil, nil, ds
	}
	return a, files, g, ds
}

// SelectStacks returns the stacks named (all when names is empty) plus, unless exclusively, every stack
// they depend on, in deployment order. An unknown name is an error suggesting the nearest stack.
func SelectStacks(a *assembly.Assembly, names []string, exclusively bool) ([]string, error) {
	order := planner.StackOrder(a)
	if len(names) == 0 {
		return order, nil
	}
	want := map[string]bool{}
	var add func(string)
	add = func(id string) {
		if want[id] {
			return
		}
		want[id] = true
		if exclusively {
			return
		}
		for _, d := range a.Stack(id).Dependencies {
			if a.Stack(d) != nil {
				add(d)
			}
		}
	}
	for _, n := range names {
		if a.Stack(n) == nil {
			return nil, fmt.Errorf("no stack %q in the assembly%s (stacks: %s)", n, Suggest(n, order), strings.Join(order, ", "))
		}
		add(n)
	}
	return slices.DeleteFunc(order, func(s string) bool { return !want[s] }), nil
}

// Suggest returns `; did you mean "X"?` for the option name most likely misspells (diag.Nearest), or ""
// when none is close enough.
func Suggest(name string, options []string) string {
	if near := diag.Nearest(name, options); near != "" {
		return fmt.Sprintf("; did you mean %q?", near)
	}
	return ""
}
