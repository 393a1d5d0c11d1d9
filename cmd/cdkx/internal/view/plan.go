package view

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/charmbracelet/lipgloss"

	"github.com/cdkx-dev/cdkx/operation"
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
			for _, l := range stepLines(s) {
				fmt.Fprintln(w, l.render(pal))
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

// planLine is one line of a rendered step: indent, mark, text (sanitized) and a tail drawn as a warning.
type planLine struct {
	indent, mark, text, tail string
	// under is the mark of the step the line belongs to (Markdown's diff column).
	under string
}

func (l planLine) render(pal palette) string {
	var b strings.Builder
	b.WriteString(l.indent)
	switch l.mark {
	case "":
	case "+":
		b.WriteString(pal.add.Render(l.mark) + " ")
	case "~", "#":
		b.WriteString(pal.change.Render(l.mark) + " ")
	default:
		b.WriteString(pal.remove.Render(l.mark) + " ")
	}
	b.WriteString(l.text)
	if l.tail != "" {
		b.WriteString(pal.remove.Render(l.tail))
	}
	return b.String()
}

// wholeValueWidth is the longest rendering of a create's input shown on one line; a longer list or object
// is shown one element a line.
const wholeValueWidth = 60

// Replacement marks, Terraform's: the old object goes first (-/+) or last (+/-).
const (
	markDeleteFirst = "-/+"
	markCreateFirst = "+/-"
)

// stepLines renders one recorded step: its header, its notes, then its inputs (create) or its changes
// one element a line.
func stepLines(s state.PlanStep) []planLine {
	typ, id := Sanitize(s.Type), Sanitize(logicalID(s))
	var head planLine
	switch s.Op {
	case string(planner.OpCreate):
		head = planLine{indent: "  ", mark: "+", text: typ + " " + id}
	case string(planner.OpUpdate):
		head = planLine{indent: "  ", mark: "~", text: typ + " " + id}
	case string(planner.OpReplace):
		head = planLine{mark: markCreateFirst, text: fmt.Sprintf("%s %s (replace, create first: %s)", typ, id, Sanitize(s.Reason))}
		if s.Replacement == state.ReplaceDeleteFirst {
			head = planLine{mark: markDeleteFirst, text: fmt.Sprintf("%s %s (replace, delete first: %s)", typ, id, Sanitize(s.Reason))}
		}
	case string(planner.OpDelete):
		head = planLine{indent: "  ", mark: "-", text: fmt.Sprintf("%s %s (%s)", typ, id, Sanitize(s.Reason))}
	default:
		head = planLine{indent: "  ", mark: "?", text: Sanitize(s.Op) + " " + typ + " " + id}
	}
	head.under = head.mark
	lines := []planLine{head}
	for _, n := range s.Notes {
		lines = append(lines, planLine{indent: "      ", mark: "#", text: Sanitize(n), under: head.mark})
	}
	var body []planLine
	var paths []string
	if s.Op == string(planner.OpCreate) {
		for _, k := range sortedKeys(s.Inputs) {
			v := s.Inputs[k]
			elems := []planner.ElementChange{{Path: k, New: v}}
			if len(Value(v)) > wholeValueWidth {
				if parts := (planner.PropertyChange{Name: k, New: v}).Elements(); len(parts) > 0 {
					elems = parts
				}
			}
			for _, e := range elems {
				paths = append(paths, Sanitize(e.Path))
				body = append(body, planLine{indent: "      ", text: " = " + Value(e.New), under: head.mark})
			}
		}
	}
	for _, c := range s.Changes {
		tail := ""
		if c.CreateOnly {
			tail = " # forces replacement"
		}
		elems := planner.PropertyChange{Name: c.Name, Old: c.Old, New: c.New}.Elements()
		if len(elems) == 0 { // a write-only value changed: both sides show as (sensitive)
			elems = []planner.ElementChange{{Path: c.Name, Old: c.Old, New: c.New}}
		}
		for _, e := range elems {
			l := planLine{indent: "      ", tail: tail, under: head.mark}
			switch {
			case e.Old == nil:
				l.mark, l.text = "+", " = "+Value(e.New)
			case e.New == nil:
				l.mark, l.text = "-", " = "+Value(e.Old)
			default:
				l.mark, l.text = "~", " = "+Value(e.Old)+" → "+Value(e.New)
			}
			paths = append(paths, Sanitize(e.Path))
			body = append(body, l)
		}
	}
	if len(s.Changes) == 0 && s.Op != string(planner.OpCreate) {
		for _, p := range s.Paths { // a record made before plans kept values: its paths alone
			paths = append(paths, Sanitize(p))
			body = append(body, planLine{indent: "      ", mark: "~", under: head.mark})
		}
	}
	width := 0
	for _, p := range paths {
		width = max(width, lipgloss.Width(p))
	}
	for i := range body {
		body[i].text = pad(paths[i], width) + body[i].text
		if body[i].text = strings.TrimRight(body[i].text, " "); body[i].text == "" {
			body[i].text = paths[i]
		}
	}
	return append(lines, body...)
}

// logicalID is the step's logical ID, taken from its Resource ("Stack/LogicalID") in records made before
// steps carried it.
func logicalID(s state.PlanStep) string {
	if s.LogicalID != "" {
		return s.LogicalID
	}
	_, id, _ := strings.Cut(s.Resource, "/")
	return id
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

// Value renders a property value as compact JSON, with (known after deploy) for unknown parts and
// (sensitive) for a write-only value, sanitized
// (see Sanitize): JSON escapes control characters in strings but not bidirectional overrides.
func Value(v any) string {
	if _, ok := v.(resource.Unknown); ok {
		return resource.Unknown{}.String()
	}
	b, err := json.Marshal(v)
	if err != nil {
		return Sanitize(fmt.Sprint(v))
	}
	s := strings.ReplaceAll(string(b), `"`+resource.Unknown{}.String()+`"`, resource.Unknown{}.String())
	if s == `"`+resource.Sensitive+`"` {
		s = resource.Sensitive
	}
	return Sanitize(s)
}

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
