package deploy

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/golden"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/apptest"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/engine/enginetest"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TestNewCmdDeploy checks what the flags and the CDKX_* variables make of the options deployRun receives.
// Not parallel: the variables are the process's (viper reads them there).
func TestNewCmdDeploy(t *testing.T) {
	base := apptest.WantOf(func() *Options { return &Options{Config: apptest.DefaultConfig(nil)} })
	apptest.TestFlags(t, []apptest.FlagCase[Options]{
		{Name: "defaults", Want: base(nil)},
		{Name: "stacks and plan flags",
			Args: []string{"App", "Zones", "-e", "--replace", "App/A", "--replace", "B", "--target", "App/Www", "--exclude", "Mail"},
			Want: base(func(o *Options) {
				o.Stacks, o.Exclusively, o.Replace = []string{"App", "Zones"}, true, []string{"App/A", "B"}
				o.Target = cli.TargetFlags{Targets: []string{"App/Www"}, Excludes: []string{"Mail"}}
			})},
		{Name: "refresh and no rollback", Args: []string{"--refresh", "--no-rollback"},
			Want: base(func(o *Options) { o.Refresh, o.NoRollback = true, true })},
		{Name: "propose", Args: []string{"--propose", "--message", "lower the TTL", "--json"},
			Want: base(func(o *Options) { o.Propose, o.Message, o.Config.JSON = true, "lower the TTL", true })},
		{Name: "no wait", Args: []string{"--no-wait", "--lock-timeout", "10m"},
			Want: base(func(o *Options) { o.NoWait, o.Config.LockTimeout = true, 10*time.Minute })},
		{Name: "approval flags", Args: []string{"--yes", "--require-approval", "ANY", "--show-unchanged", "--concurrency", "3"},
			Want: base(func(o *Options) {
				o.Config.Yes, o.Config.RequireApproval, o.Config.ShowUnchanged, o.Config.Concurrency = true, cli.ApprovalAny, true, 3
			})},
		{Name: "auto-approve is yes", Args: []string{"--auto-approve"}, Want: base(func(o *Options) { o.Config.Yes = true })},
		{Name: "environment", Env: map[string]string{"CDKX_YES": "true", "CDKX_REQUIRE_APPROVAL": "never", "CDKX_CONCURRENCY": "5",
			"CDKX_JSON": "1", "CDKX_LOCK_TIMEOUT": "1m", "CDKX_APP": "out", "CDKX_STATE": "s.db", "CDKX_SECRETS_PASSPHRASE": "pw"},
			Want: base(func(o *Options) {
				c := o.Config
				c.Yes, c.RequireApproval, c.Concurrency, c.JSON, c.LockTimeout, c.App, c.State, c.Passphrase =
					true, cli.ApprovalNever, 5, true, time.Minute, "out", "s.db", "pw"
			})},
		{Name: "flags win over the environment", Args: []string{"--concurrency", "2", "--require-approval", "destructive"},
			Env:  map[string]string{"CDKX_CONCURRENCY": "5", "CDKX_REQUIRE_APPROVAL": "any"},
			Want: base(func(o *Options) { o.Config.Concurrency = 2 })},
		{Name: "no-wait and propose", Args: []string{"--no-wait", "--propose"},
			WantErr: "if any flags in the group [no-wait propose] are set none of the others can be; [no-wait propose] were all set"},
		{Name: "bad approval level", Args: []string{"--require-approval", "sometimes"},
			WantErr: `invalid value "sometimes" for --require-approval: want never, destructive or any`},
		{Name: "bad approval level in the environment", Env: map[string]string{"CDKX_REQUIRE_APPROVAL": "sometimes"},
			WantErr: `invalid value "sometimes" for --require-approval: want never, destructive or any`},
		{Name: "zero concurrency", Args: []string{"--concurrency", "0"}, WantErr: "--concurrency must be at least 1, got 0"},
		{Name: "malformed concurrency variable", Env: map[string]string{"CDKX_CONCURRENCY": "ten"},
			WantErr: `invalid value "ten" for CDKX_CONCURRENCY: want a whole number, e.g. 10`},
		{Name: "unknown flag", Args: []string{"--rollback"}, WantErr: "unknown flag: --rollback"},
	}, NewCmdDeploy)
}

// template declares a chain on the fake cloud and the built-in provider (one order of events whatever the
// scheduling): A; D, a Cdkx::Core::Data holding A's id; B, whose value is D's output. Its output Id is A's
// id. keyA is A's create-only key: changing it replaces A.
func template(keyA string) string {
	return `{"resources": {
	"A": {"type": "Fake::Test::Thing", "properties": {"key": "` + keyA + `", "value": "1"}},
	"D": {"type": "Cdkx::Core::Data", "properties": {"input": {"ref": "A", "attr": "id"}}},
	"B": {"type": "Fake::Test::Thing", "properties": {"key": "b", "value": {"ref": "D", "attr": "output"}}}},
	"outputs": {"Id": {"value": {"ref": "A", "attr": "id"}}}}`
}

// failCreate makes the cloud refuse to create the resource logicalID.
func failCreate(logicalID string) func(op, id string) error {
	return func(op, id string) error {
		if op == "create" && id == logicalID {
			return enginetest.ErrInjected
		}
		return nil
	}
}

func TestDeployRun(t *testing.T) {
	t.Parallel()
	created := map[string]string{"A": "CREATE_COMPLETE", "B": "CREATE_COMPLETE", "D": "CREATE_COMPLETE"}
	tests := []struct {
		name            string
		opts            Options
		json            bool
		fail            func(op, id string) error
		wantCode        int
		wantResources   map[string]string
		wantDeployments []string
		wantObjects     int
	}{
		{name: "success", wantResources: created, wantDeployments: []string{"deploy COMPLETED"}, wantObjects: 2},
		{name: "success JSON", json: true, wantResources: created, wantDeployments: []string{"deploy COMPLETED"}, wantObjects: 2},
		{name: "a resource fails", fail: failCreate("B"), wantCode: cli.ExitFailed,
			wantResources: map[string]string{}, wantDeployments: []string{"deploy FAILED"}},
		{name: "a resource fails without rollback", opts: Options{NoRollback: true}, fail: failCreate("B"), wantCode: cli.ExitFailed,
			wantResources:   map[string]string{"A": "CREATE_COMPLETE", "D": "CREATE_COMPLETE"},
			wantDeployments: []string{"deploy FAILED"}, wantObjects: 1},
		{name: "a resource fails JSON", json: true, fail: failCreate("B"), wantCode: cli.ExitFailed,
			wantResources: map[string]string{}, wantDeployments: []string{"deploy FAILED"}},
		{name: "propose", opts: Options{Propose: true, Message: "first"},
			wantResources: map[string]string{}, wantDeployments: []string{"deploy PROPOSED"}},
		{name: "propose JSON", opts: Options{Propose: true, Message: "first"}, json: true,
			wantResources: map[string]string{}, wantDeployments: []string{"deploy PROPOSED"}},
		{name: "no wait", opts: Options{NoWait: true},
			wantResources: map[string]string{}, wantDeployments: []string{"deploy PENDING"}},
		{name: "target", opts: Options{PlanFlags: cli.PlanFlags{Target: cli.TargetFlags{Targets: []string{"A/D"}}}},
			wantResources:   map[string]string{"A": "CREATE_COMPLETE", "D": "CREATE_COMPLETE"},
			wantDeployments: []string{"deploy COMPLETED"}, wantObjects: 1},
		{name: "unknown stack", opts: Options{PlanFlags: cli.PlanFlags{Stacks: []string{"Nope"}}}, wantCode: cli.ExitErr,
			wantResources: map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := apptest.New(t)
			h.Cloud.Fail = tt.fail
			app := apptest.OneStack(t, template("a"))
			opts := tt.opts
			opts.F, opts.Config = h.F, h.Config(app)
			opts.Config.JSON = tt.json
			err := deployRun(t.Context(), &opts)
			if code := cli.ExitCode(err); code != tt.wantCode {
				t.Errorf("deployRun() = %v (exit code %d), want exit code %d", err, code, tt.wantCode)
			}
			if tt.json {
				for _, line := range strings.Split(strings.TrimSpace(h.Out.String()), "\n") {
					if !json.Valid([]byte(line)) {
						t.Errorf("--json printed a line that is not JSON: %q", line)
					}
				}
			}
			if diff := cmp.Diff(tt.wantResources, h.Resources(t, "A")); diff != "" {
				t.Errorf("resources in state (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantDeployments, h.Deployments(t)); diff != "" {
				t.Errorf("deployments (-want +got):\n%s", diff)
			}
			if got := len(h.Cloud.Objects()); got != tt.wantObjects {
				t.Errorf("the cloud holds %d objects, want %d", got, tt.wantObjects)
			}
			if (opts.Propose || opts.NoWait) && h.Cloud.Calls() != 0 {
				t.Errorf("a recorded deploy made %d provider calls, want none", h.Cloud.Calls())
			}
			golden.Assert(t, h.Output(map[string]string{"APP": app, "STATE": h.State}), "TestDeployRun-"+filepath.Base(t.Name())+".golden")
		})
	}
}

// TestDeployApproval deploys, then changes A's create-only key, so that the plan replaces A: in CI (a
// terminal, but CI set) without --yes it is refused before any provider call (exit 1); with --yes it runs.
// Not parallel: CI is the process's variable.
func TestDeployApproval(t *testing.T) {
	t.Setenv("CI", "true")
	h := apptest.New(t)
	h.F.IO.InTTY, h.F.IO.ErrTTY = true, true
	if err := deployRun(t.Context(), &Options{F: h.F, Config: h.Config(apptest.OneStack(t, template("a")))}); err != nil {
		t.Fatalf("first deploy: %v\n%s", err, h.ErrOut)
	}
	before := h.Objects()
	calls := h.Cloud.Calls()
	app := apptest.OneStack(t, template("a2"))

	h.Reset()
	err := deployRun(t.Context(), &Options{F: h.F, Config: h.Config(app)})
	if !errors.Is(err, cli.ErrNeedsApproval) || cli.ExitCode(err) != cli.ExitErr {
		t.Fatalf("deploy of a replacement in CI = %v (exit code %d), want ErrNeedsApproval, exit code 1", err, cli.ExitCode(err))
	}
	want := "deploy needs approval: the plan replaces 1 resource(s) (--require-approval destructive), but there is no terminal to ask on (or CI is set), so nothing was changed; review the plan with cdkx diff, then pass --yes to deploy it"
	if diff := cmp.Diff(want, err.Error()); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
	if got := h.Cloud.Calls(); got != calls {
		t.Errorf("the refused deploy made %d provider calls, want none", got-calls)
	}
	if diff := cmp.Diff(before, h.Objects()); diff != "" {
		t.Errorf("the refused deploy changed the cloud (-before +after):\n%s", diff)
	}

	h.Reset()
	cfg := h.Config(app)
	cfg.Yes = true
	if err := deployRun(t.Context(), &Options{F: h.F, Config: cfg}); err != nil {
		t.Fatalf("deploy --yes: %v\n%s", err, h.ErrOut)
	}
	if _, ok := h.Objects()["a2"]; !ok {
		t.Errorf("after deploy --yes the cloud holds %v, want A replaced (key a2)", h.Objects())
	}
	golden.Assert(t, h.Output(map[string]string{"APP": app}), t.Name()+".golden")
}

// TestDeployRefresh changes A out of band after a deploy: a deploy without --refresh sees no change, one
// with it reads A first and puts its value back.
func TestDeployRefresh(t *testing.T) {
	t.Parallel()
	h := apptest.New(t)
	app := apptest.OneStack(t, template("a"))
	if err := deployRun(t.Context(), &Options{F: h.F, Config: h.Config(app)}); err != nil {
		t.Fatalf("first deploy: %v\n%s", err, h.ErrOut)
	}
	for id, p := range h.Cloud.Objects() {
		if p["key"] == "a" {
			h.Cloud.Set(id, resource.Properties{"key": "a", "value": "drifted"})
		}
	}
	for _, refresh := range []bool{false, true} {
		h.Reset()
		if err := deployRun(t.Context(), &Options{F: h.F, Config: h.Config(app), Refresh: refresh}); err != nil {
			t.Fatalf("deploy (refresh %t): %v\n%s", refresh, err, h.ErrOut)
		}
		want := map[bool]string{false: "drifted", true: "1"}[refresh]
		if got := h.Objects()["a"]["value"]; got != want {
			t.Errorf("after deploy (refresh %t) A's value is %v, want %v", refresh, got, want)
		}
	}
	golden.Assert(t, apptest.SortEvents(h.Output(nil)), t.Name()+".golden") // refresh reads in parallel
}
