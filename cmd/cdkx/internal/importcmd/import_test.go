package importcmd

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/golden"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/apptest"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TestNewCmdImport checks what the arguments and flags make of the options importRun receives.
func TestNewCmdImport(t *testing.T) {
	base := apptest.WantOf(func() *Options { return &Options{Config: apptest.DefaultConfig(nil)} })
	apptest.TestFlags(t, []apptest.FlagCase[Options]{
		{Name: "stack and logical ID", Args: []string{"Zones/Zone1", "example.test."},
			Want: base(func(o *Options) { o.ID, o.PhysicalID = "Zones/Zone1", "example.test." })},
		{Name: "logical ID, app and JSON", Args: []string{"Zone1", "example.test.", "--app", "out", "--json"},
			Want: base(func(o *Options) {
				o.ID, o.PhysicalID, o.Config.App, o.Config.JSON = "Zone1", "example.test.", "out", true
			})},
		{Name: "environment", Args: []string{"Z", "z."}, Env: map[string]string{"CDKX_APP": "other", "CDKX_LOCK_TIMEOUT": "30s"},
			Want: base(func(o *Options) { o.ID, o.PhysicalID, o.Config.App, o.Config.LockTimeout = "Z", "z.", "other", 30e9 })},
		{Name: "one argument", Args: []string{"Zones/Zone1"}, WantErr: "accepts 2 arg(s), received 1"},
		{Name: "three arguments", Args: []string{"A", "b", "c"}, WantErr: "accepts 2 arg(s), received 3"},
		{Name: "import changes nothing: no --force", Args: []string{"A", "b", "--force"}, WantErr: "unknown flag: --force"},
	}, NewCmdImport)
}

// TestImportRun imports objects of the fake cloud as resources of an assembly of two stacks: A declares X,
// Y and D (a Cdkx::Core::Data, which exists as long as state says so: its import records it with no
// inputs), B declares Y.
func TestImportRun(t *testing.T) {
	t.Parallel()
	thing := `{"type": "Fake::Test::Thing", "properties": {"key": "x", "value": "declared"}}`
	tests := []struct {
		name       string
		id         string
		physicalID string // default: the object the test puts in the cloud
		seed       bool   // A/X is managed already
		json       bool
		wantCode   int
		logicalID  string              // of the resource whose inputs are checked; default X
		wantInputs resource.Properties // A/<logicalID>'s recorded inputs after the run
	}{
		{name: "existing object", id: "A/X", wantInputs: resource.Properties{"key": "x", "value": "live"}},
		{name: "unique logical ID", id: "X", wantInputs: resource.Properties{"key": "x", "value": "live"}},
		{name: "existing object JSON", id: "A/X", json: true, wantInputs: resource.Properties{"key": "x", "value": "live"}},
		{name: "no such object", id: "A/X", physicalID: "fake-404", wantCode: cli.ExitErr},
		{name: "data", id: "A/D", physicalID: "0f8fad5b-d9cb-469f-a165-70867728950e", logicalID: "D",
			wantInputs: resource.Properties{}},
		{name: "managed already", id: "A/X", seed: true, wantCode: cli.ExitErr, wantInputs: resource.Properties{"key": "X", "value": "X"}},
		{name: "logical ID in two stacks", id: "Y", wantCode: cli.ExitErr},
		{name: "no such resource", id: "A/Z", wantCode: cli.ExitErr},
		{name: "no such stack", id: "C/X", wantCode: cli.ExitErr},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := apptest.New(t)
			app := apptest.Stacks(t, map[string]string{
				"A": `{"resources": {"X": ` + thing + `, "Y": ` + thing + `, "D": {"type": "Cdkx::Core::Data", "properties": {"input": 1}}}}`,
				"B": `{"resources": {"Y": ` + thing + `}}`,
			})
			if tt.seed {
				h.Seed(t, "A", "X")
			}
			phys := tt.physicalID
			if phys == "" {
				phys = h.Cloud.Put(resource.Properties{"key": "x", "value": "live"})
			}
			before := h.Objects()
			cfg := h.Config(app)
			cfg.JSON = tt.json
			err := importRun(t.Context(), &Options{F: h.F, Config: cfg, ID: tt.id, PhysicalID: phys})
			if code := cli.ExitCode(err); code != tt.wantCode {
				t.Errorf("importRun() = %v (exit code %d), want exit code %d", err, code, tt.wantCode)
			}
			logicalID := tt.logicalID
			if logicalID == "" {
				logicalID = "X"
			}
			if diff := cmp.Diff(tt.wantInputs, h.Inputs(t, "A", logicalID)); diff != "" {
				t.Errorf("A/%s's recorded inputs (-want +got):\n%s", logicalID, diff)
			}
			if diff := cmp.Diff(before, h.Objects()); diff != "" {
				t.Errorf("import changed the cloud (-before +after):\n%s", diff)
			}
			got := h.Output(map[string]string{"APP": app})
			if err != nil {
				got += "== error\n" + err.Error() + "\n"
			}
			golden.Assert(t, got, "TestImportRun-"+filepath.Base(t.Name())+".golden")
		})
	}
}
