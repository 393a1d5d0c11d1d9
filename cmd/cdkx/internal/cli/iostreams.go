// Package cli holds what every cdkx command shares: IO streams, configuration, the factory of lazy
// constructors and the exit codes.
package cli

import (
	"io"
	"os"
	"strconv"

	"golang.org/x/term"
)

// IOStreams are a command's input and outputs: data goes to Out, progress and problems to ErrOut.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// InTTY and ErrTTY tell whether stdin and stderr are terminals (prompts, live table).
	InTTY  bool
	ErrTTY bool
	// Color enables lipgloss colours on ErrOut (terminal, CI, NO_COLOR and --no-color unset, TERM not
	// dumb; or CLICOLOR_FORCE set).
	Color bool
	// Width is the terminal width in columns (80 when unknown).
	Width int
	// Height is the terminal height in lines (24 when unknown).
	Height int
	// size, when set, asks the terminal on stderr for its width and height again (it may have been
	// resized).
	size func() (width, height int, err error)
}

// System returns streams on the process's stdin, stdout and stderr, detecting terminals and honouring
// NO_COLOR, CLICOLOR_FORCE and CI (set, it turns colours off even on a terminal, as CI logs that record a
// terminal would otherwise keep escape codes).
func System() *IOStreams {
	io := &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr, Width: 80, Height: 24}
	io.InTTY = term.IsTerminal(int(os.Stdin.Fd()))
	io.ErrTTY = term.IsTerminal(int(os.Stderr.Fd()))
	if io.ErrTTY {
		io.size = func() (int, int, error) { return term.GetSize(int(os.Stderr.Fd())) }
		io.Width, io.Height = io.Size()
	}
	io.Color = io.ErrTTY && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb" && os.Getenv("CI") == ""
	if v, err := strconv.ParseBool(os.Getenv("CLICOLOR_FORCE")); err == nil && v {
		io.Color = true
	}
	return io
}

// Interactive reports whether the user can answer a prompt: stdin and stderr are terminals and CI is
// not set.
func (s *IOStreams) Interactive() bool {
	return s.InTTY && s.ErrTTY && os.Getenv("CI") == ""
}

// Live reports whether progress may be rendered for a person (colours, short times): stderr is a
// terminal and CI is not set.
func (s *IOStreams) Live() bool {
	return s.ErrTTY && os.Getenv("CI") == ""
}

// Size returns the terminal's width and height now (a terminal can be resized while a run goes on), or
// Width and Height when stderr is not a terminal or does not say.
func (s *IOStreams) Size() (width, height int) {
	width, height = s.Width, s.Height
	if s.size != nil {
		if w, h, err := s.size(); err == nil && w > 0 && h > 0 {
			width, height = w, h
		}
	}
	if width <= 0 {
		width = 80
	}
	if height <= 0 {
		height = 24
	}
	return width, height
}
