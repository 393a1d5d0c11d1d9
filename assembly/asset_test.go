package assembly

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// The directory asset of the tests and its hash, computed with the TypeScript cdkx's AssetHasher.hashDirectory
// (node, over the same three files).
var (
	dirFiles = map[string]string{"b.txt": "b\n", "a/x.sh": "#!/bin/sh\necho hi\n", "Z.txt": "Z"}
	dirHash  = "f4943d1c7a4370f106f04aa793cca6955f1a197e2da2cd4fa8d5929a5148857f"
)

// assetAssembly returns the files of an assembly with a file asset (cloud-init.yaml holding fileData,
// declared with fileHash), a directory asset (dirFiles, declared with dirHash) and one stack App whose
// resource R has props (JSON).
func assetAssembly(fileData, fileHash, props string) map[string]string {
	fh := sha("#cloud-config\n")
	files := map[string]string{
		"manifest.json": fmt.Sprintf(`{"version": "1.0.0", "artifacts": {
			"asset.%[1]s": {"type": "cdkx:asset", "properties": {"hash": %[2]q, "path": "assets/asset.%[1]s/cloud-init.yaml", "packaging": "file"}},
			"asset.%[3]s": {"type": "cdkx:asset", "properties": {"hash": %[3]q, "path": "assets/asset.%[3]s", "packaging": "directory"}},
			"App": {"type": "cdkx:stack", "properties": {"templateFile": "App.json"}}}}`, fh, fileHash, dirHash),
		"App.json": `{"resources": {"R": {"type": "Multipass::Compute::Instance", "properties": ` + props + `}}}`,
		"assets/asset." + fh + "/cloud-init.yaml": fileData,
	}
	for name, data := range dirFiles {
		files["assets/asset."+dirHash+"/"+name] = data
	}
	return files
}

func TestLoadAssets(t *testing.T) {
	t.Parallel()
	fh := sha("#cloud-config\n")
	fileRel := "assets/asset." + fh + "/cloud-init.yaml"
	dirRel := "assets/asset." + dirHash
	undeclared := strings.Repeat("0", 64)
	tests := []struct {
		name      string
		props     string
		fileData  string // default "#cloud-config\n"
		fileHash  string // default fh
		want      map[string]any
		wantPaths []string
		wantDiags []string
	}{{
		name:      "posix",
		props:     `{"cloudInit": "/home/dev/app/cdkx.out/assets/asset.` + fh + `/cloud-init.yaml"}`,
		want:      map[string]any{"cloudInit": fileRel},
		wantPaths: []string{"cloudInit"},
	}, {
		name:      "windows backslashes",
		props:     `{"cloudInit": "C:\\Users\\dev\\app\\cdkx.out\\assets\\asset.` + fh + `\\cloud-init.yaml"}`,
		want:      map[string]any{"cloudInit": fileRel},
		wantPaths: []string{"cloudInit"},
	}, {
		name:      "windows slashes and UNC",
		props:     `{"a": "d:/app/cdkx.out/assets/asset.` + fh + `/cloud-init.yaml", "b": "\\\\server\\share\\cdkx.out/assets\\asset.` + fh + `\\cloud-init.yaml"}`,
		want:      map[string]any{"a": fileRel, "b": fileRel},
		wantPaths: []string{"a", "b"},
	}, {
		name: "nested in lists and objects",
		props: `{"mounts": [{"source": "/x/cdkx.out/assets/asset.` + dirHash + `", "target": "/srv"},
			{"source": "/x/cdkx.out/assets/asset.` + dirHash + `/a/x.sh"}], "meta": {"deep": ["/x/assets/asset.` + fh + `/cloud-init.yaml"]}}`,
		want: map[string]any{
			"mounts": []any{map[string]any{"source": dirRel, "target": "/srv"}, map[string]any{"source": dirRel + "/a/x.sh"}},
			"meta":   map[string]any{"deep": []any{fileRel}},
		},
		wantPaths: []string{"meta.deep[0]", "mounts[0].source", "mounts[1].source"},
	}, {
		name:  "non-asset absolute paths, relative paths and inline text untouched",
		props: `{"a": "/home/dev/cloud-init.yaml", "b": "assets/asset.` + fh + `/cloud-init.yaml", "c": "#cloud-config\nwrite_files: /x/asset.` + fh + `/cloud-init.yaml", "d": "/srv/asset.backup/x", "e": "C:relative\\asset.` + fh + `\\cloud-init.yaml"}`,
		want: map[string]any{"a": "/home/dev/cloud-init.yaml", "b": "assets/asset." + fh + "/cloud-init.yaml",
			"c": "#cloud-config\nwrite_files: /x/asset." + fh + "/cloud-init.yaml", "d": "/srv/asset.backup/x", "e": "C:relative\\asset." + fh + "\\cloud-init.yaml"},
	}, {
		name:  "undeclared asset",
		props: `{"cloudInit": "/x/cdkx.out/assets/asset.` + undeclared + `/cloud-init.yaml"}`,
		want:  map[string]any{"cloudInit": "/x/cdkx.out/assets/asset." + undeclared + "/cloud-init.yaml"},
		wantDiags: []string{`error: cdkx.out/App.json: resources.R.properties.cloudInit: "/x/cdkx.out/assets/asset.` + undeclared +
			`/cloud-init.yaml" names asset asset.` + undeclared + `, which the manifest does not declare` +
			"; the manifest has no cdkx:asset artifact with hash " + undeclared + " (it declares asset." + fh + ", asset." + dirHash +
			"): synthesize the app again, and deploy the whole cdkx.out it writes"},
	}, {
		name:     "hash mismatch",
		props:    `{"cloudInit": "/x/assets/asset.` + fh + `/cloud-init.yaml"}`,
		fileData: "#cloud-config\nchanged\n",
		want:     map[string]any{"cloudInit": fileRel},
		wantDiags: []string{"error: cdkx.out/App.json: resources.R.properties.cloudInit: asset asset." + fh + " does not match its hash: want " + fh +
			", got " + sha("#cloud-config\nchanged\n") + "; " + fileRel + " changed after synth: synthesize the app again"},
		wantPaths: []string{"cloudInit"},
	}, {
		name:      "another file of a file asset",
		props:     `{"cloudInit": "/x/assets/asset.` + fh + `/other.yaml"}`,
		want:      map[string]any{"cloudInit": "/x/assets/asset." + fh + "/other.yaml"},
		wantDiags: []string{`error: cdkx.out/App.json: resources.R.properties.cloudInit: "/x/assets/asset.` + fh + `/other.yaml" is not the file of asset asset.` + fh + ": it holds cloud-init.yaml only; synthesize the app again, or name the asset's file"},
	}, {
		name:      "out of the asset",
		props:     `{"p": "/x/assets/asset.` + dirHash + `/../../App.json"}`,
		want:      map[string]any{"p": "/x/assets/asset." + dirHash + "/../../App.json"},
		wantDiags: []string{`error: cdkx.out/App.json: resources.R.properties.p: "/x/assets/asset.` + dirHash + `/../../App.json" leads out of asset asset.` + dirHash},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			data, hash := tt.fileData, tt.fileHash
			if data == "" {
				data = "#cloud-config\n"
			}
			if hash == "" {
				hash = fh
			}
			a, ds := loadFiles(t, assetAssembly(data, hash, tt.props))
			if diff := cmp.Diff(tt.wantDiags, lines(ds), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s", diff)
			}
			r := a.Stacks[0].Resources[0]
			if diff := cmp.Diff(tt.want, map[string]any(r.Properties)); diff != "" {
				t.Errorf("properties (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantPaths, r.AssetPaths); diff != "" {
				t.Errorf("AssetPaths (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadAssetsMissing(t *testing.T) {
	t.Parallel()
	fh := sha("#cloud-config\n")
	tests := []struct {
		name, drop, props, want string
	}{{
		name:  "file",
		drop:  "assets/asset." + fh + "/cloud-init.yaml",
		props: `{"cloudInit": "/x/assets/asset.` + fh + `/cloud-init.yaml"}`,
		want: "error: cdkx.out/App.json: resources.R.properties.cloudInit: asset asset." + fh + " is missing: assets/asset." + fh +
			"/cloud-init.yaml not found in the assembly; synthesize the app again, and deploy the whole cdkx.out it writes (assets included)",
	}, {
		name:  "directory",
		drop:  "*dir",
		props: `{"m": "/x/assets/asset.` + dirHash + `"}`,
		want: "error: cdkx.out/App.json: resources.R.properties.m: asset asset." + dirHash + " is missing: assets/asset." + dirHash +
			" not found in the assembly; synthesize the app again, and deploy the whole cdkx.out it writes (assets included)",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			files := assetAssembly("#cloud-config\n", fh, tt.props)
			for name := range files {
				if name == tt.drop || (tt.drop == "*dir" && strings.Contains(name, dirHash+"/")) {
					delete(files, name)
				}
			}
			_, ds := loadFiles(t, files)
			if diff := cmp.Diff([]string{tt.want}, lines(ds)); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLoadAssetDirectory checks the directory hash on disk (os.Root, the walk, the UTF-16 order) and that
// ResolveAsset finds the copy; only used assets are verified (the file asset's bytes are wrong and unused).
func TestLoadAssetDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := assetAssembly("not what the hash says", sha("#cloud-config\n"), `{"m": "/elsewhere/cdkx.out/assets/asset.`+dirHash+`/a/x.sh"}`)
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a, ds := Load(dir)
	if len(ds) != 0 {
		t.Fatalf("Load() = %v", lines(ds))
	}
	rel := a.Stacks[0].Resources[0].Properties["m"].(string)
	if want := "assets/asset." + dirHash + "/a/x.sh"; rel != want {
		t.Fatalf("m = %q, want %q", rel, want)
	}
	abs, ok := a.ResolveAsset(rel)
	real, _ := filepath.EvalSymlinks(dir)
	if want := filepath.Join(real, "assets", "asset."+dirHash, "a", "x.sh"); !ok || abs != want {
		t.Errorf("ResolveAsset(%q) = %q, %v; want %q, true", rel, abs, ok, want)
	}
	if _, ok := a.ResolveAsset("assets/asset.0000/x"); ok {
		t.Error("ResolveAsset resolved an undeclared asset")
	}
	if err := a.VerifyAssets(); err != nil {
		t.Errorf("VerifyAssets() = %v", err)
	}
	got, err := a.AssetFiles(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{}
	for name, data := range dirFiles {
		want["assets/asset."+dirHash+"/"+name] = []byte(data)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("AssetFiles (-want +got):\n%s", diff)
	}
	if _, err := a.AssetFiles(10); err == nil || !strings.Contains(err.Error(), ErrAssetsTooLarge.Error()) {
		t.Errorf("AssetFiles(10) = %v, want ErrAssetsTooLarge", err)
	}
	// Changed after load: the run's verification sees it.
	if err := os.WriteFile(filepath.Join(dir, "assets", "asset."+dirHash, "b.txt"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := a.VerifyAssets(); err == nil || !strings.Contains(err.Error(), "not the manifest's "+dirHash) {
		t.Errorf("VerifyAssets() after a change = %v, want a mismatch", err)
	}
}

func TestLoadSharedAssetAssembly(t *testing.T) {
	t.Parallel()
	const hash = "bc6650386e3af37b0803a2d00fbf137a29d3a0e160cd789a2aa0dae1be89033a"
	a, ds := Load(filepath.Join("testdata", "asset"))
	if len(ds) != 0 {
		t.Fatalf("Load() = %v", lines(ds))
	}
	r := a.Stack("Network").Resource("NetworkInstanceEAC80E12")
	want := "assets/asset." + hash + "/cloud-init.yaml"
	if got := r.Properties["cloudInit"]; got != want {
		t.Errorf("cloudInit = %v, want %q", got, want)
	}
	if diff := cmp.Diff([]string{"cloudInit"}, r.AssetPaths); diff != "" {
		t.Errorf("AssetPaths (-want +got):\n%s", diff)
	}
	if !a.Assets[0].Used {
		t.Error("the asset is not marked used")
	}
}

func TestCompareUTF16(t *testing.T) {
	t.Parallel()
	// JavaScript sorts by UTF-16 code units: U+FF5E (one unit) after U+1F600 (surrogates D83D DE00),
	// where byte (code point) order puts it before.
	if got := compareUTF16("\uFF5E", "\U0001F600"); got != 1 {
		t.Errorf("compareUTF16 = %d, want 1", got)
	}
	if got := compareUTF16("Z.txt", "a/x.sh"); got != -1 {
		t.Errorf("compareUTF16 = %d, want -1", got)
	}
}
