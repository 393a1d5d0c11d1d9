package unlock

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/apptest"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/pkg/backend/sqlite"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

func TestNewCmdUnlock(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		want    Options
		json    bool
		wantErr string
	}{
		{name: "list", args: nil},
		{name: "list JSON", args: []string{"--json"}, json: true},
		{name: "remove", args: []string{"0b5e", "--force"}, want: Options{ID: "0b5e", Force: true}},
		{name: "remove without force", args: []string{"0b5e"},
			wantErr: "removing a lock needs --force: make sure its holder is gone first (cdkx unlock lists the locks)"},
		{name: "two IDs", args: []string{"a", "b", "--force"}, wantErr: "accepts at most 1 arg(s), received 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got *Options
			err := apptest.Execute(NewCmdUnlock(apptest.Factory(), func(_ context.Context, o *Options) error { got = o; return nil }), tt.args...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || got != nil {
					t.Fatalf("unlock %q = %v (run: %t), want error %q", tt.args, err, got != nil, tt.wantErr)
				}
				return
			}
			if err != nil || got == nil {
				t.Fatalf("unlock %q = %v (run: %t)", tt.args, err, got != nil)
			}
			if got.ID != tt.want.ID || got.Force != tt.want.Force || got.Config.JSON != tt.json {
				t.Errorf("unlock %q options: ID %q, force %t, JSON %t; want %q, %t, %t", tt.args, got.ID, got.Force, got.Config.JSON,
					tt.want.ID, tt.want.Force, tt.json)
			}
		})
	}
}

var now = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

// withLocks returns a SQLite state file in which App is locked by a run with a fresh heartbeat and Zones
// by one silent for an hour, both with lock ID "L1" on Zones and "L2" on App.
func withLocks(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	b, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Close() }()
	for _, l := range []state.LockInfo{
		{ID: "L2", Stack: "App", Operation: "deploy", User: "alice", Host: "ci-7", PID: 4242, HeartbeatAt: now.Add(-5 * time.Second)},
		{ID: "L1", Stack: "Zones", Operation: "refresh", User: "bob", Host: "laptop", PID: 7, HeartbeatAt: now.Add(-time.Hour)},
	} {
		l.StartedAt = l.HeartbeatAt
		if err := b.Lock(t.Context(), l); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func TestUnlockRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                string
		id                  string
		json, empty         bool
		wantOut, wantErrOut string
		wantErr             string
		wantLeft            []string
	}{
		{name: "list", wantOut: "" +
			"STACK  LOCK ID  OPERATION  HOLDER      PID   HEARTBEAT   STALE\n" +
			"App    L2       deploy     alice@ci-7  4242  5s ago      no\n" +
			"Zones  L1       refresh    bob@laptop  7     1h0m0s ago  yes: no heartbeat for 1h0m0s (limit 1m0s)\n",
			wantLeft: []string{"App", "Zones"}},
		{name: "list JSON", json: true, wantOut: "" +
			`{"id":"L2","stack":"App","operation":"deploy","user":"alice","host":"ci-7","pid":4242,"startedAt":"2026-11-27T11:59:55Z","heartbeatAt":"2026-11-27T11:59:55Z","stale":false}` + "\n" +
			`{"id":"L1","stack":"Zones","operation":"refresh","user":"bob","host":"laptop","pid":7,"startedAt":"2026-11-27T11:00:00Z","heartbeatAt":"2026-11-27T11:00:00Z","stale":true,"staleReason":"no heartbeat for 1h0m0s (limit 1m0s)"}` + "\n",
			wantLeft: []string{"App", "Zones"}},
		{name: "list none", empty: true, wantErrOut: "No stack is locked.\n"},
		{name: "list none JSON", empty: true, json: true},
		{name: "remove", id: "L1", wantErrOut: "Removed the lock of stack Zones held by refresh by bob@laptop (pid 7, lock L1) since 2026-11-27T11:00:00Z\n",
			wantLeft: []string{"App"}},
		{name: "remove JSON", id: "L1", json: true,
			wantOut:  `{"id":"L1","stack":"Zones","operation":"refresh","user":"bob","host":"laptop","pid":7,"startedAt":"2026-11-27T11:00:00Z","heartbeatAt":"2026-11-27T11:00:00Z","removed":true}` + "\n",
			wantLeft: []string{"App"}},
		{name: "remove unknown", id: "L9", wantErr: "no lock with ID L9; cdkx unlock lists the held locks", wantLeft: []string{"App", "Zones"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "none.db")
			if !tt.empty {
				path = withLocks(t)
			}
			var out, errOut bytes.Buffer
			writes := 0
			opts := &Options{IO: &cli.IOStreams{Out: &out, ErrOut: &errOut}, Config: &cli.Config{State: path, JSON: tt.json},
				Open: func(ctx context.Context, location string) (state.Backend, error) {
					writes++
					return sqlite.Open(ctx, location)
				},
				OpenReadOnly: func(ctx context.Context, location string) (state.Backend, error) {
					return sqlite.OpenReadOnly(ctx, location)
				},
				Now: func() time.Time { return now }, ID: tt.id, Force: tt.id != ""}
			err := unlockRun(t.Context(), opts)
			apptest.CheckRun(t, err, out.String(), errOut.String(), apptest.Want{Err: tt.wantErr, Out: tt.wantOut, ErrOut: tt.wantErrOut})
			if tt.id == "" && writes != 0 {
				t.Error("a listing opened the state for writing")
			}
			if tt.json {
				for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
					if line != "" && !json.Valid([]byte(line)) {
						t.Errorf("--json line %q is not JSON", line)
					}
				}
			}
			if tt.empty {
				return
			}
			b, err := sqlite.OpenReadOnly(t.Context(), path)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = b.Close() }()
			locks, _ := b.Locks(t.Context())
			var left []string
			for _, l := range locks {
				left = append(left, l.Stack)
			}
			if diff := cmp.Diff(tt.wantLeft, left); diff != "" {
				t.Errorf("locks left (-want +got):\n%s", diff)
			}
		})
	}
}
