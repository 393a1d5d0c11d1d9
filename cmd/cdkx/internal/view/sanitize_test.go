package view_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"gotest.tools/v3/golden"

	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/view"
	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/pkg/diag"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/planner"
)

func TestSanitize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
	}{
		{"", ""},
		{"ZonesZoneA1B2C3D4", "ZonesZoneA1B2C3D4"},
		{"Zoné ☃ 区域", "Zoné ☃ 区域"},
		{"\x1b]0;pwned\a", `\x1b]0;pwned\x07`},
		{"a\nb\rc\td", `a\nb\rc\td`},
		{"nul\x00del\x7f", `nul\x00del\x7f`},
		{"csi\u009b31m", `csi\u009b31m`},
		{"rlo\u202egnp.exe", `rlo\u202egnp.exe`},
		{"ls\u2028ps\u2029", `ls\u2028ps\u2029`},
		{"zw\u200bj", `zw\u200bj`},
		{"bad\xffutf8", `bad\xffutf8`},
	}
	for _, tt := range tests {
		if got := view.Sanitize(tt.in); got != tt.want {
			t.Errorf("Sanitize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// hostile is text that would act on a terminal: set the title, clear the screen, forge a row of the
// event table, reverse the rest of the line.
const hostile = "\x1b]0;pwned\a\x1b[2J\n2026-11-21T06:00:00Z  Zones  Forged  DELETE_COMPLETE\u202e"

// checkPrintable fails when out holds anything but printable text and newlines.
func checkPrintable(t *testing.T, out string) {
	t.Helper()
	for i, r := range out {
		if r == '\n' {
			continue
		}
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp) {
			t.Errorf("output holds %U at byte %d:\n%s", r, i, out)
			return
		}
	}
}

func TestTableSanitizes(t *testing.T) {
	t.Setenv("TZ", "UTC")
	var buf bytes.Buffer
	tab := view.NewTable(&buf, view.TableOptions{}, []string{"Zones" + hostile}, []string{"PowerDNS::DNS::Zone"}, []string{"Zone" + hostile})
	tab.Event(engine.Event{Time: t0, Stack: "Zones" + hostile, Type: "PowerDNS::DNS::Zone", LogicalID: "Zone" + hostile, Status: engine.CreateInProgress})
	tab.Tick(t0.Add(25 * time.Second))
	tab.Event(engine.Event{Time: t0, Stack: "Zones" + hostile, Type: "PowerDNS::DNS::Zone", LogicalID: "Zone" + hostile,
		PhysicalID: "example.test." + hostile, Status: engine.CreateComplete})
	tab.Event(engine.Event{Time: t0, Stack: "Zones" + hostile, Type: "PowerDNS::DNS::Zone", LogicalID: "Zone" + hostile,
		Status: engine.UpdateFailed, Reason: "powerdns: 422: " + hostile})
	res := &engine.Result{Counts: map[engine.Status]int{engine.UpdateFailed: 1},
		Failures: []engine.Failure{{Stack: "Zones" + hostile, LogicalID: "Zone" + hostile, Status: engine.UpdateFailed,
			Err: errors.New("powerdns: 422: " + hostile)}}}
	tab.Summary(view.Summary{Command: "deploy", Result: res, Elapsed: time.Second})
	checkPrintable(t, buf.String())
	golden.Assert(t, buf.String(), "TestTableSanitizes.golden")
}

func TestPlanSanitizes(t *testing.T) {
	t.Parallel()
	st := state.NewStack("App" + hostile)
	st.Outputs = resource.Properties{"Old" + hostile: "x" + hostile}
	old := &state.Resource{LogicalID: "Www" + hostile, Type: "PowerDNS::DNS::RecordSet", PhysicalID: "p" + hostile}
	step := func(op planner.Op, changes []planner.PropertyChange, inputs resource.Properties) *planner.Step {
		return &planner.Step{Decision: planner.Decision{Op: op, Changes: changes, Reason: "because" + hostile}, Stack: "App" + hostile,
			LogicalID: "Www" + hostile, Type: "PowerDNS::DNS::RecordSet", Old: old, Object: &state.Object{PhysicalID: "p" + hostile},
			Inputs: inputs, Resource: &assembly.Resource{LogicalID: "Www" + hostile}}
	}
	p := &planner.Plan{Stacks: []string{"App" + hostile}, State: map[string]*state.Stack{"App" + hostile: st},
		Outputs: map[string]resource.Properties{"App" + hostile: {"New" + hostile: "y" + hostile}},
		Steps: []*planner.Step{
			step(planner.OpCreate, nil, resource.Properties{"name" + hostile: "www" + hostile}),
			step(planner.OpUpdate, []planner.PropertyChange{{Name: "records" + hostile, Old: []any{"a" + hostile}, New: []any{"b"}}}, nil),
			step(planner.OpReplace, []planner.PropertyChange{{Name: "name", Old: "a", New: "b" + hostile, CreateOnly: true}}, nil),
		},
		Deletes: []*planner.Step{step(planner.OpDelete, nil, nil)},
	}
	var buf bytes.Buffer
	view.Plan(&buf, p, false)
	view.Outputs(&buf, []string{"App" + hostile}, map[string]map[string]any{"App" + hostile: {"Key" + hostile: "v" + hostile}})
	checkPrintable(t, buf.String())
	golden.Assert(t, buf.String(), "TestPlanSanitizes.golden")
}

func TestDiagnosticsSanitize(t *testing.T) {
	t.Parallel()
	ds := diag.Diagnostics{{Severity: diag.Error, File: "cdkx.out/App" + hostile + ".json", Path: "resources.Zone" + hostile,
		Summary: "unknown resource in stack App" + hostile, Detail: "did you mean" + hostile}}
	var buf bytes.Buffer
	view.Diagnostics(&buf, ds, true, false)
	checkPrintable(t, buf.String())
	if got := strings.Count(buf.String(), "\n"); got != 2 {
		t.Errorf("Diagnostics() printed %d lines, want 2:\n%s", got, buf.String())
	}
	golden.Assert(t, buf.String(), "TestDiagnosticsSanitize.golden")
}

// TestPlanMarkdownSanitizes: names and values that try to close the code block, end the section or
// inject HTML into a pull-request comment stay inside their line and their block.
func TestPlanMarkdownSanitizes(t *testing.T) {
	t.Parallel()
	evil := "```\n</details><img src=x onerror=alert(1)>" + hostile
	old := &state.Resource{LogicalID: "Www", Type: "PowerDNS::DNS::RecordSet", PhysicalID: "p"}
	p := &planner.Plan{Stacks: []string{"App" + evil},
		Steps: []*planner.Step{{Decision: planner.Decision{Op: planner.OpUpdate, Changes: []planner.PropertyChange{
			{Name: "records" + evil, Old: []any{"a" + evil}, New: []any{"```b"}}}}, Stack: "App" + evil, LogicalID: "Www" + evil,
			Type: "PowerDNS::DNS::RecordSet", Old: old, Resource: &assembly.Resource{LogicalID: "Www"}}}}
	var buf bytes.Buffer
	view.PlanMarkdown(&buf, p)
	out := buf.String()
	checkPrintable(t, out)
	// GitHub shows a fenced block as it is; outside one, HTML and a fence would act.
	var fences int
	var outside []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimLeft(line, " "), "```") {
			fences++
			continue
		}
		if fences%2 == 0 {
			outside = append(outside, line)
		}
	}
	if fences != 2 {
		t.Errorf("PlanMarkdown() has %d fence lines, want 2 (one block):\n%s", fences, out)
	}
	rest := strings.Join(outside, "\n")
	if n := strings.Count(rest, "</details>"); n != 1 || strings.Contains(rest, "<img") || strings.Contains(rest, "```") {
		t.Errorf("PlanMarkdown() let HTML or a fence out of the block (%d </details>, want 1):\n%s", n, rest)
	}
	golden.Assert(t, out, "TestPlanMarkdownSanitizes.golden")
}
