package server

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNameRules(t *testing.T) {
	long := strings.Repeat("a", 100)
	tests := []struct {
		name                string
		org, project, stack bool
	}{
		{"dev", true, true, true},
		{"dev.eu-1_b", false, true, true},
		{"my-org_1", true, true, true},
		{"ab", false, true, true},
		{"a", false, true, true},
		{strings.Repeat("a", 40), true, true, true},
		{strings.Repeat("a", 41), false, true, true},
		{long, false, true, true},
		{long + "a", false, false, false},
		{"", false, false, false},
		{".", false, false, false},
		{"..", false, false, false},
		{"...", false, true, true},
		{".hidden", false, true, true},
		{"-org", false, true, true},
		{"org-", false, true, true},
		{"a/b", false, false, false},
		{"a b", false, false, false},
		{"é", false, false, false},
		{"a\x00b", false, false, false},
		{"a%2Eb", false, false, false},
	}
	for _, tt := range tests {
		if got := validOrgName(tt.name); got != tt.org {
			t.Errorf("validOrgName(%q) = %v, want %v", tt.name, got, tt.org)
		}
		if got := validProjectName(tt.name); got != tt.project {
			t.Errorf("validProjectName(%q) = %v, want %v", tt.name, got, tt.project)
		}
		if got := validStackName(tt.name); got != tt.stack {
			t.Errorf("validStackName(%q) = %v, want %v", tt.name, got, tt.stack)
		}
		if got := validName.MatchString(tt.name); got != tt.stack {
			t.Errorf("validName.MatchString(%q) = %v, want %v", tt.name, got, tt.stack)
		}
	}
}

// TestNamesEverywhere sends invalid organization, project and stack names, as an attacker would spell
// them (percent-encoded dots and slashes, NUL, non-ASCII), to every kind of route: each is a 400 that
// names the bad value, and nothing changes.
func TestNamesEverywhere(t *testing.T) {
	e := newEnv(t)
	e.createStack("dev")
	id, lease := e.startUpdate("dev", "update")
	before := dumpTables(t, e)
	tests := []struct {
		name, method, path string
		lease              bool
		body               any
		bad                string // the value the message must quote
	}{
		{"create stack .", "POST", "/api/stacks/org/proj", false, map[string]any{"stackName": "."}, ""},
		{"create stack ..", "POST", "/api/stacks/org/proj", false, map[string]any{"stackName": ".."}, ""},
		{"create stack in project ..", "POST", "/api/stacks/org/%2E%2E", false, map[string]any{"stackName": "dev"}, `".."`},
		{"create stack in project .", "POST", "/api/stacks/org/%2e", false, map[string]any{"stackName": "dev"}, `"."`},
		{"create stack in org ..", "POST", "/api/stacks/%2E%2E/proj", false, map[string]any{"stackName": "dev"}, `".."`},
		{"get stack %2E%2E", "GET", "/api/stacks/org/proj/%2E%2E", false, nil, `".."`},
		{"get stack .%2E", "GET", "/api/stacks/org/proj/.%2E", false, nil, `".."`},
		{"get stack %2e", "GET", "/api/stacks/org/proj/%2e", false, nil, `"."`},
		{"export ..", "GET", "/api/stacks/org/proj/%2E%2E/export", false, nil, `".."`},
		{"export version of ..", "GET", "/api/stacks/org/proj/%2E%2E/export/1", false, nil, `".."`},
		{"delete ..", "DELETE", "/api/stacks/org/proj/%2E%2E", false, nil, `".."`},
		{"import into ..", "POST", "/api/stacks/org/proj/%2E%2E/import", false, map[string]any{"version": 3, "deployment": map[string]any{}}, `".."`},
		{"update ..", "POST", "/api/stacks/org/proj/%2E%2E/update", false, map[string]any{}, `".."`},
		{"preview ..", "POST", "/api/stacks/org/proj/%2E%2E/preview", false, map[string]any{}, `".."`},
		{"history of ..", "GET", "/api/stacks/org/proj/%2E%2E/updates", false, nil, `".."`},
		{"tags of ..", "PATCH", "/api/stacks/org/proj/%2E%2E/tags", false, map[string]string{"k": "v"}, `".."`},
		{"rename ..", "POST", "/api/stacks/org/proj/%2E%2E/rename", false, map[string]string{"newName": "x"}, `".."`},
		{"rename to ..", "POST", "/api/stacks/org/proj/dev/rename", false, map[string]string{"newName": ".."}, ""},
		{"rename into project ..", "POST", "/api/stacks/org/proj/dev/rename", false, map[string]string{"newName": "x", "newProject": ".."}, ""},
		{"encoded slash", "GET", "/api/stacks/org/proj/a%2Fb", false, nil, `"a/b"`},
		{"NUL", "GET", "/api/stacks/org/proj/a%00b", false, nil, `"a\x00b"`},
		{"non-ASCII", "GET", "/api/stacks/org/proj/%C3%A9", false, nil, `"é"`},
		{"space", "GET", "/api/stacks/org/proj/a%20b", false, nil, `"a b"`},
		{"org too short", "GET", "/api/stacks/o/proj/dev", false, nil, `"o"`},
		{"org beginning with -", "GET", "/api/stacks/-org/proj/dev", false, nil, `"-org"`},
		{"long project", "GET", "/api/stacks/org/" + strings.Repeat("p", 101) + "/dev", false, nil, "ppp"},
		{"checkpoint of ..", "PATCH", "/api/stacks/org/proj/%2E%2E/update/" + id + "/checkpoint", true, map[string]any{}, `".."`},
		{"commit of ..", "PATCH", "/api/stacks/org/proj/%2E%2E/update/" + id + "/commit", true, map[string]any{}, `".."`},
		{"complete in org ..", "POST", "/api/stacks/%2E%2E/proj/dev/update/" + id + "/complete", true, map[string]any{"status": "succeeded"}, `".."`},
		{"locks ?stack=..", "GET", "/api/cdkx/org/proj/locks?stack=..", false, nil, `".."`},
		{"locks of project ..", "GET", "/api/cdkx/org/%2E%2E/locks", false, nil, `".."`},
		{"deployments ?stack=%2E%2E", "GET", "/api/cdkx/org/proj/deployments?stack=%2E%2E", false, nil, `".."`},
		{"deployments of org ..", "POST", "/api/cdkx/%2E%2E/proj/deployments", false, deploymentsBody{}, `".."`},
		{"create deployment of ..", "POST", "/api/cdkx/org/proj/deployments", false, map[string]any{"deployments": []any{
			map[string]any{"id": "d1", "stack": "..", "kind": "deploy", "status": "PENDING"}}}, `".."`},
		{"claim-next of ..", "POST", "/api/cdkx/org/proj/deployments/claim-next", false, map[string]any{"stacks": []string{"dev", ".."}}, `".."`},
		{"user stacks ?organization=..", "GET", "/api/user/stacks?organization=..", false, nil, `".."`},
		{"user stacks ?project=..", "GET", "/api/user/stacks?project=%2E%2E", false, nil, `".."`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			auth := e.token
			if tt.lease {
				auth = lease
			}
			code, body := e.do(tt.method, tt.path, auth, tt.body)
			if code != 400 {
				t.Errorf("%s %s = %d %s, want 400", tt.method, tt.path, code, body)
			}
			var er errorResponse
			decode(t, body, &er)
			if !strings.Contains(er.Message, tt.bad) || !strings.Contains(er.Message, "name") {
				t.Errorf("%s %s: message %q, want one naming %s and the rule", tt.method, tt.path, er.Message, tt.bad)
			}
			if diff := cmp.Diff(before, dumpTables(t, e)); diff != "" {
				t.Errorf("%s %s changed the database (-before +after):\n%s", tt.method, tt.path, diff)
			}
		})
	}
	// Valid names with dots work.
	e.must(200, "POST", "/api/stacks/org/proj", e.token, map[string]any{"stackName": "dev.eu-1"})
	e.must(200, "GET", "/api/stacks/org/proj/dev.eu-1", e.token, nil)
}
