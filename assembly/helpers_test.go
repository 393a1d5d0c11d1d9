package assembly

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/cdkx-dev/cdkx/pkg/diag"
)

// loadFiles loads an assembly held in memory: files are keyed by their name inside "cdkx.out".
func loadFiles(t *testing.T, files map[string]string) (*Assembly, diag.Diagnostics) {
	t.Helper()
	assets := fileAssets{}
	for name, data := range files {
		assets[name] = []byte(data)
	}
	return load("cdkx.out", mapReader(files), assets)
}

// mapReader reads files held in memory, keyed by their slash-separated name inside the assembly.
func mapReader(files map[string]string) func(string) ([]byte, error) {
	fsys := fstest.MapFS{}
	for name, data := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(data)}
	}
	return func(name string) ([]byte, error) { return fs.ReadFile(fsys, filepath.ToSlash(name)) }
}

// manifest returns a manifest.json listing one stack per ID, with template file ID.json, in that order.
func manifest(ids ...string) string {
	arts := make([]string, len(ids))
	for i, id := range ids {
		arts[i] = fmt.Sprintf(`%q: {"type": "cdkx:stack", "properties": {"templateFile": "%s.json"}}`, id, id)
	}
	return `{"version": "1.0.0", "artifacts": {` + strings.Join(arts, ", ") + `}}`
}

// lines renders diagnostics one a line, as the CLI prints them.
func lines(ds diag.Diagnostics) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.String()
	}
	return out
}
