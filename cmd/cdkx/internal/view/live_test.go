package view_test

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/golden"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/view"
	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// screen returns what a terminal w columns wide shows, scrollback included, once out is written to it: it
// follows what the live table writes — \r, \n, CSI n A and CSI n B (up, down), CSI J and CSI K (erase),
// CSI m (colours, dropped) — and wraps lines longer than w as a terminal does (one cell per character).
// Blank lines at the end are dropped: a terminal shows them as the empty screen they are.
func screen(out string, w int) string {
	lines := [][]rune{nil}
	row, col := 0, 0
	for i := 0; i < len(out); {
		switch {
		case strings.HasPrefix(out[i:], "\x1b["):
			j := i + 2
			for j < len(out) && (out[j] >= '0' && out[j] <= '9' || out[j] == ';') {
				j++
			}
			n, _ := strconv.Atoi(out[i+2 : j])
			switch out[j] {
			case 'A':
				row = max(0, row-max(n, 1))
			case 'B':
				row = min(len(lines)-1, row+max(n, 1))
			case 'J':
				lines = lines[:row+1]
				lines[row] = lines[row][:min(col, len(lines[row]))]
			case 'K':
				if n == 2 {
					lines[row] = nil
				} else {
					lines[row] = lines[row][:min(col, len(lines[row]))]
				}
			}
			i = j + 1
		case out[i] == '\r':
			col = 0
			i++
		case out[i] == '\n':
			row, col = row+1, 0
			if row == len(lines) {
				lines = append(lines, nil)
			}
			i++
		default:
			r, size := utf8.DecodeRuneInString(out[i:])
			if col == w {
				row, col = row+1, 0
				if row == len(lines) {
					lines = append(lines, nil)
				}
			}
			for len(lines[row]) <= col {
				lines[row] = append(lines[row], ' ')
			}
			lines[row][col] = r
			col++
			i += size
		}
	}
	for len(lines) > 1 && strings.TrimSpace(string(lines[len(lines)-1])) == "" && strings.TrimSpace(string(lines[len(lines)-2])) == "" {
		lines = lines[:len(lines)-1]
	}
	out = ""
	for i, l := range lines {
		if i > 0 {
			out += "\n"
		}
		out += string(l)
	}
	return out
}

// wide is a run whose names, physical IDs, reasons and statuses are all longer than a terminal row holds.
func wide() (stacks, types, ids []string, evs []engine.Event) {
	stack := "ApplicationEdgeRoutingStackProduction"
	rs, zone := "PowerDNS::DNS::RecordSet", "PowerDNS::DNS::Zone"
	long := "ApplicationEdgeRoutingStackProductionWwwRecordSetWithAVeryLongName1E6C2A94"
	ev := func(sec int, typ, id string, s engine.Status, physical, reason string) engine.Event {
		return engine.Event{Time: t0.Add(time.Duration(sec) * time.Second), Stack: stack, Type: typ, LogicalID: id, Status: s,
			PhysicalID: physical, Reason: reason}
	}
	evs = []engine.Event{
		ev(0, engine.StackType, "", engine.UpdateInProgress, "", ""),
		ev(0, zone, "Zone5F3A9C21", engine.NoChanges, "", ""),
		ev(1, rs, long, engine.UpdateInProgress, "", "changed: ttl, records, and a list of further properties that goes on"),
		ev(1, rs, "Api4A7D9B03", engine.UpdateInProgress, "", "changed: records"),
		ev(2, rs, long, engine.UpdateComplete, "edge.production.example.test./www.edge.production.example.test./AAAA", ""),
		ev(3, rs, "Api4A7D9B03", engine.UpdateFailed, "",
			"powerdns: PATCH http://127.0.0.1:18081/api/v1/servers/localhost/zones/edge.production.example.test.: 422: Record api./A 'not-an-ip': Parsing record content (try 'pdnsutil check-zone')"),
		ev(3, rs, "Web1", engine.Skipped, "", "dependency "+stack+"/Api4A7D9B03 failed"),
		ev(4, engine.StackType, "", engine.UpdateRollbackInProgress, "", "rolling back the changes of this run"),
		ev(4, rs, long, engine.UpdateRollbackInProgress, "", "restoring the last applied inputs"),
		ev(5, rs, long, engine.UpdateRollbackComplete, "edge.production.example.test./www.edge.production.example.test./AAAA", "restored"),
		ev(6, engine.StackType, "", engine.UpdateCompleteCleanup, "", "deleting objects no longer in the assembly or replaced"),
		ev(6, engine.StackType, "", engine.UpdateRollbackComplete, "", ""),
	}
	return []string{stack}, []string{zone, rs, rs, rs}, []string{"Zone5F3A9C21", long, "Api4A7D9B03", "Web1"}, evs
}

// run shows evs in a live table w columns wide, redrawing the region after each event at its time + 500 ms,
// and returns what was written and the frame drawn after the event at index mid.
func liveRun(t *testing.T, w int, opt view.TableOptions, stacks, types, ids []string, evs []engine.Event, res *engine.Result) string {
	t.Helper()
	var buf bytes.Buffer
	now := t0
	opt.Live, opt.Now, opt.Size = true, func() time.Time { return now }, func() (int, int) { return w, 40 }
	tab := view.NewTable(&buf, opt, stacks, types, ids)
	for _, e := range evs {
		now = e.Time
		tab.Event(e)
		tab.Tick(e.Time.Add(500 * time.Millisecond))
	}
	tab.Summary(view.Summary{Command: "deploy", Result: res, Elapsed: 6 * time.Second})
	return buf.String()
}

// csi matches the escape sequences the live table writes (colours, cursor moves, erasing).
var csi = regexp.MustCompile("\x1b\\[[0-9;]*[A-Za-z]")

func TestLiveFitsTheWidth(t *testing.T) {
	t.Setenv("TZ", "UTC")
	stacks, types, ids, evs := wide()
	res := &engine.Result{Counts: map[engine.Status]int{engine.UpdateRollbackComplete: 1, engine.UpdateFailed: 1, engine.Skipped: 1, engine.NoChanges: 1},
		Failures: []engine.Failure{{Stack: evs[5].Stack, LogicalID: evs[5].LogicalID, Status: engine.UpdateFailed, Err: fmt.Errorf("%s: %w", evs[5].Reason, resource.ErrAlreadyExists)}}} // with the import hint
	for _, w := range []int{80, 120, 60} {
		for _, color := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d-color=%v", w, color), func(t *testing.T) {
				out := liveRun(t, w, view.TableOptions{Color: color}, stacks, types, ids, evs, res)
				// Every line written fits: none wraps on the terminal.
				for _, l := range strings.Split(strings.ReplaceAll(csi.ReplaceAllString(out, ""), "\r", ""), "\n") {
					if n := utf8.RuneCountInString(l); n > w {
						t.Errorf("line of %d cells, want at most %d:\n%s", n, w, l)
					}
				}
				if color {
					return
				}
				scr := screen(out, w)
				for _, want := range []string{"UPDATE_ROLLBACK_IN_PROGRESS", "UPDATE_COMPLETE_CLEANUP_IN_PROGRESS", "…"} {
					if !strings.Contains(scr, want) {
						t.Errorf("screen lacks %q:\n%s", want, scr)
					}
				}
				golden.Assert(t, scr, fmt.Sprintf("TestLiveFitsTheWidth-%d.golden", w))
			})
		}
	}
}

// TestLiveColumns checks that the rows of one run line up: each status starts in the same column.
func TestLiveColumns(t *testing.T) {
	t.Setenv("TZ", "UTC")
	stacks, types, ids, evs := wide()
	scr := screen(liveRun(t, 80, view.TableOptions{}, stacks, types, ids, evs[:7], &engine.Result{}), 80)
	col := -1
	for _, l := range strings.Split(scr, "\n") {
		i := strings.Index(l, "UPDATE_")
		if i >= 0 {
			i = utf8.RuneCountInString(l[:i])
		}
		if i < 0 || strings.Contains(l, "Stack") || !strings.Contains(l, "RecordSet") {
			continue
		}
		if col >= 0 && i != col {
			t.Errorf("status at column %d, want %d:\n%s", i, col, scr)
		}
		col = i
	}
	if col < 0 {
		t.Fatalf("no resource row:\n%s", scr)
	}
}

func TestLiveFooter(t *testing.T) {
	t.Setenv("TZ", "UTC")
	var buf bytes.Buffer
	now := t0
	ids := []string{"A", "B", "C", "D", "E"}
	tab := view.NewTable(&buf, view.TableOptions{Live: true, Now: func() time.Time { return now }, Size: func() (int, int) { return 80, 9 }},
		[]string{"App"}, []string{"PowerDNS::DNS::RecordSet"}, ids)
	ev := func(sec int, id string, s engine.Status) engine.Event {
		return engine.Event{Time: t0.Add(time.Duration(sec) * time.Second), Stack: "App", Type: "PowerDNS::DNS::RecordSet", LogicalID: id, Status: s}
	}
	for _, e := range []engine.Event{
		{Time: t0, Stack: "App", Type: engine.StackType, Status: engine.CreateInProgress},
		ev(0, "A", engine.CreateInProgress), ev(1, "A", engine.CreateComplete), ev(1, "B", engine.NoChanges),
		ev(2, "C", engine.CreateInProgress), ev(3, "D", engine.CreateInProgress), ev(3, "E", engine.CreateInProgress),
		ev(4, "F", engine.CreateInProgress),
	} {
		tab.Event(e)
	}
	tab.Tick(t0.Add(12 * time.Second))
	scr := screen(buf.String(), 80)
	lines := strings.Split(strings.TrimSuffix(scr, "\n"), "\n")
	// Height 9: 3 rows of steps in flight at most, the 3rd "… and N more".
	want := []string{
		"     10s  App  PowerDNS::DNS::RecordSet  C  CREATE_IN_PROGRESS",
		"      9s  App  PowerDNS::DNS::RecordSet  D  CREATE_IN_PROGRESS",
		"          … and 2 more in flight",
		"Deploying · 2/5 · 4 in flight · 12s",
	}
	if diff := cmp.Diff(want, lines[len(lines)-len(want):]); diff != "" {
		t.Errorf("region (-want +got):\n%s\nscreen:\n%s", diff, scr)
	}
	if strings.Count(scr, "Deploying ·") != 1 {
		t.Errorf("the footer is not drawn in place:\n%s", scr)
	}
}

// unchangedRun is a deploy of 4 resources of which 3 are unchanged and 3 are skipped for 2 root causes.
func unchangedRun() ([]string, []engine.Event, *engine.Result) {
	ev := func(id string, s engine.Status, reason string) engine.Event {
		return engine.Event{Time: t0, Stack: "App", Type: "PowerDNS::DNS::RecordSet", LogicalID: id, Status: s, Reason: reason}
	}
	evs := []engine.Event{
		ev("Same1", engine.NoChanges, ""), ev("Same2", engine.NoChanges, ""), ev("Same3", engine.NoChanges, ""),
		ev("Ttl", engine.UpdateInProgress, "changed: ttl"), ev("Ttl", engine.UpdateComplete, ""),
		ev("Zone", engine.UpdateInProgress, ""), ev("Zone", engine.UpdateFailed, "422"),
		ev("A", engine.Skipped, "dependency App/Zone failed"), ev("B", engine.Skipped, "dependency App/Zone failed"),
		ev("C", engine.Skipped, "dependency App/Other failed"),
	}
	res := &engine.Result{Counts: map[engine.Status]int{engine.NoChanges: 3, engine.UpdateComplete: 1, engine.UpdateFailed: 1, engine.Skipped: 3},
		Failures: []engine.Failure{{Stack: "App", LogicalID: "Zone", Status: engine.UpdateFailed, Err: fmt.Errorf("422")}}}
	return []string{"Same1", "Same2", "Same3", "Ttl", "Zone", "A", "B", "C"}, evs, res
}

func TestUnchangedAndSkipped(t *testing.T) {
	t.Setenv("TZ", "UTC")
	ids, evs, res := unchangedRun()
	for _, tc := range []struct {
		name                string
		live, showUnchanged bool
		rows                int // rows of NO_CHANGES
		skippedRows         int
	}{
		{"plain", false, false, 0, 3},
		{"plain-show-unchanged", false, true, 3, 3},
		{"live", true, false, 0, 0},
		{"live-show-unchanged", true, true, 3, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			tab := view.NewTable(&buf, view.TableOptions{Live: tc.live, ShowUnchanged: tc.showUnchanged, Now: func() time.Time { return t0 }},
				[]string{"App"}, []string{"PowerDNS::DNS::RecordSet"}, ids)
			for _, e := range evs {
				tab.Event(e)
			}
			tab.Summary(view.Summary{Command: "deploy", Result: res, Elapsed: time.Second})
			out := buf.String()
			if tc.live {
				out = screen(out, 80)
			}
			if n := strings.Count(out, "NO_CHANGES"); n != tc.rows {
				t.Errorf("%d NO_CHANGES rows, want %d:\n%s", n, tc.rows, out)
			}
			if n := strings.Count(out, "SKIPPED"); n != tc.skippedRows {
				t.Errorf("%d SKIPPED rows, want %d:\n%s", n, tc.skippedRows, out)
			}
			for _, want := range []string{
				"✗ Deploy failed: 1 updated, 3 unchanged, 1 failed, 3 skipped (1s)",
				"  2 skipped because dependency App/Zone failed: A, B\n",
				"  1 skipped because dependency App/Other failed: C\n",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			golden.Assert(t, out, "TestUnchangedAndSkipped-"+tc.name+".golden")
		})
	}
}

// TestTableWrite checks that what else is printed during a live run goes above the region, which stays
// whole below it.
func TestTableWrite(t *testing.T) {
	var buf bytes.Buffer
	tab := view.NewTable(&buf, view.TableOptions{Live: true, Now: func() time.Time { return t0 }}, []string{"App"}, []string{"T"}, []string{"A"})
	tab.Event(engine.Event{Time: t0, Stack: "App", Type: "T", LogicalID: "A", Status: engine.CreateInProgress})
	fmt.Fprintf(tab, "Interrupt received: no new step starts")
	scr := screen(buf.String(), 80)
	want := "Interrupt received: no new step starts\n      0s  App  T            A  CREATE_IN_PROGRESS\nRunning · 0/1 · 1 in flight · 0s\n"
	if !strings.HasSuffix(scr, want) {
		t.Errorf("screen ends:\n%s\nwant:\n%s", scr, want)
	}
}

// TestTableWriteWraps: on a terminal, a notice wider than the terminal is wrapped at its spaces above the
// region, not cut by the terminal in the middle of a word; a question without its newline stays whole.
func TestTableWriteWraps(t *testing.T) {
	var buf bytes.Buffer
	tab := view.NewTable(&buf, view.TableOptions{Live: true, Now: func() time.Time { return t0 }, Size: func() (int, int) { return 40, 20 }},
		[]string{"App"}, []string{"T"}, []string{"A"})
	tab.Event(engine.Event{Time: t0, Stack: "App", Type: "T", LogicalID: "A", Status: engine.CreateInProgress})
	fmt.Fprintln(tab, "Interrupt received: no new step starts; 4 provider call(s) in flight finish and are recorded.")
	want := "Interrupt received: no new step starts;\n4 provider call(s) in flight finish and\nare recorded.\n"
	if scr := screen(buf.String(), 40); !strings.Contains(scr, want) {
		t.Errorf("screen:\n%s\nwant it to hold:\n%s", scr, want)
	}
	tab.Pause()
	fmt.Fprint(tab, "A question that is longer than forty columns? (y/N) ")
	if !strings.HasSuffix(buf.String(), "A question that is longer than forty columns? (y/N) ") {
		t.Errorf("an unfinished line was changed: %q", buf.String())
	}
}

// TestTablePause: a paused table takes its region off the screen, so that a question or an error is
// printed below the rows, not under a footer that keeps ticking; the next run draws it again.
func TestTablePause(t *testing.T) {
	var buf bytes.Buffer
	tab := view.NewTable(&buf, view.TableOptions{Live: true, Now: func() time.Time { return t0 }}, []string{"App"}, []string{"T"}, []string{"A"})
	tab.Event(engine.Event{Time: t0, Stack: "App", Type: "T", LogicalID: "A", Status: engine.CreateInProgress})
	tab.Event(engine.Event{Time: t0, Stack: "App", Type: "T", LogicalID: "A", Status: engine.CreateComplete, PhysicalID: "a-1"})
	tab.Pause()
	fmt.Fprintf(tab, "Do you want to perform these actions? (y/N) ")
	scr := screen(buf.String(), 80)
	if strings.Contains(scr, "·") || !strings.HasSuffix(strings.TrimRight(scr, "\n"), "CREATE_COMPLETE     a-1\nDo you want to perform these actions? (y/N) ") {
		t.Errorf("screen after Pause:\n%s\nwant the rows and the question, no footer", scr)
	}
	tab.Begin([]string{"App"}, []string{"T"}, []string{"B"})
	tab.Event(engine.Event{Time: t0, Stack: "App", Type: "T", LogicalID: "B", Status: engine.CreateInProgress})
	if scr := screen(buf.String(), 80); !strings.HasSuffix(scr, "· 1 in flight · 0s\n") {
		t.Errorf("screen after the next Begin:\n%s\nwant the footer again", scr)
	}
}

// TestLiveCoalesces: with a redraw loop, events that come faster than Refresh are written together at the
// loop's next turn — one redraw for many events — in their order, and nothing queued is lost at Summary.
func TestLiveCoalesces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var buf bytes.Buffer
		w := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return buf.Write(p) })
		written := func() string { mu.Lock(); defer mu.Unlock(); return buf.String() }
		ids := []string{"A", "B", "C", "D", "E", "F"}
		tab := view.NewTable(w, view.TableOptions{Live: true, Refresh: 200 * time.Millisecond}, []string{"App"}, []string{"T"}, ids)
		start := time.Now()
		for _, id := range ids[:5] {
			tab.Event(engine.Event{Time: start, Stack: "App", Type: "T", LogicalID: id, Status: engine.CreateInProgress})
			tab.Event(engine.Event{Time: start, Stack: "App", Type: "T", LogicalID: id, Status: engine.CreateComplete, PhysicalID: "p-" + id})
		}
		if got := written(); strings.Contains(got, "CREATE_COMPLETE") {
			t.Fatalf("rows written before the loop's turn:\n%s", got)
		}
		time.Sleep(200 * time.Millisecond)
		synctest.Wait()
		scr := screen(written(), 80)
		if n := strings.Count(scr, "CREATE_COMPLETE"); n != 5 || !regexp.MustCompile(`(?s)A .*B .*C .*D .*E `).MatchString(scr) {
			t.Errorf("after one turn: %d rows, want A…E in order:\n%s", n, scr)
		}
		if n := strings.Count(written(), "· 5/6 ·"); n != 1 {
			t.Errorf("the region was drawn %d times for ten events, want once", n)
		}
		tab.Event(engine.Event{Time: start, Stack: "App", Type: "T", LogicalID: "F", Status: engine.CreateComplete, PhysicalID: "p-F"})
		tab.Summary(view.Summary{Command: "deploy"})
		if scr := screen(written(), 80); !strings.Contains(scr, "F  CREATE_COMPLETE") || strings.Contains(scr, "·") {
			t.Errorf("after Summary the queued row is missing or the region stayed:\n%s", scr)
		}
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestLiveCoalescedScreen: a run whose events all come within one Refresh — a failure and its rollback —
// leaves the same screen as the same run drawn at every event: each row keeps the layout of its moment.
func TestLiveCoalescedScreen(t *testing.T) {
	t.Setenv("TZ", "UTC")
	stacks, types, ids, evs := wide()
	res := &engine.Result{Counts: map[engine.Status]int{engine.UpdateFailed: 1}}
	at := func(w int, opt view.TableOptions) string {
		var buf bytes.Buffer
		opt.Live, opt.Now, opt.Size = true, func() time.Time { return t0 }, func() (int, int) { return w, 40 }
		tab := view.NewTable(&buf, opt, stacks, types, ids)
		for _, e := range evs {
			tab.Event(e)
		}
		tab.Summary(view.Summary{Command: "deploy", Result: res})
		return screen(buf.String(), w)
	}
	for _, w := range []int{80, 120} {
		immediate := at(w, view.TableOptions{})
		var coalesced string
		synctest.Test(t, func(t *testing.T) { coalesced = at(w, view.TableOptions{Refresh: time.Hour}) })
		if diff := cmp.Diff(immediate, coalesced); diff != "" {
			t.Errorf("%d columns: coalesced screen (-drawn at every event +coalesced):\n%s", w, diff)
		}
	}
}
