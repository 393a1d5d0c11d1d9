// Package plantext renders a recorded plan's steps as text, one line at a time, the way `cdkx diff` and
// `cdkx deployments show` print them: the one renderer of plan values that the CLI (with colour) and the
// web console (as HTML-escaped text) share. Every name, value and reason it returns is sanitized
// (text.Sanitize): no line carries a control or bidirectional character as it is.
package plantext

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/pkg/text"
	"github.com/cdkx-dev/cdkx/planner"
)

// Line is one line of a rendered step: Indent, Mark ("+", "~", "-", "-/+", "+/-", "#", or ""), Text
// (sanitized) and a Tail a renderer draws as a warning (" # forces replacement"). Under is the mark of
// the step the line belongs to (Markdown's diff column).
type Line struct {
	Indent, Mark, Text, Tail, Under string
}

// String is the line as plain text.
func (l Line) String() string {
	var b strings.Builder
	b.WriteString(l.Indent)
	if l.Mark != "" {
		b.WriteString(l.Mark + " ")
	}
	b.WriteString(l.Text)
	b.WriteString(l.Tail)
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

// StepLines renders one recorded step: its header, its notes, then its inputs (create) or its changes
// one element a line.
func StepLines(s state.PlanStep) []Line {
	typ, id := text.Sanitize(s.Type), text.Sanitize(LogicalID(s))
	var head Line
	switch s.Op {
	case string(planner.OpCreate):
		head = Line{Indent: "  ", Mark: "+", Text: typ + " " + id}
	case string(planner.OpUpdate):
		head = Line{Indent: "  ", Mark: "~", Text: typ + " " + id}
	case string(planner.OpReplace):
		head = Line{Mark: markCreateFirst, Text: fmt.Sprintf("%s %s (replace, create first: %s)", typ, id, text.Sanitize(s.Reason))}
		if s.Replacement == state.ReplaceDeleteFirst {
			head = Line{Mark: markDeleteFirst, Text: fmt.Sprintf("%s %s (replace, delete first: %s)", typ, id, text.Sanitize(s.Reason))}
		}
	case string(planner.OpDelete):
		head = Line{Indent: "  ", Mark: "-", Text: fmt.Sprintf("%s %s (%s)", typ, id, text.Sanitize(s.Reason))}
	default:
		head = Line{Indent: "  ", Mark: "?", Text: text.Sanitize(s.Op) + " " + typ + " " + id}
	}
	head.Under = head.Mark
	lines := []Line{head}
	for _, n := range s.Notes {
		lines = append(lines, Line{Indent: "      ", Mark: "#", Text: text.Sanitize(n), Under: head.Mark})
	}
	var body []Line
	var paths []string
	if s.Op == string(planner.OpCreate) {
		for _, k := range SortedKeys(s.Inputs) {
			v := s.Inputs[k]
			elems := []planner.ElementChange{{Path: k, New: v}}
			if len(Value(v)) > wholeValueWidth {
				if parts := (planner.PropertyChange{Name: k, New: v}).Elements(); len(parts) > 0 {
					elems = parts
				}
			}
			for _, e := range elems {
				paths = append(paths, text.Sanitize(e.Path))
				body = append(body, Line{Indent: "      ", Text: " = " + Value(e.New), Under: head.Mark})
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
			l := Line{Indent: "      ", Tail: tail, Under: head.Mark}
			switch {
			case e.Old == nil:
				l.Mark, l.Text = "+", " = "+Value(e.New)
			case e.New == nil:
				l.Mark, l.Text = "-", " = "+Value(e.Old)
			default:
				l.Mark, l.Text = "~", " = "+Value(e.Old)+" → "+Value(e.New)
			}
			paths = append(paths, text.Sanitize(e.Path))
			body = append(body, l)
		}
	}
	if len(s.Changes) == 0 && s.Op != string(planner.OpCreate) {
		for _, p := range s.Paths { // a record made before plans kept values: its paths alone
			paths = append(paths, text.Sanitize(p))
			body = append(body, Line{Indent: "      ", Mark: "~", Under: head.Mark})
		}
	}
	width := 0
	for _, p := range paths {
		width = max(width, ansi.StringWidth(p))
	}
	for i := range body {
		body[i].Text = Pad(paths[i], width) + body[i].Text
		if body[i].Text = strings.TrimRight(body[i].Text, " "); body[i].Text == "" {
			body[i].Text = paths[i]
		}
	}
	return append(lines, body...)
}

// LogicalID is the step's logical ID, taken from its Resource ("Stack/LogicalID") in records made before
// steps carried it.
func LogicalID(s state.PlanStep) string {
	if s.LogicalID != "" {
		return s.LogicalID
	}
	_, id, _ := strings.Cut(s.Resource, "/")
	return id
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
		return text.Sanitize(fmt.Sprint(v))
	}
	s := strings.ReplaceAll(string(b), `"`+resource.Unknown{}.String()+`"`, resource.Unknown{}.String())
	if s == `"`+resource.Sensitive+`"` {
		s = resource.Sensitive
	}
	return text.Sanitize(s)
}

// SortedKeys returns the keys of m, sorted.
func SortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Pad pads s with spaces to width display columns.
func Pad(s string, width int) string {
	if n := ansi.StringWidth(s); n < width {
		return s + strings.Repeat(" ", width-n)
	}
	return s
}
