package view_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/golden"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/view"
	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// forged is a message that would print a line of its own, claiming an approval nobody gave.
const forged = "lower the TTL\nApproved by:  mallory@ops\x1b[2K"

func listed() []state.Deployment {
	t0 := time.Date(2026, 11, 21, 6, 0, 0, 0, time.UTC)
	return []state.Deployment{
		{ID: "6f1c2a90-0000-4000-8000-000000000001", Stack: "App", Kind: state.KindDeploy, Status: state.StatusProposed,
			Message: forged, CreatedBy: "alice@ci-7", CreatedAt: t0, Plan: &state.Plan{Update: 1}, Version: 3},
		{ID: "6f1c2a90-0000-4000-8000-000000000002", Stack: "App\x1b[2J\u202e", Kind: state.KindDeploy, Status: state.StatusCompleted,
			Message: strings.Repeat("a long message about why ", 20), CreatedBy: "bob\x1b]0;pwned\a", CreatedAt: t0,
			StartedAt: t0, FinishedAt: t0.Add(1500 * time.Millisecond), Plan: &state.Plan{Create: 2}, Version: 4},
		{ID: "6f1c2a90-0000-4000-8000-000000000003", Stack: "Db", Kind: state.KindRefresh, Status: state.StatusPending, CreatedBy: "carol@laptop", CreatedAt: t0},
	}
}

func TestDeploymentsList(t *testing.T) {
	t.Parallel()
	for _, width := range []int{80, 200} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			if err := view.Deployments(&buf, false, listed(), width); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			checkPrintable(t, out)
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(lines) != 4 {
				t.Errorf("Deployments() printed %d lines, want 4 (a header and one per deployment):\n%s", len(lines), out)
			}
			// The message column starts where the header's does and is cut to the room left, 24 cells at least.
			prefix := ansi.StringWidth(lines[0]) - len("MESSAGE")
			for _, l := range lines[1:] {
				if w := ansi.StringWidth(l); w > max(width, prefix+24) {
					t.Errorf("line %q is %d cells wide at width %d (columns before the message: %d)", l, w, width, prefix)
				}
			}
			if !strings.Contains(lines[1], `lower the TTL\nApproved`) {
				t.Errorf("Deployments() line 1 = %q, want the message with its newline escaped", lines[1])
			}
			golden.Assert(t, out, fmt.Sprintf("TestDeploymentsList-%d.golden", width))
		})
	}
}

func TestDeploymentShowSanitizes(t *testing.T) {
	t.Parallel()
	d := listed()[0]
	d.Error = "powerdns: 422: " + hostile
	d.Runner = "alice@ci-7 pid 42" + hostile
	var buf bytes.Buffer
	if err := view.Deployment(&buf, false, &d, nil); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	checkPrintable(t, out)
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "Approved by:") {
			t.Errorf("show printed a line %q for a deployment nobody approved:\n%s", l, out)
		}
	}
	golden.Assert(t, out, "TestDeploymentShowSanitizes.golden")
}

func TestEscapeJSON(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{`"plain"`, `"plain"`},
		{`"Zoné ☃ 区域"`, `"Zoné ☃ 区域"`},
		{"\"rlo\u202egnp.exe\"", `"rlo\u202egnp.exe"`},
		{"\"\u202a\u202b\u202c\u202d\u202e\"", `"\u202a\u202b\u202c\u202d\u202e"`},
		{"\"\u2066\u2067\u2068\u2069\"", `"\u2066\u2067\u2068\u2069"`},
		{"\"lrm\u200e rlm\u200f zw\u200b bom\ufeff\"", `"lrm\u200e rlm\u200f zw\u200b bom\ufeff"`},
		{"\"tag\U000E0041\"", `"tag\udb40\udc41"`}, // above U+FFFF: a surrogate pair
	}
	for _, tt := range tests {
		got := string(view.EscapeJSON([]byte(tt.in)))
		if got != tt.want {
			t.Errorf("EscapeJSON(%q) = %q, want %q", tt.in, got, tt.want)
		}
		var a, b string
		if err := json.Unmarshal([]byte(tt.in), &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(got), &b); err != nil || a != b {
			t.Errorf("EscapeJSON(%q) decodes to %q, %v; want %q", tt.in, b, err, a)
		}
	}
}

func TestDeploymentsJSONEscapesBidi(t *testing.T) {
	t.Parallel()
	ds := listed()
	ds[0].Message = "approve\u202e;)txet neddih"
	var buf bytes.Buffer
	if err := view.Deployments(&buf, true, ds, 80); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsRune(buf.String(), '\u202e') || !strings.Contains(buf.String(), `approve\u202e;)txet neddih`) {
		t.Errorf("Deployments(--json) = %s, want U+202E escaped as \\u202e", buf.String())
	}
	var got []view.DeploymentJSON
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ds[0].Message, got[0].Message); diff != "" {
		t.Errorf("message read back (-want +got):\n%s", diff)
	}
}

func TestSummaryUnchanged(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		res  *engine.Result
		want string
	}{
		{"nothing ran", nil, "Stack Db: no changes\nStack App\\x1b[2J: no changes\n\n✓ Deploy complete: no changes (1.5s)\n"},
		{"one stack ran", &engine.Result{Counts: map[engine.Status]int{engine.UpdateComplete: 1}},
			"Stack Db: no changes\nStack App\\x1b[2J: no changes\n\n✓ Deploy complete: 1 updated (1.5s)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			tab := view.NewTable(&buf, view.TableOptions{}, nil, nil, nil)
			tab.Summary(view.Summary{Command: "deploy", Result: tt.res, Elapsed: 1500 * time.Millisecond, Unchanged: []string{"Db", "App\x1b[2J"}})
			if diff := cmp.Diff(tt.want, buf.String()); diff != "" {
				t.Errorf("Summary() (-want +got):\n%s", diff)
			}
			buf.Reset()
			view.NewJSONLines(&buf).Summary(view.Summary{Command: "deploy", Result: tt.res, Unchanged: []string{"Db", "App"}})
			var got struct {
				Unchanged []string `json:"unchanged"`
				Status    string   `json:"status"`
			}
			if err := json.Unmarshal(buf.Bytes(), &got); err != nil || !slices.Equal(got.Unchanged, []string{"Db", "App"}) || got.Status != "succeeded" {
				t.Errorf("JSON summary = %s (%v), want unchanged [Db App], succeeded", buf.String(), err)
			}
		})
	}
}
