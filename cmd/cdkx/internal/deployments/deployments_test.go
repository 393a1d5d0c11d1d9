package deployments

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	"gotest.tools/v3/golden"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/apptest"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/deploy"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/view"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

func TestNewCmdList(t *testing.T) {
	list := func(filter state.DeploymentFilter, change func(c *cli.Config)) *ListOptions {
		return &ListOptions{Config: apptest.DefaultConfig(change), Filter: filter}
	}
	apptest.TestFlags(t, []apptest.FlagCase[ListOptions]{
		{Name: "defaults", Want: list(state.DeploymentFilter{Limit: 20}, nil)},
		{Name: "filter", Args: []string{"--stack", "App", "--status", "pending, Running", "--limit", "0", "--json"},
			Want: list(state.DeploymentFilter{Stack: "App", Statuses: []state.DeploymentStatus{state.StatusPending, state.StatusRunning}},
				func(c *cli.Config) { c.JSON = true })},
		{Name: "state from the environment", Env: map[string]string{"CDKX_STATE": "postgres://db/x"},
			Want: list(state.DeploymentFilter{Limit: 20}, func(c *cli.Config) { c.State = "postgres://db/x" })},
		{Name: "kinds", Args: []string{"--kind", "Destroy, import"},
			Want: list(state.DeploymentFilter{Kinds: []state.DeploymentKind{state.KindDestroy, state.KindImport}, Limit: 20}, nil)},
		{Name: "not a kind", Args: []string{"--kind", "deploy,apply"},
			WantErr: `--kind "apply": not a kind; use deploy, plan, destroy, import or refresh (comma-separated)`},
		{Name: "not a status", Args: []string{"--status", "PENDING,DONE"},
			WantErr: `--status "DONE": not a status; use PROPOSED, APPROVED, REJECTED, PENDING, RUNNING, COMPLETED, FAILED or ABORTED (comma-separated)`},
		{Name: "no arguments", Args: []string{"App"}, WantErr: `unknown command "App" for "cdkx list"`},
		{Name: "a whole number", Args: []string{"--limit", "ten"},
			WantErr: `invalid argument "ten" for "--limit" flag: strconv.ParseInt: parsing "ten": invalid syntax`},
	}, func(f *cli.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
		return newCmdList(f, "list", runF)
	})
}

func TestNewCmdShow(t *testing.T) {
	apptest.TestFlags(t, []apptest.FlagCase[ShowOptions]{
		{Name: "text", Args: []string{"6f1c2a"}, Want: &ShowOptions{Config: apptest.DefaultConfig(nil), ID: "6f1c2a", Format: view.FormatText}},
		{Name: "JSON", Args: []string{"6f1c2a", "--json"},
			Want: &ShowOptions{Config: apptest.DefaultConfig(func(c *cli.Config) { c.JSON = true }), ID: "6f1c2a", Format: view.FormatText}},
		{Name: "markdown", Args: []string{"6f1c2a", "--format", "markdown"},
			Want: &ShowOptions{Config: apptest.DefaultConfig(nil), ID: "6f1c2a", Format: view.FormatMarkdown}},
		{Name: "markdown and JSON", Args: []string{"6f1c2a", "--format", "markdown", "--json"}, WantErr: "--format markdown and --json: choose one"},
		{Name: "markdown and JSON from the environment", Args: []string{"6f1c2a", "--format", "markdown"}, Env: map[string]string{"CDKX_JSON": "true"},
			WantErr: "--format markdown and --json: choose one"},
		{Name: "not a format", Args: []string{"6f1c2a", "--format", "html"}, WantErr: `--format "html": not a format; use text or markdown`},
		{Name: "no ID", WantErr: "accepts 1 arg(s), received 0"},
	}, newCmdShow)
}

func TestNewCmdCompare(t *testing.T) {
	apptest.TestFlags(t, []apptest.FlagCase[CompareOptions]{
		{Name: "two IDs", Args: []string{"6f1c2a", "9a2b3c"}, Want: &CompareOptions{Config: apptest.DefaultConfig(nil), A: "6f1c2a", B: "9a2b3c"}},
		{Name: "passphrase", Args: []string{"6f1c2a", "9a2b3c", "--json"}, Env: map[string]string{"CDKX_SECRETS_PASSPHRASE": "pw"},
			Want: &CompareOptions{Config: apptest.DefaultConfig(func(c *cli.Config) { c.JSON, c.Passphrase = true, "pw" }), A: "6f1c2a", B: "9a2b3c"}},
		{Name: "one ID", Args: []string{"6f1c2a"}, WantErr: "accepts 2 arg(s), received 1"},
	}, newCmdCompare)
}

func TestNewCmdRun(t *testing.T) {
	apptest.TestFlags(t, []apptest.FlagCase[RunOptions]{
		{Name: "ID", Args: []string{"6f1c2a"}, Want: &RunOptions{Config: apptest.DefaultConfig(nil), ID: "6f1c2a"}},
		{Name: "replan and wait", Args: []string{"6f1c2a", "--replan", "--lock-timeout", "10m"},
			Want: &RunOptions{Config: apptest.DefaultConfig(func(c *cli.Config) { c.LockTimeout = 10 * time.Minute }), ID: "6f1c2a", Replan: true}},
		{Name: "wait from the environment", Args: []string{"6f1c2a"}, Env: map[string]string{"CDKX_LOCK_TIMEOUT": "90s"},
			Want: &RunOptions{Config: apptest.DefaultConfig(func(c *cli.Config) { c.LockTimeout = 90 * time.Second }), ID: "6f1c2a"}},
		{Name: "two IDs", Args: []string{"6f1c2a", "9a2b3c"}, WantErr: "accepts 1 arg(s), received 2"},
	}, newCmdRun)
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
	var ids []string
	for _, d := range h.Records(t) {
		ids = append(ids, d.ID)
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
	tests := []step{
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
	runSteps(t, h, "TestDeploymentsRun", tests) // in order: the run changes what the list after it shows
	if got := h.Objects()["r"]["value"]; got != "4" {
		t.Errorf("after the run of the pending deployment R's value is %v, want 4", got)
	}
	if diff := cmp.Diff([]string{"deploy COMPLETED", "deploy COMPLETED", "deploy PROPOSED", "deploy COMPLETED"}, h.Deployments(t)); diff != "" {
		t.Errorf("deployments (-want +got):\n%s", diff)
	}
}

// TestReviewComments: approve --comment and reject --comment (or its older name --message) record the
// reviewer's comment, which show prints as text, JSON and markdown; a comment longer than 4 KiB, or
// --message and --comment saying different things, is refused before anything changes.
func TestReviewComments(t *testing.T) {
	h := apptest.New(t)
	for i, v := range []string{"1", "2", "3"} {
		app := apptest.OneStack(t, `{"resources": {"R": {"type": "Fake::Test::Thing", "properties": {"key": "r", "value": "`+v+`"}}}}`)
		h.F.Now = func() time.Time { return apptest.Now.Add(time.Duration(i) * time.Minute) }
		if err := apptest.Execute(deploy.NewCmdDeploy(h.F, nil), "--app", app, "--state", h.State, "--propose", "--message", "value "+v); err != nil {
			t.Fatalf("deploy --propose: %v\n%s", err, h.ErrOut)
		}
	}
	var ids []string
	for _, d := range h.Records(t) {
		ids = append(ids, d.ID)
	}
	approved, rejectedOld, rejected := ids[0], ids[1], ids[2]
	h.F.Now = func() time.Time { return apptest.Now.Add(time.Hour) }
	long := strings.Repeat("x", state.MaxMessageBytes+1)
	cfg := func(json bool) *cli.Config {
		c := h.Config("")
		c.JSON = json
		return c
	}
	tests := []step{
		{name: "approve a comment too long", wantCode: cli.ExitErr, run: func() error {
			return apptest.Execute(newCmdApprove(h.F), approved, "--state", h.State, "--comment", long)
		}},
		{name: "reject with two comments", wantCode: cli.ExitErr, run: func() error {
			return apptest.Execute(newCmdReject(h.F), rejected, "--state", h.State, "--comment", "a", "--message", "b")
		}},
		{name: "approve with a comment", run: func() error {
			return apptest.Execute(newCmdApprove(h.F), approved, "--state", h.State, "--comment", "checked with the DNS team ✓\nTTL 60 is fine")
		}},
		{name: "reject with a message", run: func() error {
			return apptest.Execute(newCmdReject(h.F), rejectedOld, "--state", h.State, "--message", "wrong zone")
		}},
		{name: "reject with a comment", run: func() error {
			return apptest.Execute(newCmdReject(h.F), rejected, "--state", h.State, "--comment", "not on a Friday\x1b[31m")
		}},
		{name: "show approved", run: func() error {
			return showRun(t.Context(), &ShowOptions{F: h.F, Config: cfg(false), ID: approved, Format: view.FormatText})
		}},
		{name: "show approved JSON", run: func() error {
			return showRun(t.Context(), &ShowOptions{F: h.F, Config: cfg(true), ID: approved, Format: view.FormatText})
		}},
		{name: "show approved markdown", run: func() error {
			return showRun(t.Context(), &ShowOptions{F: h.F, Config: cfg(false), ID: approved, Format: view.FormatMarkdown})
		}},
		{name: "show rejected with a message", run: func() error {
			return showRun(t.Context(), &ShowOptions{F: h.F, Config: cfg(false), ID: rejectedOld, Format: view.FormatText})
		}},
		{name: "show rejected markdown", run: func() error {
			return showRun(t.Context(), &ShowOptions{F: h.F, Config: cfg(false), ID: rejected, Format: view.FormatMarkdown})
		}},
	}
	runSteps(t, h, "TestReviewComments", tests) // in order: the reviews change what show prints
	want := map[string][2]string{approved: {"checked with the DNS team ✓\nTTL 60 is fine", ""}, rejectedOld: {"", "wrong zone"}, rejected: {"", "not on a Friday\x1b[31m"}}
	for _, d := range h.Records(t) {
		if got := [2]string{d.ApprovalComment, d.RejectionComment}; got != want[d.ID] {
			t.Errorf("deployment %s: comments %q, want %q", d.ID, got, want[d.ID])
		}
	}
}

// step is one command of a test that runs several on one harness, in order: its output, and its error
// when it fails, go to the golden file testdata/TEST-NAME.golden (runSteps).
type step struct {
	name     string
	run      func() error
	wantCode int
}

// runSteps runs steps in order as subtests of test, each on a reset harness, checking its exit code and
// comparing its output (scrubbed, state versions as N) with its golden file.
func runSteps(t *testing.T, h *apptest.Harness, test string, steps []step) {
	t.Helper()
	for _, tt := range steps {
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
			golden.Assert(t, versions(apptest.Scrub(got, nil)), test+"-"+filepath.Base(t.Name())+".golden")
		})
	}
}
