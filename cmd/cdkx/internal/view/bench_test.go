package view_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/view"
	"github.com/cdkx-dev/cdkx/engine"
)

// countingWriter counts what the table writes: what a terminal would have to draw.
type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// BenchmarkTableEvent shows a deploy of b.N/2 resources, 10 in flight at once, each an IN_PROGRESS and a
// COMPLETE event, to a terminal whose size is asked through a function (as the CLI asks the kernel):
// plain rows, and live with the region redrawn every 200 ms as the CLI does (the summary, which writes
// the rows still queued, is timed too). It reports the bytes written and the size queries per event.
func BenchmarkTableEvent(b *testing.B) {
	const inFlight = 10
	for _, tc := range []struct {
		name string
		opt  view.TableOptions
	}{
		{"plain", view.TableOptions{}},
		{"live", view.TableOptions{Live: true, Refresh: 200 * time.Millisecond}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ids := make([]string, 1000)
			for i := range ids {
				ids[i] = fmt.Sprintf("AppRecordSet%04dE3A1F806", i)
			}
			var sizes int64
			opt := tc.opt
			opt.Size = func() (int, int) { sizes++; return 120, 40 }
			var w countingWriter
			tab := view.NewTable(&w, opt, []string{"App"}, []string{"PowerDNS::DNS::RecordSet"}, ids)
			t := time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC)
			ev := func(i int, s engine.Status) engine.Event {
				return engine.Event{Time: t, Stack: "App", Type: "PowerDNS::DNS::RecordSet", LogicalID: ids[(i+len(ids))%len(ids)], Status: s,
					PhysicalID: "example.test./www.example.test./A"}
			}
			b.ResetTimer()
			for i := range b.N {
				r := i / 2
				if i%2 == 0 {
					tab.Event(ev(r, engine.CreateInProgress))
				} else {
					tab.Event(ev(r-inFlight/2, engine.CreateComplete)) // keeps about inFlight running
				}
			}
			tab.Summary(view.Summary{Command: "deploy"}) // writes what is still queued
			b.StopTimer()
			b.ReportMetric(float64(w.n)/float64(b.N), "B/event")
			b.ReportMetric(float64(sizes)/float64(b.N), "sizes/event")
		})
	}
}
