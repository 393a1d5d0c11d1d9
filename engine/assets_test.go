package engine_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// writeAssetAssembly writes an assembly with one file asset (init.yaml holding data) used by the "value"
// of resource R (a fake CloudType) as the absolute path it had on the machine that ran synth. It returns
// the directory and the asset's machine-independent form.
func writeAssetAssembly(t *testing.T, data string) (dir, rel string) {
	t.Helper()
	sum := sha256.Sum256([]byte(data))
	h := hex.EncodeToString(sum[:])
	rel = "assets/asset." + h + "/init.yaml"
	dir = t.TempDir()
	files := map[string]string{
		"manifest.json": fmt.Sprintf(`{"version": "1.0.0", "artifacts": {
			"asset.%[1]s": {"type": "cdkx:asset", "properties": {"hash": %[1]q, "path": %[2]q, "packaging": "file"}},
			"S": {"type": "cdkx:stack", "properties": {"templateFile": "S.json"}}}}`, h, rel),
		"S.json": fmt.Sprintf(`{"resources": {"R": {"type": %q, "provider": "fake",
			"properties": {"key": "k", "value": {"list": ["/home/dev/app/cdkx.out/%s"]}}}}}`, enginetest.CloudType, rel),
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
	return dir, rel
}

// TestDeployResolvesAssets: the provider's Create gets the absolute path of this run's copy of the asset
// (and can read the asset's bytes there); state (inputs, and outputs that echo them), events and Read's
// answer keep the machine-independent form.
func TestDeployResolvesAssets(t *testing.T) {
	t.Parallel()
	dir, rel := writeAssetAssembly(t, "#cloud-config\n")
	a, ds := assembly.Load(dir)
	if ds.HasErrors() {
		t.Fatal(ds.Err())
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	abs := filepath.Join(real, filepath.FromSlash(rel))
	var mu sync.Mutex
	var seen []string
	see := func(op string, props resource.Properties) {
		mu.Lock()
		defer mu.Unlock()
		path := props["value"].(map[string]any)["list"].([]any)[0].(string)
		data, err := os.ReadFile(path)
		seen = append(seen, fmt.Sprintf("%s %s %q %v", op, path, data, err))
	}
	p := &enginetest.Provider{InfoValue: enginetest.NewCloud().Info(),
		CreateFunc: func(_ context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
			see("create", req.Properties)
			// An output that echoes an input (as Cdkx::Core::Data does) is recorded in the machine-independent form.
			return resource.CreateResult{PhysicalID: "id-1", Outputs: resource.Properties{"id": "id-1", "value": req.Properties["value"]}}, nil
		},
		ReadFunc: func(_ context.Context, req resource.ReadRequest) (resource.ReadResult, error) {
			see("read", req.Properties)
			return resource.ReadResult{Properties: req.Properties, Outputs: req.Outputs}, nil // echoes the path it got
		},
	}
	b := openBackend(t)
	reg := engine.NewRegistry(p)
	res, rec := deployWith(t, a, b, reg, engine.Options{Concurrency: 2, Assets: a.ResolveAsset})
	if len(res.Failures) != 0 {
		t.Fatalf("failures: %v", res.Failures)
	}
	st, err := b.GetStack(context.Background(), "S")
	if err != nil {
		t.Fatal(err)
	}
	want := resource.Properties{"key": "k", "value": map[string]any{"list": []any{rel}}}
	if diff := cmp.Diff(want, st.Resources["R"].Inputs); diff != "" {
		t.Errorf("recorded inputs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want["value"], st.Resources["R"].Outputs["value"]); diff != "" {
		t.Errorf("recorded output (-want +got):\n%s", diff)
	}
	events, _ := json.Marshal(rec.events)
	if strings.Contains(string(events), real) {
		t.Errorf("events name this machine's path: %s", events)
	}
	// A refresh reads the object with the path resolved; what it reads back is compared in the
	// machine-independent form: no drift.
	rres, err := engine.Refresh(context.Background(), []*state.Stack{st}, engine.Options{Backend: b, Providers: reg, Assets: a.ResolveAsset},
		engine.RefreshOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rres.Failures) != 0 {
		t.Fatalf("refresh failures: %v", rres.Failures)
	}
	st, err = b.GetStack(context.Background(), "S")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, st.Resources["R"].Inputs); diff != "" {
		t.Errorf("inputs after refresh (-want +got):\n%s", diff)
	}
	wantSeen := []string{fmt.Sprintf("create %s %q <nil>", abs, "#cloud-config\n"), fmt.Sprintf("read %s %q <nil>", abs, "#cloud-config\n")}
	if diff := cmp.Diff(wantSeen, seen); diff != "" {
		t.Errorf("provider calls (-want +got):\n%s", diff)
	}
}

func TestResolveAssets(t *testing.T) {
	t.Parallel()
	assets := func(rel string) (string, bool) {
		if strings.HasPrefix(rel, "assets/") {
			return "/run/" + rel, true
		}
		return "", false
	}
	props := resource.Properties{"a": "assets/x", "b": []any{"keep", map[string]any{"c": "assets/y"}}, "d": map[string]any{"e": "keep"}}
	before, _ := json.Marshal(props)
	got, done := engine.ResolveAssets(props, assets)
	want := resource.Properties{"a": "/run/assets/x", "b": []any{"keep", map[string]any{"c": "/run/assets/y"}}, "d": map[string]any{"e": "keep"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ResolveAssets (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"/run/assets/x": "assets/x", "/run/assets/y": "assets/y"}, done); diff != "" {
		t.Errorf("replacements (-want +got):\n%s", diff)
	}
	after, _ := json.Marshal(props)
	if string(before) != string(after) {
		t.Errorf("ResolveAssets changed its argument: %s → %s", before, after)
	}
	if got, done := engine.ResolveAssets(resource.Properties{"a": "x"}, assets); done != nil || got["a"] != "x" {
		t.Errorf("ResolveAssets without assets = %v, %v", got, done)
	}
}
