package server

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cdkx-dev/cdkx/pkg/stateapi"
)

// deploymentWith is a valid UntypedDeployment of one stack resource whose outputs hold rev.
func deploymentWith(rev int) string {
	return fmt.Sprintf(`{"version":3,"deployment":{"manifest":{"time":"2026-01-02T03:04:05Z","magic":"","version":""},"resources":[{"urn":"urn:pulumi:dev::proj::pulumi:pulumi:Stack::proj-dev","type":"pulumi:pulumi:Stack","custom":false,"outputs":{"rev":%d}}]}}`, rev)
}

// createUpdate creates an update of kind on stack with body and returns its ID.
func (e *env) createUpdate(stack, kind string, body any) string {
	e.t.Helper()
	var cr struct{ UpdateID string }
	decode(e.t, e.must(200, "POST", "/api/stacks/org/proj/"+stack+"/"+kind, e.token, body), &cr)
	return cr.UpdateID
}

// status reads an update's status through GET …/update/{id}, as the Pulumi CLI polls it.
func (e *env) status(stack, id string) string {
	e.t.Helper()
	var res updateResults
	decode(e.t, e.must(200, "GET", "/api/stacks/org/proj/"+stack+"/update/"+id, e.token, nil), &res)
	return res.Status
}

// TestFollowUpsOfEveryKind runs the whole lifecycle of an update of each kind with every follow-up call
// sent to …/update/{id}, as the Pulumi CLI sends them, and again to …/{kind}/{id}.
func TestFollowUpsOfEveryKind(t *testing.T) {
	e := newEnv(t)
	for _, kind := range []string{"update", "preview", "refresh", "destroy"} {
		segments := []string{"update"}
		if kind != "update" {
			segments = append(segments, kind)
		}
		for _, segment := range segments {
			t.Run(kind+" via "+segment, func(t *testing.T) {
				stack := kind + "-" + segment
				e.createStack(stack)
				id := e.createUpdate(stack, kind, `{"metadata":{"message":"m"}}`)
				base := "/api/stacks/org/proj/" + stack + "/" + segment + "/" + id
				var sr startUpdateResponse
				decode(t, e.must(200, "POST", base, e.token, `{"journalVersion":0}`), &sr)
				lease := "update-token " + sr.Token
				e.must(200, "POST", base+"/events/batch", lease, `{"events":[{"sequence":1,"timestamp":1}]}`)
				e.must(200, "POST", base+"/renew_lease", lease, `{"duration":60}`)
				e.must(200, "PATCH", base+"/checkpoint", lease, deploymentWith(1))
				e.must(200, "GET", base+"/events", e.token, nil)
				if got := e.status(stack, id); got != "running" {
					t.Errorf("status = %q, want running", got)
				}
				e.must(200, "POST", base+"/complete", lease, `{"status":"succeeded"}`)
				if got := e.status(stack, id); got != "succeeded" {
					t.Errorf("status after complete = %q, want succeeded", got)
				}
			})
		}
	}
}

// TestCancelAnyKind cancels stuck updates of every kind through …/update/{id}/cancel, as `pulumi cancel`
// does, after which the stack takes a new update.
func TestCancelAnyKind(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		kind  string
		start bool
	}{
		{"preview", false}, {"preview", true}, {"destroy", false}, {"destroy", true}, {"refresh", true}, {"update", true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s started=%v", tt.kind, tt.start), func(t *testing.T) {
			stack := fmt.Sprintf("%s-%v", tt.kind, tt.start)
			e.createStack(stack)
			id := e.createUpdate(stack, tt.kind, `{}`)
			if tt.start {
				e.must(200, "POST", "/api/stacks/org/proj/"+stack+"/update/"+id, e.token, `{}`)
			}
			e.must(409, "POST", "/api/stacks/org/proj/"+stack+"/update", e.token, `{}`)
			e.must(204, "POST", "/api/stacks/org/proj/"+stack+"/update/"+id+"/cancel", e.token, nil)
			if got := e.status(stack, id); got != "cancelled" {
				t.Errorf("status = %q, want cancelled", got)
			}
			e.createUpdate(stack, "update", `{}`)
		})
	}
}

// TestImportPolled checks that the update of a stack import answers GET …/update/{id}, which `pulumi
// stack import` polls until it is done.
func TestImportPolled(t *testing.T) {
	e := newEnv(t)
	e.createStack("dev")
	var ir struct{ UpdateID string }
	decode(t, e.must(200, "POST", "/api/stacks/org/proj/dev/import", e.token, deploymentWith(1)), &ir)
	if got := e.status("dev", ir.UpdateID); got != "succeeded" {
		t.Errorf("status of the import = %q, want succeeded", got)
	}
	e.must(200, "GET", "/api/stacks/org/proj/dev/update/"+ir.UpdateID+"/events", e.token, nil)
}

// TestNoCatchAll checks that every path reaches its own handler or a plain 404/405: no pattern
// swallows another's path.
func TestNoCatchAll(t *testing.T) {
	e := newEnv(t)
	e.createStack("dev")
	st := "/api/stacks/org/proj/dev"
	tests := []struct {
		name, method, path, body string
		want                     int
		message                  string
	}{
		{"rename reaches rename", "POST", st + "/rename", `{"newName":"a b"}`, 400, `Bad Request: invalid stack name "a b" in newName: ` + stackRule},
		{"unknown create kind", "POST", st + "/deploy", `{}`, 404, ""},
		{"unknown follow-up kind", "POST", st + "/deploy/x", `{}`, 404, "Not Found: no route POST " + st + "/deploy/x"},
		{"unknown follow-up kind GET", "GET", st + "/encrypt/x", ``, 404, "Not Found: no route GET " + st + "/encrypt/x"},
		{"log-decryption", "POST", st + "/decrypt/log-decryption", `{"secretName":"s"}`, 200, ""},
		{"log-batch-decryption", "POST", st + "/decrypt/log-batch-decryption", `{"commandName":"pulumi config"}`, 200, ""},
		{"other under decrypt", "POST", st + "/decrypt/other", `{}`, 404, ""},
		{"too deep", "GET", st + "/update/x/events/y", ``, 404, ""},
		{"tags is PATCH only", "POST", st + "/tags", `{}`, 405, ""},
		{"history is GET only", "POST", st + "/updates", `{}`, 405, ""},
		{"unknown update", "GET", st + "/update/nope", ``, 404, `Not Found: update "nope" not found`},
		{"unknown preview", "POST", st + "/preview/nope/cancel", ``, 404, `Not Found: update "nope" not found`},
		{"project exists", "HEAD", "/api/stacks/org/proj", ``, 200, ""},
		{"project does not exist", "HEAD", "/api/stacks/org/nope", ``, 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := e.snapshot("dev")
			code, body := e.do(tt.method, tt.path, e.token, tt.body)
			if code != tt.want {
				t.Errorf("%s %s = %d %s, want %d", tt.method, tt.path, code, body, tt.want)
			}
			if tt.message != "" {
				var er errorResponse
				decode(t, body, &er)
				if er.Message != tt.message {
					t.Errorf("message = %q, want %q", er.Message, tt.message)
				}
			}
			if diff := cmp.Diff(before, e.snapshot("dev")); diff != "" {
				t.Errorf("database changed (-before +after):\n%s", diff)
			}
		})
	}
}

// TestCreateTakeover checks the takeover at create: an update whose lease expired, or that stayed not
// started longer than NotStartedTakeover, is cancelled by the next create; a live one makes it a 409
// with the Pulumi service's message.
func TestCreateTakeover(t *testing.T) {
	tests := []struct {
		name     string
		start    bool
		advance  time.Duration
		wantCode int
	}{
		{"live lease", true, DefaultLease - time.Second, 409},
		{"lease expiring now", true, DefaultLease, 409},
		{"lease expired", true, DefaultLease + time.Second, 200},
		{"not started, fresh", false, NotStartedTakeover - time.Second, 409},
		{"not started, stale", false, NotStartedTakeover + time.Second, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.createStack("dev")
			id := e.createUpdate("dev", "update", `{}`)
			var lease string
			if tt.start {
				var sr startUpdateResponse
				decode(t, e.must(200, "POST", "/api/stacks/org/proj/dev/update/"+id, e.token, `{}`), &sr)
				lease = "update-token " + sr.Token
			}
			e.clock.advance(tt.advance)
			before := e.snapshot("dev")
			code, body := e.do("POST", "/api/stacks/org/proj/dev/update", e.token, `{}`)
			if code != tt.wantCode {
				t.Fatalf("create = %d %s, want %d", code, body, tt.wantCode)
			}
			if code == 409 {
				var er errorResponse
				decode(t, body, &er)
				if er.Message != "Conflict: Another update is currently in progress." {
					t.Errorf("message = %q, want the Pulumi service's", er.Message)
				}
				if diff := cmp.Diff(before, e.snapshot("dev")); diff != "" {
					t.Errorf("a refused create changed the database (-before +after):\n%s", diff)
				}
				return
			}
			if got := e.status("dev", id); got != "cancelled" {
				t.Errorf("status of the taken-over update = %q, want cancelled", got)
			}
			if lease != "" {
				e.must(409, "POST", "/api/stacks/org/proj/dev/update/"+id+"/renew_lease", lease, `{"duration":60}`)
			}
		})
	}
}

// TestLeaseSeconds checks the cdkx extension of start: the lease lasts leaseSeconds clamped to [5 s,
// MaxLease], the server's lease without it.
func TestLeaseSeconds(t *testing.T) {
	tests := []struct {
		body string
		want time.Duration
	}{
		{`{}`, DefaultLease},
		{`{"leaseSeconds":0}`, DefaultLease},
		{`{"leaseSeconds":1}`, MinLease},
		{`{"leaseSeconds":20}`, 20 * time.Second},
		{`{"leaseSeconds":300}`, MaxLease},
		{`{"leaseSeconds":100000}`, MaxLease},
	}
	e := newEnv(t)
	for i, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			stack := fmt.Sprintf("s%d", i)
			e.createStack(stack)
			id := e.createUpdate(stack, "update", `{}`)
			var sr startUpdateResponse
			decode(t, e.must(200, "POST", "/api/stacks/org/proj/"+stack+"/update/"+id, e.token, tt.body), &sr)
			if got := time.Unix(sr.TokenExpiration, 0).Sub(e.clock.now()); got != tt.want {
				t.Errorf("lease = %v, want %v", got, tt.want)
			}
		})
	}
	// A malformed leaseSeconds is a 400.
	e.createStack("bad")
	id := e.createUpdate("bad", "update", `{}`)
	code, body := e.do("POST", "/api/stacks/org/proj/bad/update/"+id, e.token, `{"leaseSeconds":"x"}`)
	if code != 400 {
		t.Errorf("start with leaseSeconds \"x\" = %d %s, want 400", code, body)
	}
	var er errorResponse
	if err := json.Unmarshal(body, &er); err != nil || er.Code != 400 {
		t.Errorf("error body = %s", body)
	}
}

// TestTags checks PATCH …/tags, which replaces the stack's tags.
func TestTags(t *testing.T) {
	e := newEnv(t)
	e.must(200, "POST", "/api/stacks/org/proj", e.token, map[string]any{"stackName": "dev", "tags": map[string]string{"old": "1"}})
	tests := []struct {
		name, path, body string
		want             int
		tags             map[string]string
	}{
		{"replace", "/api/stacks/org/proj/dev/tags", `{"team":"blue","pulumi:project":"proj"}`, 204, map[string]string{"team": "blue", "pulumi:project": "proj"}},
		{"remove one", "/api/stacks/org/proj/dev/tags", `{"pulumi:project":"proj"}`, 204, map[string]string{"pulumi:project": "proj"}},
		{"clear", "/api/stacks/org/proj/dev/tags", `{}`, 204, nil},
		{"null clears", "/api/stacks/org/proj/dev/tags", `null`, 204, nil},
		{"not strings", "/api/stacks/org/proj/dev/tags", `{"a":1}`, 400, nil},
		{"empty body", "/api/stacks/org/proj/dev/tags", ``, 400, nil},
		{"missing stack", "/api/stacks/org/proj/nope/tags", `{}`, 404, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if code, body := e.do("PATCH", tt.path, e.token, tt.body); code != tt.want {
				t.Fatalf("PATCH %s = %d %s, want %d", tt.path, code, body, tt.want)
			}
			var info stackInfo
			decode(t, e.must(200, "GET", "/api/stacks/org/proj/dev", e.token, nil), &info)
			if tt.want == 204 {
				if diff := cmp.Diff(tt.tags, info.Tags, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("tags (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestRename renames stacks: the state's URNs follow, history keeps its entries and gains the rename,
// and the refusals change nothing.
func TestRename(t *testing.T) {
	e := newEnv(t)
	e.createStack("dev")
	e.createStack("taken")
	e.createStack("busy")
	e.createStack("empty")
	e.must(200, "POST", "/api/stacks/org/proj/dev/import", e.token, deploymentWith(1))
	e.createUpdate("busy", "update", `{}`)
	tests := []struct {
		name, stack, body string
		want              int
	}{
		{"target exists", "dev", `{"newName":"taken"}`, 409},
		{"target exists in another project", "dev", `{"newName":"dev","newProject":"proj"}`, 200}, // same name: nothing to do
		{"active update", "busy", `{"newName":"busy2"}`, 409},
		{"dot", "dev", `{"newName":"."}`, 400},
		{"dot dot", "dev", `{"newName":".."}`, 400},
		{"space", "dev", `{"newName":"a b"}`, 400},
		{"bad project", "dev", `{"newName":"x","newProject":"a/b"}`, 400},
		{"empty name", "dev", `{"newName":""}`, 400},
		{"missing stack", "nope", `{"newName":"x"}`, 404},
		{"malformed", "dev", `{"newName":`, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := []snapshot{e.snapshot("dev"), e.snapshot("busy")}
			if code, body := e.do("POST", "/api/stacks/org/proj/"+tt.stack+"/rename", e.token, tt.body); code != tt.want {
				t.Errorf("rename = %d %s, want %d", code, body, tt.want)
			}
			if diff := cmp.Diff(before, []snapshot{e.snapshot("dev"), e.snapshot("busy")}); diff != "" {
				t.Errorf("database changed (-before +after):\n%s", diff)
			}
		})
	}

	e.must(200, "POST", "/api/stacks/org/proj/dev/rename", e.token, `{"newName":"prod","newProject":"app"}`)
	e.must(404, "GET", "/api/stacks/org/proj/dev", e.token, nil)
	got := string(e.must(200, "GET", "/api/stacks/org/app/prod/export", e.token, nil))
	want := `{"version":3,"deployment":{"manifest":{"time":"2026-01-02T03:04:05Z","magic":"","version":""},"resources":[{"urn":"urn:pulumi:prod::app::pulumi:pulumi:Stack::app-prod","type":"pulumi:pulumi:Stack","custom":false,"outputs":{"rev":1}}]}}`
	if got != want {
		t.Errorf("export after rename = %s, want %s", got, want)
	}
	var h stateapi.GetHistoryResponse
	decode(t, e.must(200, "GET", "/api/stacks/org/app/prod/updates", e.token, nil), &h)
	if len(h.Updates) != 2 || h.Updates[0].Kind != "rename" || h.Updates[1].Kind != "import" {
		t.Errorf("history after rename = %+v, want the rename then the import", h.Updates)
	}
	if got := string(e.must(200, "GET", "/api/stacks/org/app/prod/export/1", e.token, nil)); got != deploymentWith(1) {
		t.Errorf("export/1 after rename = %s, want the imported state", got)
	}
	// A stack without state is renamed without an update.
	e.must(200, "POST", "/api/stacks/org/proj/empty/rename", e.token, `{"newName":"empty2"}`)
	e.must(200, "GET", "/api/stacks/org/proj/empty2", e.token, nil)
}

// TestRenameInState checks the rewriting of a checkpoint for a renamed stack.
func TestRenameInState(t *testing.T) {
	in := `{"version":3,"deployment":{"manifest":{},"secrets_providers":{"type":"service","state":{"owner":"o","project":"p","stack":"s","url":"u"}},` +
		`"resources":[{"urn":"urn:pulumi:s::p::pulumi:pulumi:Stack::p-s"},{"urn":"urn:pulumi:s::p::a:b:C::x","parent":"urn:pulumi:s::p::pulumi:pulumi:Stack::p-s",` +
		`"provider":"urn:pulumi:s::p::pulumi:providers:a::default::id","outputs":{"ref":"urn:pulumi:s2::p::a:b:C::y"}}]}}`
	var got, want any
	decode(t, renameInState([]byte(in), "p", "s", "q", "t"), &got)
	decode(t, []byte(`{"version":3,"deployment":{"manifest":{},"secrets_providers":{"type":"service","state":{"owner":"o","project":"q","stack":"t","url":"u"}},`+
		`"resources":[{"urn":"urn:pulumi:t::q::pulumi:pulumi:Stack::q-t"},{"urn":"urn:pulumi:t::q::a:b:C::x","parent":"urn:pulumi:t::q::pulumi:pulumi:Stack::q-t",`+
		`"provider":"urn:pulumi:t::q::pulumi:providers:a::default::id","outputs":{"ref":"urn:pulumi:s2::p::a:b:C::y"}}]}}`), &want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("renameInState (-want +got):\n%s", diff)
	}
}

// TestGetStackActiveUpdate checks activeUpdate and currentOperation of GET …/{stack}: the active update
// with its creator, else the latest one (what `pulumi cancel` cancels), else none.
func TestGetStackActiveUpdate(t *testing.T) {
	e := newEnv(t)
	e.createStack("dev")
	get := func() stackInfo {
		var info stackInfo
		decode(t, e.must(200, "GET", "/api/stacks/org/proj/dev", e.token, nil), &info)
		return info
	}
	if info := get(); info.ActiveUpdate != "" || info.CurrentOperation != nil {
		t.Errorf("new stack: %+v, want no update", info)
	}
	id := e.createUpdate("dev", "destroy", `{}`)
	want := &operationStatus{Kind: "destroy", Author: "alice", Started: e.clock.now().Unix()}
	if info := get(); info.ActiveUpdate != id || !cmp.Equal(info.CurrentOperation, want) {
		t.Errorf("while active: %+v %+v, want %s %+v", info.ActiveUpdate, info.CurrentOperation, id, want)
	}
	e.must(204, "POST", "/api/stacks/org/proj/dev/update/"+id+"/cancel", e.token, nil)
	if info := get(); info.ActiveUpdate != id || info.CurrentOperation != nil {
		t.Errorf("after cancel: %+v, want the latest update and no operation", info)
	}
	e.must(204, "POST", "/api/stacks/org/proj/dev/update/"+id+"/cancel", e.token, nil) // a retry
	done, lease := e.startUpdate("dev", "update")
	e.must(200, "POST", "/api/stacks/org/proj/dev/update/"+done+"/complete", lease, `{"status":"succeeded"}`)
	e.must(409, "POST", "/api/stacks/org/proj/dev/update/"+done+"/cancel", e.token, nil)
}

// TestPulumiCLIConflictAtStart checks where a busy stack is reported: at create for any client, at
// start for the Pulumi CLI (its User-Agent), which prints a 409 of start as its ConflictingUpdateError.
func TestPulumiCLIConflictAtStart(t *testing.T) {
	e := newEnv(t)
	e.createStack("dev")
	holder, lease := e.startUpdate("dev", "update")
	const agent = "pulumi-cli/1 (v3.259.0; linux)"
	before := e.snapshot("dev")
	if code, body := e.do("POST", "/api/stacks/org/proj/dev/update", e.token, `{}`); code != 409 {
		t.Errorf("create by another client = %d %s, want 409", code, body)
	}
	if diff := cmp.Diff(before, e.snapshot("dev")); diff != "" {
		t.Errorf("a refused create changed the database (-before +after):\n%s", diff)
	}
	for _, kind := range []string{"update", "preview", "destroy"} {
		code, body := e.do("POST", "/api/stacks/org/proj/dev/"+kind, e.token, `{"options":{"dryRun":true}}`, "User-Agent", agent)
		if code != 200 {
			t.Fatalf("create %s by the Pulumi CLI = %d %s, want 200", kind, code, body)
		}
		var cr struct{ UpdateID string }
		decode(t, body, &cr)
		code, body = e.do("POST", "/api/stacks/org/proj/dev/update/"+cr.UpdateID, e.token, `{"journalVersion":1}`, "User-Agent", agent)
		var er errorResponse
		decode(t, body, &er)
		if code != 409 || er.Message != "Conflict: Another update is currently in progress." {
			t.Errorf("start of %s by the Pulumi CLI = %d %s, want 409 with the Pulumi service's message", kind, code, body)
		}
		if got := e.status("dev", cr.UpdateID); got != "cancelled" {
			t.Errorf("status of the refused update = %q, want cancelled", got)
		}
	}
	var info stackInfo
	decode(t, e.must(200, "GET", "/api/stacks/org/proj/dev", e.token, nil), &info)
	if info.ActiveUpdate != holder {
		t.Errorf("activeUpdate = %q, want the holder %q", info.ActiveUpdate, holder)
	}
	e.must(200, "POST", "/api/stacks/org/proj/dev/update/"+holder+"/complete", lease, `{"status":"succeeded"}`)
	var h stateapi.GetHistoryResponse
	decode(t, e.must(200, "GET", "/api/stacks/org/proj/dev/updates", e.token, nil), &h)
	if len(h.Updates) != 1 {
		t.Errorf("history = %d entries, want the holder's only", len(h.Updates))
	}
	// Free again: the Pulumi CLI's create and start succeed.
	code, body := e.do("POST", "/api/stacks/org/proj/dev/update", e.token, `{}`, "User-Agent", agent)
	var cr struct{ UpdateID string }
	decode(t, body, &cr)
	if code != 200 {
		t.Fatalf("create on a free stack = %d %s", code, body)
	}
	e.must(200, "POST", "/api/stacks/org/proj/dev/update/"+cr.UpdateID, e.token, `{}`)
}
