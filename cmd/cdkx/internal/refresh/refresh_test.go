package refresh

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/golden"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/apptest"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/engine/enginetest"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TestNewCmdRefresh checks what the arguments, flags and CDKX_* variables make of the options refreshRun
// receives. Not parallel: the variables are the process's (viper reads them there).
func TestNewCmdRefresh(t *testing.T) {
	base := apptest.WantOf(func() *Options { return &Options{Config: apptest.DefaultConfig(nil)} })
	apptest.TestFlags(t, []apptest.FlagCase[Options]{
		{Name: "defaults", Want: base(nil)},
		{Name: "stacks and JSON", Args: []string{"App", "Zones", "--json"},
			Want: base(func(o *Options) { o.Stacks, o.Config.JSON = []string{"App", "Zones"}, true })},
		{Name: "environment", Env: map[string]string{"CDKX_STATE": "postgres://db/x", "CDKX_CONCURRENCY": "4", "CDKX_VERBOSE": "true"},
			Want: base(func(o *Options) { o.Config.State, o.Config.Concurrency, o.Config.Verbose = "postgres://db/x", 4, true })},
		{Name: "flags win over the environment", Args: []string{"--state", "a.db"}, Env: map[string]string{"CDKX_STATE": "b.db"},
			Want: base(func(o *Options) { o.Config.State = "a.db" })},
		{Name: "malformed concurrency variable", Env: map[string]string{"CDKX_CONCURRENCY": "many"},
			WantErr: `invalid value "many" for CDKX_CONCURRENCY: want a whole number, e.g. 10`},
		{Name: "refresh changes nothing: no --yes", Args: []string{"--yes"}, WantErr: "unknown flag: --yes"},
	}, NewCmdRefresh)
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
