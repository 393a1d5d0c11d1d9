package apptest

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/spf13/cobra"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
)

// DefaultConfig returns the configuration cli.LoadConfig makes of no flags and no CDKX_* variables in a
// folder without cdkx.json, changed by change (when not nil).
func DefaultConfig(change func(c *cli.Config)) *cli.Config {
	c := &cli.Config{App: "cdkx.out", State: cli.DefaultStatePath, Concurrency: 10, RequireApproval: cli.ApprovalDestructive}
	if change != nil {
		change(c)
	}
	return c
}

// WantOf returns a builder of a FlagCase's Want: fresh's options (a command's defaults) with change applied
// (nil: none).
func WantOf[O any](fresh func() *O) func(change func(o *O)) *O {
	return func(change func(o *O)) *O {
		o := fresh()
		if change != nil {
			change(o)
		}
		return o
	}
}

// FlagCase is one row of a flag test: a command's arguments and CDKX_* variables, and the options its
// run receives (O is the command's Options type) or the error it ends with.
type FlagCase[O any] struct {
	Name    string
	Args    []string
	Env     map[string]string
	Want    *O
	WantErr string
}

// TestFlags runs each case as a subtest: it sets the case's variables (t.Setenv: viper reads them from the
// process, so the test cannot be parallel), executes the command newCmd returns on FlagFactory with a runF
// that keeps the options, and compares them with the case's (cmp.Diff, field F ignored, empty and nil
// slices equal), or the error's text with WantErr; the run must not be called after an error.
func TestFlags[O any](t *testing.T, tests []FlagCase[O], newCmd func(f *cli.Factory, runF func(context.Context, *O) error) *cobra.Command) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.Name, func(t *testing.T) {
			for k, v := range tt.Env {
				t.Setenv(k, v)
			}
			var got *O
			err := Execute(newCmd(FlagFactory(), func(_ context.Context, o *O) error { got = o; return nil }), tt.Args...)
			if tt.WantErr != "" {
				if err == nil || err.Error() != tt.WantErr {
					t.Fatalf("%q: error %v, want %q", tt.Args, err, tt.WantErr)
				}
				if got != nil {
					t.Errorf("%q: run called despite the error", tt.Args)
				}
				return
			}
			if err != nil {
				t.Fatalf("%q: %v", tt.Args, err)
			}
			var zero O
			if diff := cmp.Diff(tt.Want, got, cmpopts.IgnoreFields(zero, "F"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%q options (-want +got):\n%s", tt.Args, diff)
			}
		})
	}
}

// FlagFactory returns the factory of a flag test that sets CDKX_* variables: empty streams and the
// process's environment (the test sets what it needs with t.Setenv; viper reads the variables from
// there, and cli.LoadConfig checks some through Getenv). Factory's environment is empty.
func FlagFactory() *cli.Factory {
	return &cli.Factory{IO: &cli.IOStreams{In: &bytes.Buffer{}, Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}, Getenv: os.Getenv}
}
