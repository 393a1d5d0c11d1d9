package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
)

// execute runs cdkx with args on a factory whose streams are buffers and whose environment is env
// (nothing else), in the working directory; it returns stdout, stderr and the exit code.
func execute(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	f := cli.New("v1.2.3")
	f.IO = &cli.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut, Width: 80}
	f.Getenv = func(k string) string { return env[k] }
	root := newRoot(f)
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errOut)
	err := root.ExecuteContext(t.Context())
	var ee *cli.ExitError
	if err != nil && !errors.Is(err, cli.ErrSilent) && (!errors.As(err, &ee) || ee.Err != nil) {
		errOut.WriteString("error: " + err.Error() + "\n")
	}
	return out.String(), errOut.String(), cli.ExitCode(err)
}

// examples is the absolute path of the shipped example assemblies.
func examples(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "testdata", "examples", name, "cdkx.out"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReadOnlyCommandsCreateNoState runs every command that only reads state in an empty folder: each
// succeeds (or fails for its own reason) and the folder stays empty — no .cdkx/state.db.
func TestReadOnlyCommandsCreateNoState(t *testing.T) {
	app := examples(t, "dns")
	dir := t.TempDir()
	t.Chdir(dir)
	tests := []struct {
		args     []string
		wantCode int
	}{
		{args: []string{"outputs"}},
		{args: []string{"outputs", "Zones"}, wantCode: cli.ExitErr},
		{args: []string{"history"}},
		{args: []string{"history", "--json"}},
		{args: []string{"deployments", "list"}},
		{args: []string{"deployments", "show", "6f1c"}, wantCode: cli.ExitErr},
		{args: []string{"state", "export"}},
		{args: []string{"list", "--app", app}},
		{args: []string{"validate", "--app", app}},
		{args: []string{"diff", "--app", app}},
		{args: []string{"diff", "--app", app, "--json"}},
	}
	for _, tt := range tests {
		_, stderr, code := execute(t, nil, tt.args...)
		if code != tt.wantCode {
			t.Errorf("cdkx %s: exit code %d, want %d; stderr:\n%s", strings.Join(tt.args, " "), code, tt.wantCode, stderr)
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			t.Errorf("cdkx %s created %s in an empty folder", strings.Join(tt.args, " "), e.Name())
		}
	}
}
