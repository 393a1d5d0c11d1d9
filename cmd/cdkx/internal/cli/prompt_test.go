package cli_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
)

// TestConfirm: only y or yes (any case, spaces trimmed) says yes; an empty line or the end of the input
// says no; a cancelled context (the first Ctrl-C) ends the question with exit code 130 at once, although
// nothing was typed.
func TestConfirm(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		input string
		want  bool
	}{
		{"y\n", true}, {"YES\n", true}, {"  yes \n", true}, {"n\n", false}, {"\n", false}, {"", false},
		{"yep\n", false}, {"y", true},
	} {
		var out bytes.Buffer
		got, err := cli.Confirm(context.Background(), &cli.IOStreams{In: strings.NewReader(tc.input), ErrOut: &out}, "Go? (y/N) ", "nothing changed")
		if err != nil || got != tc.want {
			t.Errorf("Confirm(%q) = %t, %v; want %t, nil", tc.input, got, err, tc.want)
		}
		if !strings.HasPrefix(out.String(), "Go? (y/N) ") {
			t.Errorf("Confirm(%q) wrote %q, want the question first", tc.input, out.String())
		}
	}

	r, w := io.Pipe() // nothing is ever typed
	defer func() { _ = w.Close() }()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out bytes.Buffer
	got, err := cli.Confirm(ctx, &cli.IOStreams{In: r, ErrOut: &out}, "Go? (y/N) ", "nothing was changed")
	var ee *cli.ExitError
	if got || !errors.As(err, &ee) || ee.Code != cli.ExitInterrupted || !strings.Contains(err.Error(), "nothing was changed") {
		t.Errorf("Confirm after Ctrl-C = %t, %v; want false and exit 130 saying nothing was changed", got, err)
	}
}
