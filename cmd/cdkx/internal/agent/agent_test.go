package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/apptest"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/engine/enginetest"
	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/pkg/backend/sqlite"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

func TestNewCmdAgent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args   []string
		once   bool
		stacks []string
	}{
		{args: nil},
		{args: []string{"--once", "--stack", "App", "--stack", "Zones"}, once: true, stacks: []string{"App", "Zones"}},
	}
	for _, tt := range tests {
		var got *Options
		if err := apptest.Execute(NewCmdAgent(apptest.Factory(), func(_ context.Context, o *Options) error { got = o; return nil }), tt.args...); err != nil || got == nil {
			t.Fatalf("agent %q = %v (run: %t)", tt.args, err, got != nil)
		}
		if got.Once != tt.once || !cmp.Equal(tt.stacks, got.Stacks, cmpopts.EquateEmpty()) {
			t.Errorf("agent %q: once %t, stacks %q; want %t, %q", tt.args, got.Once, got.Stacks, tt.once, tt.stacks)
		}
	}
}

// queue records, in the state file at path, one PENDING deployment of stack A per value (a Www resource
// with that value) and returns their IDs in creation order.
func queue(t *testing.T, path string, reg *engine.Registry, values ...string) []string {
	t.Helper()
	b, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Close() }()
	var ids []string
	for _, v := range values {
		dir := apptest.OneStack(t, `{"resources": {"Www": {"type": "`+enginetest.CloudType+`", "provider": "fake", "properties": {"key": "www", "value": "`+v+`"}}}}`)
		a, files, g, ds := operation.Load(dir, reg)
		if a == nil {
			t.Fatalf("Load() = %v", ds)
		}
		rec, _, err := operation.Record{Env: operation.Env{Backend: b, Providers: reg, CreatedBy: "alice@h"}, Assembly: a, Graph: g, Files: files,
			Selection: operation.Selection{Stacks: []string{"A"}}, Status: state.StatusPending, Kind: state.KindDeploy}.Run(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rec[0].ID)
	}
	return ids
}

func TestAgentRunOnce(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		values   []string
		fail     bool
		json     bool
		wantCode int
		wantLast string
		ended    string
	}{
		{name: "empty queues", wantLast: "Agent: no deployment left to run; ran 0, 0 did not complete."},
		{name: "two", values: []string{"v1", "v2"}, ended: "COMPLETED", wantLast: "Agent: no deployment left to run; ran 2, 0 did not complete."},
		{name: "failed", values: []string{"v1"}, fail: true, ended: "FAILED", wantCode: cli.ExitFailed,
			wantLast: "Agent: no deployment left to run; ran 1, 1 did not complete."},
		{name: "JSON", values: []string{"v1"}, json: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cloud := enginetest.NewCloud()
			if tt.fail {
				cloud.Fail = func(string, string) error { return errors.New("refused") }
			}
			reg := engine.NewRegistry(cloud)
			path := filepath.Join(t.TempDir(), "state.db")
			ids := queue(t, path, reg, tt.values...)
			var out, errOut bytes.Buffer
			f := &cli.Factory{IO: &cli.IOStreams{Out: &out, ErrOut: &errOut}, Now: time.Now, Providers: func() *engine.Registry { return reg },
				OpenBackend: func(ctx context.Context, location string) (state.Backend, error) { return sqlite.Open(ctx, location) }}
			err := agentRun(t.Context(), &Options{F: f, Config: &cli.Config{State: path, JSON: tt.json}, Once: true})
			code := 0
			var ee *cli.ExitError
			if errors.As(err, &ee) {
				code = ee.Code
			} else if err != nil {
				t.Fatalf("agentRun() = %v", err)
			}
			if code != tt.wantCode {
				t.Errorf("agentRun() exit %d, want %d; stderr:\n%s", code, tt.wantCode, errOut.String())
			}
			stderr := errOut.String()
			if tt.json {
				if strings.Contains(stderr, "Agent:") || out.Len() == 0 {
					t.Errorf("--json: stderr %q, stdout %q; want no Agent lines and the events on stdout", stderr, out.String())
				}
				for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
					if !json.Valid([]byte(line)) {
						t.Errorf("--json line %q is not JSON", line)
					}
				}
				return
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if last := lines[len(lines)-1]; last != tt.wantLast {
				t.Errorf("last stderr line = %q, want %q", last, tt.wantLast)
			}
			for _, id := range ids {
				want := "Agent: deployment " + id + " of stack A (created by alice@h) ended " + tt.ended + " in "
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
		})
	}
}

// TestAgentRunInterrupted: an agent without --once waits on its poll ticker when idle, and an interrupt
// there ends it with exit code 130.
func TestAgentRunInterrupted(t *testing.T) {
	t.Parallel()
	reg := engine.NewRegistry(enginetest.NewCloud())
	path := filepath.Join(t.TempDir(), "state.db")
	ctx, cancel := context.WithCancel(t.Context())
	polling := make(chan struct{})
	f := &cli.Factory{IO: &cli.IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}, Now: time.Now, Providers: func() *engine.Registry { return reg },
		OpenBackend: func(ctx context.Context, location string) (state.Backend, error) { return sqlite.Open(ctx, location) }}
	done := make(chan error, 1)
	go func() {
		done <- agentRun(ctx, &Options{F: f, Config: &cli.Config{State: path}, Poll: func() (<-chan time.Time, func()) {
			close(polling)
			return make(chan time.Time), func() {}
		}})
	}()
	<-polling
	cancel()
	var ee *cli.ExitError
	if err := <-done; !errors.As(err, &ee) || ee.Code != cli.ExitInterrupted {
		t.Errorf("agentRun() after an interrupt = %v, want exit %d", err, cli.ExitInterrupted)
	}
}
