// Package view renders what commands show: the live event table, JSON lines, plans and diagnostics.
package view

import (
	"strings"

	"github.com/charmbracelet/lipgloss"

	"github.com/cdkx-dev/cdkx/engine"
)

// palette holds the styles of one output; without colour every style renders text as it is.
type palette struct {
	ok, bad, busy, dim, bold, add, change, remove lipgloss.Style
}

func newPalette(color bool) palette {
	if !color {
		s := lipgloss.NewStyle()
		return palette{s, s, s, s, s, s, s, s}
	}
	r := lipgloss.NewRenderer(nil)
	r.SetColorProfile(0) // termenv.TrueColor; the caller decided colour is wanted
	st := func(c string) lipgloss.Style { return r.NewStyle().Foreground(lipgloss.Color(c)) }
	return palette{ok: st("2"), bad: st("1"), busy: st("3"), dim: st("8"), bold: r.NewStyle().Bold(true),
		add: st("2"), change: st("3"), remove: st("1")}
}

func (p palette) status(s engine.Status) lipgloss.Style {
	switch {
	case s.Failed():
		return p.bad
	case s.InProgress():
		return p.busy
	case s == engine.Skipped || s == engine.NoChanges:
		return p.dim
	case s.Complete():
		return p.ok
	}
	return lipgloss.NewStyle()
}

func pad(s string, width int) string {
	if n := lipgloss.Width(s); n < width {
		return s + strings.Repeat(" ", width-n)
	}
	return s
}
