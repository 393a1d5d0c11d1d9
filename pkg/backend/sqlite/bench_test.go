package sqlite

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/backend/internal/sqlschema/sqlschematest"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/pkg/state/statetest"
)

// fileSize returns the size of path, 0 when absent.
func fileSize(tb testing.TB, path string) int64 {
	tb.Helper()
	fi, err := os.Stat(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		tb.Fatal(err)
	}
	return fi.Size()
}

// writtenBytes returns the bytes this process has passed to write(2) so far (Linux only), or -1.
func writtenBytes() int64 {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "wchar: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}

// cpuTime returns the user and system CPU time this process has used so far, or 0 if unknown.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCommit commits one PutResource of a ~300-byte resource and one event per op, cycling over
// 10,000 logical IDs (every resource is written twice in 20,000 ops, as a deploy does). It reports the
// growth of the database files (db + -wal), the bytes written to them, and the CPU time (user + system,
// all goroutines; steadier than ns/op on a busy machine), per commit.
func BenchmarkCommit(b *testing.B) {
	ctx := b.Context()
	path := filepath.Join(b.TempDir(), "state.db")
	be, err := Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = be.Close() }()

	const n = 10_000
	changes := sqlschematest.BenchChanges(n)
	if data, _ := json.Marshal(changes[0][0].Resource); len(data) < 250 || len(data) > 350 {
		b.Fatalf("resource JSON is %d bytes, want about 300", len(data))
	}
	events := []state.Event{{Time: time.Unix(1_770_000_000, 0).UTC(), Type: "Cdkx::PowerDNS::Record", Status: "CREATE_COMPLETE"}}

	size := func() int64 { return fileSize(b, path) + fileSize(b, path+"-wal") }
	size0, written0, cpu0 := size(), writtenBytes(), cpuTime()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		events[0].LogicalID = changes[i%n][0].Resource.LogicalID
		if _, err := be.Commit(ctx, "bench", "web", changes[i%n], events); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(size()-size0)/float64(b.N), "file-B/op")
	if written0 >= 0 {
		b.ReportMetric(float64(writtenBytes()-written0)/float64(b.N), "written-B/op")
	}
}

// BenchmarkCommitParallel is BenchmarkCommit from 10 goroutines at once, as the engine commits with its
// default concurrency; concurrent Commits share transactions (group commit).
func BenchmarkCommitParallel(b *testing.B) {
	ctx := b.Context()
	path := filepath.Join(b.TempDir(), "state.db")
	be, err := Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = be.Close() }()

	const n = 10_000
	changes := sqlschematest.BenchChanges(n)
	var next atomic.Int64
	size := func() int64 { return fileSize(b, path) + fileSize(b, path+"-wal") }
	size0, written0, cpu0 := size(), writtenBytes(), cpuTime()
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
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(size()-size0)/float64(b.N), "file-B/op")
	if written0 >= 0 {
		b.ReportMetric(float64(writtenBytes()-written0)/float64(b.N), "written-B/op")
	}
}

// BenchmarkDeploy commits as a deploy of 10,000 resources does: per resource, a pending put (insert)
// and a final put (update), each with an event: 20,000 commits per op, from 1 goroutine or from 10 (the
// engine's default concurrency). The engine's budget for the whole deploy is 3 s.
func BenchmarkDeploy(b *testing.B) {
	const n = 10_000
	for _, workers := range []int{1, 10} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			ctx := b.Context()
			var commits int
			for b.Loop() {
				b.StopTimer()
				be, err := Open(ctx, filepath.Join(b.TempDir(), "state.db"))
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				var next atomic.Int64
				var wg sync.WaitGroup
				for range workers {
					wg.Go(func() {
						for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
							r := sqlschematest.BenchResource(i)
							pending := *r
							pending.Status = "CREATE_IN_PROGRESS"
							pending.Pending = &state.PendingOperation{Op: "creating", StartedAt: r.UpdatedAt}
							for _, res := range []*state.Resource{&pending, r} {
								ev := []state.Event{{Time: r.UpdatedAt, LogicalID: res.LogicalID, Status: res.Status}}
								if _, err := be.Commit(ctx, "deploy", "web", []state.Change{{Kind: state.PutResource, Resource: res}}, ev); err != nil {
									b.Error(err)
									return
								}
							}
						}
					})
				}
				wg.Wait()
				commits += 2 * n
				b.StopTimer()
				if err := be.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(commits), "ns/commit")
		})
	}
}

// BenchmarkPages pages a stack's history of 10,000 deployments (statetest.BenchmarkPages).
func BenchmarkPages(b *testing.B) {
	be, err := Open(b.Context(), filepath.Join(b.TempDir(), "state.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = be.Close() }()
	statetest.BenchmarkPages(b, be)
}

// BenchmarkCommitBatch commits what the engine's commit pipeline hands the backend for one level of a
// wave of chains: one Commit of n PutResource changes (half inserts of a pending record, half updates of
// a finished one, ~300 bytes of JSON each) and n events. It reports the CPU time (user + system, all
// goroutines) per record; allocs/op and B/op are per Commit.
func BenchmarkCommitBatch(b *testing.B) {
	for _, n := range []int{1, 20, 200} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			ctx := b.Context()
			be, err := Open(ctx, filepath.Join(b.TempDir(), "state.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = be.Close() }()
			const ids = 10_000
			res := make([]*state.Resource, ids)
			for i := range res {
				res[i] = sqlschematest.BenchResource(i)
			}
			changes := make([]state.Change, n)
			events := make([]state.Event, n)
			cpu0 := cpuTime()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				for j := range changes {
					r := res[(i*n+j)%ids]
					changes[j] = state.Change{Kind: state.PutResource, Resource: r}
					events[j] = state.Event{Time: r.UpdatedAt, LogicalID: r.LogicalID, Type: r.Type, Status: r.Status}
				}
				if _, err := be.Commit(ctx, "bench", "web", changes, events); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N*n), "cpu-ns/record")
		})
	}
}
