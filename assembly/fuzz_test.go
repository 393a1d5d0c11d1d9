package assembly

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/pkg/diag"
)

// seedDirs are assemblies whose manifest and templates seed the fuzz corpus.
func seedDirs(tb testing.TB) []string {
	tb.Helper()
	dirs := []string{exampleDNS}
	for _, pattern := range []string{"testdata/*", sharedAssemblies + "/*", sharedAssemblies + "/*/cdkx.out"} {
		matches, _ := filepath.Glob(pattern)
		dirs = append(dirs, matches...)
	}
	return dirs
}

// FuzzLoad runs Load and Validate on a manifest and a template (served for every stack) and checks that
// they never panic and that what they return is well formed.
func FuzzLoad(f *testing.F) {
	for _, dir := range seedDirs(f) {
		m, err := os.ReadFile(filepath.Join(dir, ManifestFile))
		if err != nil {
			continue
		}
		templates, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		for _, tf := range templates {
			if filepath.Base(tf) == ManifestFile {
				continue
			}
			if data, err := os.ReadFile(tf); err == nil {
				f.Add(m, data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, manifestData, templateData []byte) {
		read := func(name string) ([]byte, error) {
			if name == ManifestFile {
				return manifestData, nil
			}
			return templateData, nil
		}
		a, ds := load("cdkx.out", read, nil)
		checkDiagnostics(t, ds)
		if a == nil {
			if !ds.HasErrors() {
				t.Fatalf("Load() = nil with no error: %v", lines(ds))
			}
			return
		}
		checkAssembly(t, a)
		checkDiagnostics(t, Validate(a, fakeCatalog{}))
	})
}

func checkDiagnostics(t *testing.T, ds diag.Diagnostics) {
	t.Helper()
	if !slices.IsSortedFunc(ds, func(a, b diag.Diagnostic) int {
		return strings.Compare(a.File+"\x00"+a.Path, b.File+"\x00"+b.Path)
	}) {
		t.Errorf("diagnostics not sorted: %v", lines(ds))
	}
	for _, d := range ds {
		if d.File == "" || d.Summary == "" {
			t.Errorf("diagnostic without file or summary: %#v", d)
		}
	}
}

func checkAssembly(t *testing.T, a *Assembly) {
	t.Helper()
	for _, s := range a.Stacks {
		if !slices.IsSorted(s.Dependencies) || len(slices.Compact(slices.Clone(s.Dependencies))) != len(s.Dependencies) {
			t.Errorf("stack %q: Dependencies %q not sorted and unique", s.ID, s.Dependencies)
		}
		for _, dep := range s.Dependencies {
			if dep == s.ID || a.Stack(dep) == nil {
				t.Errorf("stack %q: dependency %q is itself or no stack", s.ID, dep)
			}
		}
		if !slices.IsSortedFunc(s.Resources, func(a, b *Resource) int { return strings.Compare(a.LogicalID, b.LogicalID) }) {
			t.Errorf("stack %q: resources not sorted", s.ID)
		}
		if s.Missing && len(s.Resources) > 0 {
			t.Errorf("stack %q: Missing with %d resources", s.ID, len(s.Resources))
		}
	}
}

// FuzzDecode checks the order-keeping decoder against encoding/json: both accept the same documents and,
// without duplicate keys, decode them to the same values.
func FuzzDecode(f *testing.F) {
	for _, dir := range seedDirs(f) {
		files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		for _, file := range files {
			if data, err := os.ReadFile(file); err == nil {
				f.Add(data)
			}
		}
	}
	for _, s := range []string{`{"a":1,"a":2}`, `[1, 2.5e3, -0, "\u00e9", null, true]`, `{} x`, `"`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, found, err := decode(data)
		var deep *depthError
		if errors.As(err, &deep) {
			if tooDeep(data) != deep.Offset || deep.Offset < 0 || deep.Offset >= int64(len(data)) {
				t.Fatalf("decode() = %v at offset %d, tooDeep = %d", err, deep.Offset, tooDeep(data))
			}
			return
		}
		if valid := json.Valid(data); valid != (err == nil) {
			t.Fatalf("decode() error = %v, json.Valid = %t", err, valid)
		}
		if err != nil {
			if d := jsonError("f", data, err); d.Line < 1 || d.Column < 1 {
				t.Errorf("jsonError(%v) has no position: %#v", err, d)
			}
			return
		}
		if len(found.dups) > 0 {
			return // encoding/json keeps the last value, decode the first
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var want any
		if err := dec.Decode(&want); err != nil {
			t.Fatalf("encoding/json: %v", err)
		}
		if diff := cmp.Diff(want, plain(got)); diff != "" {
			t.Errorf("decode() mismatch with encoding/json (-want +got):\n%s", diff)
		}
		// A template's decoder builds maps below level 3 and records tokens: the same values.
		got3, found3, err := decodeBelow(data, nil, 3)
		if err != nil || len(found3.dups) > 0 || len(found3.numbers) != len(found.numbers) {
			t.Fatalf("decodeBelow(3) = %v, %v; decode found %v", err, found3, found)
		}
		if diff := cmp.Diff(want, plain(got3)); diff != "" {
			t.Errorf("decodeBelow(3) mismatch with encoding/json (-want +got):\n%s", diff)
		}
	})
}

// FuzzRecorded checks what the template decoder records of each resource against the walks it spares:
// the same tokens as FindTokens finds in its properties, and an asset hint whenever one of their strings
// could be an asset path.
func FuzzRecorded(f *testing.F) {
	for _, dir := range seedDirs(f) {
		templates, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		for _, tf := range templates {
			if data, err := os.ReadFile(tf); err == nil && filepath.Base(tf) != ManifestFile {
				f.Add(data)
			}
		}
	}
	for _, s := range recordedSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkRecorded(t, data)
	})
}
