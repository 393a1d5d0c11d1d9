package view

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/operation/plantext"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/planner"
)

// Plan renders a plan the way `terraform plan` does: `+` create, `~` update with the changed properties,
// `-/+` replace deleting first or `+/-` replace creating first with its reason, `-` delete, each with the
// harm its schema declares on a `# note` line; then `Plan: N to create, N to update, N to replace, N to
// delete.` Lists and objects are shown one changed element a line (planner.PropertyChange.Elements).
// A create's inputs are shown whole when short, else one element a line too. Values not known before
// deploy print as (known after deploy). What it prints is what the plan's records hold
// (operation.PlanRecords), so that `diff`, `diff --json` and `deployments show` show one thing.
// Every name, value and reason it prints goes through Sanitize.
func Plan(w io.Writer, p *planner.Plan, color bool) {
	renderPlan(w, newPalette(color), stacksOf(p))
}

// RecordedPlan renders the plan recorded for one deployment of stack as Plan renders a plan.
func RecordedPlan(w io.Writer, stack string, p *state.Plan, color bool) {
	renderPlan(w, newPalette(color), []stackPlan{{name: stack, plan: p}})
}

// PlanMarkdown renders p as GitHub Markdown for a pull-request comment (see markdownPlan).
func PlanMarkdown(w io.Writer, p *planner.Plan) {
	markdownPlan(w, stacksOf(p))
}

// stacksOf returns p's stacks in deployment order with their records (operation.PlanRecords) and
// output changes.
func stacksOf(p *planner.Plan) []stackPlan {
	recs := operation.PlanRecords(p)
	stacks := make([]stackPlan, 0, len(p.Stacks))
	for _, name := range p.Stacks {
		stacks = append(stacks, stackPlan{name: name, plan: recs[name], outputs: outputChanges(p, name)})
	}
	return stacks
}

// stackPlan is one stack's part of a plan as the renderers take it: its recorded steps and, for a plan
// made now, the lines of its output changes.
type stackPlan struct {
	name    string
	plan    *state.Plan
	outputs []string
}

func (s stackPlan) steps() []state.PlanStep {
	if s.plan == nil {
		return nil
	}
	return s.plan.Steps
}

// unchanged reports whether the stack has nothing to show: no step, no output change, counts of zero.
func (s stackPlan) unchanged() bool {
	c, u, r, d := totals([]stackPlan{s})
	return len(s.steps()) == 0 && len(s.outputs) == 0 && c+u+r+d == 0
}

func totals(stacks []stackPlan) (c, u, r, d int) {
	for _, s := range stacks {
		if s.plan != nil {
			c, u, r, d = c+s.plan.Create, u+s.plan.Update, r+s.plan.Replace, d+s.plan.Delete
		}
	}
	return c, u, r, d
}

func renderPlan(w io.Writer, pal palette, stacks []stackPlan) {
	for _, sp := range stacks {
		if sp.unchanged() {
			fmt.Fprintf(w, "Stack %s: no changes\n\n", pal.bold.Render(Sanitize(sp.name)))
			continue
		}
		fmt.Fprintf(w, "Stack %s\n", pal.bold.Render(Sanitize(sp.name)))
		for _, s := range sp.steps() {
			for _, l := range plantext.StepLines(s) {
				fmt.Fprintln(w, renderLine(l, pal))
			}
		}
		if len(sp.outputs) > 0 {
			fmt.Fprintln(w, "  Outputs:")
			for _, line := range sp.outputs {
				fmt.Fprintln(w, "    "+line)
			}
		}
		fmt.Fprintln(w)
	}
	c, u, r, d := totals(stacks)
	fmt.Fprintf(w, "Plan: %d to create, %d to update, %d to replace, %d to delete.\n", c, u, r, d)
}

// renderLine draws one plan line with the palette's colours (plantext.Line.String without colour).
func renderLine(l plantext.Line, pal palette) string {
	var b strings.Builder
	b.WriteString(l.Indent)
	switch l.Mark {
	case "":
	case "+":
		b.WriteString(pal.add.Render(l.Mark) + " ")
	case "~", "#":
		b.WriteString(pal.change.Render(l.Mark) + " ")
	default:
		b.WriteString(pal.remove.Render(l.Mark) + " ")
	}
	b.WriteString(l.Text)
	if l.Tail != "" {
		b.WriteString(pal.remove.Render(l.Tail))
	}
	return b.String()
}

func outputChanges(p *planner.Plan, stack string) []string {
	next := p.Outputs[stack]
	var prev resource.Properties
	if st := p.State[stack]; st != nil {
		prev = st.Outputs
	}
	var out []string
	for _, k := range sortedKeys(next) {
		old, had := prev[k]
		switch {
		case !had:
			out = append(out, fmt.Sprintf("+ %s = %s", Sanitize(k), Value(next[k])))
		case !resource.Equal(old, next[k]):
			out = append(out, fmt.Sprintf("~ %s = %s → %s", Sanitize(k), Value(old), Value(next[k])))
		}
	}
	for _, k := range sortedKeys(prev) {
		if _, ok := next[k]; !ok {
			out = append(out, fmt.Sprintf("- %s = %s", Sanitize(k), Value(prev[k])))
		}
	}
	return out
}

// Value renders a property value as compact JSON (plantext.Value).
func Value(v any) string { return plantext.Value(v) }

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Outputs prints stack outputs as "Stack.Key = value" lines, stacks in the given order, sanitized.
func Outputs(w io.Writer, stacks []string, outputs map[string]map[string]any) {
	first := true
	for _, s := range stacks {
		for _, k := range sortedKeys(outputs[s]) {
			if first {
				fmt.Fprintln(w, "Outputs:")
				first = false
			}
			fmt.Fprintf(w, "%s.%s = %s\n", Sanitize(s), Sanitize(k), Value(outputs[s][k]))
		}
	}
}
