package statecmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/apptest"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/pkg/backend/sqlite"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

func TestNewCmdImport(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args        []string
		file, stack string
	}{
		{args: nil, file: "-"},
		{args: []string{"--file", "state.json", "--stack", "App"}, file: "state.json", stack: "App"},
	}
	for _, tt := range tests {
		var got *ImportOptions
		cmd := NewCmdImport(apptest.Factory(), func(_ context.Context, o *ImportOptions) error { got = o; return nil })
		if err := apptest.Execute(cmd, tt.args...); err != nil || got == nil {
			t.Fatalf("state import %q = %v (run: %t)", tt.args, err, got != nil)
		}
		if got.File != tt.file || got.Stack != tt.stack {
			t.Errorf("state import %q: file %q, stack %q; want %q, %q", tt.args, got.File, got.Stack, tt.file, tt.stack)
		}
	}
	if err := apptest.Execute(NewCmdImport(apptest.Factory(), nil), "extra"); err == nil {
		t.Error("state import extra: no error for an argument")
	}
}

func TestNewCmdExport(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args    []string
		stack   string
		version int64
		wantErr string
	}{
		{args: nil},
		{args: []string{"--stack", "App", "--version", "3"}, stack: "App", version: 3},
		{args: []string{"--version", "3"}, wantErr: "--version needs --stack: versions count per stack"},
		{args: []string{"--stack", "App", "--version", "-1"}, wantErr: "--version must be a positive state version, got -1"},
	}
	for _, tt := range tests {
		var got *ExportOptions
		err := apptest.Execute(NewCmdExport(apptest.Factory(), func(_ context.Context, o *ExportOptions) error { got = o; return nil }), tt.args...)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr || got != nil {
				t.Errorf("state export %q = %v (run: %t), want %q", tt.args, err, got != nil, tt.wantErr)
			}
			continue
		}
		if err != nil || got == nil {
			t.Fatalf("state export %q = %v (run: %t)", tt.args, err, got != nil)
		}
		if got.Stack != tt.stack || got.Version != tt.version {
			t.Errorf("state export %q: stack %q, version %d; want %q, %d", tt.args, got.Stack, got.Version, tt.stack, tt.version)
		}
	}
}

const export = `{"stacks": [
  {"name": "App", "version": 4, "outputs": {"Url": "https://x"}, "resources": [
    {"logicalId": "A", "type": "Fake::Test::Thing", "provider": "fake", "physicalId": "p-a", "outputs": {"crn": "crn:p-a"}, "status": "CREATE_COMPLETE"}]},
  {"name": "Zones", "version": 2, "outputs": {}, "resources": []}]}`

// TestImportRun imports an export read from stdin or a file, all of it or one stack, into a new SQLite
// file, and says what it imported; a stack the export lacks and a held lock import nothing.
func TestImportRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		file       string // "": stdin
		stack      string
		locked     bool
		json       bool
		wantStacks []string
		wantErrOut []string // line prefixes
		wantErr    string
		wantCode   int
	}{
		{name: "stdin", wantStacks: []string{"App", "Zones"},
			wantErrOut: []string{"Imported stack App: 1 resource(s), now at version 1 (deployment ", "Imported stack Zones: 0 resource(s), now at version 1 (deployment "}},
		{name: "file, one stack", file: "state.json", stack: "Zones", wantStacks: []string{"Zones"},
			wantErrOut: []string{"Imported stack Zones: 0 resource(s), now at version 1 (deployment "}},
		{name: "JSON", stack: "App", json: true, wantStacks: []string{"App"}},
		{name: "no such stack", stack: "Mail", wantErr: `the export has no stack "Mail"`},
		{name: "locked", stack: "App", locked: true, wantCode: cli.ExitLocked,
			wantErr: `stack "App" is locked: deploy by bob@ci (pid 7, lock other) since 2026-11-27T10:00:00Z; wait for it to finish, or pass --lock-timeout 10m to wait`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "state.db")
			if tt.locked {
				b, err := sqlite.Open(t.Context(), path)
				if err != nil {
					t.Fatal(err)
				}
				at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
				if err := b.Lock(t.Context(), state.LockInfo{ID: "other", Stack: "App", Operation: "deploy", User: "bob", Host: "ci", PID: 7,
					StartedAt: at, HeartbeatAt: time.Now().UTC()}); err != nil {
					t.Fatal(err)
				}
				_ = b.Close()
			}
			file := "-"
			if tt.file != "" {
				file = filepath.Join(dir, tt.file)
				if err := os.WriteFile(file, []byte(export), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var out, errOut bytes.Buffer
			f := &cli.Factory{IO: &cli.IOStreams{In: strings.NewReader(export), Out: &out, ErrOut: &errOut},
				Now: time.Now, OpenBackend: func(ctx context.Context, location string) (state.Backend, error) { return sqlite.Open(ctx, location) }}
			err := importRun(t.Context(), &ImportOptions{F: f, Config: &cli.Config{State: path, JSON: tt.json}, File: file, Stack: tt.stack})
			gotErr, code := "", 0
			if err != nil {
				gotErr = err.Error()
				var ee *cli.ExitError
				if errors.As(err, &ee) {
					code = ee.Code
				}
			}
			if gotErr != tt.wantErr || code != tt.wantCode {
				t.Errorf("importRun() = %q (exit %d), want %q (exit %d)", gotErr, code, tt.wantErr, tt.wantCode)
			}
			lines := strings.Split(strings.TrimSuffix(errOut.String(), "\n"), "\n")
			if errOut.Len() == 0 {
				lines = nil
			}
			if len(lines) != len(tt.wantErrOut) {
				t.Fatalf("stderr = %q, want %d line(s)", errOut.String(), len(tt.wantErrOut))
			}
			if tt.json {
				var d struct{ Stack, Kind, Status string }
				if err := json.Unmarshal(out.Bytes(), &d); err != nil || d != (struct{ Stack, Kind, Status string }{"App", "import", "COMPLETED"}) {
					t.Errorf("--json stdout %q (%v), want App's COMPLETED import", out.String(), err)
				}
			} else if out.Len() != 0 {
				t.Errorf("stdout = %q, want nothing", out.String())
			}
			for i, prefix := range tt.wantErrOut {
				if !strings.HasPrefix(lines[i], prefix) {
					t.Errorf("stderr line %d = %q, want prefix %q", i, lines[i], prefix)
				}
			}
			if tt.wantErr != "" && !tt.locked {
				if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("a refused import created the state file: %v", err)
				}
				return
			}
			b, err := sqlite.OpenReadOnly(t.Context(), path)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = b.Close() }()
			names, _ := b.ListStacks(t.Context())
			if diff := cmp.Diff(tt.wantStacks, names, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("stacks with state (-want +got):\n%s", diff)
			}
			if app, _ := b.GetStack(t.Context(), "App"); tt.wantStacks != nil && tt.wantStacks[0] == "App" {
				if diff := cmp.Diff(resource.Properties{"Url": "https://x"}, app.Outputs); diff != "" {
					t.Errorf("App outputs (-want +got):\n%s", diff)
				}
			}
			if locks, _ := b.Locks(t.Context()); len(locks) != 0 && !tt.locked {
				t.Errorf("locks left: %v", locks)
			}
		})
	}
}
