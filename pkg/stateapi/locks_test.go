package stateapi

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

func TestActiveUpdateHolder(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	beat := t0.Add(time.Minute)
	lock, _ := json.Marshal(state.LockInfo{ID: "L1", Stack: "ignored", Operation: "deploy", User: "alice", Host: "ci", PID: 7, StartedAt: t0})
	tests := []struct {
		name    string
		a       ActiveUpdate
		want    state.LockInfo
		wantErr bool
	}{
		{"a cdkx lock, heartbeat", ActiveUpdate{Stack: "web", UpdateID: "u1", Kind: "update", CreatedAt: t0, HeartbeatAt: &beat, Lock: lock},
			state.LockInfo{ID: "L1", Stack: "web", Operation: "deploy", User: "alice", Host: "ci", PID: 7, StartedAt: t0, HeartbeatAt: beat}, false},
		{"the Pulumi CLI's update", ActiveUpdate{Stack: "web", UpdateID: "u2", Kind: "destroy", CreatedAt: t0, Lock: json.RawMessage("null")},
			state.LockInfo{ID: "u2", Stack: "web", Operation: "destroy", User: "pulumi", StartedAt: t0, HeartbeatAt: t0}, false},
		{"no lock at all", ActiveUpdate{Stack: "web", UpdateID: "u3", Kind: "update", CreatedAt: t0},
			state.LockInfo{ID: "u3", Stack: "web", Operation: "update", User: "pulumi", StartedAt: t0, HeartbeatAt: t0}, false},
		{"not a lock", ActiveUpdate{Stack: "web", Lock: json.RawMessage(`"x"`)}, state.LockInfo{}, true},
	}
	for _, tt := range tests {
		got, err := tt.a.Holder()
		if (err != nil) != tt.wantErr {
			t.Errorf("%s: Holder() error %v, want error %v", tt.name, err, tt.wantErr)
			continue
		}
		if diff := cmp.Diff(tt.want, got); !tt.wantErr && diff != "" {
			t.Errorf("%s: Holder() (-want +got):\n%s", tt.name, diff)
		}
	}
}
