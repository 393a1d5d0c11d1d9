package deployments

import (
	"context"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/spf13/cobra"
	"gotest.tools/v3/golden"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/apptest"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/deploy"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/view"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// defaults is the configuration of a command given no flags, in a folder without cdkx.json.
func defaults(change func(c *cli.Config)) *cli.Config {
	c := &cli.Config{App: "cdkx.out", State: cli.DefaultStatePath, Concurrency: 10, RequireApproval: cli.ApprovalDestructive}
	if change != nil {
		change(c)
	}
	return c
}

// flagCase is one row of a flag test: the arguments (and CDKX_* variables) of a subcommand, and the
// options its run receives or the error.
type flagCase[O any] struct {
	name    string
	args    []string
	env     map[string]string
	want    *O
	wantErr string
}

// testFlags runs each case through newCmd (a subcommand built with a runF that keeps the options) and
// compares the options with cmp.Diff, F left out. Not parallel: the variables are the process's.
func testFlags[O any](t *testing.T, tests []flagCase[O], newCmd func(runF func(context.Context, *O) error) *cobra.Command) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			var got *O
			err := apptest.Execute(newCmd(func(_ context.Context, o *O) error { got = o; return nil }), tt.args...)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("%q: error %v, want %q", tt.args, err, tt.wantErr)
				}
				if got != nil {
					t.Errorf("%q: run called despite the error", tt.args)
				}
				return
			}
			if err != nil {
				t.Fatalf("%q: %v", tt.args, err)
			}
			var zero O
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(zero, "F"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%q options (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

func TestNewCmdList(t *testing.T) {
	list := func(filter state.DeploymentFilter, change func(c *cli.Config)) *ListOptions {
		return &ListOptions{Config: defaults(change), Filter: filter}
	}
	testFlags(t, []flagCase[ListOptions]{
		{name: "defaults", want: list(state.DeploymentFilter{Limit: 20}, nil)},
		{name: "filter", args: []string{"--stack", "App", "--status", "pending, Running", "--limit", "0", "--json"},
			want: list(state.DeploymentFilter{Stack: "App", Statuses: []state.DeploymentStatus{state.StatusPending, state.StatusRunning}},
				func(c *cli.Config) { c.JSON = true })},
		{name: "state from the environment", env: map[string]string{"CDKX_STATE": "postgres://db/x"},
			want: list(state.DeploymentFilter{Limit: 20}, func(c *cli.Config) { c.State = "postgres://db/x" })},
		{name: "not a status", args: []string{"--status", "PENDING,DONE"},
			wantErr: `--status "DONE": not a status; use PROPOSED, APPROVED, REJECTED, PENDING, RUNNING, COMPLETED, FAILED or ABORTED (comma-separated)`},
		{name: "no arguments", args: []string{"App"}, wantErr: `unknown command "App" for "cdkx list"`},
		{name: "a whole number", args: []string{"--limit", "ten"},
			wantErr: `invalid argument "ten" for "--limit" flag: strconv.ParseInt: parsing "ten": invalid syntax`},
	}, func(runF func(context.Context, *ListOptions) error) *cobra.Command {
		return NewCmdList(apptest.FlagFactory(), "list", runF)
	})
}

func TestNewCmdShow(t *testing.T) {
	testFlags(t, []flagCase[ShowOptions]{
		{name: "text", args: []string{"6f1c2a"}, want: &ShowOptions{Config: defaults(nil), ID: "6f1c2a", Format: view.FormatText}},
		{name: "JSON", args: []string{"6f1c2a", "--json"},
			want: &ShowOptions{Config: defaults(func(c *cli.Config) { c.JSON = true }), ID: "6f1c2a", Format: view.FormatText}},
		{name: "markdown", args: []string{"6f1c2a", "--format", "markdown"},
			want: &ShowOptions{Config: defaults(nil), ID: "6f1c2a", Format: view.FormatMarkdown}},
		{name: "markdown and JSON", args: []string{"6f1c2a", "--format", "markdown", "--json"}, wantErr: "--format markdown and --json: choose one"},
		{name: "markdown and JSON from the environment", args: []string{"6f1c2a", "--format", "markdown"}, env: map[string]string{"CDKX_JSON": "true"},
			wantErr: "--format markdown and --json: choose one"},
		{name: "not a format", args: []string{"6f1c2a", "--format", "html"}, wantErr: `--format "html": not a format; use text or markdown`},
		{name: "no ID", wantErr: "accepts 1 arg(s), received 0"},
	}, func(runF func(context.Context, *ShowOptions) error) *cobra.Command {
		return newCmdShow(apptest.FlagFactory(), runF)
	})
}

func TestNewCmdCompare(t *testing.T) {
	testFlags(t, []flagCase[CompareOptions]{
		{name: "two IDs", args: []string{"6f1c2a", "9a2b3c"}, want: &CompareOptions{Config: defaults(nil), A: "6f1c2a", B: "9a2b3c"}},
		{name: "passphrase", args: []string{"6f1c2a", "9a2b3c", "--json"}, env: map[string]string{"CDKX_SECRETS_PASSPHRASE": "pw"},
			want: &CompareOptions{Config: defaults(func(c *cli.Config) { c.JSON, c.Passphrase = true, "pw" }), A: "6f1c2a", B: "9a2b3c"}},
		{name: "one ID", args: []string{"6f1c2a"}, wantErr: "accepts 2 arg(s), received 1"},
	}, func(runF func(context.Context, *CompareOptions) error) *cobra.Command {
		return newCmdCompare(apptest.FlagFactory(), runF)
	})
}

func TestNewCmdRun(t *testing.T) {
	testFlags(t, []flagCase[RunOptions]{
		{name: "ID", args: []string{"6f1c2a"}, want: &RunOptions{Config: defaults(nil), ID: "6f1c2a"}},
		{name: "replan and wait", args: []string{"6f1c2a", "--replan", "--lock-timeout", "10m"},
			want: &RunOptions{Config: defaults(func(c *cli.Config) { c.LockTimeout = 10 * time.Minute }), ID: "6f1c2a", Replan: true}},
		{name: "wait from the environment", args: []string{"6f1c2a"}, env: map[string]string{"CDKX_LOCK_TIMEOUT": "90s"},
			want: &RunOptions{Config: defaults(func(c *cli.Config) { c.LockTimeout = 90 * time.Second }), ID: "6f1c2a"}},
		{name: "two IDs", args: []string{"6f1c2a", "9a2b3c"}, wantErr: "accepts 1 arg(s), received 2"},
	}, func(runF func(context.Context, *RunOptions) error) *cobra.Command {
		return newCmdRun(apptest.FlagFactory(), runF)
	})
}

// history records four deployments of stack A on the harness, through cdkx deploy, a minute apart (so that
// they list in one order) and oldest first: two
// COMPLETED deploys (R's value "1", then "2"), a PROPOSED one (value "3", message "three") and a PENDING one
// (value "4", --no-wait); it returns their IDs in that order.
func history(t *testing.T, h *apptest.Harness) []string {
	t.Helper()
	for i, v := range []struct {
		value string
		flags []string
	}{
		{value: "1"}, {value: "2"},
		{value: "3", flags: []string{"--propose", "--message", "three"}},
		{value: "4", flags: []string{"--no-wait"}},
	} {
		app := apptest.OneStack(t, `{"resources": {"R": {"type": "Fake::Test::Thing", "properties": {"key": "r", "value": "`+v.value+`"}}}}`)
		h.F.Now = func() time.Time { return apptest.Now.Add(time.Duration(i) * time.Minute) }
		args := append([]string{"--app", app, "--state", h.State, "--concurrency", "1"}, v.flags...)
		if err := apptest.Execute(deploy.NewCmdDeploy(h.F, nil), args...); err != nil {
			t.Fatalf("deploy %q: %v\n%s", args, err, h.ErrOut)
		}
	}
	ds, err := h.Backend(t).ListDeployments(t.Context(), state.DeploymentFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := len(ds) - 1; i >= 0; i-- {
		ids = append(ids, ds[i].ID)
	}
	h.F.Now = func() time.Time { return apptest.Now.Add(time.Hour) }
	h.Reset()
	return ids
}

// versionPatterns match the state versions a deployment records, in JSON, in show's text and in list's
// VERSION column (the spaces between a row's columns made one: the column's width changes too), which differ from run to run: the engine groups its
// commits as they come.
var versionPatterns = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`"(stateVersion|version)": \d+`), `"$1": N`},
	{regexp.MustCompile(`state version \d+`), "state version N"},
	{regexp.MustCompile(`(?m)^(ID\d+) +A +deploy +(\S+) +(\S+) +(\S+) +(\+\d+ ~\d+ ±\d+ -\d+) +\d+ +`), "$1 A deploy $2 $3 $4 $5 N "},
}

// versions returns s with its state versions replaced by N.
func versions(s string) string {
	for _, p := range versionPatterns {
		s = p.re.ReplaceAllString(s, p.with)
	}
	return s
}

// TestDeploymentsRun runs list, show, compare and run on the deployments history records, one after the
// other (the run changes what the list after it shows).
func TestDeploymentsRun(t *testing.T) {
	h := apptest.New(t)
	ids := history(t, h)
	if len(ids) != 4 {
		t.Fatalf("history recorded %d deployments, want 4", len(ids))
	}
	completed1, completed2, proposed, pending := ids[0], ids[1], ids[2], ids[3]
	cfg := func(json bool) *cli.Config {
		c := h.Config("")
		c.JSON = json
		return c
	}
	tests := []struct {
		name     string
		run      func() error
		wantCode int
	}{
		{name: "list", run: func() error { return listRun(t.Context(), &ListOptions{F: h.F, Config: cfg(false)}) }},
		{name: "list JSON", run: func() error { return listRun(t.Context(), &ListOptions{F: h.F, Config: cfg(true)}) }},
		{name: "list proposed JSON", run: func() error {
			return listRun(t.Context(), &ListOptions{F: h.F, Config: cfg(true),
				Filter: state.DeploymentFilter{Statuses: []state.DeploymentStatus{state.StatusProposed}}})
		}},
		{name: "list of another stack", run: func() error {
			return listRun(t.Context(), &ListOptions{F: h.F, Config: cfg(false), Filter: state.DeploymentFilter{Stack: "B"}})
		}},
		{name: "show", run: func() error {
			return showRun(t.Context(), &ShowOptions{F: h.F, Config: cfg(false), ID: completed2, Format: view.FormatText})
		}},
		{name: "show by prefix JSON", run: func() error {
			return showRun(t.Context(), &ShowOptions{F: h.F, Config: cfg(true), ID: proposed[:8], Format: view.FormatText})
		}},
		{name: "show markdown", run: func() error {
			return showRun(t.Context(), &ShowOptions{F: h.F, Config: cfg(false), ID: proposed, Format: view.FormatMarkdown})
		}},
		{name: "show unknown", wantCode: cli.ExitErr, run: func() error {
			return showRun(t.Context(), &ShowOptions{F: h.F, Config: cfg(false), ID: "0000000000", Format: view.FormatText})
		}},
		{name: "show too short a prefix", wantCode: cli.ExitErr, run: func() error {
			return showRun(t.Context(), &ShowOptions{F: h.F, Config: cfg(false), ID: "6f1", Format: view.FormatText})
		}},
		{name: "compare", run: func() error {
			return compareRun(t.Context(), &CompareOptions{F: h.F, Config: cfg(false), A: completed1, B: proposed})
		}},
		{name: "compare JSON", run: func() error {
			return compareRun(t.Context(), &CompareOptions{F: h.F, Config: cfg(true), A: completed1, B: proposed})
		}},
		{name: "compare the same", run: func() error {
			return compareRun(t.Context(), &CompareOptions{F: h.F, Config: cfg(false), A: completed2, B: completed2})
		}},
		{name: "run a proposal", wantCode: cli.ExitErr, run: func() error {
			return runRun(t.Context(), &RunOptions{F: h.F, Config: cfg(false), ID: proposed})
		}},
		{name: "run a completed deployment", wantCode: cli.ExitErr, run: func() error {
			return runRun(t.Context(), &RunOptions{F: h.F, Config: cfg(false), ID: completed1})
		}},
		{name: "run the pending one", run: func() error {
			return runRun(t.Context(), &RunOptions{F: h.F, Config: cfg(false), ID: pending})
		}},
		{name: "list after the run", run: func() error { return listRun(t.Context(), &ListOptions{F: h.F, Config: cfg(false)}) }},
	}
	for _, tt := range tests { // in order: the run changes what the list after it shows
		t.Run(tt.name, func(t *testing.T) {
			h.Reset()
			err := tt.run()
			if code := cli.ExitCode(err); code != tt.wantCode {
				t.Errorf("exit code %d (%v), want %d", code, err, tt.wantCode)
			}
			got := h.Output(map[string]string{"STATE": h.State})
			if err != nil {
				got += "== error\n" + err.Error() + "\n"
			}
			golden.Assert(t, versions(apptest.Scrub(got, nil)), "TestDeploymentsRun-"+filepath.Base(t.Name())+".golden")
		})
	}
	if got := h.Objects()["r"]["value"]; got != "4" {
		t.Errorf("after the run of the pending deployment R's value is %v, want 4", got)
	}
	if diff := cmp.Diff([]string{"deploy COMPLETED", "deploy COMPLETED", "deploy PROPOSED", "deploy COMPLETED"}, h.Deployments(t)); diff != "" {
		t.Errorf("deployments (-want +got):\n%s", diff)
	}
}
