package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/pkg/stateapi"
)

// run creates an update of kind on dev with body, starts it, sends the checkpoints of revs and the
// events, and completes it with status ("" leaves it running); it returns the update's ID.
func (e *env) run(kind, body string, revs []int, events []string, status string) string {
	e.t.Helper()
	id := e.createUpdate("dev", kind, body)
	base := "/api/stacks/org/proj/dev/update/" + id
	var sr startUpdateResponse
	decode(e.t, e.must(200, "POST", base, e.token, `{}`), &sr)
	lease := "update-token " + sr.Token
	for _, rev := range revs {
		e.must(200, "PATCH", base+"/checkpoint", lease, deploymentWith(rev))
	}
	for i, ev := range events {
		e.must(200, "POST", base+"/events/batch", lease, fmt.Sprintf(`{"events":[{"sequence":%d,"timestamp":1,%s}]}`, i+1, ev))
	}
	e.clock.advance(time.Second)
	if status != "" {
		e.must(200, "POST", base+"/complete", lease, `{"status":"`+status+`"}`)
	}
	e.clock.advance(time.Second)
	return id
}

// TestHistory runs updates of every kind on one stack and checks the history, its pages, the latest
// entry and export/{version}, which must return the state each history version left.
func TestHistory(t *testing.T) {
	e := newEnv(t)
	e.createStack("dev")
	st := "/api/stacks/org/proj/dev"
	e.must(404, "GET", st+"/updates/latest", e.token, nil)
	e.must(404, "GET", st+"/export/1", e.token, nil)
	var empty stateapi.GetHistoryResponse
	decode(t, e.must(200, "GET", st+"/updates", e.token, nil), &empty)
	if empty.Updates == nil || len(empty.Updates) != 0 {
		t.Errorf("history of a new stack = %#v, want an empty list", empty.Updates)
	}
	t0 := e.clock.now().Unix()
	summary := `"summaryEvent":{"resourceChanges":{"create":1,"same":2}}`
	e.run("update", `{"config":{"proj:a":{"string":"1","secret":false,"object":false}},"metadata":{"message":"first","environment":{"git.head":"abc"}}}`,
		[]int{1, 2}, []string{summary}, "succeeded") // v1: rev 2
	e.run("preview", `{"metadata":{"message":"a preview"}}`, nil, nil, "succeeded")                             // not history
	e.run("update", `{"options":{"dryRun":true},"metadata":{"message":"up's preview"}}`, nil, nil, "succeeded") // not history
	e.run("refresh", `{}`, nil, nil, "failed")                                                                  // v2: rev 2
	e.run("update", `{"metadata":{"message":"third"}}`, []int{3}, nil, "cancelled")                             // v3: rev 3
	var ir struct{ UpdateID string }
	decode(t, e.must(200, "POST", st+"/import", e.token, deploymentWith(4)), &ir) // v4: rev 4
	e.clock.advance(time.Second)
	e.run("destroy", `{}`, []int{5}, nil, "") // v5, running: rev 5

	var got stateapi.GetHistoryResponse
	decode(t, e.must(200, "GET", st+"/updates", e.token, nil), &got)
	want := []stateapi.UpdateInfo{
		{Kind: "destroy", StartTime: t0 + 11, Result: stateapi.ResultInProgress, Version: 5},
		{Kind: "import", StartTime: t0 + 10, EndTime: t0 + 10, Result: stateapi.ResultSucceeded, Version: 4, ResourceCount: 1},
		{Kind: "update", StartTime: t0 + 8, EndTime: t0 + 9, Message: "third", Result: stateapi.ResultFailed, Version: 3, ResourceCount: 1},
		{Kind: "refresh", StartTime: t0 + 6, EndTime: t0 + 7, Result: stateapi.ResultFailed, Version: 2, ResourceCount: 1},
		{Kind: "update", StartTime: t0, EndTime: t0 + 1, Message: "first", Version: 1, Result: stateapi.ResultSucceeded, ResourceCount: 1,
			Environment: map[string]string{"git.head": "abc"}, Config: map[string]stateapi.ConfigValue{"proj:a": {String: "1"}},
			ResourceChanges: map[string]int{"create": 1, "same": 2}},
	}
	for i := range want {
		if want[i].Environment == nil {
			want[i].Environment = map[string]string{}
		}
		if want[i].Config == nil {
			want[i].Config = map[string]stateapi.ConfigValue{}
		}
	}
	if diff := cmp.Diff(want, got.Updates); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}

	pages := []struct {
		query string
		want  []int64
	}{
		{"?pageSize=2&page=1", []int64{5, 4}},
		{"?pageSize=2&page=2", []int64{3, 2}},
		{"?pageSize=2&page=3", []int64{1}},
		{"?pageSize=2&page=4", []int64{}},
		{"?pageSize=10", []int64{5, 4, 3, 2, 1}},
		{"?page=2", []int64{5, 4, 3, 2, 1}},
	}
	for _, p := range pages {
		var page stateapi.GetHistoryResponse
		decode(t, e.must(200, "GET", st+"/updates"+p.query, e.token, nil), &page)
		versions := []int64{}
		for _, u := range page.Updates {
			versions = append(versions, u.Version)
		}
		if diff := cmp.Diff(p.want, versions); diff != "" {
			t.Errorf("updates%s versions (-want +got):\n%s", p.query, diff)
		}
	}
	for _, q := range []string{"?pageSize=0", "?pageSize=x", "?page=0", "?pageSize=1001"} {
		e.must(400, "GET", st+"/updates"+q, e.token, nil)
	}

	var latest stateapi.LatestUpdateResponse
	decode(t, e.must(200, "GET", st+"/updates/latest", e.token, nil), &latest)
	if diff := cmp.Diff(want[0], latest.Info); diff != "" {
		t.Errorf("latest (-want +got):\n%s", diff)
	}

	for version, rev := range map[int]int{1: 2, 2: 2, 3: 3, 4: 4, 5: 5} {
		if got := string(e.must(200, "GET", fmt.Sprintf("%s/export/%d", st, version), e.token, nil)); got != deploymentWith(rev) {
			t.Errorf("export/%d = %s, want the checkpoint of rev %d", version, got, rev)
		}
	}
	e.must(404, "GET", st+"/export/6", e.token, nil)
	e.must(400, "GET", st+"/export/0", e.token, nil)
	// Checkpoint numbering stays available: rev r is checkpoint r.
	if got := string(e.must(200, "GET", st+"/export/1?checkpoint=true", e.token, nil)); got != deploymentWith(1) {
		t.Errorf("export/1?checkpoint=true = %s, want rev 1", got)
	}

	var by []string
	rows, err := e.srv.db.Pool().Query(context.Background(), `SELECT coalesce(created_by, '-') FROM svc_updates WHERE kind <> 'import' ORDER BY created_at`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		by = append(by, s)
	}
	if diff := cmp.Diff([]string{"alice", "alice", "alice", "alice", "alice", "alice"}, by); diff != "" {
		t.Errorf("created_by (-want +got):\n%s", diff)
	}
}

// TestHistoryBadSummary checks that a summary event whose resourceChanges are not counts is a 400.
func TestHistoryBadSummary(t *testing.T) {
	e := newEnv(t)
	e.createStack("dev")
	id, lease := e.startUpdate("dev", "update")
	before := e.snapshot("dev")
	code, body := e.do("POST", "/api/stacks/org/proj/dev/update/"+id+"/events/batch", lease,
		`{"events":[{"sequence":1,"timestamp":1,"summaryEvent":{"resourceChanges":{"create":"x"}}}]}`)
	if code != 400 {
		t.Errorf("events/batch = %d %s, want 400", code, body)
	}
	if diff := cmp.Diff(before, e.snapshot("dev")); diff != "" {
		t.Errorf("database changed (-before +after):\n%s", diff)
	}
}
