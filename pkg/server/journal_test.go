package server

import (
	"encoding/json"
	"testing"
)

// TestJournalNotOffered checks that start never echoes journalVersion, even when the request asks for
// journal version 1: the server does not replay journal entries, and the Pulumi CLI journals only when
// start echoes a version it asked for. …/journalentries is not served.
func TestJournalNotOffered(t *testing.T) {
	e := newEnv(t)
	e.createStack("dev")
	var cr struct{ UpdateID string }
	decode(t, e.must(200, "POST", "/api/stacks/org/proj/dev/update", e.token, `{}`), &cr)
	path := "/api/stacks/org/proj/dev/update/" + cr.UpdateID
	var sr map[string]json.RawMessage
	decode(t, e.must(200, "POST", path, e.token, `{"tags":{},"journalVersion":1}`), &sr)
	if v, ok := sr["journalVersion"]; ok {
		t.Errorf("start echoed journalVersion %s; want none (journaling is not implemented)", v)
	}
	var tok string
	decode(t, sr["token"], &tok)
	before := e.snapshot("dev")
	if code, body := e.do("PATCH", path+"/journalentries", "update-token "+tok, `{"entries":[{"version":1,"kind":0,"sequenceID":1,"operationID":1}]}`); code < 400 {
		t.Errorf("PATCH journalentries = %d %s, want an error", code, body)
	}
	if got := e.snapshot("dev"); got != before {
		t.Errorf("journalentries changed the database: %+v, want %+v", got, before)
	}
}
