package postgres

import (
	"encoding/json"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/backend/postgres/postgrestest"

	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// benchResource returns a resource whose JSON is about 300 bytes (as the SQLite benchmark's).
func benchResource(i int) *state.Resource {
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

// BenchmarkCommit commits one PutResource of a ~300-byte resource and one event per op, cycling over
// 10,000 logical IDs, from one goroutine: each op is one transaction, one round trip and one WAL flush
// (the server's fsync) on the test database (CDKX_TEST_POSTGRES_URL).
func BenchmarkCommit(b *testing.B) {
	be := mustOpen(b, postgrestest.FreshSchema(b))
	ctx := b.Context()
	const n = 10_000
	changes := make([][]state.Change, n)
	for i := range changes {
		changes[i] = []state.Change{{Kind: state.PutResource, Resource: benchResource(i)}}
	}
	events := []state.Event{{Time: time.Unix(1_770_000_000, 0).UTC(), Type: "Cdkx::PowerDNS::Record", Status: "CREATE_COMPLETE"}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		events[0].LogicalID = changes[i%n][0].Resource.LogicalID
		if _, err := be.Commit(ctx, "bench", "web", changes[i%n], events); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCommitParallel is BenchmarkCommit from 10 goroutines at once, as the engine commits with its
// default concurrency; concurrent Commits share transactions (group commit).
func BenchmarkCommitParallel(b *testing.B) {
	be := mustOpen(b, postgrestest.FreshSchema(b))
	ctx := b.Context()
	const n = 10_000
	changes := make([][]state.Change, n)
	for i := range changes {
		changes[i] = []state.Change{{Kind: state.PutResource, Resource: benchResource(i)}}
	}
	var next atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(max(1, 10/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c := changes[next.Add(1)%n]
			ev := []state.Event{{Time: time.Unix(1_770_000_000, 0).UTC(), LogicalID: c[0].Resource.LogicalID, Status: "CREATE_COMPLETE"}}
			if _, err := be.Commit(ctx, "bench", "web", c, ev); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
