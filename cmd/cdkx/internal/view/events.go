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
}

// Table is the live event table: `<time> <stack> <type> <logicalId> <status> [reason]`. Live (on a
// terminal) it shows short times and colours; otherwise RFC3339 times, no colours and stable columns,
// which CI logs can be grepped by.
type Table struct {
	w     io.Writer
	live  bool
	pal   palette
	width [3]int

	mu      sync.Mutex // guards running and writes to w
	running map[string]runningStep
}

type runningStep struct {
	event engine.Event
	since time.Time
}

// NewTable returns a table writing to w. stacks, types and logicalIDs size the columns up front, so that
// every row lines up. Every name, physical ID and reason it prints goes through Sanitize.
func NewTable(w io.Writer, live, color bool, stacks, types, logicalIDs []string) *Table {
	t := &Table{w: w, live: live, pal: newPalette(color), running: map[string]runningStep{}}
	for i, col := range [][]string{stacks, types, logicalIDs} {
		for _, s := range col {
			t.width[i] = max(t.width[i], len(Sanitize(s)))
		}
	}
	t.width[1] = max(t.width[1], len(engine.StackType))
	return t
}

// Event prints one row and tracks steps in progress.
func (t *Table) Event(e engine.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	key := e.Stack + "/" + e.LogicalID
	if e.LogicalID != "" {
		if e.Status.InProgress() {
			t.running[key] = runningStep{event: e, since: e.Time}
		} else {
			delete(t.running, key)
		}
	}
	status := t.pal.status(e.Status).Render(pad(string(e.Status), 20))
	reason := Sanitize(e.Reason)
	if e.PhysicalID != "" && reason == "" && !e.Status.InProgress() && e.LogicalID != "" {
		reason = t.pal.dim.Render(Sanitize(e.PhysicalID))
	}
	t.row(e.Time, e.Stack, e.Type, e.LogicalID, strings.TrimRight(status+"  "+reason, " "))
}

// row prints one row; stack, typ and logicalID are sanitized here, rest must be already.
func (t *Table) row(at time.Time, stack, typ, logicalID, rest string) {
	ts := at.UTC().Format(time.RFC3339)
	if t.live {
		ts = t.pal.dim.Render(at.Local().Format("15:04:05"))
	}
	fmt.Fprintf(t.w, "%s  %s  %s  %s  %s\n", ts, pad(Sanitize(stack), t.width[0]), pad(Sanitize(typ), t.width[1]),
		pad(Sanitize(logicalID), t.width[2]), rest)
}

// Tick prints a "still …" row for each step in progress for SlowAfter or more, in a stable order.
func (t *Table) Tick(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	keys := make([]string, 0, len(t.running))
	for k := range t.running {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		r := t.running[k]
		// Rounded: a ticker firing every SlowAfter sees a step started just after the previous tick at a
		// hair under SlowAfter.
		elapsed := now.Sub(r.since).Round(time.Second)
		if elapsed < SlowAfter {
			continue
		}
		msg := fmt.Sprintf("still %s… [%ds elapsed]", verb(r.event.Status), int(elapsed/time.Second))
		t.row(now, r.event.Stack, r.event.Type, r.event.LogicalID, t.pal.busy.Render(msg))
	}
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

// Summary prints the counts, failures and elapsed time to the table's writer.
func (t *Table) Summary(s Summary) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintln(t.w)
	res := s.Result
	counts := countLine(res)
	switch {
	case res != nil && len(res.Failures) > 0:
		fmt.Fprintf(t.w, "%s %s failed: %s (%s)\n", t.pal.bad.Render("✗"), title(s.Command), counts, round(s.Elapsed))
		for _, f := range res.Failures {
			stack, id := Sanitize(f.Stack), Sanitize(f.LogicalID)
			fmt.Fprintf(t.w, "  %s %s/%s: %s\n", t.pal.bad.Render(string(f.Status)), stack, id, Sanitize(fmt.Sprint(f.Err)))
			if errors.Is(f.Err, resource.ErrAlreadyExists) {
				fmt.Fprintf(t.w, "    hint: to manage the existing object, run: cdkx import %s/%s <its physical ID>\n", stack, id)
			}
		}
	case s.Interrupted || (res != nil && res.Interrupted):
		fmt.Fprintf(t.w, "%s %s interrupted: %s; %d step(s) not started (%s)\n", t.pal.busy.Render("!"), title(s.Command), counts,
			res.NotStarted, round(s.Elapsed))
	default:
		fmt.Fprintf(t.w, "%s %s complete: %s (%s)\n", t.pal.ok.Render("✓"), title(s.Command), counts, round(s.Elapsed))
	}
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
		{c[engine.CreateFailed] + c[engine.UpdateFailed] + c[engine.DeleteFailed], "failed"},
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
func NewJSONLines(w io.Writer) *JSONLines { return &JSONLines{enc: json.NewEncoder(w)} }

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
}

// Summary writes the final object.
func (j *JSONLines) Summary(s Summary) {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := jsonSummary{Kind: "summary", Command: s.Command, Status: "succeeded", Counts: map[string]int{},
		Failures: []jsonFailure{}, Deployments: map[string]string{}, Outputs: s.Outputs, ElapsedMS: s.Elapsed.Milliseconds()}
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
