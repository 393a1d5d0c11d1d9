package view

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/planner"
)

// Plan renders a plan the way `terraform plan` does: `+` create, `~` update with the changed properties,
// `-/+` replace with its reason, `-` delete; then `Plan: N to create, N to update, N to replace, N to
// delete.` Values not known before deploy print as (known after deploy). Every name, value and reason it
// prints goes through Sanitize.
func Plan(w io.Writer, p *planner.Plan, color bool) {
	pal := newPalette(color)
	byStack := map[string][]*planner.Step{} // grouped once: a scan per stack is quadratic in N stacks
	for _, s := range p.Steps {
		if s.Op != planner.OpSame {
			byStack[s.Stack] = append(byStack[s.Stack], s)
		}
	}
	for _, s := range p.Deletes {
		byStack[s.Stack] = append(byStack[s.Stack], s)
	}
	for _, stack := range p.Stacks {
		steps := byStack[stack]
		outs := outputChanges(p, stack)
		if len(steps) == 0 && len(outs) == 0 {
			fmt.Fprintf(w, "Stack %s: no changes\n\n", pal.bold.Render(Sanitize(stack)))
			continue
		}
		fmt.Fprintf(w, "Stack %s\n", pal.bold.Render(Sanitize(stack)))
		for _, s := range steps {
			renderStep(w, pal, s)
		}
		if len(outs) > 0 {
			fmt.Fprintln(w, "  Outputs:")
			for _, line := range outs {
				fmt.Fprintln(w, "    "+line)
			}
		}
		fmt.Fprintln(w)
	}
	c, u, r, d := p.Counts()
	fmt.Fprintf(w, "Plan: %d to create, %d to update, %d to replace, %d to delete.\n", c, u, r, d)
}

func renderStep(w io.Writer, pal palette, s *planner.Step) {
	typ, id := Sanitize(s.Type), Sanitize(s.LogicalID)
	switch s.Op {
	case planner.OpCreate:
		fmt.Fprintf(w, "  %s %s %s\n", pal.add.Render("+"), typ, id)
		inputs := resource.Redact(s.Schema, s.Inputs)
		keys := sortedKeys(inputs)
		names := sanitizeAll(keys)
		width := maxLen(names)
		for i, k := range keys {
			fmt.Fprintf(w, "      %s = %s\n", pad(names[i], width), Value(inputs[k]))
		}
	case planner.OpUpdate:
		fmt.Fprintf(w, "  %s %s %s\n", pal.change.Render("~"), typ, id)
		renderChanges(w, pal, s.Changes)
	case planner.OpReplace:
		fmt.Fprintf(w, "%s %s %s (replace: %s)\n", pal.remove.Render("-/+"), typ, id, Sanitize(s.Reason))
		renderChanges(w, pal, s.Changes)
	case planner.OpDelete:
		what := s.Reason
		if s.Object != nil {
			what = fmt.Sprintf("old object %s, %s", s.Object.PhysicalID, s.Reason)
		}
		fmt.Fprintf(w, "  %s %s %s (%s)\n", pal.remove.Render("-"), typ, id, Sanitize(what))
	}
}

// sanitizeAll returns Sanitize of each string.
func sanitizeAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = Sanitize(s)
	}
	return out
}

func renderChanges(w io.Writer, pal palette, changes []planner.PropertyChange) {
	names := make([]string, len(changes))
	for i, c := range changes {
		names[i] = Sanitize(c.Name)
	}
	width := maxLen(names)
	for i, c := range changes {
		mark := ""
		if c.CreateOnly {
			mark = pal.remove.Render(" # forces replacement")
		}
		name := pad(names[i], width)
		switch {
		case c.Old == nil:
			fmt.Fprintf(w, "      %s %s = %s%s\n", pal.add.Render("+"), name, Value(c.New), mark)
		case c.New == nil:
			fmt.Fprintf(w, "      %s %s = %s%s\n", pal.remove.Render("-"), name, Value(c.Old), mark)
		default:
			fmt.Fprintf(w, "      %s %s = %s → %s%s\n", pal.change.Render("~"), name, Value(c.Old), Value(c.New), mark)
		}
	}
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

// Value renders a property value as compact JSON, with (known after deploy) for unknown parts, sanitized
// (see Sanitize): JSON escapes control characters in strings but not bidirectional overrides.
func Value(v any) string {
	if _, ok := v.(resource.Unknown); ok {
		return resource.Unknown{}.String()
	}
	b, err := json.Marshal(v)
	if err != nil {
		return Sanitize(fmt.Sprint(v))
	}
	s := string(b)
	return Sanitize(strings.ReplaceAll(s, `"`+resource.Unknown{}.String()+`"`, resource.Unknown{}.String()))
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func maxLen(ss []string) int {
	n := 0
	for _, s := range ss {
		n = max(n, len(s))
	}
	return n
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
