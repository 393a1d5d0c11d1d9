//go:build e2e

package e2e

// TestReviewLoop runs the review loop of issue 19 through the real cdkx binary on PowerDNS, on each state
// backend: a proposal of a TTL change and a new address, shown as text, JSON and Markdown with its values,
// then approved and run. It needs PowerDNS (and PostgreSQL for the postgres and server backends):
//
//	go test -tags e2e -run TestReviewLoop -count=1 -v ./e2e/

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReviewLoop(t *testing.T) {
	depOnPDNS(t, reviewLoop)
}

func reviewLoop(t *testing.T, r *depRig, p pdns) {
	zone := "review-" + r.backend + ".test."
	depFreshZone(t, p, zone)
	v1 := depDNS{www: 300, api: "127.0.0.20", mail: 300}
	r.want(0, "deploy", "--app", v1.write(r, "v1", zone))
	v1.check(t, p, zone, "after the first deploy")

	// Propose: www's ttl 300 → 120, api's address .20 → .21; PowerDNS untouched.
	v2 := depDNS{www: 120, api: "127.0.0.21", mail: 300}
	app := v2.write(r, "v2", zone)
	pr := r.record(app, "--propose", "--message", "lower www's ttl, move api")
	v1.check(t, p, zone, "after the proposal")

	// The values a reviewer must see, in every view. wantLines are regular expressions, one a line.
	wantText := []string{
		`^  ~ PowerDNS::DNS::RecordSet ` + depWww + `$`,
		`^      ~ ttl = 300 → 120$`,
		`^  ~ PowerDNS::DNS::RecordSet ` + depAPI + `$`,
		`^      ~ records\[0\] = "127\.0\.0\.20" → "127\.0\.0\.21"$`,
		`^Plan: 0 to create, 2 to update, 0 to replace, 0 to delete\.$`,
	}
	wantMarkdown := []string{
		`^\*\*Plan:\*\* 0 to create, 2 to update, 0 to replace, 0 to delete\.$`,
		`^<details><summary>Stack <code>Dns</code>: 2 to update</summary>$`,
		"^```diff$",
		`^!   ~ PowerDNS::DNS::RecordSet ` + depWww + `$`,
		`^!       ~ ttl = 300 → 120$`,
		`^!       ~ records\[0\] = "127\.0\.0\.20" → "127\.0\.0\.21"$`,
		`^</details>$`,
	}
	wantChanges := map[string][]map[string]any{
		depWww: {{"name": "ttl", "old": 300.0, "new": 120.0}},
		depAPI: {{"name": "records", "old": []any{"127.0.0.20"}, "new": []any{"127.0.0.21"}}},
	}

	// diff shows it so, and so does the proposal: text, Markdown, JSON.
	reviewCheckLines(t, "diff", r.want(2, "diff", "--app", app, "--detailed-exitcode").stdout, wantText)
	diffMD := r.want(0, "diff", "--app", app, "--format", "markdown").stdout
	reviewCheckLines(t, "diff --format markdown", diffMD, wantMarkdown)
	show := r.want(0, "deployments", "show", pr.ID).stdout
	reviewCheckLines(t, "deployments show", show, append([]string{`^Message: +lower www's ttl, move api$`}, wantText...))
	showMD := r.want(0, "deployments", "show", pr.ID, "--format", "markdown").stdout
	t.Logf("deployments show:\n%s\ndeployments show --format markdown:\n%s", show, showMD)
	reviewCheckLines(t, "deployments show --format markdown", showMD, append([]string{`^\*\*Deployment\*\* <code>` + pr.ID + `</code> of stack <code>Dns</code>: <code>PROPOSED</code>`}, wantMarkdown...))
	for what, out := range map[string]string{"diff --format markdown": diffMD, "deployments show --format markdown": showMD} {
		if strings.ContainsRune(out, '\x1b') {
			t.Errorf("%s printed an escape code:\n%q", what, out)
		}
	}
	if i := strings.Index(showMD, "**Plan:**"); i < 0 || !strings.HasSuffix(diffMD, showMD[i:]) {
		t.Errorf("the proposal's Markdown plan is not diff's:\n--- diff\n%s\n--- show\n%s", diffMD, showMD)
	}
	showSteps := reviewSteps(t, "deployments show --json", r.want(0, "deployments", "show", pr.ID, "--json").stdout, func(v map[string]json.RawMessage) json.RawMessage {
		var plan map[string]json.RawMessage
		_ = json.Unmarshal(v["plan"], &plan)
		return plan["steps"]
	})
	diffSteps := reviewSteps(t, "diff --json", r.want(0, "diff", "--app", app, "--json").stdout, func(v map[string]json.RawMessage) json.RawMessage {
		return v["steps"]
	})
	if diff := cmp.Diff(diffSteps, showSteps); diff != "" {
		t.Errorf("the proposal's steps (show --json) differ from diff --json's (-diff +show):\n%s", diff)
	}
	got := map[string][]map[string]any{}
	for _, s := range showSteps {
		var changes []map[string]any
		b, _ := json.Marshal(s["changes"])
		_ = json.Unmarshal(b, &changes)
		got[s["logicalId"].(string)] = changes
	}
	if diff := cmp.Diff(wantChanges, got); diff != "" {
		t.Errorf("show --json: the steps' changes (-want +got):\n%s", diff)
	}

	// Approve and run: PowerDNS has the values, and the completed record still shows them.
	r.want(0, "deployments", "approve", pr.ID)
	r.want(0, "deployments", "run", pr.ID)
	v2.check(t, p, zone, "after approve and run")
	done := r.want(0, "deployments", "show", pr.ID).stdout
	reviewCheckLines(t, "deployments show after the run", done, append([]string{`^Status: +COMPLETED$`}, wantText...))
	r.want(0, "diff", "--app", app, "--detailed-exitcode")
}

// reviewCheckLines fails unless every regular expression of want matches a line of out.
func reviewCheckLines(t *testing.T, what, out string, want []string) {
	t.Helper()
	for _, w := range want {
		if !regexp.MustCompile(`(?m)` + w).MatchString(out) {
			t.Errorf("%s: no line matches %s in:\n%s", what, w, out)
		}
	}
}

// reviewSteps decodes the steps that steps picks out of the JSON object out.
func reviewSteps(t *testing.T, what, out string, steps func(map[string]json.RawMessage) json.RawMessage) []map[string]any {
	t.Helper()
	var v map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, out)
	}
	var s []map[string]any
	if err := json.Unmarshal(steps(v), &s); err != nil || len(s) == 0 {
		t.Fatalf("%s: steps %v (%v), want some:\n%s", what, s, err, out)
	}
	return s
}
