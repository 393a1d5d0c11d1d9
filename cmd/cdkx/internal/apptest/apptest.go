// Package apptest writes cloud assemblies for the commands' tests.
package apptest

import (
	"os"
	"path/filepath"
	"testing"
)

// OneStack writes a cloud assembly of one stack, A, whose template is template (JSON, written as it is,
// valid or not), into a new temporary directory and returns that directory.
func OneStack(tb testing.TB, template string) string {
	tb.Helper()
	dir := tb.TempDir()
	files := map[string]string{
		"manifest.json": `{"version": "1.0.0", "artifacts": {"A": {"type": "cdkx:stack", "properties": {"templateFile": "A.json"}}}}`,
		"A.json":        template,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}
