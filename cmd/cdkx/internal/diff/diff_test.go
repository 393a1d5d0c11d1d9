package diff

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/apptest"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/view"
	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/engine/enginetest"
	"github.com/cdkx-dev/cdkx/pkg/backend/sqlite"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

func TestNewCmdDiff(t *testing.T) {
	t.Parallel()
	type got struct {
		Stacks, Replace, Targets, Excludes           []string
		Exclusively, Detailed, Refresh, Record, JSON bool
		Format                                       string
	}
	tests := []struct {
		name    string
		args    []string
		want    got
		wantErr string
	}{
		{name: "defaults", want: got{Format: view.FormatText}},
		{name: "everything", args: []string{"App", "Zones", "-e", "--replace", "App/Www", "--target", "App/Www", "--exclude", "Mail",
			"--detailed-exitcode", "--refresh", "--record", "--format", "markdown"},
			want: got{Stacks: []string{"App", "Zones"}, Replace: []string{"App/Www"}, Targets: []string{"App/Www"}, Excludes: []string{"Mail"},
				Exclusively: true, Detailed: true, Refresh: true, Record: true, Format: view.FormatMarkdown}},
		{name: "JSON", args: []string{"--json"}, want: got{JSON: true, Format: view.FormatText}},
		{name: "unknown format", args: []string{"--format", "html"}, wantErr: "html"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var o *Options
			err := apptest.Execute(NewCmdDiff(apptest.Factory(), func(_ context.Context, opts *Options) error { o = opts; return nil }), tt.args...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || o != nil {
					t.Fatalf("diff %q = %v (run: %t), want an error naming %q", tt.args, err, o != nil, tt.wantErr)
				}
				return
			}
			if err != nil || o == nil {
				t.Fatalf("diff %q = %v (run: %t)", tt.args, err, o != nil)
			}
			g := got{Stacks: o.Stacks, Replace: o.Replace, Targets: o.Target.Targets, Excludes: o.Target.Excludes, Exclusively: o.Exclusively,
				Detailed: o.DetailedExitCode, Refresh: o.Refresh, Record: o.Record, JSON: o.Config.JSON, Format: o.Format}
			if diff := cmp.Diff(tt.want, g, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("diff %q options (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

const template = `{"resources": {"Www": {"type": "` + enginetest.CloudType + `", "provider": "fake", "properties": {"key": "www", "value": "v1"}}}}`

// factory returns a factory whose providers are the fake cloud and whose state is SQLite, with stdout and
// stderr in out and errOut; opened counts the backends opened for writing.
func factory(out, errOut *bytes.Buffer, opened *int) *cli.Factory {
	reg := engine.NewRegistry(enginetest.NewCloud())
	return &cli.Factory{IO: &cli.IOStreams{Out: out, ErrOut: errOut}, Getenv: func(string) string { return "" },
		Providers: func() *engine.Registry { return reg },
		OpenBackend: func(ctx context.Context, location string) (state.Backend, error) {
			*opened++
			return sqlite.Open(ctx, location)
		},
		OpenBackendReadOnly: func(ctx context.Context, location string) (state.Backend, error) {
			return sqlite.OpenReadOnly(ctx, location)
		},
	}
}

func TestDiffRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		template string
		opts     Options
		json     bool
		wantCode int // the *cli.ExitError's code; 0: no error
		// wantOut and wantErrOut must each appear in stdout and stderr; "" in wantErrOut: stderr empty.
		wantOut, wantErrOut string
		wantOpened          int
	}{
		{name: "text", template: template, wantOut: "Www"},
		{name: "detailed exit code", template: template, opts: Options{DetailedExitCode: true}, wantCode: cli.ExitChanges, wantOut: "Www"},
		{name: "markdown", template: template, opts: Options{Format: view.FormatMarkdown}, wantOut: "<details>"},
		{name: "record", template: template, opts: Options{Record: true}, wantOut: "Www", wantErrOut: " of stack A (COMPLETED)\n", wantOpened: 1},
		{name: "invalid assembly", template: `{"resources": {"Www": {"type": "Nope::Nope::Nope", "provider": "fake"}}}`, wantCode: cli.ExitErr,
			wantErrOut: "fix them and run diff again"},
		{name: "unknown target", template: template, opts: Options{PlanFlags: cli.PlanFlags{Target: cli.TargetFlags{Targets: []string{"A/Nope"}}}},
			wantCode: cli.ExitErr, wantErrOut: "Nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out, errOut bytes.Buffer
			opened := 0
			opts := tt.opts
			opts.F = factory(&out, &errOut, &opened)
			opts.Config = &cli.Config{App: apptest.OneStack(t, tt.template), State: filepath.Join(t.TempDir(), "state.db"), JSON: tt.json}
			if opts.Format == "" {
				opts.Format = view.FormatText
			}
			err := diffRun(t.Context(), &opts)
			code := 0
			var ee *cli.ExitError
			if errors.As(err, &ee) {
				code = ee.Code
			} else if err != nil {
				t.Fatalf("diffRun() = %v", err)
			}
			if code != tt.wantCode {
				t.Errorf("diffRun() exit code %d (%v), want %d; stderr:\n%s", code, err, tt.wantCode, errOut.String())
			}
			if !strings.Contains(out.String(), tt.wantOut) {
				t.Errorf("stdout = %q, want it to contain %q", out.String(), tt.wantOut)
			}
			if tt.wantErrOut == "" && errOut.Len() > 0 || !strings.Contains(errOut.String(), tt.wantErrOut) {
				t.Errorf("stderr = %q, want %q in it", errOut.String(), tt.wantErrOut)
			}
			if opened != tt.wantOpened {
				t.Errorf("opened the state for writing %d time(s), want %d", opened, tt.wantOpened)
			}
		})
	}
}

// TestDiffRunJSON: --json prints one object: the stacks, the steps as a deployment records them, the
// counts and whether anything changes.
func TestDiffRunJSON(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	opened := 0
	opts := &Options{F: factory(&out, &errOut, &opened), Format: view.FormatText,
		Config: &cli.Config{App: apptest.OneStack(t, template), State: filepath.Join(t.TempDir(), "state.db"), JSON: true}}
	if err := diffRun(t.Context(), opts); err != nil {
		t.Fatalf("diffRun() = %v; stderr:\n%s", err, errOut.String())
	}
	var got view.PlanJSON
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("stdout %q: %v", out.String(), err)
	}
	if len(got.Steps) != 1 || got.Steps[0].LogicalID != "Www" {
		t.Errorf("steps = %+v, want Www's", got.Steps)
	}
	got.Steps = nil
	want := view.PlanJSON{Stacks: []string{"A"}, Counts: map[string]int{"create": 1, "update": 0, "replace": 0, "delete": 0}, Changes: true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("diff --json (-want +got):\n%s", diff)
	}
}
