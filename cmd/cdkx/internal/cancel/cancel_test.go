package cancel

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/apptest"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/pkg/backend/sqlite"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

func TestNewCmdCancel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args    []string
		stack   string
		json    bool
		wantErr string
	}{
		{args: []string{"App"}, stack: "App"},
		{args: []string{"App", "--json"}, stack: "App", json: true},
		{args: nil, wantErr: "accepts 1 arg(s), received 0"},
	}
	for _, tt := range tests {
		var got *Options
		err := apptest.Execute(NewCmdCancel(apptest.Factory(), func(_ context.Context, o *Options) error { got = o; return nil }), tt.args...)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || got != nil {
				t.Errorf("cancel %q = %v (run: %t), want error %q", tt.args, err, got != nil, tt.wantErr)
			}
			continue
		}
		if err != nil || got == nil {
			t.Fatalf("cancel %q = %v (run: %t)", tt.args, err, got != nil)
		}
		if got.Stack != tt.stack || got.Config.JSON != tt.json {
			t.Errorf("cancel %q options: stack %q, JSON %t; want %q, %t", tt.args, got.Stack, got.Config.JSON, tt.stack, tt.json)
		}
	}
}

// service is a state service's backend as cancel sees it: held locks that are leases, the rest of
// state.Backend absent (a call to it panics).
type service struct {
	state.Backend
	locks    []state.LockInfo
	unlocked []string
}

func (s *service) Locks(context.Context) ([]state.LockInfo, error) { return s.locks, nil }
func (s *service) Unlock(_ context.Context, stack, id string) error {
	s.unlocked = append(s.unlocked, stack+"/"+id)
	return nil
}
func (s *service) Close() error { return nil }
func (s *service) Abilities() state.Abilities {
	return state.Abilities{LeasedLocks: true, CancelOthers: true}
}

func TestCancelRun(t *testing.T) {
	t.Parallel()
	started := time.Date(2026, 11, 27, 11, 0, 0, 0, time.UTC)
	held := state.LockInfo{ID: "L1", Stack: "App", Operation: "deploy", User: "alice", Host: "ci-7", PID: 42, StartedAt: started, HeartbeatAt: started}
	tests := []struct {
		name                string
		stack               string
		json                bool
		wantOut, wantErrOut string
		wantErr             string
		wantUnlocked        []string
	}{
		{name: "cancel", stack: "App", wantErrOut: "Cancelled the update of stack App: deploy by alice@ci-7 (pid 42, lock L1) since 2026-11-27T11:00:00Z\n",
			wantUnlocked: []string{"App/L1"}},
		{name: "cancel JSON", stack: "App", json: true,
			wantOut:      `{"id":"L1","stack":"App","operation":"deploy","user":"alice","host":"ci-7","pid":42,"startedAt":"2026-11-27T11:00:00Z","heartbeatAt":"2026-11-27T11:00:00Z","cancelled":true}` + "\n",
			wantUnlocked: []string{"App/L1"}},
		{name: "no update", stack: "Zones", wantErr: "stack Zones has no running update to cancel"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			svc := &service{locks: []state.LockInfo{held}}
			var out, errOut bytes.Buffer
			opts := &Options{IO: &cli.IOStreams{Out: &out, ErrOut: &errOut}, Config: &cli.Config{State: "https://cdkx.example.org", JSON: tt.json},
				Open: func(context.Context, string) (state.Backend, error) { return svc, nil }, Stack: tt.stack}
			err := cancelRun(t.Context(), opts)
			apptest.CheckRun(t, err, out.String(), errOut.String(), apptest.Want{Err: tt.wantErr, Out: tt.wantOut, ErrOut: tt.wantErrOut})
			if diff := cmp.Diff(tt.wantUnlocked, svc.unlocked); diff != "" {
				t.Errorf("unlocked (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCancelRunLocalState: with a SQLite file there is no service to cancel through: ErrNoService, and
// nothing printed.
func TestCancelRunLocalState(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.db")
	var errOut bytes.Buffer
	opts := &Options{IO: &cli.IOStreams{Out: &bytes.Buffer{}, ErrOut: &errOut}, Config: &cli.Config{State: path},
		Open: func(ctx context.Context, location string) (state.Backend, error) {
			b, err := sqlite.Open(ctx, location)
			if err == nil {
				err = b.Lock(ctx, state.LockInfo{ID: "L1", Stack: "App", Operation: "deploy", StartedAt: time.Now(), HeartbeatAt: time.Now()})
			}
			return b, err
		}, Stack: "App"}
	if err := cancelRun(t.Context(), opts); !errors.Is(err, operation.ErrNoService) {
		t.Errorf("cancelRun() on SQLite = %v, want operation.ErrNoService", err)
	}
	if errOut.Len() != 0 {
		t.Errorf("stderr = %q, want nothing", errOut.String())
	}
}
