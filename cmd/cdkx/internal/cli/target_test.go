package cli_test

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/deploy"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/destroy"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/diff"
)

// TestTargetFlags checks that deploy, diff and destroy take --target and --exclude, repeatable, each value
// kept whole (no comma splitting).
func TestTargetFlags(t *testing.T) {
	t.Parallel()
	f := &cli.Factory{IO: &cli.IOStreams{}, Getenv: func(string) string { return "" }}
	var got []*cli.TargetFlags
	cmds := []*cobra.Command{
		deploy.NewCmdDeploy(f, func(_ context.Context, o *deploy.Options) error { got = append(got, &o.Target); return nil }),
		diff.NewCmdDiff(f, func(_ context.Context, o *diff.Options) error { got = append(got, &o.Target); return nil }),
		destroy.NewCmdDestroy(f, func(_ context.Context, o *destroy.Options) error { got = append(got, &o.Target); return nil }),
	}
	args := []string{"--app", os.DevNull, "--target", "App/Www", "--exclude", "Mail", "--target", "Zone,Other"}
	want := cli.TargetFlags{Targets: []string{"App/Www", "Zone,Other"}, Excludes: []string{"Mail"}}
	for _, cmd := range cmds {
		root := cli.NewRootCmd("test")
		root.AddCommand(cmd)
		root.SetArgs(append([]string{cmd.Name()}, args...))
		root.SetOut(&bytes.Buffer{})
		root.SetErr(&bytes.Buffer{})
		if err := root.Execute(); err != nil {
			t.Fatalf("%s %q: %v", cmd.Name(), args, err)
		}
		if len(got) == 0 {
			t.Fatalf("%s: runF not called", cmd.Name())
		}
		tf := got[len(got)-1]
		if diff := cmp.Diff(want, *tf); diff != "" {
			t.Errorf("%s %q flags (-want +got):\n%s", cmd.Name(), args, diff)
		}
		if !tf.Active() {
			t.Errorf("%s: Active() = false, want true", cmd.Name())
		}
	}
	if (&cli.TargetFlags{}).Active() {
		t.Error("Active() of no flags = true, want false")
	}
}
