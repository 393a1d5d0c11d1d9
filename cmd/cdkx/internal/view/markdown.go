package view

import (
	"fmt"
	"html"
	"io"
	"strings"
	"time"

	"github.com/cdkx-dev/cdkx/operation/plantext"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// markdownPlan renders a plan as GitHub Markdown for a pull-request comment: the summary line, then per
// stack a collapsible section (<details>) whose summary names the stack and its counts and whose body is
// a ```diff block of the steps as Plan prints them, each line led by the diff column GitHub colours (+
// create, - delete, ! update or replace). Nothing in it is an escape code; every value went through
// Sanitize, names in HTML are escaped, and no line of a block can close its fence.
func markdownPlan(w io.Writer, stacks []stackPlan) {
	c, u, r, d := totals(stacks)
	fmt.Fprintf(w, "**Plan:** %d to create, %d to update, %d to replace, %d to delete.\n", c, u, r, d)
	for _, sp := range stacks {
		name := "<code>" + fence(html.EscapeString(Sanitize(sp.name))) + "</code>"
		if sp.unchanged() {
			fmt.Fprintf(w, "\nStack %s: no changes\n", name)
			continue
		}
		fmt.Fprintf(w, "\n<details><summary>Stack %s: %s</summary>\n\n```diff\n", name, countsText(sp.plan))
		for _, s := range sp.steps() {
			for _, l := range plantext.StepLines(s) {
				fmt.Fprintln(w, fence(diffColumn(l.Under)+" "+renderLine(l, newPalette(false))))
			}
		}
		if len(sp.outputs) > 0 {
			fmt.Fprintln(w, "    Outputs:")
			for _, line := range sp.outputs {
				fmt.Fprintln(w, fence(diffColumn(line[:1])+"     "+line))
			}
		}
		fmt.Fprint(w, "```\n\n</details>\n")
	}
}

// DeploymentMarkdown prints one deployment and its recorded plan as GitHub Markdown for a pull-request
// comment: a line naming the deployment, its stack, status and who created it, who approved or rejected
// it with their comment (a text block), its message in a text block, then its plan as markdownPlan
// renders it.
func DeploymentMarkdown(w io.Writer, d *state.Deployment) {
	code := func(s string) string { return "<code>" + fence(html.EscapeString(Sanitize(s))) + "</code>" }
	fmt.Fprintf(w, "**Deployment** %s of stack %s: %s, created %s by %s\n", code(d.ID), code(d.Stack),
		code(string(d.Status)), d.CreatedAt.UTC().Format(time.RFC3339), code(d.CreatedBy))
	textBlock := func(s string) {
		fmt.Fprintln(w, "\n```text")
		for _, line := range strings.Split(s, "\n") {
			fmt.Fprintln(w, fence("  "+Sanitize(line)))
		}
		fmt.Fprintln(w, "```")
	}
	for _, r := range []struct{ verb, by, comment string }{
		{"Approved", d.ApprovedBy, d.ApprovalComment}, {"Rejected", d.RejectedBy, d.RejectionComment},
	} {
		switch {
		case r.by == "":
		case r.comment == "":
			fmt.Fprintf(w, "\n%s by %s\n", r.verb, code(r.by))
		default:
			fmt.Fprintf(w, "\n%s by %s, who wrote:\n", r.verb, code(r.by))
			textBlock(r.comment)
		}
	}
	if d.Message != "" {
		textBlock(d.Message)
	}
	fmt.Fprintln(w)
	if d.Plan == nil {
		fmt.Fprintln(w, "No plan was recorded.")
		return
	}
	markdownPlan(w, []stackPlan{{name: d.Stack, plan: d.Plan}})
}

// diffColumn is the first column of a ```diff line for a step's mark: + and - as they are, ! (GitHub's
// "changed") for updates and replacements.
func diffColumn(mark string) string {
	switch mark {
	case "+", "-":
		return mark
	case "":
		return " "
	}
	return "!"
}

// fence keeps a line of a fenced block from closing it: a run of three backticks is broken by spaces.
func fence(line string) string {
	for strings.Contains(line, "```") {
		line = strings.ReplaceAll(line, "```", "` ``")
	}
	return line
}

// countsText is "1 to create, 2 to update" with only the counts that are not zero.
func countsText(p *state.Plan) string {
	if p == nil {
		return "no changes"
	}
	var parts []string
	for _, c := range []struct {
		n    int
		verb string
	}{{p.Create, "create"}, {p.Update, "update"}, {p.Replace, "replace"}, {p.Delete, "delete"}} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d to %s", c.n, c.verb))
		}
	}
	if len(parts) == 0 {
		return "outputs change"
	}
	return strings.Join(parts, ", ")
}

// Output formats of the commands that print a plan (--format).
const (
	FormatText     = "text"
	FormatMarkdown = "markdown"
)

// ParseFormat checks a --format value: "" or "text" is FormatText, "markdown" FormatMarkdown; asJSON
// (--json) goes with text only.
func ParseFormat(format string, asJSON bool) (string, error) {
	switch format {
	case "", FormatText:
		return FormatText, nil
	case FormatMarkdown:
		if asJSON {
			return "", fmt.Errorf("--format markdown and --json: choose one")
		}
		return FormatMarkdown, nil
	}
	return "", fmt.Errorf("--format %q: not a format; use text or markdown", format)
}
