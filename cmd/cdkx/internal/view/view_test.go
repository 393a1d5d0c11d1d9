package view_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/golden"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/view"
	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/planner"
)

var t0 = time.Date(2026, 11, 21, 6, 0, 0, 0, time.UTC)

func events() []engine.Event {
	return []engine.Event{
		{Time: t0, Stack: "Zones", Type: engine.StackType, Status: engine.CreateInProgress},
		{Time: t0, Stack: "Zones", Type: "PowerDNS::DNS::Zone", LogicalID: "ZonesZoneA1B2C3D4", Status: engine.CreateInProgress},
		{Time: t0.Add(time.Second), Stack: "Zones", Type: "PowerDNS::DNS::Zone", LogicalID: "ZonesZoneA1B2C3D4", PhysicalID: "example.test.", Status: engine.CreateComplete},
		{Time: t0.Add(time.Second), Stack: "Zones", Type: "PowerDNS::DNS::RecordSet", LogicalID: "ZonesBadE5F6A7B8", Status: engine.CreateInProgress},
		{Time: t0.Add(2 * time.Second), Stack: "Zones", Type: "PowerDNS::DNS::RecordSet", LogicalID: "ZonesBadE5F6A7B8", Status: engine.CreateFailed,
			Reason: "powerdns: PATCH http://127.0.0.1:18081/api/v1/servers/localhost/zones/example.test.: 422: Record bad.example.test./A 'not-an-ip': Parsing record content"},
		{Time: t0.Add(2 * time.Second), Stack: "Zones", Type: "PowerDNS::DNS::RecordSet", LogicalID: "ZonesCnameC9D0E1F2", Status: engine.Skipped, Reason: "dependency Zones/ZonesBadE5F6A7B8 failed"},
		{Time: t0.Add(3 * time.Second), Stack: "Zones", Type: engine.StackType, Status: engine.CreateFailed, Reason: "ZonesBadE5F6A7B8 failed: …"},
	}
}

func TestTable(t *testing.T) {
	t.Setenv("TZ", "UTC")
	for _, tc := range []struct {
		name        string
		live, color bool
		width       int
	}{{"plain", false, false, 0}, {"live-80", true, false, 80}, {"live-120", true, false, 120}, {"live-color", true, true, 120}} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			now := t0
			tab := view.NewTable(&buf, view.TableOptions{Live: tc.live, Color: tc.color, Now: func() time.Time { return now },
				Size: func() (int, int) { return tc.width, 40 }}, []string{"Zones"}, []string{"PowerDNS::DNS::Zone", "PowerDNS::DNS::RecordSet"},
				[]string{"ZonesZoneA1B2C3D4", "ZonesBadE5F6A7B8", "ZonesCnameC9D0E1F2"})
			for _, e := range events()[:2] {
				tab.Event(e)
			}
			tab.Tick(t0.Add(5 * time.Second))  // too early: nothing
			tab.Tick(t0.Add(25 * time.Second)) // still creating… [25s elapsed]
			for _, e := range events()[2:] {
				now = e.Time
				tab.Event(e)
			}
			res := &engine.Result{Counts: map[engine.Status]int{engine.CreateComplete: 1, engine.CreateFailed: 1, engine.Skipped: 1},
				Failures: []engine.Failure{{Stack: "Zones", LogicalID: "ZonesBadE5F6A7B8", Status: engine.CreateFailed, Err: errors.New("422: bad content")}}}
			tab.Summary(view.Summary{Command: "deploy", Result: res, Elapsed: 3*time.Second + 141*time.Millisecond})
			out := buf.String()
			if tc.live && !tc.color {
				out = screen(out, tc.width)
			}
			golden.Assert(t, out, "TestTable-"+tc.name+".golden")
		})
	}
}

func TestJSONLines(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	j := view.NewJSONLines(&buf)
	for _, e := range events() {
		j.Event(e)
	}
	j.Summary(view.Summary{Command: "deploy", Elapsed: 1500 * time.Millisecond,
		Result: &engine.Result{Counts: map[engine.Status]int{engine.CreateComplete: 1},
			Deployments: map[string]*state.Deployment{"Zones": {ID: "d-1"}}}})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != len(events())+1 {
		t.Fatalf("got %d lines, want %d", len(lines), len(events())+1)
	}
	for i, l := range lines {
		var v map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("line %d is not JSON: %v: %s", i+1, err, l)
		}
	}
	var sum map[string]any
	_ = json.Unmarshal([]byte(lines[len(lines)-1]), &sum)
	want := map[string]any{"kind": "summary", "command": "deploy", "status": "succeeded", "counts": map[string]any{"CREATE_COMPLETE": 1.0},
		"failures": []any{}, "deployments": map[string]any{"Zones": "d-1"}, "elapsedMs": 1500.0, "notStarted": 0.0, "replaced": 0.0}
	if diff := cmp.Diff(want, sum); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
}

// planFixture is a plan of every kind of step: a create, updates of scalars, lists, nested lists and
// objects and a write-only value, replacements that create or delete first, with harm notes, a delete.
func planFixture() *planner.Plan {
	st := state.NewStack("App")
	st.Outputs = resource.Properties{"Old": "x", "Www": "www.example.test."}
	old := func(id string, inputs resource.Properties) *state.Resource {
		return &state.Resource{LogicalID: id, Type: "PowerDNS::DNS::RecordSet", Provider: "powerdns", PhysicalID: "p-" + id, Inputs: inputs}
	}
	step := func(op planner.Op, id string, o *state.Resource, inputs resource.Properties, changes []planner.PropertyChange, reason string) *planner.Step {
		return &planner.Step{Decision: planner.Decision{Op: op, Changes: changes, Reason: reason}, Stack: "App", LogicalID: id,
			Type: "PowerDNS::DNS::RecordSet", Provider: "powerdns", Old: o, Inputs: inputs, Resource: &assembly.Resource{LogicalID: id}}
	}
	rule := func(ips ...any) map[string]any {
		return map[string]any{"direction": "in", "protocol": "tcp", "port": "22", "sourceIps": ips}
	}
	server := resource.Schema{Type: "Test::Compute::Server", ReplaceNote: "its disk and everything on it are lost",
		Properties: map[string]resource.PropertySchema{
			"serverType": {UpdateNote: "the server is powered off while it is resized"},
			"userData":   {WriteOnly: true},
			"image":      {CreateOnly: true}}}
	resize := step(planner.OpUpdate, "Web", old("Web", nil), nil, []planner.PropertyChange{
		{Name: "labels", Old: map[string]any{"env": "dev", "a.b": "1"}, New: map[string]any{"env": "prod", "a.b": "2", "team": "dns"}},
		{Name: "serverType", Old: "cx22", New: "cx32"}}, "")
	resize.Type, resize.Schema = server.Type, server
	rebuild := step(planner.OpReplace, "Db", old("Db", nil), nil, []planner.PropertyChange{
		{Name: "image", Old: "debian-12", New: "debian-13", CreateOnly: true},
		{Name: "userData", Old: resource.Sensitive, New: resource.Sensitive}}, `create-only property "image" changed`)
	rebuild.Type, rebuild.Schema, rebuild.DeleteBeforeReplace = server.Type, server, true
	firewall := step(planner.OpUpdate, "Fw", old("Fw", nil), nil, []planner.PropertyChange{
		{Name: "rules", Old: []any{rule("0.0.0.0/0", "::/0"), rule("0.0.0.0/0")}, New: []any{rule("10.0.0.0/8", "::/0")}}}, "")
	firewall.Type = "Test::Network::Firewall"
	newFirewall := step(planner.OpCreate, "NewFw", nil, resource.Properties{"name": "web", "rules": []any{rule("0.0.0.0/0", "::/0"), rule("10.0.0.0/8")}}, nil, "")
	newFirewall.Type = firewall.Type
	return &planner.Plan{Stacks: []string{"Zones", "App"}, State: map[string]*state.Stack{"App": st},
		Outputs: map[string]resource.Properties{"App": {"Www": "www.example.test.", "Api": resource.Unknown{}}},
		Steps: []*planner.Step{
			step(planner.OpCreate, "Api", nil, resource.Properties{"zoneId": resource.Unknown{}, "name": "api.example.test.", "records": []any{"127.0.0.1"}, "ttl": json.Number("300")}, nil, ""),
			step(planner.OpUpdate, "Www", old("Www", nil), nil, []planner.PropertyChange{
				{Name: "records", Old: []any{"127.0.0.10"}, New: []any{"127.0.0.10", "127.0.0.11"}},
				{Name: "ttl", Old: json.Number("300"), New: json.Number("600")}}, ""),
			step(planner.OpReplace, "Mail", old("Mail", nil), nil, []planner.PropertyChange{
				{Name: "name", Old: "mail.example.test.", New: "mx.example.test.", CreateOnly: true}}, `create-only property "name" changed`),
			step(planner.OpSame, "Same", old("Same", nil), nil, nil, ""),
			resize, rebuild, firewall, newFirewall,
		},
		Deletes: []*planner.Step{step(planner.OpDelete, "Legacy", old("Legacy", nil), nil, nil, "no longer in the assembly")},
	}
}

func TestPlan(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	view.Plan(&buf, planFixture(), false)
	golden.Assert(t, buf.String(), "TestPlan.golden")
}

// TestRecordedPlanIsDiffs: a deployment's recorded plan, stored as JSON and read back, shows what diff
// showed of the plan it was made from (outputs aside, which records do not keep).
func TestRecordedPlanIsDiffs(t *testing.T) {
	t.Parallel()
	p := planFixture()
	p.Outputs, p.State = nil, nil
	var want bytes.Buffer
	view.Plan(&want, p, false)
	recs := operation.PlanRecords(p)
	var got bytes.Buffer
	for i, name := range p.Stacks {
		data, err := json.Marshal(recs[name])
		if err != nil {
			t.Fatal(err)
		}
		var back state.Plan
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatal(err)
		}
		var one bytes.Buffer
		view.RecordedPlan(&one, name, &back, false)
		text := one.String()
		if i < len(p.Stacks)-1 { // each rendering ends with its stack's counts; diff's with the plan's
			text = text[:strings.LastIndex(text, "Plan: ")]
		}
		got.WriteString(text)
	}
	if diff := cmp.Diff(want.String(), got.String()); diff != "" {
		t.Errorf("RecordedPlan of the stored records (-want diff's +got):\n%s", diff)
	}
}

func TestPlanMarkdown(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	view.PlanMarkdown(&buf, planFixture())
	if strings.Contains(buf.String(), "\x1b") {
		t.Errorf("PlanMarkdown printed an escape code:\n%s", buf.String())
	}
	golden.Assert(t, buf.String(), "TestPlanMarkdown.golden")
}
