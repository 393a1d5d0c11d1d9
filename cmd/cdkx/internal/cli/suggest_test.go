package cli_test

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/deploy"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/deployments"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/destroy"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/diff"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/list"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/outputs"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/server"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/statecmd"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/unlock"
)

// guidedRoot returns the cdkx command with the commands these tests mistype, and what it writes.
func guidedRoot(t *testing.T, args ...string) (*cobra.Command, *bytes.Buffer) {
	t.Helper()
	f := &cli.Factory{IO: &cli.IOStreams{}, Getenv: os.Getenv}
	root := cli.NewRootCmd("test")
	root.AddCommand(deploy.NewCmdDeploy(f, nil), diff.NewCmdDiff(f, nil), destroy.NewCmdDestroy(f, nil),
		list.NewCmdList(f, nil), outputs.NewCmdOutputs(f, nil), deployments.NewCmdDeployments(f),
		deployments.NewCmdList(f, "history"), server.NewCmdServer(f, nil), statecmd.NewCmdState(f),
		unlock.NewCmdUnlock(f, nil))
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	return root, &out
}

// TestGuidance: each mistake in a command line gets one error in one style, with the likely intent and
// where to read the usage, and exit code 1; nothing runs.
func TestGuidance(t *testing.T) {
	t.Chdir(t.TempDir())
	tests := []struct {
		args []string
		want string
	}{
		// Other tools' commands.
		{[]string{"plan"}, `unknown command "plan" for "cdkx"; did you mean "diff"? (terraform plan is cdkx diff)`},
		{[]string{"apply"}, `unknown command "apply" for "cdkx"; did you mean "deploy"? (terraform apply is cdkx deploy)`},
		{[]string{"up"}, `unknown command "up" for "cdkx"; did you mean "deploy"? (pulumi up is cdkx deploy)`},
		{[]string{"preview"}, `unknown command "preview" for "cdkx"; did you mean "diff"? (pulumi preview is cdkx diff)`},
		{[]string{"output"}, `unknown command "output" for "cdkx"; did you mean "outputs"? (terraform output is cdkx outputs)`},
		{[]string{"show"}, `unknown command "show" for "cdkx"; did you mean "list"? (terraform show is cdkx list, with cdkx outputs for the outputs)`},
		{[]string{"force-unlock"}, `unknown command "force-unlock" for "cdkx"; did you mean "unlock"? (terraform force-unlock is cdkx unlock)`},
		{[]string{"down"}, `unknown command "down" for "cdkx"; did you mean "destroy"?`},
		{[]string{"Plan"}, `unknown command "Plan" for "cdkx"; did you mean "diff"? (terraform plan is cdkx diff)`},
		{[]string{"init"}, `unknown command "init" for "cdkx"; cdkx needs no init: it reads the cloud assembly in cdkx.out (or --app) and keeps state in .cdkx/state.db (or --state)`},
		{[]string{"synth"}, `unknown command "synth" for "cdkx"; cdkx deploys the cloud assembly your app synthesized: run the app (cdk synth), then cdkx deploy`},
		// Typos, letter case, and words not close to any command.
		{[]string{"deplyo"}, `unknown command "deplyo" for "cdkx"; did you mean "deploy"?`},
		{[]string{"Deploy"}, `unknown command "Deploy" for "cdkx"; did you mean "deploy"?`},
		{[]string{"dif", "--json"}, `unknown command "dif" for "cdkx"; did you mean "diff"?`},
		{[]string{"outptus"}, `unknown command "outptus" for "cdkx"; did you mean "outputs"?`},
		{[]string{"xyzzy"}, `unknown command "xyzzy" for "cdkx"`},
		{[]string{"validate"}, `unknown command "validate" for "cdkx"`}, // no such command in this tree
		{[]string{"deployments", "lsit"}, `unknown command "lsit" for "cdkx deployments"; did you mean "list"?`},
		{[]string{"server", "tokn"}, `unknown command "tokn" for "cdkx server"; did you mean "token"?`},
		{[]string{"state", "exprot"}, `unknown command "exprot" for "cdkx state"; did you mean "export"?`},
		{[]string{"help", "plan"}, `unknown command "plan" for "cdkx"; did you mean "diff"? (terraform plan is cdkx diff)`},
		{[]string{"help", "deployments", "aprove"}, `unknown command "aprove" for "cdkx deployments"; did you mean "approve"?`},
		// Arguments.
		{[]string{"list", "App"}, `cdkx list takes no arguments, got "App"`},
		{[]string{"outputs", "a", "b"}, `cdkx outputs: accepts at most 1 arg(s), received 2`},
		// Misspelt flags, inherited ones included, and other tools' flags.
		{[]string{"deploy", "--concurency", "3"}, `unknown flag --concurency; did you mean --concurrency?`},
		{[]string{"diff", "--jsn"}, `unknown flag --jsn; did you mean --json?`},
		{[]string{"deploy", "--exlusively"}, `unknown flag --exlusively; did you mean --exclusively?`},
		{[]string{"deploy", "--taget", "App/Www"}, `unknown flag --taget; did you mean --target?`},
		{[]string{"destroy", "--auto-aprove"}, `unknown flag --auto-aprove; did you mean --auto-approve?`},
		{[]string{"deploy", "--parallelism", "3"}, `unknown flag --parallelism; did you mean --concurrency? (Terraform's -parallelism)`},
		{[]string{"deploy", "--skip-preview"}, `unknown flag --skip-preview; did you mean --yes? (pulumi up --skip-preview)`},
		{[]string{"deploy", "--output", "out"}, `unknown flag --output; did you mean --app? (cdk --output is the cloud assembly directory)`},
		{[]string{"deploy", "--stack", "App"}, `unknown flag --stack; name the stacks as arguments instead`},
		{[]string{"deploy", "--all"}, `unknown flag --all; every stack is the default when none is named`},
		{[]string{"deploy", "-auto-approve"}, `unknown flag -auto-approve; did you mean --auto-approve? (long flags take two dashes)`},
		{[]string{"deploy", "-concurrency=3"}, `unknown flag -concurrency; did you mean --concurrency? (long flags take two dashes)`},
		{[]string{"diff", "--auto-approve"}, `unknown flag --auto-approve`}, // diff asks nothing
		{[]string{"diff", "--frobnicate"}, `unknown flag --frobnicate`},
		{[]string{"deploy", "-z"}, `unknown flag -z`},
		{[]string{"deploy", "-zy"}, `unknown flag -z in -zy`},
		// Flag values.
		{[]string{"deploy", "--concurrency", "abc"}, `invalid value "abc" for --concurrency: want a whole number, e.g. 10`},
		{[]string{"diff", "--lock-timeout", "5"}, `invalid value "5" for --lock-timeout: want a duration like 30s, 5m or 1h30m`},
		{[]string{"list", "--json=maybe"}, `invalid value "maybe" for --json: want true or false (--json alone is true)`},
		{[]string{"deploy", "--app"}, `--app needs a value: cloud assembly directory (default: "output" of cdkx.json, else cdkx.out)`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			root, out := guidedRoot(t, tt.args...)
			err := cli.Execute(t.Context(), root)
			var ue *cli.UsageError
			if !errors.As(err, &ue) {
				t.Fatalf("Execute(%q) = %v, want a *cli.UsageError; output:\n%s", tt.args, err, out)
			}
			if out.Len() != 0 {
				t.Errorf("Execute(%q) printed %q, want nothing (main prints the error)", tt.args, out)
			}
			if got := cli.ExitCode(err); got != cli.ExitErr {
				t.Errorf("ExitCode = %d, want %d", got, cli.ExitErr)
			}
			var printed bytes.Buffer
			cli.PrintError(&printed, err)
			want := "error: " + tt.want + "\nRun '" + ue.Command + " --help' for usage.\n"
			if diff := cmp.Diff(want, printed.String()); diff != "" {
				t.Errorf("PrintError (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGuidanceUsageCommand: the hint names the command whose usage was wrong.
func TestGuidanceUsageCommand(t *testing.T) {
	t.Chdir(t.TempDir())
	for args, want := range map[string]string{
		"plan":                   "cdkx",
		"deploy --concurency 3":  "cdkx deploy",
		"deployments lsit":       "cdkx deployments",
		"deployments list --jsn": "cdkx deployments list",
		"outputs a b":            "cdkx outputs",
	} {
		root, _ := guidedRoot(t, strings.Fields(args)...)
		var ue *cli.UsageError
		if err := cli.Execute(t.Context(), root); !errors.As(err, &ue) || ue.Command != want {
			t.Errorf("Execute(%q) = %v, want a *cli.UsageError for %q", args, err, want)
		}
	}
}

// TestGuidanceKeepsHelp: a command that only groups others still prints its help when called alone (exit
// 0), and its usage does not offer it as a command of its own.
func TestGuidanceKeepsHelp(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, args := range [][]string{{}, {"deployments"}, {"state"}, {"help"}, {"help", "deploy"}, {"deploy", "--help"}} {
		root, out := guidedRoot(t, args...)
		if err := cli.Execute(t.Context(), root); err != nil {
			t.Errorf("Execute(%q) = %v, want nil", args, err)
		}
		if !strings.Contains(out.String(), "Usage:") {
			t.Errorf("Execute(%q) printed %q, want the help", args, out)
		}
		if strings.Contains(out.String(), "cdkx [flags]") || strings.Contains(out.String(), "deployments [flags]") {
			t.Errorf("Execute(%q) usage offers a grouping command to run:\n%s", args, out)
		}
	}
}

func TestPrintError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want string
	}{
		{nil, ""},
		{cli.ErrSilent, ""},
		{&cli.ExitError{Code: 2}, ""},
		{errors.New("boom"), "error: boom\n"},
		{&cli.ExitError{Code: 3, Err: errors.New("locked")}, "error: locked\n"},
		{&cli.UsageError{Command: "cdkx deploy", Err: errors.New("unknown flag --x")}, "error: unknown flag --x\nRun 'cdkx deploy --help' for usage.\n"},
		{errors.New("two lines:\n  the second"), "error: two lines:\n  the second\n"},
		{errors.New("powerdns: 422: \x1b]0;pwned\a\x1b[2J\u202e"), `error: powerdns: 422: \x1b]0;pwned\x07\x1b[2J\u202e` + "\n"},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		cli.PrintError(&b, tt.err)
		if b.String() != tt.want {
			t.Errorf("PrintError(%v) printed %q, want %q", tt.err, b.String(), tt.want)
		}
	}
}
