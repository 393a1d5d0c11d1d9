package destroy

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"gotest.tools/v3/golden"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/apptest"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/engine/enginetest"
)

// TestNewCmdDestroy checks what the flags and the CDKX_* variables make of the options destroyRun
// receives. Not parallel: the variables are the process's (viper reads them there).
func TestNewCmdDestroy(t *testing.T) {
	base := apptest.WantOf(func() *Options { return &Options{Config: apptest.DefaultConfig(nil)} })
	apptest.TestFlags(t, []apptest.FlagCase[Options]{
		{Name: "defaults", Want: base(nil)},
		{Name: "stacks", Args: []string{"App", "Zones"}, Want: base(func(o *Options) { o.Stacks = []string{"App", "Zones"} })},
		{Name: "force", Args: []string{"--force"}, Want: base(func(o *Options) { o.Force = true })},
		{Name: "force short", Args: []string{"-f"}, Want: base(func(o *Options) { o.Force = true })},
		{Name: "yes", Args: []string{"-y"}, Want: base(func(o *Options) { o.Config.Yes = true })},
		{Name: "auto-approve", Args: []string{"--auto-approve"}, Want: base(func(o *Options) { o.Config.Yes = true })},
		{Name: "targets", Args: []string{"--target", "App/Www", "--target", "Zone,Other", "--exclude", "Mail"},
			Want: base(func(o *Options) {
				o.Target = cli.TargetFlags{Targets: []string{"App/Www", "Zone,Other"}, Excludes: []string{"Mail"}}
			})},
		{Name: "environment", Env: map[string]string{"CDKX_YES": "1", "CDKX_STATE": "s.db", "CDKX_LOCK_TIMEOUT": "2m", "CDKX_JSON": "true"},
			Want: base(func(o *Options) {
				o.Config.Yes, o.Config.State, o.Config.LockTimeout, o.Config.JSON = true, "s.db", 2*time.Minute, true
			})},
		{Name: "negative lock timeout", Args: []string{"--lock-timeout", "-1s"}, WantErr: "--lock-timeout must not be negative, got -1s"},
		{Name: "malformed lock timeout variable", Env: map[string]string{"CDKX_LOCK_TIMEOUT": "soon"},
			WantErr: `invalid value "soon" for CDKX_LOCK_TIMEOUT: want a duration like 30s, 5m or 1h30m`},
		{Name: "no require-approval on destroy", Args: []string{"--require-approval", "never"},
			WantErr: "unknown flag: --require-approval"},
	}, NewCmdDestroy)
}

// TestDestroyRun destroys stack S (A ← B ← C, each depending on the one before, on the fake cloud).
func TestDestroyRun(t *testing.T) {
	t.Parallel()
	all := map[string]string{"A": "CREATE_COMPLETE", "B": "CREATE_COMPLETE", "C": "CREATE_COMPLETE"}
	tests := []struct {
		name            string
		opts            Options
		yes, json       bool
		seed            bool // false: no state at all
		fail            func(op, id string) error
		wantCode        int
		wantErr         error
		wantResources   map[string]string
		wantObjects     []string // keys of what stays in the cloud
		wantDeployments []string
	}{
		{name: "without force it refuses", seed: true, wantCode: cli.ExitErr, wantErr: cli.ErrNeedsApproval,
			wantResources: all, wantObjects: []string{"A", "B", "C"}},
		{name: "force", opts: Options{Force: true}, seed: true,
			wantResources: map[string]string{}, wantDeployments: []string{"destroy COMPLETED"}},
		{name: "yes", yes: true, seed: true,
			wantResources: map[string]string{}, wantDeployments: []string{"destroy COMPLETED"}},
		{name: "force JSON", opts: Options{Force: true}, json: true, seed: true,
			wantResources: map[string]string{}, wantDeployments: []string{"destroy COMPLETED"}},
		{name: "target takes its dependents", seed: true,
			opts:          Options{Force: true, Target: cli.TargetFlags{Targets: []string{"S/B"}}},
			wantResources: map[string]string{"A": "CREATE_COMPLETE"}, wantObjects: []string{"A"}, wantDeployments: []string{"destroy COMPLETED"}},
		{name: "exclude keeps its dependencies", seed: true,
			opts:          Options{Force: true, Target: cli.TargetFlags{Excludes: []string{"B"}}},
			wantResources: map[string]string{"A": "CREATE_COMPLETE", "B": "CREATE_COMPLETE"}, wantObjects: []string{"A", "B"},
			wantDeployments: []string{"destroy COMPLETED"}},
		{name: "unknown target", seed: true, wantCode: cli.ExitErr,
			opts:          Options{Force: true, Target: cli.TargetFlags{Targets: []string{"S/Nope"}}},
			wantResources: all, wantObjects: []string{"A", "B", "C"}},
		{name: "a deletion fails", opts: Options{Force: true}, seed: true, wantCode: cli.ExitFailed,
			fail: func(op, id string) error {
				if op == "delete" && id == "fake-2" {
					return enginetest.ErrInjected
				}
				return nil
			},
			wantResources: map[string]string{"A": "CREATE_COMPLETE", "B": "DELETE_FAILED"}, wantObjects: []string{"A", "B"},
			wantDeployments: []string{"destroy FAILED"}},
		{name: "nothing in state", opts: Options{Force: true}, wantResources: map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := apptest.New(t)
			if tt.seed {
				h.Seed(t, "S", "A", "B", "C")
			}
			h.Cloud.Fail = tt.fail
			opts := tt.opts
			opts.F, opts.Config = h.F, h.Config("")
			opts.Config.JSON, opts.Config.Yes = tt.json, tt.yes
			err := destroyRun(t.Context(), &opts)
			if code := cli.ExitCode(err); code != tt.wantCode {
				t.Errorf("destroyRun() = %v (exit code %d), want exit code %d", err, code, tt.wantCode)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("destroyRun() = %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.wantResources, h.Resources(t, "S")); diff != "" {
				t.Errorf("resources in state (-want +got):\n%s", diff)
			}
			var objects []string
			for k := range h.Objects() {
				objects = append(objects, k)
			}
			if diff := cmp.Diff(tt.wantObjects, objects, cmpopts.SortSlices(func(a, b string) bool { return a < b }), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("objects in the cloud (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantDeployments, h.Deployments(t), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("deployments (-want +got):\n%s", diff)
			}
			got := h.Output(map[string]string{"STATE": h.State})
			if err != nil {
				got += "== error\n" + apptest.Scrub(err.Error(), nil) + "\n"
			}
			golden.Assert(t, got, "TestDestroyRun-"+filepath.Base(t.Name())+".golden")
		})
	}
}

// TestDestroyAsks answers the question on a terminal: "n" deletes nothing (exit 1), "yes" deletes all.
// Not parallel: CI must be unset for a terminal to be asked on.
func TestDestroyAsks(t *testing.T) {
	t.Setenv("CI", "")
	for _, tt := range []struct {
		answer        string
		wantCode      int
		wantResources int
	}{
		{answer: "n\n", wantCode: cli.ExitErr, wantResources: 3},
		{answer: "\n", wantCode: cli.ExitErr, wantResources: 3},
		{answer: "YES\n", wantResources: 0},
	} {
		h := apptest.New(t)
		h.F.IO.InTTY, h.F.IO.ErrTTY = true, true
		h.In.WriteString(tt.answer)
		h.Seed(t, "S", "A", "B", "C")
		err := destroyRun(t.Context(), &Options{F: h.F, Config: h.Config("")})
		if code := cli.ExitCode(err); code != tt.wantCode {
			t.Errorf("answer %q: destroyRun() = %v (exit code %d), want exit code %d", tt.answer, err, code, tt.wantCode)
		}
		if got := len(h.Resources(t, "S")); got != tt.wantResources || len(h.Objects()) != tt.wantResources {
			t.Errorf("answer %q: %d resources in state, %d objects in the cloud; want %d", tt.answer, got, len(h.Objects()), tt.wantResources)
		}
		for _, want := range []string{"fake-1", "fake-2", "fake-3", cli.ConfirmQuestion} {
			if !strings.Contains(h.ErrOut.String(), want) {
				t.Errorf("answer %q: stderr does not show %q:\n%s", tt.answer, want, h.ErrOut)
			}
		}
	}
}
