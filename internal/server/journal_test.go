package server

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/pkg/stateapi"
)

// The journal requests under testdata/journal_<case>.json are the bodies of PATCH …/journalentries as
// the Pulumi CLI sends them (apitype.JournalEntries, field order and all), one element per request;
// journal_base.json is the checkpoint the cases other than create start from (imported first):
// resources stack, provider, a, b, c (c depends on b), a pending create of d and a pending update of a.
// testdata/journal_<case>.golden.json is the export after the last request (rewrite with -update).

// startJournaled creates and starts an update of kind on stack asking for journal version 1, and
// returns its path and lease auth header.
func (e *env) startJournaled(stack, kind string) (string, string) {
	e.t.Helper()
	var cr struct{ UpdateID string }
	decode(e.t, e.must(200, "POST", "/api/stacks/org/proj/"+stack+"/"+kind, e.token, `{}`), &cr)
	path := "/api/stacks/org/proj/" + stack + "/" + kind + "/" + cr.UpdateID
	var sr startUpdateResponse
	decode(e.t, e.must(200, "POST", path, e.token, `{"tags":{},"journalVersion":1}`), &sr)
	if sr.JournalVersion != 1 {
		e.t.Fatalf("start answered journalVersion %d, want 1", sr.JournalVersion)
	}
	return path, "update-token " + sr.Token
}

// journalRequests reads testdata/journal_<name>.json: the request bodies, in order.
func journalRequests(t *testing.T, name string) []json.RawMessage {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "journal_"+name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var reqs []json.RawMessage
	decode(t, data, &reqs)
	return reqs
}

// journalSnapshot is what the database holds of a stack, with its updates' journals.
type journalSnapshot struct {
	Stack             snapshot
	Entries, Replayed int64
}

func (e *env) journalSnapshot(stack string) journalSnapshot {
	e.t.Helper()
	s := journalSnapshot{Stack: e.snapshot(stack)}
	err := e.srv.db.Pool().QueryRow(context.Background(), `SELECT
 (SELECT count(*) FROM svc_journal_entries j JOIN svc_updates u ON u.id = j.update_id JOIN svc_stacks s ON s.id = u.stack_id WHERE s.name = $1),
 (SELECT coalesce(sum(j.replayed), 0) FROM svc_journals j JOIN svc_updates u ON u.id = j.update_id JOIN svc_stacks s ON s.id = u.stack_id WHERE s.name = $1)`,
		stack).Scan(&s.Entries, &s.Replayed)
	if err != nil {
		e.t.Fatalf("journalSnapshot(%s): %v", stack, err)
	}
	return s
}

// deploymentSummary is what a test checks of an exported deployment: each resource's name (the last
// part of its URN) with its marks, each pending operation's type and name, the secrets provider's type.
type deploymentSummary struct {
	Resources, Pending []string
	Secrets            string
}

func summarize(t *testing.T, export []byte) deploymentSummary {
	t.Helper()
	type res struct {
		URN                string `json:"urn"`
		Delete             bool   `json:"delete"`
		PendingReplacement bool   `json:"pendingReplacement"`
	}
	var d struct {
		Deployment struct {
			Resources         []res `json:"resources"`
			PendingOperations []struct {
				Resource res    `json:"resource"`
				Type     string `json:"type"`
			} `json:"pending_operations"`
			SecretsProviders *struct {
				Type string `json:"type"`
			} `json:"secrets_providers"`
		} `json:"deployment"`
	}
	decode(t, export, &d)
	name := func(urn string) string { return urn[strings.LastIndex(urn, "::")+2:] }
	var s deploymentSummary
	for _, r := range d.Deployment.Resources {
		n := name(r.URN)
		if r.Delete {
			n += " delete"
		}
		if r.PendingReplacement {
			n += " pendingReplacement"
		}
		s.Resources = append(s.Resources, n)
	}
	for _, op := range d.Deployment.PendingOperations {
		s.Pending = append(s.Pending, op.Type+" "+name(op.Resource.URN))
	}
	if sp := d.Deployment.SecretsProviders; sp != nil {
		s.Secrets = sp.Type
	}
	return s
}

func TestJournalStart(t *testing.T) {
	e := newEnv(t)
	e.createStack("dev")
	tests := []struct {
		body string
		want *int
	}{
		{`{}`, nil},
		{`{"journalVersion":0}`, nil},
		{`{"journalVersion":1}`, new(1)},
		{`{"journalVersion":2}`, new(1)}, // a CLI that knows version 2 journals with version 1
	}
	for _, tt := range tests {
		var cr struct{ UpdateID string }
		decode(t, e.must(200, "POST", "/api/stacks/org/proj/dev/update", e.token, `{}`), &cr)
		path := "/api/stacks/org/proj/dev/update/" + cr.UpdateID
		var sr map[string]json.RawMessage
		decode(t, e.must(200, "POST", path, e.token, tt.body), &sr)
		var got *int
		if v, ok := sr["journalVersion"]; ok {
			got = new(0)
			decode(t, v, got)
		}
		if !cmp.Equal(got, tt.want) {
			t.Errorf("start %s: journalVersion = %s, want %v", tt.body, sr["journalVersion"], tt.want)
		}
		e.must(200, "POST", path+"/complete", "update-token "+strings.Trim(string(sr["token"]), `"`), `{"status":"succeeded"}`)
	}
}

func TestJournalReplay(t *testing.T) {
	stack, provider := "proj-dev", "default_4_16_0"
	tests := []struct {
		name string
		kind string
		base bool
		// want is the summary of the export after each request.
		want   []deploymentSummary
		status string
	}{
		{
			name: "create",
			kind: "update",
			want: []deploymentSummary{
				{Resources: []string{stack, provider}, Pending: []string{"creating a"}, Secrets: "passphrase"},
				{Resources: []string{stack, provider, "b", "a"}, Secrets: "passphrase"},
			},
			status: "succeeded",
		},
		{
			name: "update",
			kind: "update",
			base: true,
			// The base's pending create is kept; its pending update is dropped, as the engine drops it.
			want:   []deploymentSummary{{Resources: []string{stack, provider, "a", "b", "c"}, Pending: []string{"creating d"}, Secrets: "passphrase"}},
			status: "succeeded",
		},
		{
			name:   "delete",
			kind:   "update",
			base:   true,
			want:   []deploymentSummary{{Resources: []string{stack, provider, "a", "b"}, Pending: []string{"creating d"}, Secrets: "passphrase"}},
			status: "succeeded",
		},
		{
			name: "replace",
			kind: "update",
			base: true,
			want: []deploymentSummary{
				{Resources: []string{stack, provider, "a", "b", "c", "b delete"}, Pending: []string{"creating d"}, Secrets: "passphrase"},
				{Resources: []string{stack, provider, "a", "b", "c"}, Pending: []string{"creating d"}, Secrets: "passphrase"},
			},
			status: "succeeded",
		},
		{
			// The update of a failed (a keeps its state, after the resources this update produced), the
			// create of f never ended: it stays a pending operation, before the base's.
			name:   "failure",
			kind:   "update",
			base:   true,
			want:   []deploymentSummary{{Resources: []string{stack, provider, "b", "c", "a"}, Pending: []string{"creating f", "creating d"}, Secrets: "passphrase"}},
			status: "failed",
		},
		{
			name:   "refresh",
			kind:   "refresh",
			base:   true,
			want:   []deploymentSummary{{Resources: []string{stack, provider, "a", "c"}, Pending: []string{"creating d"}, Secrets: "passphrase"}},
			status: "succeeded",
		},
	}
	e := newEnv(t)
	base, err := os.ReadFile(filepath.Join("testdata", "journal_base.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.t = t
			e.createStack(tt.name)
			if tt.base {
				e.must(200, "POST", "/api/stacks/org/proj/"+tt.name+"/import", e.token, base)
			}
			export := "/api/stacks/org/proj/" + tt.name + "/export"
			path, lease := e.startJournaled(tt.name, tt.kind)
			reqs := journalRequests(t, tt.name)
			if len(reqs) != len(tt.want) {
				t.Fatalf("%d requests in testdata, %d summaries in the test", len(reqs), len(tt.want))
			}
			for i, req := range reqs {
				before := e.journalSnapshot(tt.name)
				e.must(200, "PATCH", path+"/journalentries", lease, []byte(req))
				got := summarize(t, e.must(200, "GET", export, e.token, nil))
				if diff := cmp.Diff(tt.want[i], got); diff != "" {
					t.Errorf("export after request %d (-want +got):\n%s", i+1, diff)
				}
				if after := e.journalSnapshot(tt.name); after.Stack.Version != before.Stack.Version+1 {
					t.Errorf("request %d: stack version %d, want %d", i+1, after.Stack.Version, before.Stack.Version+1)
				}
			}
			// A repeat of the last request changes nothing.
			before := e.journalSnapshot(tt.name)
			e.must(200, "PATCH", path+"/journalentries", lease, []byte(reqs[len(reqs)-1]))
			if diff := cmp.Diff(before, e.journalSnapshot(tt.name)); diff != "" {
				t.Errorf("repeated request changed the database (-before +after):\n%s", diff)
			}
			e.must(200, "POST", path+"/complete", lease, `{"status":"`+tt.status+`"}`)
			got := e.must(200, "GET", export, e.token, nil)
			checkGolden(t, "journal_"+tt.name+".golden.json", got)
			var count int
			if err := e.srv.db.Pool().QueryRow(context.Background(), `SELECT resource_count FROM svc_stacks WHERE name = $1`, tt.name).Scan(&count); err != nil {
				t.Fatal(err)
			}
			if want := len(summarize(t, got).Resources); count != want {
				t.Errorf("stack resource count = %d, want %d", count, want)
			}
		})
	}
}

// entriesOf returns the entries of the journal requests of testdata/journal_<name>.json, in order.
func entriesOf(t *testing.T, name string) []json.RawMessage {
	t.Helper()
	var all []json.RawMessage
	for _, req := range journalRequests(t, name) {
		var body stateapi.JournalEntries
		decode(t, req, &body)
		all = append(all, body.Entries...)
	}
	return all
}

// batch returns a journalentries body of entries.
func batch(entries ...json.RawMessage) map[string]any {
	return map[string]any{"entries": entries}
}

// TestJournalBatches sends the create journal as the Pulumi CLI may: batches that overlap (a retry
// after a lost answer), out of order (a later batch overtaking an earlier one), repeated.
func TestJournalBatches(t *testing.T) {
	all := entriesOf(t, "create") // sequence IDs 1..10
	tests := []struct {
		name    string
		batches [][]json.RawMessage
		// versions is the stack version after each batch: a batch after a gap stores no checkpoint.
		versions []int64
	}{
		{"in order", [][]json.RawMessage{all[:6], all[6:]}, []int64{1, 2}},
		{"overlapping", [][]json.RawMessage{all[:5], all[2:8], all[7:]}, []int64{1, 2, 3}},
		{"out of order", [][]json.RawMessage{all[6:], all[3:5], all[:3], all[5:6]}, []int64{0, 0, 1, 2}},
		{"repeated", [][]json.RawMessage{all, all, all[4:5]}, []int64{1, 1, 1}},
		{"one entry each", nil, nil},
	}
	for i := range all {
		tests[4].batches = append(tests[4].batches, all[i:i+1])
		tests[4].versions = append(tests[4].versions, int64(i+1))
	}
	e := newEnv(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.t = t
			stack := strings.ReplaceAll(tt.name, " ", "-")
			e.createStack(stack)
			path, lease := e.startJournaled(stack, "update")
			for i, b := range tt.batches {
				e.must(200, "PATCH", path+"/journalentries", lease, batch(b...))
				if got := e.journalSnapshot(stack).Stack.Version; got != tt.versions[i] {
					t.Errorf("after batch %d: stack version %d, want %d", i+1, got, tt.versions[i])
				}
			}
			if got := e.journalSnapshot(stack); got.Entries != int64(len(all)) || got.Replayed != int64(len(all)) {
				t.Errorf("journal holds %d entries, %d replayed; want %d, %d", got.Entries, got.Replayed, len(all), len(all))
			}
			e.must(200, "POST", path+"/complete", lease, `{"status":"succeeded"}`)
			checkGolden(t, "journal_create.golden.json", e.must(200, "GET", "/api/stacks/org/proj/"+stack+"/export", e.token, nil))
		})
	}
}

// entry returns a journal entry as the CLI serializes it, with fields (JSON values) after the common
// ones.
func entry(version, kind, seq, op int, fields string) json.RawMessage {
	e := fmt.Sprintf(`{"version":%d,"kind":%d,"sequenceID":%d,"operationID":%d,"removeOld":null,"removeNew":null`, version, kind, seq, op)
	if fields != "" {
		e += "," + fields
	}
	return json.RawMessage(e + "}")
}

func TestJournalErrors(t *testing.T) {
	e := newEnv(t)
	base, err := os.ReadFile(filepath.Join("testdata", "journal_base.json"))
	if err != nil {
		t.Fatal(err)
	}
	e.createStack("dev")
	e.must(200, "POST", "/api/stacks/org/proj/dev/import", e.token, base)
	path, lease := e.startJournaled("dev", "update")
	// Entries 1..3 of the update journal: the secrets manager, and the same step of the stack (operation
	// 1, producing a resource).
	update := entriesOf(t, "update")
	e.must(200, "PATCH", path+"/journalentries", lease, batch(update[:3]...))

	state := `"state":{"urn":"urn:pulumi:dev::proj::random:index/randomString:RandomString::z","custom":true,"type":"random:index/randomString:RandomString"}`
	operation := `"operation":{"resource":{"urn":"urn:pulumi:dev::proj::random:index/randomString:RandomString::z","custom":true,"type":"random:index/randomString:RandomString"},"type":"creating"}`
	tests := []struct {
		name string
		body any
		want int
	}{
		{"malformed JSON", `{"entries":[`, 400},
		{"no entries", `{"entries":[]}`, 400},
		{"entries not a list", `{"entries":{}}`, 400},
		{"entry not an object", `{"entries":[1]}`, 400},
		{"no kind", `{"entries":[{"version":1,"sequenceID":4,"operationID":2}]}`, 400},
		{"unknown kind", batch(entry(1, 42, 4, 2, "")), 400},
		{"state migration", batch(entry(2, 10, 4, 0, `"removeOlds":[2],"states":[]`)), 400},
		{"entry version 2", batch(entry(2, 0, 4, 2, "")), 400},
		{"sequence ID 0", batch(entry(1, 0, 0, 2, "")), 400},
		{"begin without operation ID", batch(entry(1, 0, 4, 0, "")), 400},
		{"negative removeOld", batch(entry(1, 1, 4, 2, `"removeOld":-1`)), 400},
		{"state without urn", batch(entry(1, 1, 4, 2, `"state":{"type":"x"}`)), 400},
		{"state not an object", batch(entry(1, 1, 4, 2, `"state":"x"`)), 400},
		{"operation without type", batch(entry(1, 0, 4, 2, `"operation":{"resource":{"urn":"u","type":"t"}}`)), 400},
		{"write without snapshot", batch(entry(1, 5, 4, 0, "")), 400},
		{"write with a malformed snapshot", batch(entry(1, 5, 4, 0, `"newSnapshot":{"resources":{}}`)), 400},
		{"extension without ref", batch(entry(1, 8, 4, 2, `"extension":{}`)), 400},
		{"snippets not a list", batch(entry(1, 9, 4, 0, `"snippets":{}`)), 400},
		{"two entries with one sequence ID", batch(entry(1, 0, 4, 2, ""), entry(1, 0, 4, 3, "")), 400},
		{"removeOld out of the base", batch(entry(1, 0, 4, 2, ""), entry(1, 1, 5, 2, `"removeOld":5,`+state)), 400},
		{"removeNew names no operation", batch(entry(1, 1, 4, 2, `"removeNew":7,`+state)), 400},
		{"removeNew names an operation without a resource", batch(entry(1, 0, 4, 2, ""), entry(1, 2, 5, 2, ""), entry(1, 1, 6, 3, `"removeNew":2`)), 400},
		{"deleteOld out of the base", batch(entry(1, 1, 4, 2, `"deleteOld":9`)), 400},
		{"deleteNew names no operation", batch(entry(1, 1, 4, 2, `"deleteNew":7`)), 400},
		{"pendingReplacementOld out of the base", batch(entry(1, 1, 4, 2, `"pendingReplacementOld":9`)), 400},
		{"pendingReplacementNew names no operation", batch(entry(1, 1, 4, 2, `"pendingReplacementNew":7`)), 400},
		{"outputs for no operation", batch(entry(1, 4, 4, 2, `"removeNew":7,`+state)), 400},
		{"refresh of no base resource", batch(entry(1, 3, 4, 2, `"removeOld":5,"isRefresh":true`)), 400},
		{"operation ends twice", batch(entry(1, 1, 4, 1, state)), 400},
		{"operation begins again", batch(entry(1, 0, 4, 1, operation)), 400},
		{"a bad entry after a good one", batch(entry(1, 0, 4, 2, operation), entry(1, 1, 5, 2, `"removeNew":9,`+state)), 400},
		{"stored entry with other content", batch(entry(1, 6, 1, 0, `"secretsProvider":{"type":"service"}`)), 409},
		{"another stack's token", batch(entry(1, 0, 4, 2, "")), 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.t = t
			auth := lease
			if strings.HasPrefix(tt.name, "another stack") {
				e.createStack("other")
				_, auth = e.startJournaled("other", "update")
			}
			before := e.journalSnapshot("dev")
			code, body := e.do("PATCH", path+"/journalentries", auth, tt.body)
			if code != tt.want {
				t.Errorf("PATCH journalentries = %d %s, want %d", code, body, tt.want)
			}
			var er errorResponse
			decode(t, body, &er)
			if er.Code != code || er.Message == "" {
				t.Errorf("error body = %s, want code %d and a message", body, code)
			}
			if diff := cmp.Diff(before, e.journalSnapshot("dev")); diff != "" {
				t.Errorf("database changed (-before +after):\n%s", diff)
			}
		})
	}
	e.t = t

	// An entry after a gap is stored unchecked, and checked when the gap is filled: the request that
	// fills it is refused, and changes nothing.
	e.must(200, "PATCH", path+"/journalentries", lease, batch(entry(1, 1, 6, 9, `"removeNew":77,`+state)))
	before := e.journalSnapshot("dev")
	if code, body := e.do("PATCH", path+"/journalentries", lease, batch(entry(1, 0, 4, 9, ""), entry(1, 0, 5, 10, ""))); code != 400 {
		t.Errorf("PATCH journalentries filling the gap = %d %s, want 400", code, body)
	}
	if diff := cmp.Diff(before, e.journalSnapshot("dev")); diff != "" {
		t.Errorf("database changed (-before +after):\n%s", diff)
	}

	// An update that did not ask for journaling, an expired lease, a completed update.
	e.createStack("plain")
	id, plain := e.startUpdate("plain", "update")
	e.must(409, "PATCH", "/api/stacks/org/proj/plain/update/"+id+"/journalentries", plain, batch(update[0]))
	e.must(200, "POST", "/api/stacks/org/proj/plain/update/"+id+"/complete", plain, `{"status":"succeeded"}`)
	before = e.journalSnapshot("dev")
	e.clock.advance(DefaultLease + time.Second)
	e.must(403, "PATCH", path+"/journalentries", lease, batch(update[3:5]...))
	path2, lease2 := e.startJournaled("plain", "update")
	e.must(200, "POST", path2+"/complete", lease2, `{"status":"succeeded"}`)
	e.must(409, "PATCH", path2+"/journalentries", lease2, batch(update[0]))
	if diff := cmp.Diff(before, e.journalSnapshot("dev")); diff != "" {
		t.Errorf("database changed (-before +after):\n%s", diff)
	}
}

// forgetCaches empties the replica's caches, as a restart or another replica's write would.
func (e *env) forgetCaches() {
	e.srv.texts.mu.Lock()
	defer e.srv.texts.mu.Unlock()
	e.srv.texts.m, e.srv.texts.replays = nil, nil
}

// TestJournalCacheMiss sends the create journal in batches with the replica's caches lost between
// them: each replay starts again from the base and gives the same deployment as a cached one.
func TestJournalCacheMiss(t *testing.T) {
	all := entriesOf(t, "create")
	e := newEnv(t)
	for _, forget := range []bool{false, true} {
		stack := fmt.Sprintf("forget-%v", forget)
		e.createStack(stack)
		path, lease := e.startJournaled(stack, "update")
		for _, b := range [][]json.RawMessage{all[:3], all[3:7], all[7:]} {
			if forget {
				e.forgetCaches()
			}
			e.must(200, "PATCH", path+"/journalentries", lease, batch(b...))
		}
		e.must(200, "POST", path+"/complete", lease, `{"status":"succeeded"}`)
		checkGolden(t, "journal_create.golden.json", e.must(200, "GET", "/api/stacks/org/proj/"+stack+"/export", e.token, nil))
	}
}
