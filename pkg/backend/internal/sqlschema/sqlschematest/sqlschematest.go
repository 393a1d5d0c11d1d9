// Package sqlschematest checks the schema's migrations the same way on SQLite and PostgreSQL.
package sqlschematest

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/pkg/backend/internal/sqlschema"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// t0 is when the runs of the old model start.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func ms(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

// SeedOldRuns inserts, with exec, into a schema at version 2, runs of the old deployment model (no
// queue): two RUNNING runs of stack web, one of api, a COMPLETED and a PROPOSED one.
func SeedOldRuns(t *testing.T, exec func(query string, args ...any) error) {
	t.Helper()
	for _, r := range []struct {
		id, stack, status string
		started           int
	}{
		{"o1", "web", "COMPLETED", 1}, {"o2", "web", "RUNNING", 2}, {"a1", "api", "RUNNING", 2},
		{"o3", "web", "RUNNING", 3}, {"a2", "api", "PROPOSED", 5},
	} {
		if err := exec(`INSERT INTO deployments (id, stack, kind, status, created_by, snapshot_hash, started_at)
VALUES ($1, $2, 'deploy', $3, 'alice@ci', 'h', $4)`, r.id, r.stack, r.status, sqlschema.Nanos(ms(r.started))); err != nil {
			t.Fatal(err)
		}
	}
}

// CheckMigratedRuns checks b after the deployment queue's migration of SeedOldRuns: the runs are numbered
// in start order, their creation time is their start time, only the newest RUNNING run of each stack
// stays RUNNING, attached to a process since it started (the older one is ABORTED with an error), a run
// that never started has no start time; and the stale RUNNING run no longer blocks its stack's queue once
// state.DeadAfter has passed.
func CheckMigratedRuns(ctx context.Context, t *testing.T, b state.Deployments) {
	t.Helper()
	got, err := b.ListDeployments(ctx, state.DeploymentFilter{})
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		ID                   string
		Seq                  int64
		Status               state.DeploymentStatus
		CreatedAt, StartedAt time.Time
		HeartbeatAt          time.Time
		Aborted              bool
	}
	var rows []row
	for _, d := range got {
		rows = append(rows, row{d.ID, d.Seq, d.Status, d.CreatedAt, d.StartedAt, d.HeartbeatAt, d.Error != ""})
	}
	want := []row{
		{"a2", 5, state.StatusProposed, ms(5), time.Time{}, time.Time{}, false},
		{"o3", 4, state.StatusRunning, ms(3), ms(3), ms(3), false},
		{"o2", 3, state.StatusAborted, ms(2), ms(2), time.Time{}, true},
		{"a1", 2, state.StatusRunning, ms(2), ms(2), ms(2), false},
		{"o1", 1, state.StatusCompleted, ms(1), ms(1), time.Time{}, false},
	}
	if diff := cmp.Diff(want, rows, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
		t.Errorf("deployments after the migration (-want +got):\n%s", diff)
	}

	next := &state.Deployment{ID: "n1", Stack: "web", Kind: state.KindDeploy, Status: state.StatusPending}
	if err := b.CreateDeployments(ctx, []*state.Deployment{next}); err != nil {
		t.Fatal(err)
	}
	if next.Seq != 6 {
		t.Errorf("Seq of the first deployment created after the migration = %d, want 6", next.Seq)
	}
	if err := b.ClaimDeployments(ctx, []string{"n1"}, "ci", ms(3).Add(state.DeadAfter+time.Second)); err != nil {
		t.Errorf("ClaimDeployments(n1) after DeadAfter = %v, want nil (o3 aborted)", err)
	}
}

// BenchResource returns resource i of the benchmarks, whose JSON is about 300 bytes: logical ID
// Record{i}.
func BenchResource(i int) *state.Resource {
	id := "Record" + strconv.Itoa(i)
	return &state.Resource{
		LogicalID:  id,
		Type:       "Cdkx::PowerDNS::Record",
		Provider:   "powerdns",
		PhysicalID: "example.org./" + id + "/A",
		Inputs: resource.Properties{
			"zone": "example.org.", "name": strings.ToLower(id), "type": "A", "ttl": json.Number("300"),
			"records": []any{"192.0.2.1"},
		},
		Outputs:   resource.Properties{"crn": "crn:powerdns:example.org./" + id},
		Status:    "CREATE_COMPLETE",
		UpdatedAt: time.Unix(1_770_000_000, 0).UTC(),
	}
}

// BenchChanges returns n commits of the benchmarks, one PutResource of BenchResource(i) each.
func BenchChanges(n int) [][]state.Change {
	changes := make([][]state.Change, n)
	for i := range changes {
		changes[i] = []state.Change{{Kind: state.PutResource, Resource: BenchResource(i)}}
	}
	return changes
}
