// Package diag describes user-facing problems: a summary, a detail that says what to do next, and where.
package diag

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Severity orders diagnostics: errors stop a command, warnings are printed and ignored.
type Severity int

const (
	// Error stops the command before any provider call.
	Error Severity = iota
	// Warning is reported and the command goes on.
	Warning
)

// String returns "error" or "warning".
func (s Severity) String() string {
	if s == Warning {
		return "warning"
	}
	return "error"
}

// MarshalText renders the severity as "error" or "warning", its name in JSON output.
func (s Severity) MarshalText() ([]byte, error) {
	return []byte(s.String()), nil
}

// UnmarshalText reads "error" or "warning".
func (s *Severity) UnmarshalText(b []byte) error {
	switch string(b) {
	case "error":
		*s = Error
	case "warning":
		*s = Warning
	default:
		return fmt.Errorf("severity %q: want error or warning", b)
	}
	return nil
}

// Diagnostic is one problem found in user input.
//
// File is the path as the user would type it (e.g. "cdkx.out/AppStack.json"); Path is a dotted JSON path
// inside that file (e.g. "resources.Web.properties.ttl"); Line and Column are 1-based and set only for
// syntax errors. Summary is one short sentence; Detail says what to do next and may be empty.
type Diagnostic struct {
	Severity Severity `json:"severity"`
	Summary  string   `json:"summary"`
	Detail   string   `json:"detail,omitempty"`
	File     string   `json:"file,omitempty"`
	Path     string   `json:"path,omitempty"`
	Line     int      `json:"line,omitempty"`
	Column   int      `json:"column,omitempty"`
}

// Location renders "file:line:col: path" with the parts that are set, or "" when none is.
func (d Diagnostic) Location() string {
	var b strings.Builder
	b.WriteString(d.File)
	if d.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", d.Line, d.Column)
	}
	if d.Path != "" {
		if b.Len() > 0 {
			b.WriteString(": ")
		}
		b.WriteString(d.Path)
	}
	return b.String()
}

// String renders the diagnostic on one line, e.g.
// "error: cdkx.out/App.json: resources.Web.dependsOn[0]: unknown resource "Zon" (did you mean "Zone"?)".
func (d Diagnostic) String() string {
	s := d.Severity.String() + ": "
	if loc := d.Location(); loc != "" {
		s += loc + ": "
	}
	s += d.Summary
	if d.Detail != "" {
		s += "; " + d.Detail
	}
	return s
}

// Diagnostics is a list of problems, usually all that one validation pass found.
type Diagnostics []Diagnostic

// Errorf appends an error diagnostic at file and path.
func (ds *Diagnostics) Errorf(file, path, format string, args ...any) {
	*ds = append(*ds, Diagnostic{Severity: Error, File: file, Path: path, Summary: fmt.Sprintf(format, args...)})
}

// Warnf appends a warning diagnostic at file and path.
func (ds *Diagnostics) Warnf(file, path, format string, args ...any) {
	*ds = append(*ds, Diagnostic{Severity: Warning, File: file, Path: path, Summary: fmt.Sprintf(format, args...)})
}

// HasErrors reports whether any diagnostic is an error.
func (ds Diagnostics) HasErrors() bool {
	return slices.ContainsFunc(ds, func(d Diagnostic) bool { return d.Severity == Error })
}

// Errors returns only the error diagnostics.
func (ds Diagnostics) Errors() Diagnostics {
	return slices.DeleteFunc(slices.Clone(ds), func(d Diagnostic) bool { return d.Severity != Error })
}

// Sort orders diagnostics by file, path, line and summary, so that output is stable between runs.
func (ds Diagnostics) Sort() {
	slices.SortStableFunc(ds, func(a, b Diagnostic) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Path, b.Path), cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Summary, b.Summary))
	})
}

// Err returns the error diagnostics as an error (a *ListError), or nil when there are none.
func (ds Diagnostics) Err() error {
	errs := ds.Errors()
	if len(errs) == 0 {
		return nil
	}
	return &ListError{Diagnostics: errs}
}

// ListError carries error diagnostics through a Go error return; the CLI prints each one.
type ListError struct {
	Diagnostics Diagnostics
}

// Error joins the diagnostics, one a line.
func (e *ListError) Error() string {
	lines := make([]string, len(e.Diagnostics))
	for i, d := range e.Diagnostics {
		lines[i] = d.String()
	}
	return strings.Join(lines, "\n")
}
