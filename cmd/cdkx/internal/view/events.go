package view

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/lipgloss"

	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// Events renders a run's events as they become durable.
type Events interface {
	// Event renders one event. Safe to call from one goroutine while Tick runs on another.
	Event(e engine.Event)
	// Tick renders "still creating… [Ns elapsed]" for each step in progress for at least SlowAfter.
	Tick(now time.Time)
	// Summary renders the end of the run.
	Summary(s Summary)
}

// SlowAfter is how long a step runs before Tick reports it.
const SlowAfter = 10 * time.Second

// Summary is what a run did, for the final lines or object.
type Summary struct {
	Command     string // deploy | destroy
	Result      *engine.Result
	Elapsed     time.Duration
	Outputs     map[string]map[string]any // stack → outputs (deploy)
	Err         error
	Interrupted bool
	// Unchanged are the stacks a deploy left alone because its plan changes nothing in them (no
	// deployment was recorded for them): each gets a "Stack X: no changes" line.
	Unchanged []string
}

// Table shows a run's events on stderr, one row per event: `<time> <stack> <type> <logicalId> <status>
// [physical ID or reason]`.
//
// Plain (not a terminal, or CI set) every event is a row with an RFC3339 time, no colour and columns of
// fixed caps, which CI logs can be grepped by, and Tick adds "still creating… [Ns elapsed]" rows. Live (on
// a terminal) finished events scroll up with short times while a region at the bottom, redrawn in place,
// shows the steps in flight with their elapsed time above a footer ("Deploying · 123/301 · 4 in flight ·
// 12s"); every line fits the terminal's width, names and IDs shortened with … rather than wrapped. Both
// leave unchanged resources out unless ShowUnchanged (the summary counts them) and group skipped resources
// under their root cause in the summary; live, skipped resources have no rows of their own.
//
// A Table is also the writer of whatever else a command prints to stderr while it runs (Write): on a
// terminal such lines go above the live region.
type Table struct {
	w   io.Writer
	opt TableOptions
	pal palette

	mu      sync.Mutex      // guards everything below and writes to w
	natural layout          // the name columns as wide as the widest names, capped
	types   map[string]bool // the run's resource types, sanitized: how wide they are once shortened
	phase   phase
	skipped []skipGroup
	drawn   []int         // widths of the live region's lines on screen (none: nothing drawn)
	queued  []queuedRow   // live: the rows the next redraw writes
	stop    chan struct{} // closed to end the redraw loop; nil when none runs
}

// TableOptions say how a Table shows events.
type TableOptions struct {
	// Live draws for a person on a terminal (a live region, short times); otherwise plain rows.
	Live bool
	// Color renders statuses and times in colour.
	Color bool
	// Size returns the terminal's width and height in cells, asked again at each redraw so that a
	// resized terminal is followed (nil: 80×24).
	Size func() (width, height int)
	// ShowUnchanged lists unchanged (NO_CHANGES) resources instead of only counting them.
	ShowUnchanged bool
	// Now is the clock of elapsed times in the live region (nil: time.Now).
	Now func() time.Time
	// Refresh is how often the live region is redrawn, writing the rows of the events since above it (0:
	// at every event and Tick instead).
	Refresh time.Duration
}

// phase is one engine run's progress: settling before a deploy is one phase, the deploy another.
type phase struct {
	label   string // Deploying, Destroying, …: what the footer says the run is doing
	total   int    // steps of the run
	started time.Time
	done    map[string]bool // stack/logicalID of steps that ended
	running map[string]runningStep
	status  int  // width of the live status column
	active  bool // the run shows something: a live region is drawn
}

type runningStep struct {
	event engine.Event
	since time.Time
}

// skipGroup is the resources skipped for one reason (which names the root cause).
type skipGroup struct {
	reason string
	ids    [][2]string // stack, logical ID
}

// NewTable returns a table writing to w that shows the run over stacks, types and logicalIDs (Begin). Every
// name, physical ID and reason it prints goes through Sanitize.
func NewTable(w io.Writer, opt TableOptions, stacks, types, logicalIDs []string) *Table {
	t := &Table{w: w, opt: opt, pal: newPalette(opt.Color)}
	t.Begin(stacks, types, logicalIDs)
	return t
}

// Out returns the writer the table writes to.
func (t *Table) Out() io.Writer { return t.w }

// Begin starts showing one engine run over stacks, types and logicalIDs: they size the columns, and the
// number of logical IDs is the run's number of steps (the footer's total). Skipped resources stay
// counted until Summary.
func (t *Table) Begin(stacks, types, logicalIDs []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, col := range [][]string{stacks, types, logicalIDs} {
		w := []*int{&t.natural.stack, &t.natural.typ, &t.natural.id}[i]
		for _, s := range col {
			*w = max(*w, width(Sanitize(s)))
		}
	}
	if t.types == nil {
		t.types = map[string]bool{}
	}
	for _, ty := range types {
		t.types[Sanitize(ty)] = true
	}
	now := t.now()
	t.phase = phase{label: "Starting", total: len(logicalIDs), started: now, done: map[string]bool{},
		running: map[string]runningStep{}, status: statusMin, active: len(stacks)+len(logicalIDs) > 0}
	if !t.opt.Live {
		return
	}
	t.draw(now)
	if t.opt.Refresh > 0 && t.stop == nil && t.phase.active {
		t.stop = make(chan struct{})
		go t.loop(t.stop, t.opt.Refresh)
	}
}

// loop redraws the live region every d until stop is closed.
func (t *Table) loop(stop chan struct{}, d time.Duration) {
	tick := time.NewTicker(d)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			t.mu.Lock()
			if t.stop == stop {
				t.draw(t.now())
			}
			t.mu.Unlock()
		}
	}
}

func (t *Table) now() time.Time {
	if t.opt.Now == nil {
		return time.Now()
	}
	return t.opt.Now()
}

func (t *Table) size() (w, h int) {
	w, h = 80, 24
	if t.opt.Size != nil {
		if sw, sh := t.opt.Size(); sw > 0 {
			w, h = sw, max(sh, 1)
		}
	}
	return w, h
}

// Event shows one event and tracks the steps in flight.
func (t *Table) Event(e engine.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := &t.phase
	p.active = true
	if e.LogicalID == "" {
		if l := stackLabel(e.Status); l != "" {
			p.label = l
		}
		if e.Status == engine.UpdateRollbackInProgress || e.Status == engine.RollbackInProgress {
			p.status = statusMax // the rollback's rows line up from the first
		}
		t.emit(e)
		t.changed()
		return
	}
	key := e.Stack + "/" + e.LogicalID
	if e.Status.InProgress() {
		p.running[key] = runningStep{event: e, since: e.Time}
	} else {
		delete(p.running, key)
		p.done[key] = true
	}
	if p.label == "Starting" {
		p.label = resourceLabel(e.Status)
	}
	if n := len(e.Status); n > p.status {
		p.status = min(n, statusMax)
	}
	if e.Status == engine.Skipped {
		t.skip(e)
	}
	if t.shows(e) {
		t.emit(e)
	}
	t.changed()
}

// shows reports whether e gets a row: unchanged resources only with ShowUnchanged; live, neither steps in
// progress (the region shows them) nor skipped resources (the summary groups them).
func (t *Table) shows(e engine.Event) bool {
	switch {
	case e.Status == engine.NoChanges:
		return t.opt.ShowUnchanged
	case t.opt.Live:
		return !e.Status.InProgress() && e.Status != engine.Skipped
	}
	return true
}

func (t *Table) skip(e engine.Event) {
	id := [2]string{e.Stack, e.LogicalID}
	for i := range t.skipped {
		if t.skipped[i].reason == e.Reason {
			t.skipped[i].ids = append(t.skipped[i].ids, id)
			return
		}
	}
	t.skipped = append(t.skipped, skipGroup{reason: e.Reason, ids: [][2]string{id}})
}

// stackLabel returns what the footer says a run does once a stack's status is s ("" for no change).
func stackLabel(s engine.Status) string {
	switch s {
	case engine.CreateInProgress, engine.UpdateInProgress:
		return "Deploying"
	case engine.DeleteInProgress:
		return "Destroying"
	case engine.UpdateRollbackInProgress, engine.RollbackInProgress:
		return "Rolling back"
	case engine.UpdateCompleteCleanup:
		return "Cleaning up"
	}
	return ""
}

// resourceLabel returns what the footer says a run without stack events does, from its first event.
func resourceLabel(s engine.Status) string {
	switch s {
	case engine.InSync, engine.Modified, engine.Deleted:
		return "Refreshing"
	case engine.ImportComplete, engine.ImportFailed:
		return "Importing"
	}
	return "Running"
}

// queuedRow is an event waiting for the next redraw, with the width of the status column when it came:
// its row is laid out as it would have been at once (rows before a rollback keep their narrower status).
type queuedRow struct {
	event  engine.Event
	status int
}

// emit shows e's row: plain, written at once; live, queued for the next redraw of the region.
func (t *Table) emit(e engine.Event) {
	if t.opt.Live {
		t.queued = append(t.queued, queuedRow{event: e, status: t.phase.status})
		return
	}
	fmt.Fprintln(t.w, t.render(t.columns(), e))
}

// changed redraws the live region after an event — at once without a redraw loop; with one, its next
// turn does (at most one redraw per Refresh however fast events come: a 100k-resource deploy would
// otherwise redraw the region 200k times).
func (t *Table) changed() {
	if t.opt.Live && t.stop == nil {
		t.draw(t.now())
	}
}

// takeQueued renders the queued rows, one layout per status width, and empties the queue.
func (t *Table) takeQueued() []string {
	if len(t.queued) == 0 {
		return nil
	}
	layouts := map[int]layout{}
	rows := make([]string, len(t.queued))
	for i, q := range t.queued {
		l, ok := layouts[q.status]
		if !ok {
			l = t.columnsAt(q.status)
			layouts[q.status] = l
		}
		rows[i] = t.render(l, q.event)
	}
	t.queued = t.queued[:0]
	return rows
}

// render returns e's row in the layout l: a stack's row or a resource's.
func (t *Table) render(l layout, e engine.Event) string {
	if e.LogicalID == "" {
		return t.stackRow(l, e)
	}
	return t.resourceRow(l, e)
}

// stamp returns a row's time: RFC3339 in UTC plain, 15:04:05 local time live.
func (t *Table) stamp(at time.Time) string {
	if t.opt.Live {
		return t.pal.dim.Render(at.Local().Format("15:04:05"))
	}
	return at.UTC().Format(time.RFC3339)
}

// columns returns the widths of this moment's rows: capped plain; fitted to the terminal live.
func (t *Table) columns() layout { return t.columnsAt(t.phase.status) }

// columnsAt returns the widths of rows whose status column is status wide (live; plain rows have one
// width).
func (t *Table) columnsAt(status int) layout {
	l := naturalLayout(t.natural.stack, max(t.natural.typ, len(engine.StackType)), t.natural.id)
	if !t.opt.Live {
		l.status, l.detail = statusMax, plainDetailCap
		return l
	}
	l.status = status
	w, _ := t.size()
	fitted := l.fit(w)
	if fitted.typ < l.typ {
		// Shortened types drop whole "Provider::" segments: the column need not be wider than they are.
		need := 3
		for ty := range t.types {
			need = max(need, width(shortenType(ty, fitted.typ)))
		}
		fitted = fitted.narrowType(need, l.id, w)
	}
	return fitted
}

// resourceRow renders a resource's event in the layout l; detail is its reason, or its physical ID once it is done.
func (t *Table) resourceRow(l layout, e engine.Event) string {
	detail, physical := Sanitize(e.Reason), false
	if e.PhysicalID != "" && detail == "" && !e.Status.InProgress() {
		detail, physical = Sanitize(e.PhysicalID), true
	}
	return t.row(l, t.stamp(e.Time), e, string(e.Status), t.pal.status(e.Status), detail, physical)
}

// row renders `<time> <stack> <type> <logicalId> <status> [detail]` in the widths of l; a physical ID
// is shortened at its start, a reason at its end.
func (t *Table) row(l layout, ts string, e engine.Event, status string, st lipgloss.Style, detail string, physical bool) string {
	var b strings.Builder
	b.WriteString(ts + sep)
	b.WriteString(cell(Sanitize(e.Stack), l.stack, shortenName) + sep)
	b.WriteString(cell(Sanitize(e.Type), l.typ, shortenType) + sep)
	b.WriteString(cell(Sanitize(e.LogicalID), l.id, shortenName) + sep)
	if t.opt.Live {
		status = shortenEnd(status, l.status)
	}
	b.WriteString(st.Render(pad(status, l.status)))
	if detail != "" && l.detail > 0 {
		if physical {
			b.WriteString(sep + t.pal.dim.Render(shortenStart(detail, l.detail)))
		} else {
			b.WriteString(sep + shortenEnd(detail, l.detail))
		}
	}
	return strings.TrimRight(b.String(), " ")
}

// stackRow renders a stack's event: plain, a row whose type is cdkx::Stack; live, the stack's name and
// status on a line of their own (a stack's status can be longer than the status column).
func (t *Table) stackRow(l layout, e engine.Event) string {
	if !t.opt.Live {
		return t.row(l, t.stamp(e.Time), e, string(e.Status), t.pal.status(e.Status), Sanitize(e.Reason), false)
	}
	w, _ := t.size()
	rest := w - timeWidth - len(sep) - l.stack - len(sep)
	status := shortenEnd(string(e.Status), rest)
	line := t.stamp(e.Time) + sep + cell(Sanitize(e.Stack), l.stack, shortenName) + sep + t.pal.bold.Inherit(t.pal.status(e.Status)).Render(status)
	if reason := shortenEnd(Sanitize(e.Reason), rest-width(status)-len(sep)); reason != "" && rest-width(status)-len(sep) >= liveDetailMin {
		line += sep + reason
	}
	return line
}

// Tick shows the steps in flight: plain, a "still …" row for each step in progress for SlowAfter or
// more, in a stable order; live, the region drawn again at now.
func (t *Table) Tick(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.opt.Live {
		t.draw(now)
		return
	}
	l := t.columns()
	for _, r := range t.inFlight() {
		// Rounded: a ticker firing every SlowAfter sees a step started just after the previous tick at a
		// hair under SlowAfter.
		elapsed := now.Sub(r.since).Round(time.Second)
		if elapsed < SlowAfter {
			continue
		}
		msg := fmt.Sprintf("still %s… [%ds elapsed]", verb(r.event.Status), int(elapsed/time.Second))
		e := r.event
		fmt.Fprintln(t.w, strings.TrimRight(t.stamp(now)+sep+cell(Sanitize(e.Stack), l.stack, shortenName)+sep+
			cell(Sanitize(e.Type), l.typ, shortenType)+sep+cell(Sanitize(e.LogicalID), l.id, shortenName)+sep+t.pal.busy.Render(msg), " "))
	}
}

// inFlight returns the steps in progress, longest running first (then by stack and logical ID).
func (t *Table) inFlight() []runningStep {
	out := make([]runningStep, 0, len(t.phase.running))
	for _, r := range t.phase.running {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.since.Equal(b.since) {
			return a.since.Before(b.since)
		}
		if a.event.Stack != b.event.Stack {
			return a.event.Stack < b.event.Stack
		}
		return a.event.LogicalID < b.event.LogicalID
	})
	return out
}

func verb(s engine.Status) string {
	switch {
	case strings.HasPrefix(string(s), "CREATE"):
		return "creating"
	case strings.HasPrefix(string(s), "DELETE"):
		return "deleting"
	}
	return "updating"
}

// Summary ends the run's view: live, the region goes; then the counts, failures, skipped resources by
// root cause and elapsed time. What the table counted is forgotten, so that it can show another run.
func (t *Table) Summary(s Summary) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var b strings.Builder
	t.erase(&b)
	for _, r := range t.takeQueued() {
		b.WriteString(r + "\n")
	}
	t.drawn = nil
	if t.stop != nil {
		close(t.stop)
		t.stop = nil
	}
	w := plainSummaryWidth
	if t.opt.Live {
		w, _ = t.size()
	}
	for _, stack := range s.Unchanged {
		fmt.Fprintf(&b, "Stack %s: no changes\n", Sanitize(stack))
	}
	b.WriteString("\n")
	res := s.Result
	counts := countLine(res)
	if res == nil && len(s.Unchanged) > 0 {
		counts = "no changes"
	}
	switch {
	case res != nil && len(res.Failures) > 0:
		fmt.Fprintf(&b, "%s %s failed: %s (%s)\n", t.pal.bad.Render("✗"), title(s.Command), counts, round(s.Elapsed))
		for _, f := range res.Failures {
			stack, id := Sanitize(f.Stack), Sanitize(f.LogicalID)
			head := "  " + t.pal.bad.Render(string(f.Status)) + " " + stack + "/" + id + ": "
			msg := Sanitize(fmt.Sprint(f.Err))
			if t.opt.Live {
				if width(head) > w*2/3 {
					head = "  " + t.pal.bad.Render(string(f.Status)) + " " + shortenMiddle(stack+"/"+id, max(8, w*2/3-len(f.Status)-5)) + ": "
				}
				b.WriteString(wrap(head, msg, w, "    "))
			} else {
				b.WriteString(head + msg + "\n")
			}
			if errors.Is(f.Err, resource.ErrAlreadyExists) {
				hint := fmt.Sprintf("to manage the existing object, run: cdkx import %s/%s <its physical ID>", stack, id)
				if t.opt.Live {
					b.WriteString(wrap("    hint: ", hint, w, "      "))
				} else {
					b.WriteString("    hint: " + hint + "\n")
				}
			}
		}
	case s.Interrupted || (res != nil && res.Interrupted):
		notStarted := 0
		if res != nil {
			notStarted = res.NotStarted
		}
		fmt.Fprintf(&b, "%s %s interrupted: %s; %d step(s) not started (%s)\n", t.pal.busy.Render("!"), title(s.Command), counts,
			notStarted, round(s.Elapsed))
	default:
		fmt.Fprintf(&b, "%s %s complete: %s (%s)\n", t.pal.ok.Render("✓"), title(s.Command), counts, round(s.Elapsed))
	}
	for _, g := range t.skipped {
		b.WriteString(t.skippedLine(g, w) + "\n")
	}
	t.skipped = nil
	t.phase = phase{}
	_, _ = io.WriteString(t.w, b.String())
}

// plainSummaryWidth bounds the lists of skipped resources in a plain summary (every skipped resource
// also has a row of its own there).
const plainSummaryWidth = 160

// skippedLine renders "  N skipped because <reason>: A, B, C", as many names as fit in w; when not even
// the first name fits after the reason, the names go on a line of their own below it.
func (t *Table) skippedLine(g skipGroup, w int) string {
	oneStack := true
	for _, id := range g.ids {
		oneStack = oneStack && id[0] == g.ids[0][0]
	}
	names := make([]string, len(g.ids))
	for i, id := range g.ids {
		names[i] = Sanitize(id[1])
		if !oneStack {
			names[i] = Sanitize(id[0]) + "/" + names[i]
		}
	}
	head := fmt.Sprintf("  %d skipped because %s: ", len(g.ids), Sanitize(g.reason))
	if width(head)+width(names[0]) > w {
		return shortenEnd(strings.TrimSuffix(head, " "), w) + "\n    " + listFit(names, w-4)
	}
	return head + listFit(names, w-width(head))
}

// listFit joins names with ", " in at most w cells, ending with "… N more" when not all fit.
func listFit(names []string, w int) string {
	out := ""
	for i, n := range names {
		next := n
		if i > 0 {
			next = out + ", " + n
		}
		more := ""
		if rest := len(names) - i - 1; rest > 0 {
			more = fmt.Sprintf(", … %d more", rest)
		}
		if width(next+more) > w {
			if i == 0 {
				return fmt.Sprintf("… %d more", len(names))
			}
			return out + fmt.Sprintf(", … %d more", len(names)-i)
		}
		out = next
	}
	return out
}

// wrap renders head followed by msg's words in lines of at most w cells, the following lines indented
// by indent; a word longer than a line is cut across lines. head is shown as it is.
func wrap(head, msg string, w int, indent string) string {
	var b strings.Builder
	line, empty := head, true // empty: no word on the line yet
	flush := func() {
		b.WriteString(strings.TrimRight(line, " ") + "\n")
		line, empty = indent, true
	}
	for _, word := range strings.Fields(msg) {
		for word != "" {
			need := width(word)
			if !empty {
				need++
			}
			switch room := w - width(line); {
			case need <= room:
				if !empty {
					line += " "
				}
				line, word, empty = line+word, "", false
			case empty && room > 0:
				cut := takeHead(word, room)
				line, word = line+cut, word[len(cut):]
				flush()
			default:
				flush()
			}
		}
	}
	flush()
	return b.String()
}

func title(cmd string) string {
	if cmd == "" {
		return "Run"
	}
	return strings.ToUpper(cmd[:1]) + cmd[1:]
}

func round(d time.Duration) time.Duration {
	if d > time.Second {
		return d.Round(10 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

// countLine renders the final status counts in a fixed order, e.g. "12 created, 1 updated, 3 unchanged".
func countLine(res *engine.Result) string {
	if res == nil {
		return "nothing ran"
	}
	c := res.Counts
	parts := []struct {
		n    int
		word string
	}{
		{c[engine.CreateComplete], "created"},
		{c[engine.UpdateComplete] - res.Replaced, "updated"},
		{res.Replaced, "replaced"},
		{c[engine.DeleteComplete], "deleted"},
		{c[engine.NoChanges], "unchanged"},
		{c[engine.InSync], "in sync"},
		{c[engine.Modified], "modified outside cdkx"},
		{c[engine.Deleted], "deleted outside cdkx"},
		{c[engine.CreateFailed] + c[engine.UpdateFailed] + c[engine.DeleteFailed] + c[engine.DetectionFailed], "failed"},
		{c[engine.Skipped], "skipped"},
	}
	var out []string
	for _, p := range parts {
		if p.n > 0 {
			out = append(out, fmt.Sprintf("%d %s", p.n, p.word))
		}
	}
	if len(out) == 0 {
		return "no resources"
	}
	return strings.Join(out, ", ")
}

// JSONLines renders every event as one JSON object per line, {"kind":"event",…}, and the summary as a
// final {"kind":"summary",…} object.
type JSONLines struct {
	mu  sync.Mutex
	enc *json.Encoder
}

// NewJSONLines returns a renderer writing to w.
func NewJSONLines(w io.Writer) *JSONLines { return &JSONLines{enc: JSONEncoder(w)} }

type jsonEvent struct {
	Kind string `json:"kind"`
	engine.Event
}

// Event writes {"kind":"event","time":…,"stack":…,"type":…,"logicalId":…,"status":…,"reason":…}.
func (j *JSONLines) Event(e engine.Event) {
	j.mu.Lock()
	defer j.mu.Unlock()
	e.Time = e.Time.UTC()
	_ = j.enc.Encode(jsonEvent{Kind: "event", Event: e})
}

// Tick does nothing: JSON consumers read events, not heartbeats.
func (j *JSONLines) Tick(time.Time) {}

type jsonFailure struct {
	Stack     string `json:"stack"`
	LogicalID string `json:"logicalId,omitempty"`
	Status    string `json:"status"`
	Error     string `json:"error"`
}

type jsonSummary struct {
	Kind        string                    `json:"kind"`
	Command     string                    `json:"command"`
	Status      string                    `json:"status"` // succeeded | failed | interrupted
	Counts      map[string]int            `json:"counts"`
	Failures    []jsonFailure             `json:"failures"`
	Deployments map[string]string         `json:"deployments"`
	Outputs     map[string]map[string]any `json:"outputs,omitempty"`
	ElapsedMS   int64                     `json:"elapsedMs"`
	NotStarted  int                       `json:"notStarted"`
	Replaced    int                       `json:"replaced"`
	// Unchanged are the stacks left alone with no deployment (Summary.Unchanged).
	Unchanged []string `json:"unchanged,omitempty"`
}

// Summary writes the final object.
func (j *JSONLines) Summary(s Summary) {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := jsonSummary{Kind: "summary", Command: s.Command, Status: "succeeded", Counts: map[string]int{},
		Failures: []jsonFailure{}, Deployments: map[string]string{}, Outputs: s.Outputs, ElapsedMS: s.Elapsed.Milliseconds(),
		Unchanged: s.Unchanged}
	if res := s.Result; res != nil {
		for k, v := range res.Counts {
			out.Counts[string(k)] = v
		}
		for _, f := range res.Failures {
			out.Failures = append(out.Failures, jsonFailure{Stack: f.Stack, LogicalID: f.LogicalID, Status: string(f.Status), Error: f.Err.Error()})
		}
		for stack, d := range res.Deployments {
			out.Deployments[stack] = d.ID
		}
		out.NotStarted = res.NotStarted
		out.Replaced = res.Replaced
		switch {
		case len(res.Failures) > 0:
			out.Status = "failed"
		case res.Interrupted:
			out.Status = "interrupted"
		}
	}
	if s.Err != nil && out.Status == "succeeded" {
		out.Status = "failed"
	}
	_ = j.enc.Encode(out)
}
