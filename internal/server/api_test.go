package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const deployment1 = `{"version":3,"deployment":{"manifest":{"time":"2026-01-02T03:04:05Z","magic":"m","version":"v3.259.0"},"resources":[{"urn":"urn:pulumi:s::p::pulumi:pulumi:Stack::p-s","type":"pulumi:pulumi:Stack","custom":false}]}}`

func TestAuth(t *testing.T) {
	e := newEnv(t)
	e.createStack("dev")
	_, lease := e.startUpdate("dev", "update")
	tests := []struct {
		name, method, path, auth string
		want                     int
	}{
		{"no header", "GET", "/api/user", "", 401},
		{"wrong token", "GET", "/api/user", "token cdkx-nope", 401},
		{"bearer scheme", "GET", "/api/user", "Bearer " + strings.TrimPrefix(e.token, "token "), 401},
		{"lease on an API call", "GET", "/api/user", lease, 401},
		{"API token on an execution call", "POST", "/api/stacks/org/proj/dev/update/x/renew_lease", e.token, 401},
		{"unknown lease", "POST", "/api/stacks/org/proj/dev/update/x/renew_lease", "update-token nope", 401},
		{"valid", "GET", "/api/user", e.token, 200},
		{"healthz needs none", "GET", "/healthz", "", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := e.do(tt.method, tt.path, tt.auth, `{"duration":60}`)
			if code != tt.want {
				t.Errorf("%s %s = %d %s, want %d", tt.method, tt.path, code, body, tt.want)
			}
			if code >= 400 {
				var er errorResponse
				decode(t, body, &er)
				if er.Code != code || er.Message == "" {
					t.Errorf("error body = %+v, want code %d and a message", er, code)
				}
			}
		})
	}
	if err := e.srv.RevokeToken(context.Background(), "alice"); err != nil {
		t.Fatalf("RevokeToken() = %v", err)
	}
	if code, _ := e.do("GET", "/api/user", e.token, nil); code != 401 {
		t.Errorf("GET /api/user with a revoked token = %d, want 401", code)
	}
	if err := e.srv.RevokeToken(context.Background(), "alice"); err != ErrTokenNotFound {
		t.Errorf("RevokeToken() again = %v, want ErrTokenNotFound", err)
	}
}

func TestUserAndCapabilities(t *testing.T) {
	e := newEnv(t)
	checkGolden(t, "user.golden.json", e.must(200, "GET", "/api/user", e.token, nil))
	checkGolden(t, "capabilities.golden.json", e.must(200, "GET", "/api/capabilities", e.token, nil))
	checkGolden(t, "default_org.golden.json", e.must(200, "GET", "/api/user/organizations/default", e.token, nil))
}

func TestStacks(t *testing.T) {
	e := newEnv(t)
	e.must(200, "POST", "/api/stacks/org/proj", e.token, map[string]any{"stackName": "dev", "tags": map[string]string{"team": "a"}})
	tests := []struct {
		name, method, path, body string
		want                     int
	}{
		{"duplicate", "POST", "/api/stacks/org/proj", `{"stackName":"dev"}`, 409},
		{"malformed JSON", "POST", "/api/stacks/org/proj", `{"stackName":`, 400},
		{"invalid name", "POST", "/api/stacks/org/proj", `{"stackName":"a b"}`, 400},
		{"empty body", "POST", "/api/stacks/org/proj", ``, 400},
		{"missing stack", "GET", "/api/stacks/org/proj/nope", ``, 404},
		{"delete missing", "DELETE", "/api/stacks/org/proj/nope", ``, 404},
		{"encrypt without a secrets key", "POST", "/api/stacks/org/proj/dev/encrypt", `{"plaintext":"eA=="}`, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := e.snapshot("dev")
			if code, body := e.do(tt.method, tt.path, e.token, tt.body); code != tt.want {
				t.Errorf("%s %s = %d %s, want %d", tt.method, tt.path, code, body, tt.want)
			}
			if diff := cmp.Diff(before, e.snapshot("dev")); diff != "" {
				t.Errorf("database changed (-before +after):\n%s", diff)
			}
		})
	}
	checkGolden(t, "get_stack.golden.json", e.must(200, "GET", "/api/stacks/org/proj/dev", e.token, nil))
	e.createStack("prod")
	e.must(200, "POST", "/api/stacks/other/proj2", e.token, map[string]any{"stackName": "x"})
	checkGolden(t, "list_stacks.golden.json", e.must(200, "GET", "/api/user/stacks?project=proj", e.token, nil))

	// A stack with resources is deleted only with force (the Pulumi service's message, which the CLI tests).
	id, lease := e.startUpdate("dev", "update")
	e.must(200, "PATCH", "/api/stacks/org/proj/dev/update/"+id+"/checkpoint", lease, `{"version":3,"deployment":`+deployment1[len(`{"version":3,"deployment":`):len(deployment1)-1]+`}`)
	code, body := e.do("DELETE", "/api/stacks/org/proj/dev", e.token, nil)
	if code != 409 {
		t.Errorf("DELETE during an update = %d %s, want 409", code, body)
	}
	e.must(200, "POST", "/api/stacks/org/proj/dev/update/"+id+"/complete", lease, `{"status":"succeeded"}`)
	code, body = e.do("DELETE", "/api/stacks/org/proj/dev", e.token, nil)
	var er errorResponse
	decode(t, body, &er)
	if want := (errorResponse{Code: 400, Message: "Bad Request: Stack still contains resources."}); code != 400 || er != want {
		t.Errorf("DELETE with resources = %d %+v, want %+v", code, er, want)
	}
	e.must(204, "DELETE", "/api/stacks/org/proj/dev?force=true", e.token, nil)
	e.must(404, "GET", "/api/stacks/org/proj/dev", e.token, nil)
	e.must(204, "DELETE", "/api/stacks/org/proj/prod", e.token, nil)
}

func TestLifecycle(t *testing.T) {
	e := newEnv(t)
	e.createStack("dev")
	base := "/api/stacks/org/proj/dev/update/"
	// Export of a stack never deployed is a valid empty deployment.
	checkGolden(t, "export_empty.golden.json", e.must(200, "GET", "/api/stacks/org/proj/dev/export", e.token, nil))

	id, lease := e.startUpdate("dev", "update")
	var st updateResults
	decode(t, e.must(200, "GET", base+id, e.token, nil), &st)
	if st.Status != "running" {
		t.Errorf("status = %q, want running", st.Status)
	}
	// Typed checkpoint: version 1.
	e.must(200, "PATCH", base+id+"/checkpoint", lease, map[string]any{"isInvalid": false, "version": 3, "deployment": json.RawMessage(deployment1[len(`{"version":3,"deployment":`) : len(deployment1)-1])})
	// Verbatim: exact bytes kept, version 2; a repeat of its sequence number changes nothing.
	verbatim := "{\"version\":3,\"deployment\":{\"manifest\":{\"time\":\"t\",\"magic\":\"\",\"version\":\"\"},  \"resources\":[]}}"
	req := fmt.Sprintf(`{"version":3,"untypedDeployment":%s,"sequenceNumber":1}`, verbatim)
	e.must(200, "PATCH", base+id+"/checkpointverbatim", lease, req)
	before := e.snapshot("dev")
	e.must(200, "PATCH", base+id+"/checkpointverbatim", lease, req)
	if diff := cmp.Diff(before, e.snapshot("dev")); diff != "" {
		t.Errorf("repeated verbatim changed the database (-before +after):\n%s", diff)
	}
	if got := e.must(200, "GET", "/api/stacks/org/proj/dev/export", e.token, nil); string(got) != verbatim {
		t.Errorf("export = %s, want the verbatim bytes %s", got, verbatim)
	}
	if got := e.must(200, "GET", "/api/stacks/org/proj/dev/export/1?checkpoint=true", e.token, nil); string(got) != deployment1 {
		t.Errorf("export/1 = %s, want %s", got, deployment1)
	}
	e.must(404, "GET", "/api/stacks/org/proj/dev/export/3?checkpoint=true", e.token, nil)
	e.must(400, "GET", "/api/stacks/org/proj/dev/export/x?checkpoint=true", e.token, nil)

	// Events: idempotent by sequence, replayed in order.
	ev := func(seq int) string {
		return fmt.Sprintf(`{"sequence":%d,"timestamp":1767322000,"stdoutEvent":{"message":"m%d"}}`, seq, seq)
	}
	e.must(200, "POST", base+id+"/events/batch", lease, `{"events":[`+ev(2)+`,`+ev(1)+`]}`)
	before = e.snapshot("dev")
	e.must(200, "POST", base+id+"/events/batch", lease, `{"events":[`+ev(1)+`]}`)
	if diff := cmp.Diff(before, e.snapshot("dev")); diff != "" {
		t.Errorf("repeated events changed the database (-before +after):\n%s", diff)
	}
	e.must(200, "POST", base+id+"/events/batch", lease, `{"events":[`+ev(3)+`]}`)
	var page struct {
		Events            []json.RawMessage
		ContinuationToken *string
	}
	decode(t, e.must(200, "GET", base+id+"/events?continuationToken=1", e.token, nil), &page)
	if len(page.Events) != 2 || !strings.Contains(string(page.Events[0]), `"sequence":2`) || page.ContinuationToken == nil || *page.ContinuationToken != "3" {
		t.Errorf("events after 1 = %s, token %v; want sequences 2, 3 and token 3", page.Events, page.ContinuationToken)
	}

	// Renew: capped at MaxLease.
	var rn struct {
		Token           string
		TokenExpiration int64
	}
	decode(t, e.must(200, "POST", base+id+"/renew_lease", lease, `{"duration":100000}`), &rn)
	if want := e.clock.now().Add(MaxLease).Unix(); rn.TokenExpiration != want || "update-token "+rn.Token != lease {
		t.Errorf("renew = %+v, want expiration %d and the same token", rn, want)
	}

	// A second update of the stack is refused while this one runs.
	e.must(409, "POST", "/api/stacks/org/proj/dev/preview", e.token, `{}`)
	e.must(409, "POST", "/api/stacks/org/proj/dev/import", e.token, deployment1)

	// Complete, then its retries: the same status is 200 and changes nothing, another is 409.
	e.must(200, "POST", base+id+"/complete", lease, `{"status":"succeeded"}`)
	before = e.snapshot("dev")
	e.must(200, "POST", base+id+"/complete", lease, `{"status":"succeeded"}`)
	e.must(409, "POST", base+id+"/complete", lease, `{"status":"failed"}`)
	e.must(409, "PATCH", base+id+"/checkpoint", lease, map[string]any{"version": 3, "deployment": map[string]any{}})
	e.must(409, "POST", base+id+"/cancel", e.token, nil)
	if diff := cmp.Diff(before, e.snapshot("dev")); diff != "" {
		t.Errorf("calls after complete changed the database (-before +after):\n%s", diff)
	}
	st = updateResults{}
	decode(t, e.must(200, "GET", base+id, e.token, nil), &st)
	if st.Status != "succeeded" || st.ContinuationToken != nil {
		t.Errorf("status = %+v, want succeeded without a continuation token", st)
	}
	// The stack is free again; start returns the stack's checkpoint version.
	cr := e.must(200, "POST", "/api/stacks/org/proj/dev/refresh", e.token, `{}`)
	var created struct{ UpdateID string }
	decode(t, cr, &created)
	var sr startUpdateResponse
	decode(t, e.must(200, "POST", "/api/stacks/org/proj/dev/refresh/"+created.UpdateID, e.token, `{}`), &sr)
	if sr.Version != 2 || sr.Token == "" || sr.TokenExpiration != e.clock.now().Add(DefaultLease).Unix() {
		t.Errorf("start = %+v, want version 2, a token and a 300 s lease", sr)
	}
	e.must(409, "POST", "/api/stacks/org/proj/dev/refresh/"+created.UpdateID, e.token, `{}`)
}

func TestExecutionErrors(t *testing.T) {
	e := newEnv(t)
	e.createStack("dev")
	e.createStack("prod")
	id, lease := e.startUpdate("dev", "update")
	prodID, prodLease := e.startUpdate("prod", "update")
	dev := "/api/stacks/org/proj/dev/update/" + id
	cp := `{"version":3,"untypedDeployment":` + deployment1 + `,"sequenceNumber":7}`
	tests := []struct {
		name, method, path, auth, body string
		want                           int
		message                        string
	}{
		{"another stack's lease", "PATCH", dev + "/checkpointverbatim", prodLease, cp, 403, ""},
		{"lease on another stack's URL", "PATCH", "/api/stacks/org/proj/dev/update/" + prodID + "/checkpointverbatim", prodLease, cp, 403, ""},
		{"unknown kind in the URL", "PATCH", "/api/stacks/org/proj/dev/deploy/" + id + "/checkpointverbatim", lease, cp, 404, ""},
		{"malformed JSON", "PATCH", dev + "/checkpointverbatim", lease, `{"version":3,`, 400, ""},
		{"not JSON deployment", "PATCH", dev + "/checkpoint", lease, `{"version":3,"deployment":"x"}`, 400, ""},
		{"resources not a list", "PATCH", dev + "/checkpointverbatim", lease, `{"version":3,"untypedDeployment":{"version":3,"deployment":{"resources":{}}},"sequenceNumber":8}`, 400, ""},
		{"deployment version 2", "PATCH", dev + "/checkpointverbatim", lease, `{"version":3,"untypedDeployment":{"version":2,"deployment":{}},"sequenceNumber":8}`, 400, ""},
		{"event without sequence", "POST", dev + "/events/batch", lease, `{"events":[{"timestamp":1}]}`, 400, ""},
		{"bad complete status", "POST", dev + "/complete", lease, `{"status":"done"}`, 400, ""},
		{"renew zero", "POST", dev + "/renew_lease", lease, `{"duration":0}`, 400, ""},
		{"delta without a base", "PATCH", dev + "/checkpointdelta", lease, `{"version":1,"checkpointHash":"00","sequenceNumber":9,"deploymentDelta":[]}`, 400, ""},
		{"unknown update", "POST", "/api/stacks/org/proj/dev/update/nope", e.token, `{}`, 404, ""},
		{"unknown kind", "POST", "/api/stacks/org/proj/dev/deploy", e.token, `{}`, 404, ""},
		{"update of a missing stack", "POST", "/api/stacks/org/proj/nope/update", e.token, `{}`, 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := []snapshot{e.snapshot("dev"), e.snapshot("prod")}
			code, body := e.do(tt.method, tt.path, tt.auth, tt.body)
			if code != tt.want {
				t.Errorf("%s %s = %d %s, want %d", tt.method, tt.path, code, body, tt.want)
			}
			if diff := cmp.Diff(before, []snapshot{e.snapshot("dev"), e.snapshot("prod")}); diff != "" {
				t.Errorf("database changed (-before +after):\n%s", diff)
			}
		})
	}

	// Expired lease: 403 with the service's message, nothing changes; the CLI stops renewing on it.
	e.clock.advance(DefaultLease + time.Second)
	for _, c := range []struct{ method, path, body string }{
		{"PATCH", dev + "/checkpointverbatim", cp},
		{"POST", dev + "/renew_lease", `{"duration":60}`},
		{"POST", dev + "/events/batch", `{"events":[{"sequence":1,"timestamp":1}]}`},
		{"POST", dev + "/complete", `{"status":"succeeded"}`},
	} {
		before := e.snapshot("dev")
		code, body := e.do(c.method, c.path, lease, c.body)
		var er errorResponse
		decode(t, body, &er)
		if want := (errorResponse{Code: 403, Message: "The provided update token has expired"}); code != 403 || er != want {
			t.Errorf("%s %s with an expired lease = %d %+v, want %+v", c.method, c.path, code, er, want)
		}
		if diff := cmp.Diff(before, e.snapshot("dev")); diff != "" {
			t.Errorf("database changed (-before +after):\n%s", diff)
		}
	}
}

func TestCancel(t *testing.T) {
	e := newEnv(t)
	e.createStack("dev")
	var cr struct{ UpdateID string }
	decode(t, e.must(200, "POST", "/api/stacks/org/proj/dev/update", e.token, `{}`), &cr)
	// A created-but-never-started update can be found and cancelled.
	path := "/api/stacks/org/proj/dev/update/" + cr.UpdateID + "/cancel"
	e.must(204, "POST", path, e.token, nil)
	before := e.snapshot("dev")
	e.must(204, "POST", path, e.token, nil)
	if diff := cmp.Diff(before, e.snapshot("dev")); diff != "" {
		t.Errorf("repeated cancel changed the database (-before +after):\n%s", diff)
	}
	e.must(409, "POST", "/api/stacks/org/proj/dev/update/"+cr.UpdateID, e.token, `{}`) // cannot start a cancelled update
	id, lease := e.startUpdate("dev", "destroy")
	e.must(204, "POST", "/api/stacks/org/proj/dev/destroy/"+id+"/cancel", e.token, nil)
	e.must(409, "POST", "/api/stacks/org/proj/dev/destroy/"+id+"/renew_lease", lease, `{"duration":60}`)
	e.must(200, "POST", "/api/stacks/org/proj/dev/destroy/"+id+"/complete", lease, `{"status":"cancelled"}`)
}

func TestImport(t *testing.T) {
	e := newEnv(t)
	e.createStack("dev")
	path := "/api/stacks/org/proj/dev/import"
	bad := []struct{ name, body string }{
		{"not JSON", `{"version":3,`},
		{"version 2", `{"version":2,"deployment":{"resources":[]}}`},
		{"no version", `{"deployment":{"resources":[]}}`},
		{"deployment not an object", `{"version":3,"deployment":[]}`},
		{"resources not a list", `{"version":3,"deployment":{"resources":"x"}}`},
		{"empty", ``},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			before := e.snapshot("dev")
			if code, body := e.do("POST", path, e.token, tt.body); code != 400 {
				t.Errorf("import %s = %d %s, want 400", tt.body, code, body)
			}
			if diff := cmp.Diff(before, e.snapshot("dev")); diff != "" {
				t.Errorf("database changed (-before +after):\n%s", diff)
			}
		})
	}
	var ir struct{ UpdateID string }
	decode(t, e.must(200, "POST", path, e.token, deployment1), &ir)
	if ir.UpdateID == "" {
		t.Fatal("import returned no updateId")
	}
	var st updateResults
	decode(t, e.must(200, "GET", "/api/stacks/org/proj/dev/import/"+ir.UpdateID, e.token, nil), &st)
	if st.Status != "succeeded" {
		t.Errorf("import status = %q, want succeeded", st.Status)
	}
	if got, want := e.snapshot("dev"), (snapshot{Version: 1, Checkpoints: 1, Statuses: "succeeded", Expiries: "-"}); got != want {
		t.Errorf("after import: %+v, want %+v", got, want)
	}
	if got := e.must(200, "GET", "/api/stacks/org/proj/dev/export/1?checkpoint=true", e.token, nil); string(got) != deployment1 {
		t.Errorf("export/1 = %s, want %s", got, deployment1)
	}
}

func TestBodies(t *testing.T) {
	e := newEnv(t) // MaxBody 1 MiB
	big := `{"stackName":"dev","tags":{"x":"` + strings.Repeat("a", 1<<20) + `"}}`
	if code, body := e.do("POST", "/api/stacks/org/proj", e.token, big); code != 413 {
		t.Errorf("oversized body = %d %s, want 413", code, body)
	}
	if code, body := e.do("POST", "/api/stacks/org/proj", e.token, gzipped(t, []byte(big)), "Content-Encoding", "gzip"); code != 413 {
		t.Errorf("oversized gzip body = %d %s, want 413", code, body)
	}
	if code, body := e.do("POST", "/api/stacks/org/proj", e.token, `not gzip`, "Content-Encoding", "gzip"); code != 400 {
		t.Errorf("invalid gzip body = %d %s, want 400", code, body)
	}
	var n int
	if err := e.srv.db.Pool().QueryRow(context.Background(), `SELECT count(*) FROM svc_stacks`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("stacks after refused requests = %d, %v; want 0", n, err)
	}
	if code, body := e.do("POST", "/api/stacks/org/proj", e.token, gzipped(t, []byte(`{"stackName":"dev"}`)), "Content-Encoding", "gzip"); code != 200 {
		t.Errorf("gzip body = %d %s, want 200", code, body)
	}
	e.must(200, "GET", "/api/stacks/org/proj/dev", e.token, nil)
}

func TestConcurrentCreate(t *testing.T) {
	e := newEnv(t)
	e.createStack("dev")
	const n = 20
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { codes[i], _ = e.do("POST", "/api/stacks/org/proj/dev/update", e.token, `{}`) })
	}
	wg.Wait()
	count := map[int]int{}
	for _, c := range codes {
		count[c]++
	}
	if diff := cmp.Diff(map[int]int{200: 1, 409: n - 1}, count); diff != "" {
		t.Errorf("status codes of %d concurrent creates (-want +got):\n%s", n, diff)
	}
}

func TestConcurrentCheckpoints(t *testing.T) {
	e := newEnv(t)
	e.createStack("dev")
	id, lease := e.startUpdate("dev", "update")
	const goroutines, each = 8, 5
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				seq := g*each + i + 1
				body := fmt.Sprintf(`{"version":3,"untypedDeployment":{"version":3,"deployment":{"seq":%d}},"sequenceNumber":%d}`, seq, seq)
				if code, data := e.do("PATCH", "/api/stacks/org/proj/dev/update/"+id+"/checkpointverbatim", lease, body); code != 200 {
					t.Errorf("checkpoint %d = %d %s", seq, code, data)
				}
			}
		})
	}
	wg.Wait()
	rows, err := e.srv.db.Pool().Query(context.Background(), `SELECT version FROM svc_checkpoints ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	var versions []int64
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		versions = append(versions, v)
	}
	want := make([]int64, goroutines*each)
	for i := range want {
		want[i] = int64(i + 1)
	}
	if diff := cmp.Diff(want, versions); diff != "" {
		t.Errorf("checkpoint versions (-want +got):\n%s", diff)
	}
	if s := e.snapshot("dev"); s.Version != goroutines*each {
		t.Errorf("stack version = %d, want %d", s.Version, goroutines*each)
	}
}

func TestDelta(t *testing.T) {
	e := newEnv(t)
	e.createStack("dev")
	id, lease := e.startUpdate("dev", "update")
	path := "/api/stacks/org/proj/dev/update/" + id
	// "é" is two bytes: offsets are byte offsets.
	base := `{"version":3,"deployment":{"manifest":{"time":"é"},"resources":[]}}`
	e.must(200, "PATCH", path+"/checkpointverbatim", lease, `{"version":3,"untypedDeployment":`+base+`,"sequenceNumber":1}`)
	at := strings.Index(base, "[]") + 1
	want := base[:at] + `{"urn":"a","type":"t"}` + base[at:]
	edit := func(start, end int, text string) map[string]any {
		return map[string]any{"Span": map[string]any{"uri": "", "start": map[string]int{"line": 1, "column": start + 1, "offset": start}, "end": map[string]int{"line": 1, "column": end + 1, "offset": end}}, "NewText": text}
	}
	hash := func(s string) string { sum := sha256.Sum256([]byte(s)); return hex.EncodeToString(sum[:]) }
	req := func(seq int, h string, edits ...map[string]any) map[string]any {
		return map[string]any{"version": 1, "checkpointHash": h, "sequenceNumber": seq, "deploymentDelta": edits}
	}
	refused := []struct {
		name string
		body map[string]any
	}{
		{"hash mismatch", req(2, hash("x"), edit(at, at, `{"urn":"a","type":"t"}`))},
		{"out of bounds", req(2, hash(want), edit(at, len(base)+1, ""))},
		{"overlap", req(2, hash(want), edit(at, at, `{"urn":"a","type":"t"}`), edit(at-1, at+1, "[]"))},
		{"result not a deployment", req(2, hash(base[:at]), edit(at, len(base), ""))},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			before := e.snapshot("dev")
			if code, body := e.do("PATCH", path+"/checkpointdelta", lease, tt.body); code != 400 {
				t.Errorf("delta = %d %s, want 400", code, body)
			}
			if diff := cmp.Diff(before, e.snapshot("dev")); diff != "" {
				t.Errorf("database changed (-before +after):\n%s", diff)
			}
		})
	}
	e.must(200, "PATCH", path+"/checkpointdelta", lease, req(2, hash(want), edit(at, at, `{"urn":"a","type":"t"}`)))
	before := e.snapshot("dev")
	e.must(200, "PATCH", path+"/checkpointdelta", lease, req(2, hash(want), edit(at, at, `{"urn":"a","type":"t"}`)))
	if diff := cmp.Diff(before, e.snapshot("dev")); diff != "" {
		t.Errorf("repeated delta changed the database (-before +after):\n%s", diff)
	}
	if got := e.must(200, "GET", "/api/stacks/org/proj/dev/export", e.token, nil); !bytes.Equal(got, []byte(want)) {
		t.Errorf("export = %s, want %s", got, want)
	}
}

func TestCollect(t *testing.T) {
	e := newEnv(t)
	for _, s := range []string{"running", "expired", "fresh", "stale"} {
		e.createStack(s)
	}
	e.must(200, "POST", "/api/stacks/org/proj/stale/update", e.token, `{}`)
	e.clock.advance(50 * time.Minute)
	e.must(200, "POST", "/api/stacks/org/proj/fresh/update", e.token, `{}`)
	e.clock.advance(11 * time.Minute)
	e.startUpdate("expired", "update")
	e.clock.advance(DefaultLease + LeaseGrace + time.Second)
	e.startUpdate("running", "update")
	n, err := e.srv.Collect(context.Background())
	if err != nil {
		t.Fatalf("Collect() = %v", err)
	}
	if n != 2 {
		t.Errorf("Collect() cancelled %d updates, want 2 (expired, stale)", n)
	}
	for stack, want := range map[string]string{"running": "running", "expired": "cancelled", "fresh": "not started", "stale": "cancelled"} {
		if got := e.snapshot(stack).Statuses; got != want {
			t.Errorf("%s: status %q, want %q", stack, got, want)
		}
	}
	// RunCollector runs (taking and releasing its advisory lock) until its context ends.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.srv.RunCollector(ctx, time.Hour) }()
	time.Sleep(200 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Errorf("RunCollector() = %v", err)
	}
}
