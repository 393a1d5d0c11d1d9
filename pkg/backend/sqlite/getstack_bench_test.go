package sqlite

import (
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/cdkx-dev/cdkx/pkg/backend/internal/sqlschema/sqlschematest"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// BenchmarkGetStack reads a stack of 20,000 resources committed in a random order of logical IDs, 500 at
// a time, as a deploy records them as they complete: what a no-op diff reads before it plans. It reports
// the CPU time (user + system) per read, steadier than ns/op on a busy machine.
func BenchmarkGetStack(b *testing.B) {
	ctx := b.Context()
	be, err := Open(ctx, filepath.Join(b.TempDir(), "state.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = be.Close() }()
	const n = 20_000
	changes := make([]state.Change, 0, n)
	for _, i := range rand.New(rand.NewPCG(1, 2)).Perm(n) {
		changes = append(changes, state.Change{Kind: state.PutResource, Resource: sqlschematest.BenchResource(i)})
	}
	for i := 0; i < n; i += 500 {
		if _, err := be.Commit(ctx, "bench", "web", changes[i:i+500], nil); err != nil {
			b.Fatal(err)
		}
	}
	cpu0 := cpuTime()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		st, err := be.GetStack(ctx, "web")
		if err != nil || len(st.Resources) != n {
			b.Fatalf("GetStack: %v, %d resources", err, len(st.Resources))
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}
