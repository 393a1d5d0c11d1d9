package postgres

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/backend/postgres/postgrestest"

	"github.com/cdkx-dev/cdkx/pkg/backend/internal/sqlschema/sqlschematest"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/pkg/state/statetest"
)

// BenchmarkCommit commits one PutResource of a ~300-byte resource and one event per op, cycling over
// 10,000 logical IDs, from one goroutine: each op is one transaction, one round trip and one WAL flush
// (the server's fsync) on the test database (CDKX_TEST_POSTGRES_URL).
func BenchmarkCommit(b *testing.B) {
	be := mustOpen(b, postgrestest.FreshSchema(b))
	ctx := b.Context()
	const n = 10_000
	changes := sqlschematest.BenchChanges(n)
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
	changes := sqlschematest.BenchChanges(n)
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

// BenchmarkPages pages a stack's history of 10,000 deployments (statetest.BenchmarkPages) on the test
// database (CDKX_TEST_POSTGRES_URL).
func BenchmarkPages(b *testing.B) {
	statetest.BenchmarkPages(b, mustOpen(b, postgrestest.FreshSchema(b)))
}
