// Package apptest prepares what the commands' tests run: cloud assemblies on disk, a command under the root.
package apptest

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/spf13/cobra"
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

// Factory returns a factory for parsing flags only: empty IO streams and an empty environment.
func Factory() *cli.Factory {
	return &cli.Factory{IO: &cli.IOStreams{}, Getenv: func(string) string { return "" }}
}

// Execute runs cmd with args under the root command (so that the global flags, e.g. --json and --state,
// parse as in cdkx), its help and usage discarded, and returns what it returned.
func Execute(cmd *cobra.Command, args ...string) error {
	root := cli.NewRootCmd("test")
	root.AddCommand(cmd)
	root.SetArgs(append([]string{cmd.Name()}, args...))
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	return root.Execute()
}
