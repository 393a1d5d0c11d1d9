package storage

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/pkg/backend/postgres/postgrestest"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// openStore opens a Store on a fresh schema (skipped without CDKX_TEST_POSTGRES_URL) with stack dev of
// org/proj, and returns it with the stack's row ID.
func openStore(t *testing.T) (*Store, int64) {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, postgrestest.FreshSchema(t))
	if err != nil {
		t.Fatalf("Open() = %v", err)
	}
	t.Cleanup(s.Close)
	p := StackPath{Org: "org", Project: "proj", Stack: "dev"}
	if err := s.CreateStack(ctx, p, []byte(`{}`), time.Now()); err != nil {
		t.Fatal(err)
	}
	st, err := s.LookupStack(ctx, p, false)
	if err != nil {
		t.Fatal(err)
	}
	return s, st.ID
}

// row is a deployment row of stack with status, seq and heartbeat (zero: none).
func row(t *testing.T, stack int64, id string, status state.DeploymentStatus, seq int64, heartbeat time.Time) NewDeployment {
	t.Helper()
	d := state.Deployment{ID: id, Stack: "dev", Kind: state.KindDeploy, Status: status, Seq: seq, HeartbeatAt: heartbeat}
	record, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	n := NewDeployment{ID: id, StackID: stack, Record: record, Snapshot: []byte("{}"), Status: status, Seq: seq}
	if !heartbeat.IsZero() {
		n.HeartbeatAt = &heartbeat
	}
	return n
}

// TestQueueWrites checks the queue's statements on their own: the queues in seq order with the heartbeat
// column overlaid, the compare-and-set of aborts (a row changed since it was read stays as it is), the
// refusal of a taken ID, and of a second RUNNING deployment of a stack.
func TestQueueWrites(t *testing.T) {
	ctx := context.Background()
	s, stack := openStore(t)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
	rows := []NewDeployment{
		row(t, stack, "c", state.StatusPending, 3, t0),
		row(t, stack, "a", state.StatusRunning, 1, t0),
		row(t, stack, "b", state.StatusApproved, 2, time.Time{}),
		row(t, stack, "done", state.StatusCompleted, 0, time.Time{}),
	}
	if err := s.InsertDeployments(ctx, rows); err != nil {
		t.Fatalf("InsertDeployments() = %v", err)
	}
	if err := s.InsertDeployments(ctx, rows[:1]); !errors.Is(err, ErrExists) {
		t.Errorf("InsertDeployments(taken ID) = %v, want ErrExists", err)
	}

	queues, err := s.Queues(ctx, []int64{stack}, false)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range queues[stack] {
		got = append(got, d.ID)
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, got); diff != "" {
		t.Errorf("Queues() order (-want +got):\n%s", diff)
	}
	if hb := queues[stack][0].HeartbeatAt; !hb.Equal(t0) {
		t.Errorf("heartbeat of a = %v, want the column's %v", hb, t0)
	}

	// a as read is aborted; c's heartbeat moved on since it was read, so its abort does nothing.
	if err := s.InTx(ctx, func(tx *Tx) error {
		_, err := tx.Heartbeat(ctx, "org", "proj", []string{"c"}, t0.Add(time.Minute), "someone")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	end := t0.Add(time.Hour)
	done, err := s.AbortDeployments(ctx, []Abort{
		{ID: "c", Status: state.StatusPending, HeartbeatAt: t0, FinishedAt: end, Error: "dead"},
		{ID: "a", Status: state.StatusRunning, HeartbeatAt: queues[stack][0].HeartbeatAt, FinishedAt: end, Error: "dead"},
	})
	if err != nil {
		t.Fatalf("AbortDeployments() = %v", err)
	}
	if diff := cmp.Diff([]string{"a"}, done); diff != "" {
		t.Errorf("AbortDeployments() aborted (-want +got):\n%s", diff)
	}
	record, _, err := s.Deployment(ctx, "org", "proj", "a")
	if err != nil {
		t.Fatal(err)
	}
	var a state.Deployment
	if err := json.Unmarshal(record, &a); err != nil {
		t.Fatal(err)
	}
	if a.Status != state.StatusAborted || a.Error != "dead" || !a.FinishedAt.Equal(end) {
		t.Errorf("a after its abort = %s, %q, finished %v; want ABORTED, \"dead\", %v", a.Status, a.Error, a.FinishedAt, end)
	}
	if status, err := s.DeploymentStatus(ctx, "c"); err != nil || status != state.StatusPending {
		t.Errorf("c after a stale abort = %s, %v; want PENDING", status, err)
	}
	if _, _, err := s.Deployment(ctx, "other", "proj", "a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Deployment(another organization) = %v, want ErrNotFound", err)
	}

	// b is claimed; c then cannot run beside it.
	if err := s.InTx(ctx, func(tx *Tx) error {
		_, err := tx.Claim(ctx, []string{"b"}, []byte(`{"status":"RUNNING"}`), "alice", end)
		return err
	}); err != nil {
		t.Fatalf("Claim(b) = %v", err)
	}
	err = s.InTx(ctx, func(tx *Tx) error {
		_, err := tx.Claim(ctx, []string{"c"}, []byte(`{"status":"RUNNING"}`), "alice", end)
		return err
	})
	if !errors.Is(err, ErrRunning) {
		t.Errorf("Claim(c) beside a RUNNING b = %v, want ErrRunning", err)
	}
}
