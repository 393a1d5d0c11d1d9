package view

import (
	"fmt"
	"io"

	"github.com/charmbracelet/x/ansi"

	"github.com/cdkx-dev/cdkx/operation"
)

// Deletions renders what a destroy will delete, stack by stack as Plan renders deletions:
// `  - <type> <logicalId> (<physical ID>)`, then `Destroy: N to delete in <stacks>.` Every name and ID
// it prints goes through Sanitize; a row longer than width columns (0: no limit) is shortened with "…".
func Deletions(w io.Writer, deletions []operation.Deletion, color bool, width int) {
	pal := newPalette(color)
	var stacks []string
	for i, d := range deletions {
		if i == 0 || deletions[i-1].Stack != d.Stack {
			if i > 0 {
				fmt.Fprintln(w)
			}
			stacks = append(stacks, Sanitize(d.Stack))
			fmt.Fprintf(w, "Stack %s\n", pal.bold.Render(Sanitize(d.Stack)))
		}
		line := fmt.Sprintf("  %s %s %s", pal.remove.Render("-"), Sanitize(d.Type), Sanitize(d.LogicalID))
		if d.PhysicalID != "" {
			line += " " + pal.dim.Render("("+Sanitize(d.PhysicalID)+")")
		}
		if width > 0 {
			line = ansi.Truncate(line, width, "…")
		}
		fmt.Fprintln(w, line)
	}
	if len(deletions) > 0 {
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "Destroy: %d to delete in %s.\n", len(deletions), joinAnd(stacks))
}

// joinAnd joins names as "A", "A and B", "A, B and C".
func joinAnd(names []string) string {
	switch len(names) {
	case 0:
		return "no stack"
	case 1:
		return names[0]
	}
	out := names[0]
	for _, n := range names[1 : len(names)-1] {
		out += ", " + n
	}
	return out + " and " + names[len(names)-1]
}
