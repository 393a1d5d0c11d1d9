package view

import (
	"fmt"
	"io"

	"github.com/cdkx-dev/cdkx/pkg/diag"
)

// Diagnostics prints each diagnostic as "error: file:line:col: path: summary" with its detail indented
// below, sanitized (see Sanitize): paths and summaries quote names from the assembly. Warnings print only
// when verbose.
func Diagnostics(w io.Writer, ds diag.Diagnostics, verbose, color bool) {
	pal := newPalette(color)
	for _, d := range ds {
		if d.Severity == diag.Warning && !verbose {
			continue
		}
		label := pal.bad.Render("error")
		if d.Severity == diag.Warning {
			label = pal.busy.Render("warning")
		}
		loc := Sanitize(d.Location())
		if loc != "" {
			loc += ": "
		}
		fmt.Fprintf(w, "%s: %s%s\n", label, loc, Sanitize(d.Summary))
		if d.Detail != "" {
			fmt.Fprintf(w, "  %s\n", Sanitize(d.Detail))
		}
	}
}

// DiagnosticsFooter prints how many errors were found, e.g. "3 errors in the assembly; nothing was
// deployed", when there are any.
func DiagnosticsFooter(w io.Writer, ds diag.Diagnostics, what string) {
	n := len(ds.Errors())
	if n == 0 {
		return
	}
	noun := "errors"
	if n == 1 {
		noun = "error"
	}
	fmt.Fprintf(w, "%d %s in the assembly; %s\n", n, noun, what)
}
