package server

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestCdkxCommit drives PATCH …/commit: a whole first text, an edit, a retry, and each kind of bad
// request, which must be a precise 4xx that changes nothing.
func TestCdkxCommit(t *testing.T) {
	e := newEnv(t)
	e.createStack("dev")
	id, lease := e.startUpdate("dev", "update")
	path := "/api/stacks/org/proj/dev/update/" + id + "/commit"
	v1 := `{"version":3,"deployment":{"cdkx":{"n":1,"format":1},"resources":[` + "\n" + `{"urn":"a","type":"t","cdkx":{"logicalId":"a"}}` + "\n]}}"
	commit := func(seq, base int64, extra string) string {
		return fmt.Sprintf(`{"sequenceNumber":%d,"baseVersion":%d,"resourceCount":1,"deploymentId":"d1",%s}`, seq, base, extra)
	}
	var got struct{ Version int64 }
	decode(t, e.must(200, "PATCH", path, lease, commit(1, 0, `"checkpointHash":"`+hashOf(v1)+`","deploymentText":`+jsonString(v1)+`,"events":[{"status":"CREATE_COMPLETE","logicalId":"a","time":"2026-01-02T03:04:05Z"}]`)), &got)
	if got.Version != 1 {
		t.Fatalf("first commit stored version %d, want 1", got.Version)
	}
	// Replace {"n":1, (bytes 35-42) with {"n":2,.
	at := len(`{"version":3,"deployment":{"cdkx":`)
	v2 := v1[:at] + `{"n":2,` + v1[at+7:]
	edit := fmt.Sprintf(`[{"Span":{"start":{"offset":%d},"end":{"offset":%d}},"NewText":"{\"n\":2,"}]`, at, at+7)
	body2 := commit(2, 1, `"checkpointHash":"`+hashOf(v2)+`","deploymentDelta":`+edit)
	decode(t, e.must(200, "PATCH", path, lease, body2), &got)
	if got.Version != 2 {
		t.Fatalf("second commit stored version %d, want 2", got.Version)
	}
	// A retry answers the version the first attempt stored, and stores nothing.
	before := e.snapshot("dev")
	decode(t, e.must(200, "PATCH", path, lease, body2), &got)
	if got.Version != 2 || e.snapshot("dev") != before {
		t.Errorf("retry = version %d, database %+v; want version 2 and %+v", got.Version, e.snapshot("dev"), before)
	}
	if text := string(e.must(200, "GET", "/api/stacks/org/proj/dev/export", e.token, nil)); text != v2 {
		t.Errorf("export = %q, want %q", text, v2)
	}
	var evs struct{ Events []map[string]any }
	decode(t, e.must(200, "GET", "/api/cdkx/org/proj/deployments/d1/events", e.token, nil), &evs)
	if len(evs.Events) != 1 || evs.Events[0]["seq"] != float64(1) || evs.Events[0]["stack"] != "dev" {
		t.Errorf("events = %v, want one, seq 1, stack dev", evs.Events)
	}

	e.createStack("other")
	_, otherLease := e.startUpdate("other", "update")
	tests := []struct {
		name, auth, body string
		want             int
	}{
		{"malformed JSON", lease, `{"sequenceNumber":`, 400},
		{"no sequence number", lease, `{"baseVersion":2,"deploymentDelta":[]}`, 400},
		{"stale base version", lease, commit(3, 1, `"checkpointHash":"`+hashOf(v2)+`","deploymentDelta":[]`), 409},
		{"wrong hash", lease, commit(3, 2, `"checkpointHash":"`+hashOf("nope")+`","deploymentDelta":[]`), 400},
		{"overlapping edits", lease, commit(3, 2, `"checkpointHash":"x","deploymentDelta":[{"Span":{"start":{"offset":1},"end":{"offset":5}},"NewText":""},{"Span":{"start":{"offset":3},"end":{"offset":6}},"NewText":""}]`), 400},
		{"edit out of bounds", lease, commit(3, 2, `"checkpointHash":"x","deploymentDelta":[{"Span":{"start":{"offset":1},"end":{"offset":99999}},"NewText":""}]`), 400},
		{"edit not JSON", lease, commit(3, 2, fmt.Sprintf(`"checkpointHash":"%s","deploymentDelta":[{"Span":{"start":{"offset":%d},"end":{"offset":%d}},"NewText":"{\"n\":"}]`,
			hashOf(v2[:at]+`{"n":`+v2[at+7:]), at, at+7)), 400},
		{"delta and text", lease, commit(3, 2, `"checkpointHash":"x","deploymentDelta":[],"deploymentText":"{}"`), 400},
		{"other stack's lease", otherLease, commit(3, 2, `"checkpointHash":"`+hashOf(v2)+`","deploymentDelta":[]`), 403},
		{"API token", e.token, commit(3, 2, `"checkpointHash":"`+hashOf(v2)+`","deploymentDelta":[]`), 401},
	}
	before = e.snapshot("dev")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := e.do("PATCH", path, tt.auth, tt.body)
			if code != tt.want {
				t.Errorf("PATCH commit = %d %s, want %d", code, body, tt.want)
			}
			if diff := cmp.Diff(before, e.snapshot("dev")); diff != "" {
				t.Errorf("database changed (-before +after):\n%s", diff)
			}
		})
	}
	// An expired lease is a 403 and changes nothing.
	e.clock.advance(DefaultLease + 1)
	if code, body := e.do("PATCH", path, lease, commit(3, 2, `"checkpointHash":"`+hashOf(v2)+`","deploymentDelta":[]`)); code != 403 {
		t.Errorf("commit with an expired lease = %d %s, want 403", code, body)
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
