package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/cdkx-dev/cdkx/internal/server/integrity/integritytest"
	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
)

// dumpTables returns every row of every svc_ table, as text, in a stable order.
func (e *env) dumpTables() map[string][]string {
	e.t.Helper()
	ctx := context.Background()
	rows, err := e.srv.db.Pool().Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_name LIKE 'svc\_%' ORDER BY 1`)
	if err != nil {
		e.t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string][]string{}
	for _, table := range tables {
		rows, err := e.srv.db.Pool().Query(ctx, `SELECT t::text FROM `+pgx.Identifier{table}.Sanitize()+` t ORDER BY 1`)
		if err != nil {
			e.t.Fatal(err)
		}
		if out[table], err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			e.t.Fatal(err)
		}
	}
	return out
}

// editAt returns a one-edit deploymentDelta replacing bytes [start, end) by text.
func editAt(start, end int, text string) []map[string]any {
	return []map[string]any{{"Span": map[string]any{"uri": "", "start": map[string]int{"offset": start}, "end": map[string]int{"offset": end}}, "NewText": text}}
}

// TestWritesKeepStateValid sends, on every path that writes state, requests whose result is not a
// deployment its readers can read back: each is a 400 that changes no row of any svc_ table. Valid
// requests on the same paths then succeed.
func TestWritesKeepStateValid(t *testing.T) {
	e := newEnv(t)
	// A Pulumi update, at a valid checkpoint.
	e.createStack("p")
	pid, plea := e.startUpdate("p", "update")
	ppath := "/api/stacks/org/proj/p/update/" + pid
	pbase := integritytest.PulumiText(3)
	e.must(200, "PATCH", ppath+"/checkpointverbatim", plea, map[string]any{"version": 3, "untypedDeployment": json.RawMessage(pbase), "sequenceNumber": 1})
	delta := func(seq int, start, end int, text string) map[string]any {
		next := pbase[:start] + text + pbase[end:]
		return map[string]any{"version": 1, "checkpointHash": hashOf(next), "sequenceNumber": seq, "deploymentDelta": editAt(start, end, text)}
	}
	r0 := strings.Index(pbase, `{"urn"`)
	r1 := strings.Index(pbase[r0+1:], `{"urn"`) + r0 + 1
	// A cdkx commit, at a valid document.
	e.createStack("c")
	cid, clea := e.startUpdate("c", "update")
	cpath := "/api/stacks/org/proj/c/update/" + cid + "/commit"
	cbase := integritytest.CdkxText(3)
	e.must(200, "PATCH", cpath, clea, map[string]any{"sequenceNumber": 1, "baseVersion": 0, "checkpointHash": hashOf(cbase), "deploymentText": cbase, "deploymentId": "d1"})
	commit := func(seq int, start, end int, text string) map[string]any {
		next := cbase[:start] + text + cbase[end:]
		return map[string]any{"sequenceNumber": seq, "baseVersion": 1, "checkpointHash": hashOf(next), "deploymentDelta": editAt(start, end, text), "deploymentId": "d1",
			"events": []map[string]any{{"status": "CREATE_COMPLETE", "logicalId": "x", "time": "2026-01-02T03:04:05Z"}}}
	}
	c0 := strings.Index(cbase, "\n{") + 1
	c1 := strings.Index(cbase[c0:], "\n{") + c0 + 1
	// A journaled update.
	e.createStack("j")
	jpath, jlea := e.startJournaled("j", "update")
	state := `"state":{"urn":"urn:pulumi:j::proj::t::a","type":"t","custom":true}`

	tests := []struct {
		name         string
		method, path string
		auth         string
		body         any
		want         int
	}{
		{"checkpoint: a string", "PATCH", ppath + "/checkpoint", plea, `{"version":3,"deployment":"just a string"}`, 400},
		{"checkpoint: deployment []", "PATCH", ppath + "/checkpoint", plea, `{"version":3,"deployment":[]}`, 400},
		{"checkpoint: resource without type", "PATCH", ppath + "/checkpoint", plea, `{"version":3,"deployment":{"resources":[{"urn":"u"}]}}`, 400},
		{"checkpoint: version 2", "PATCH", ppath + "/checkpoint", plea, `{"version":2,"deployment":{}}`, 400},
		{"verbatim: a string", "PATCH", ppath + "/checkpointverbatim", plea, `{"version":3,"untypedDeployment":"just a string","sequenceNumber":2}`, 400},
		{"verbatim: not a deployment", "PATCH", ppath + "/checkpointverbatim", plea, `{"version":3,"untypedDeployment":{"version":3,"deployment":[]},"sequenceNumber":2}`, 400},
		{"verbatim: duplicate URNs", "PATCH", ppath + "/checkpointverbatim", plea,
			`{"version":3,"untypedDeployment":{"version":3,"deployment":{"resources":[{"urn":"u","type":"t"},{"urn":"u","type":"t"}]}},"sequenceNumber":2}`, 400},
		{"delta: closing brace deleted", "PATCH", ppath + "/checkpointdelta", plea, delta(2, len(pbase)-1, len(pbase), ""), 400},
		{"delta: duplicate URN", "PATCH", ppath + "/checkpointdelta", plea, delta(2, r1, r1, integritytest.PulumiResource(0, "")+","), 400},
		{"delta: resource without type", "PATCH", ppath + "/checkpointdelta", plea, delta(2, r0, r1-1, `{"urn":"x"}`), 400},
		{"delta: hash mismatch", "PATCH", ppath + "/checkpointdelta", plea,
			map[string]any{"version": 1, "checkpointHash": hashOf("x"), "sequenceNumber": 2, "deploymentDelta": editAt(r0, r0, "")}, 400},
		{"commit: a string", "PATCH", cpath, clea,
			map[string]any{"sequenceNumber": 2, "baseVersion": 1, "checkpointHash": hashOf("just a string"), "deploymentText": "just a string", "deploymentId": "d1"}, 400},
		{"commit: closing brace deleted", "PATCH", cpath, clea, commit(2, len(cbase)-1, len(cbase), ""), 400},
		{"commit: duplicate resource", "PATCH", cpath, clea, commit(2, c1, c1, cbase[c0:c1]), 400},
		{"commit: resource without type", "PATCH", cpath, clea, commit(2, c0, c1-2, strings.Replace(cbase[c0:c1-2], `"type":"cdkx:Core:Data"`, `"other":1`, 1)), 400},
		{"commit: not a cdkx document", "PATCH", cpath, clea,
			map[string]any{"sequenceNumber": 2, "baseVersion": 1, "checkpointHash": hashOf(pbase), "deploymentText": pbase, "deploymentId": "d1"}, 400},
		{"commit: hash mismatch", "PATCH", cpath, clea,
			map[string]any{"sequenceNumber": 2, "baseVersion": 1, "checkpointHash": hashOf("x"), "deploymentDelta": editAt(c0, c0, ""), "deploymentId": "d1"}, 400},
		{"commit: events without a deployment", "PATCH", cpath, clea,
			map[string]any{"sequenceNumber": 2, "baseVersion": 1, "checkpointHash": hashOf(cbase), "deploymentDelta": editAt(c0, c0, ""),
				"events": []map[string]any{{"status": "CREATE_COMPLETE", "time": "2026-11-24T00:00:00Z"}}}, 400},
		{"journal: unknown operation", "PATCH", jpath + "/journalentries", jlea, batch(entry(1, 0, 1, 1, ""), entry(1, 1, 2, 1, `"removeNew":7,`+state)), 400},
		{"journal: unknown base resource", "PATCH", jpath + "/journalentries", jlea, batch(entry(1, 0, 1, 1, ""), entry(1, 1, 2, 1, `"deleteOld":3,`+state)), 400},
		{"journal: state without type", "PATCH", jpath + "/journalentries", jlea, batch(entry(1, 1, 1, 1, `"state":{"urn":"u"}`)), 400},
	}
	// What some of the answers say: what is wrong and where.
	precise := map[string]string{
		"checkpoint: a string":                "invalid at byte 26 (deployment): the deployment is not a JSON object",
		"delta: closing brace deleted":        fmt.Sprintf("invalid at byte %d: unexpected end of the text", len(pbase)-1),
		"delta: duplicate URN":                "(deployment.resources[1]): duplicate resource urn:pulumi:dev::p::t::r000",
		"delta: resource without type":        "(deployment.resources[0]): the resource has no type",
		"commit: a string":                    "invalid at byte 0: unexpected 'j', want '{'",
		"commit: duplicate resource":          "(deployment.resources[1]): duplicate resource urn:pulumi:dev::p::cdkx:Core:Data::r000",
		"commit: not a cdkx document":         "(deployment.resources[0]): the resource has no cdkx logical ID",
		"journal: unknown operation":          "removeNew 7 names no operation of this update",
		"verbatim: duplicate URNs":            "duplicate resource u",
		"checkpoint: resource without type":   "the resource has no type",
		"verbatim: not a deployment":          "the deployment is not a JSON object",
		"commit: resource without type":       "the resource has no type",
		"journal: unknown base resource":      "deleteOld 3 is not the index of a resource",
		"checkpoint: deployment []":           "the deployment is not a JSON object",
		"delta: hash mismatch":                "checkpointHash mismatch",
		"commit: hash mismatch":               "checkpointHash mismatch",
		"commit: events without a deployment": "events belong to a deployment",
		"commit: closing brace deleted":       "unexpected end of the text",
		"verbatim: a string":                  "want '{'",
		"checkpoint: version 2":               "deployment version 2 is not supported",
		"journal: state without type":         "no urn or type",
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.t = t
			before := e.dumpTables()
			code, body := e.do(tt.method, tt.path, tt.auth, tt.body)
			if code != tt.want {
				t.Errorf("%s %s = %d %s, want %d", tt.method, tt.path, code, body, tt.want)
			}
			if msg, ok := precise[tt.name]; ok && !strings.Contains(string(body), msg) {
				t.Errorf("%s %s = %s, want a message with %q", tt.method, tt.path, body, msg)
			}
			if diff := cmp.Diff(before, e.dumpTables()); diff != "" {
				t.Errorf("database changed (-before +after):\n%s", diff)
			}
		})
	}
	e.t = t
	// Valid writes on the same paths succeed.
	e.must(200, "PATCH", ppath+"/checkpointdelta", plea, delta(2, r1, r1, integritytest.PulumiResource(9, "")+","))
	e.must(200, "PATCH", cpath, clea, commit(2, c1, c1, integritytest.CdkxResource("r001", "")+",\n"))
	e.must(200, "PATCH", jpath+"/journalentries", jlea, batch(entry(1, 0, 1, 1, ""), entry(1, 1, 2, 1, state)))
	for stack, want := range map[string]int64{"p": 2, "c": 2, "j": 1} {
		if got := e.snapshot(stack).Version; got != want {
			t.Errorf("stack %s at version %d after its valid write, want %d", stack, got, want)
		}
	}
}

// TestDeltaCacheMiss checks deltas and commits on a replica that lost its cache (a restart, or another
// replica wrote): the index is built again from the stored text, and the checks are the same.
func TestDeltaCacheMiss(t *testing.T) {
	e := newEnv(t)
	e.createStack("p")
	id, lease := e.startUpdate("p", "update")
	path := "/api/stacks/org/proj/p/update/" + id
	text := integritytest.PulumiText(3)
	e.must(200, "PATCH", path+"/checkpointverbatim", lease, map[string]any{"version": 3, "untypedDeployment": json.RawMessage(text), "sequenceNumber": 1})
	for seq := 2; seq < 6; seq++ {
		e.forgetCaches()
		at := strings.Index(text, "]")
		bad := text[:at] + "," + integritytest.PulumiResource(0, "") + text[at:] // a duplicate URN
		e.must(400, "PATCH", path+"/checkpointdelta", lease, map[string]any{"version": 1, "checkpointHash": hashOf(bad), "sequenceNumber": seq,
			"deploymentDelta": editAt(at, at, ","+integritytest.PulumiResource(0, ""))})
		next := text[:at] + "," + integritytest.PulumiResource(seq*10, "") + text[at:]
		e.must(200, "PATCH", path+"/checkpointdelta", lease, map[string]any{"version": 1, "checkpointHash": hashOf(next), "sequenceNumber": seq,
			"deploymentDelta": editAt(at, at, ","+integritytest.PulumiResource(seq*10, ""))})
		text = next
	}
	if got := string(e.must(200, "GET", "/api/stacks/org/proj/p/export", e.token, nil)); got != text {
		t.Errorf("export = %s, want %s", got, text)
	}
}

// TestDeltasAcrossReplicas alternates deltas and commits between two replicas, as the bench and a load
// balancer do: each replica brings its cached text and index forward through the other's stored deltas
// (rollForward), checks a bad edit as a whole read would, and exports what was sent.
func TestDeltasAcrossReplicas(t *testing.T) {
	c := newCluster(t)
	c.must(200, 0, "POST", "/api/stacks/org/proj", c.token, map[string]any{"stackName": "dev"})
	path, lease := c.begin("dev", 0, 1)
	text := integritytest.CdkxText(3)
	// A string body is sent as it is (a json.RawMessage would be compacted).
	c.must(200, 0, "PATCH", path+"/checkpointverbatim", lease, `{"version":3,"untypedDeployment":`+text+`,"sequenceNumber":1}`)
	for seq := 2; seq < 30; seq++ {
		at := strings.LastIndex(text, "\n]")
		id := fmt.Sprintf("s%03d", seq)
		if seq%5 == 0 {
			// A duplicate of the first resource: refused, by either replica.
			dup := ",\n" + text[strings.Index(text, "\n{")+1:strings.Index(text, ",\n")]
			bad := text[:at] + dup + text[at:]
			c.must(400, seq, "PATCH", path+"/commit", lease, map[string]any{"sequenceNumber": seq, "baseVersion": seq - 1,
				"checkpointHash": hashOf(bad), "deploymentDelta": editAt(at, at, dup), "deploymentId": "d1"})
		}
		line := ",\n" + integritytest.CdkxResource(id, "")
		next := text[:at] + line + text[at:]
		if seq%2 == 0 {
			c.must(200, seq, "PATCH", path+"/checkpointdelta", lease, map[string]any{"version": 1, "checkpointHash": hashOf(next), "sequenceNumber": seq,
				"deploymentDelta": editAt(at, at, line)})
		} else {
			c.must(200, seq, "PATCH", path+"/commit", lease, map[string]any{"sequenceNumber": seq, "baseVersion": seq - 1,
				"checkpointHash": hashOf(next), "deploymentDelta": editAt(at, at, line), "deploymentId": "d1"})
		}
		text = next
	}
	for i := range 2 {
		if got := string(c.must(200, i, "GET", "/api/stacks/org/proj/dev/export", c.token, nil)); got != text {
			t.Errorf("export (replica %d) = %s, want %s", i, got, text)
		}
	}
}
