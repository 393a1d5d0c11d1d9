package operation_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/engine/enginetest"
	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// assetFixture is a fixture whose provider reads, at each create, the file its "value" names.
type assetFixture struct {
	*fixture
	mu   sync.Mutex
	seen []string // "<path> <mode of the copy's directory> <bytes>"
}

func newAssetFixture(t *testing.T) *assetFixture {
	fx := &assetFixture{fixture: newFixture(t, 0)}
	fx.env.Providers = engine.NewRegistry(&enginetest.Provider{InfoValue: enginetest.NewCloud().Info(),
		CreateFunc: func(_ context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
			path := fmt.Sprint(req.Properties["value"])
			data, err := os.ReadFile(path)
			if err != nil {
				return resource.CreateResult{}, err
			}
			mode := "?"
			if info, err := os.Stat(filepath.Dir(filepath.Dir(filepath.Dir(path)))); err == nil {
				mode = info.Mode().Perm().String()
			}
			fx.mu.Lock()
			fx.seen = append(fx.seen, fmt.Sprintf("%s %s %q", path, mode, data))
			fx.mu.Unlock()
			return resource.CreateResult{PhysicalID: req.LogicalID, Outputs: resource.Properties{"id": req.LogicalID}}, nil
		}})
	return fx
}

// writeAssetAssembly writes a one-stack assembly (stack S) whose resource R0's value is the absolute path
// its asset (init.yaml holding data) had on the synth machine; it returns it loaded and the asset's
// machine-independent form.
func writeAssetAssembly(t *testing.T, fx *assetFixture, data string) (loaded, string, string) {
	t.Helper()
	sum := sha256.Sum256([]byte(data))
	h := hex.EncodeToString(sum[:])
	rel := "assets/asset." + h + "/init.yaml"
	dir := t.TempDir()
	files := map[string]string{
		"manifest.json": fmt.Sprintf(`{"version": "1.0.0", "artifacts": {
			"asset.%[1]s": {"type": "cdkx:asset", "properties": {"hash": %[1]q, "path": %[2]q, "packaging": "file"}},
			"S": {"type": "cdkx:stack", "properties": {"templateFile": "S.json"}}}}`, h, rel),
		"S.json": fmt.Sprintf(`{"resources": {"R0": {"type": %q, "provider": "fake",
			"properties": {"key": "k0", "value": "/home/dev/app/cdkx.out/%s"}}}}`, enginetest.CloudType, rel),
		rel: data,
	}
	for name, d := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(d), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a, read, ds := assembly.LoadWithFiles(dir)
	if a == nil {
		t.Fatalf("LoadWithFiles() = %v", ds)
	}
	a, _, ds = operation.Validate(a, ds, fx.env.Providers)
	if a == nil {
		t.Fatalf("Validate() = %v", ds)
	}
	return loaded{a, read}, rel, dir
}

// TestSnapshotAssets: a proposal stores the asset's bytes; approved and run after the assembly directory
// is gone, the provider reads the same bytes from a private copy (0700) that is removed after the run, and
// state records the machine-independent form.
func TestSnapshotAssets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newAssetFixture(t)
	a, rel, dir := writeAssetAssembly(t, fx, "#cloud-config\npackages: [nginx]\n")
	p := record(t, fx.fixture, a, state.StatusProposed, "")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	d := approve(t, fx.fixture, p)
	if _, _, err := (operation.RunDeployment{Env: fx.env, Deployment: d}).Run(ctx); err != nil {
		t.Fatalf("RunDeployment() = %v", err)
	}
	if len(fx.seen) != 1 {
		t.Fatalf("provider creates = %v, want one", fx.seen)
	}
	path, _, _ := strings.Cut(fx.seen[0], " ")
	if !strings.HasSuffix(path, filepath.FromSlash(rel)) || strings.HasPrefix(path, dir) {
		t.Errorf("the provider read %s, want the run's copy of %s", path, rel)
	}
	if want := fmt.Sprintf("%s %s %q", path, "-rwx------", "#cloud-config\npackages: [nginx]\n"); fx.seen[0] != want {
		t.Errorf("the provider saw %s, want %s", fx.seen[0], want)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the run's copy is still there after the run: %v", err)
	}
	st, err := fx.env.Backend.GetStack(ctx, "S")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(resource.Properties{"key": "k0", "value": rel}, st.Resources["R0"].Inputs); diff != "" {
		t.Errorf("recorded inputs (-want +got):\n%s", diff)
	}
}

// TestSnapshotAssetsTampered: asset bytes changed in a stored snapshot are refused before any provider
// call — by the snapshot's hash, and, when the attacker also recomputes the hashes, by the asset's own.
func TestSnapshotAssetsTampered(t *testing.T) {
	t.Parallel()
	for _, rehash := range []bool{false, true} {
		t.Run(fmt.Sprintf("rehash=%v", rehash), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			fx := newAssetFixture(t)
			a, rel, _ := writeAssetAssembly(t, fx, "#cloud-config\n")
			d := approve(t, fx.fixture, record(t, fx.fixture, a, state.StatusProposed, ""))
			var err error
			if d.Snapshot, err = snapshotOf(fx.fixture, d.ID); err != nil {
				t.Fatal(err)
			}
			snap, err := operation.DecodeSnapshot(d)
			if err != nil {
				t.Fatal(err)
			}
			if string(snap.Assets[rel]) != "#cloud-config\n" {
				t.Fatalf("snapshot assets = %q, want the asset's bytes under %s", snap.Assets, rel)
			}
			snap.Assets[rel] = []byte("#cloud-config\nruncmd: [evil]\n")
			if d.Snapshot, err = json.Marshal(snap); err != nil {
				t.Fatal(err)
			}
			if rehash {
				d.SnapshotHash = state.SnapshotHash(d.Snapshot)
				d.Plan.SnapshotHash = d.SnapshotHash
			}
			_, _, err = (operation.RunDeployment{Env: fx.env, Deployment: d}).Run(ctx)
			var te *operation.TamperedError
			var se *operation.SnapshotInvalidError
			switch {
			case !rehash && !errors.As(err, &te):
				t.Errorf("RunDeployment() = %v, want a *TamperedError", err)
			case rehash && (!errors.As(err, &se) || !strings.Contains(err.Error(), "does not match its hash")):
				t.Errorf("RunDeployment() = %v, want a *SnapshotInvalidError naming the asset's hash", err)
			}
			if len(fx.seen) != 0 {
				t.Errorf("a tampered snapshot reached the provider: %v", fx.seen)
			}
		})
	}
}

// TestSnapshotAssetsTooLarge: a proposal whose assets pass MaxSnapshotAssets is refused, nothing recorded.
func TestSnapshotAssetsTooLarge(t *testing.T) {
	t.Parallel()
	fx := newAssetFixture(t)
	a, _, _ := writeAssetAssembly(t, fx, "#"+strings.Repeat("x", operation.MaxSnapshotAssets))
	_, _, err := operation.Record{Env: fx.env, Assembly: a.Assembly, Files: a.files, Selection: operation.Selection{Stacks: []string{"S"}},
		Status: state.StatusProposed, Kind: state.KindDeploy}.Run(context.Background())
	if want := fmt.Sprintf("larger than %d MiB", operation.MaxSnapshotAssets>>20); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Record() = %v, want the assets refused as too large", err)
	}
	ds, err := fx.env.Backend.ListDeployments(context.Background(), state.DeploymentFilter{})
	if err != nil || len(ds) != 0 {
		t.Errorf("deployments = %v, %v; want none", ds, err)
	}
}

// TestDeployAssets: a deploy run here hands the provider the path of the asset inside the assembly
// directory; an asset changed after the assembly was loaded is refused before any provider call.
func TestDeployAssets(t *testing.T) {
	t.Parallel()
	for _, changed := range []bool{false, true} {
		t.Run(fmt.Sprintf("changed=%v", changed), func(t *testing.T) {
			t.Parallel()
			fx := newAssetFixture(t)
			a, rel, dir := writeAssetAssembly(t, fx, "#cloud-config\n")
			real, err := filepath.EvalSymlinks(dir)
			if err != nil {
				t.Fatal(err)
			}
			if changed {
				if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(rel)), []byte("#cloud-config\nevil\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, _, err = operation.Deploy{Env: fx.env, Assembly: a.Assembly, Files: a.files,
				Selection: operation.Selection{Stacks: []string{"S"}}}.Run(context.Background())
			if changed {
				if err == nil || !strings.Contains(err.Error(), "not the manifest's") || len(fx.seen) != 0 {
					t.Errorf("Deploy() = %v with provider calls %v; want the changed asset refused, no call", err, fx.seen)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			abs := filepath.Join(real, filepath.FromSlash(rel))
			if len(fx.seen) != 1 || !strings.HasPrefix(fx.seen[0], abs+" ") {
				t.Errorf("provider creates = %v, want one with %s", fx.seen, abs)
			}
		})
	}
}
