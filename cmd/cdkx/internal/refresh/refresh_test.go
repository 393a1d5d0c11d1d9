package refresh

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"gotest.tools/v3/golden"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/apptest"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/engine/enginetest"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TestNewCmdRefresh checks what the arguments, flags and CDKX_* variables make of the options refreshRun
// receives. Not parallel: the variables are the process's (viper reads them there).
func TestNewCmdRefresh(t *testing.T) {
	base := func(change func(o *Options)) *Options {
		o := &Options{Config: &cli.Config{App: "cdkx.out", State: cli.DefaultStatePath, Concurrency: 10,
			RequireApproval: cli.ApprovalDestructive}}
		if change != nil {
			change(o)
		}
		return o
	}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    *Options
		wantErr string
	}{
		{name: "defaults", want: base(nil)},
		{name: "stacks and JSON", args: []string{"App", "Zones", "--json"},
			want: base(func(o *Options) { o.Stacks, o.Config.JSON = []string{"App", "Zones"}, true })},
		{name: "environment", env: map[string]string{"CDKX_STATE": "postgres://db/x", "CDKX_CONCURRENCY": "4", "CDKX_VERBOSE": "true"},
			want: base(func(o *Options) { o.Config.State, o.Config.Concurrency, o.Config.Verbose = "postgres://db/x", 4, true })},
		{name: "flags win over the environment", args: []string{"--state", "a.db"}, env: map[string]string{"CDKX_STATE": "b.db"},
			want: base(func(o *Options) { o.Config.State = "a.db" })},
		{name: "malformed concurrency variable", env: map[string]string{"CDKX_CONCURRENCY": "many"},
			wantErr: `invalid value "many" for CDKX_CONCURRENCY: want a whole number, e.g. 10`},
		{name: "refresh changes nothing: no --yes", args: []string{"--yes"}, wantErr: "unknown flag: --yes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			var got *Options
			cmd := NewCmdRefresh(apptest.FlagFactory(), func(_ context.Context, o *Options) error { got = o; return nil })
			err := apptest.Execute(cmd, tt.args...)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("refresh %q: error %v, want %q", tt.args, err, tt.wantErr)
				}
				if got != nil {
					t.Errorf("refresh %q: run called despite the error", tt.args)
				}
				return
			}
			if err != nil {
				t.Fatalf("refresh %q: %v", tt.args, err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(Options{}, "F"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("refresh %q options (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

// TestRefreshRun refreshes stack S (A ← B ← C on the fake cloud) after the cloud drifted: B changed out of
// band, C deleted out of band.
func TestRefreshRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		stacks        []string
		json          bool
		drift         bool
		fail          func(op, id string) error
		wantCode      int
		wantResources map[string]string
		wantValueB    any // B's recorded "value" after the run
	}{
		{name: "in sync", wantResources: map[string]string{"A": "CREATE_COMPLETE", "B": "CREATE_COMPLETE", "C": "CREATE_COMPLETE"},
			wantValueB: "B"},
		{name: "drift", drift: true, wantResources: map[string]string{"A": "CREATE_COMPLETE", "B": "CREATE_COMPLETE"},
			wantValueB: "changed"},
		{name: "drift JSON", drift: true, json: true, wantResources: map[string]string{"A": "CREATE_COMPLETE", "B": "CREATE_COMPLETE"},
			wantValueB: "changed"},
		{name: "a read fails", drift: true, wantCode: cli.ExitFailed,
			fail: func(op, id string) error {
				if op == "read" && id == "fake-1" {
					return enginetest.ErrInjected
				}
				return nil
			},
			wantResources: map[string]string{"A": "CREATE_COMPLETE", "B": "CREATE_COMPLETE"}, wantValueB: "changed"},
		{name: "unknown stack", stacks: []string{"Nope"}, wantCode: cli.ExitErr,
			wantResources: map[string]string{"A": "CREATE_COMPLETE", "B": "CREATE_COMPLETE", "C": "CREATE_COMPLETE"}, wantValueB: "B"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := apptest.New(t)
			phys := h.Seed(t, "S", "A", "B", "C")
			if tt.drift {
				h.Cloud.Set(phys["B"], resource.Properties{"key": "B", "value": "changed"})
				h.Cloud.Remove(phys["C"])
			}
			h.Cloud.Fail = tt.fail
			before := h.Objects()
			cfg := h.Config("")
			cfg.JSON = tt.json
			err := refreshRun(t.Context(), &Options{F: h.F, Config: cfg, Stacks: tt.stacks})
			if code := cli.ExitCode(err); code != tt.wantCode {
				t.Errorf("refreshRun() = %v (exit code %d), want exit code %d", err, code, tt.wantCode)
			}
			if diff := cmp.Diff(tt.wantResources, h.Resources(t, "S")); diff != "" {
				t.Errorf("resources in state (-want +got):\n%s", diff)
			}
			if got := h.Inputs(t, "S", "B")["value"]; got != tt.wantValueB {
				t.Errorf("B's recorded value = %v, want %v", got, tt.wantValueB)
			}
			if diff := cmp.Diff(before, h.Objects()); diff != "" {
				t.Errorf("refresh changed the cloud (-before +after):\n%s", diff)
			}
			got := apptest.SortEvents(h.Output(nil))
			if err != nil {
				got += "== error\n" + err.Error() + "\n"
			}
			golden.Assert(t, got, "TestRefreshRun-"+filepath.Base(t.Name())+".golden")
		})
	}
}
