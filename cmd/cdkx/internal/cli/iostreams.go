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
	// Color enables lipgloss colours on ErrOut (terminal, NO_COLOR unset, --no-color unset; or
	// CLICOLOR_FORCE set).
	Color bool
	// Width is the terminal width in columns (80 when unknown).
	Width int
}

// System returns streams on the process's stdin, stdout and stderr, detecting terminals and honouring
// NO_COLOR, CLICOLOR_FORCE and CI.
func System() *IOStreams {
	io := &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr, Width: 80}
	io.InTTY = term.IsTerminal(int(os.Stdin.Fd()))
	io.ErrTTY = term.IsTerminal(int(os.Stderr.Fd()))
	if io.ErrTTY {
		if w, _, err := term.GetSize(int(os.Stderr.Fd())); err == nil && w > 0 {
			io.Width = w
		}
	}
	io.Color = io.ErrTTY && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
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
