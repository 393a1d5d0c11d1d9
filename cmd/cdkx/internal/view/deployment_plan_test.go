package view_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"gotest.tools/v3/golden"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/view"
	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// recordedDeployment is a proposal of planFixture's App stack, its plan stored and read back as JSON.
func recordedDeployment(t *testing.T) *state.Deployment {
	t.Helper()
	data, err := json.Marshal(operation.PlanRecords(planFixture())["App"])
	if err != nil {
		t.Fatal(err)
	}
	d := &state.Deployment{ID: "6f1c2d3e-0000-4000-8000-000000000001", Stack: "App", Kind: state.KindDeploy,
		Status: state.StatusProposed, Message: "lower the TTL", CreatedBy: "alice@h", CreatedAt: t0,
		SnapshotHash: "abc123", StateVersion: 3}
	if err := json.Unmarshal(data, &d.Plan); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestDeploymentShowsPlan: deployments show prints the recorded plan as diff prints it, in text and in
// Markdown; a record made before plans kept values shows its changed paths.
func TestDeploymentShowsPlan(t *testing.T) {
	t.Parallel()
	legacy := &state.Deployment{ID: "d-old", Stack: "App", Kind: state.KindDeploy, Status: state.StatusCompleted, CreatedAt: t0,
		Plan: &state.Plan{Update: 1, Steps: []state.PlanStep{{Resource: "App/R0", Type: "PowerDNS::DNS::RecordSet", Op: "update",
			Paths: []string{"properties.ttl"}, Digest: "d"}}}}
	for _, tc := range []struct {
		name string
		d    *state.Deployment
		md   bool
	}{{"text", recordedDeployment(t), false}, {"markdown", recordedDeployment(t), true}, {"legacy", legacy, false}} {
		if tc.md { // a message that tries to close its block and the comment's sections stays in its block
			tc.d.Message = "lower the TTL\n```\n</details>"
		}
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			if tc.md {
				view.DeploymentMarkdown(&buf, tc.d)
			} else if err := view.Deployment(&buf, false, tc.d, nil); err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, buf.String(), "TestDeploymentShowsPlan-"+tc.name+".golden")
		})
	}
}

// TestDeploymentJSONCarriesChanges: show --json's steps carry changes [{name, old, new}] as diff --json.
func TestDeploymentJSONCarriesChanges(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := view.Deployment(&buf, true, recordedDeployment(t), nil); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Plan struct {
			Steps []struct {
				LogicalID   string           `json:"logicalId"`
				Replacement string           `json:"replacement"`
				Changes     []map[string]any `json:"changes"`
			} `json:"steps"`
		} `json:"plan"`
	}
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, s := range got.Plan.Steps {
		for _, c := range s.Changes {
			o, _ := json.Marshal(c["old"])
			n, _ := json.Marshal(c["new"])
			lines = append(lines, s.LogicalID+" "+c["name"].(string)+": "+string(o)+" → "+string(n))
		}
		if s.Replacement != "" {
			lines = append(lines, s.LogicalID+" "+s.Replacement)
		}
	}
	want := `Www records: ["127.0.0.10"] → ["127.0.0.10","127.0.0.11"]|Www ttl: 300 → 600|` +
		`Mail name: "mail.example.test." → "mx.example.test."|Mail create-first|` +
		`Web labels: {"a.b":"1","env":"dev"} → {"a.b":"2","env":"prod","team":"dns"}|Web serverType: "cx22" → "cx32"|` +
		`Db image: "debian-12" → "debian-13"|Db userData: "(sensitive)" → "(sensitive)"|Db delete-first|` +
		`Fw rules: [{"direction":"in","port":"22","protocol":"tcp","sourceIps":["0.0.0.0/0","::/0"]},{"direction":"in","port":"22","protocol":"tcp","sourceIps":["0.0.0.0/0"]}] → [{"direction":"in","port":"22","protocol":"tcp","sourceIps":["10.0.0.0/8","::/0"]}]`
	if g := strings.Join(lines, "|"); g != want {
		t.Errorf("show --json changes =\n%s\nwant\n%s", strings.ReplaceAll(g, "|", "\n"), strings.ReplaceAll(want, "|", "\n"))
	}
}

func TestParseFormat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		format  string
		asJSON  bool
		want    string
		wantErr string
	}{
		{"", false, view.FormatText, ""}, {"text", true, view.FormatText, ""}, {"markdown", false, view.FormatMarkdown, ""},
		{"markdown", true, "", "choose one"}, {"html", false, "", "use text or markdown"},
	} {
		got, err := view.ParseFormat(tc.format, tc.asJSON)
		if got != tc.want || (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("ParseFormat(%q, %v) = %q, %v; want %q, error with %q", tc.format, tc.asJSON, got, err, tc.want, tc.wantErr)
		}
	}
}

// TestRecordedPlanCountsWithoutSteps: a record whose counts are not zero is not shown as "no changes".
func TestRecordedPlanCountsWithoutSteps(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		plan        *state.Plan
		noChanges   bool
		description string
	}{{&state.Plan{Update: 1}, false, "one update, no steps"}, {&state.Plan{Same: 3}, true, "nothing to do"}, {nil, true, "no plan"}} {
		var buf bytes.Buffer
		view.RecordedPlan(&buf, "App", tc.plan, false)
		if got := strings.Contains(buf.String(), "Stack App: no changes"); got != tc.noChanges {
			t.Errorf("RecordedPlan(%s) says no changes: %t, want %t:\n%s", tc.description, got, tc.noChanges, buf.String())
		}
	}
}
