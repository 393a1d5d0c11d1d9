package journal

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestReplayJournal replays journals onto small bases, without the database, and compares the whole
// deployment.
func TestReplayJournal(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	const base = `{"version":3,"deployment":{"manifest":{"time":"2025-01-01T00:00:00Z","magic":"m","version":"v3.225.0"},` +
		`"resources":[{"urn":"u::x","type":"t"},{"urn":"u::y","type":"t","parent":"u::x","dependencies":["u::x"]}],` +
		`"pending_operations":[{"resource":{"urn":"u::p","type":"t"},"type":"deleting"},{"resource":{"urn":"u::q","type":"t"},"type":"creating"}]}}`
	const manifest = `"manifest":{"time":"2026-01-02T03:04:05Z","magic":"m","version":"v3.225.0"}`
	const kept = `"pending_operations":[{"resource":{"urn":"u::q","type":"t"},"type":"creating"}]`
	tests := []struct {
		name    string
		base    string
		entries []string
		want    string
	}{
		{
			name:    "nothing but the secrets manager",
			entries: []string{`{"version":1,"kind":6,"sequenceID":1,"operationID":0,"secretsProvider":{"type":"passphrase","state":{"salt":"s"}}}`},
			want: `{"version":3,"deployment":{` + manifest + `,"secrets_providers":{"type":"passphrase","state":{"salt":"s"}},` +
				`"resources":[{"urn":"u::x","type":"t"},{"urn":"u::y","type":"t","parent":"u::x","dependencies":["u::x"]}],` + kept + `}}`,
		},
		{
			name: "operations in flight in the order they began",
			entries: []string{
				`{"version":1,"kind":0,"sequenceID":1,"operationID":2,"operation":{"resource":{"urn":"u::b","type":"t"},"type":"creating"}}`,
				`{"version":1,"kind":0,"sequenceID":2,"operationID":1,"operation":{"resource":{"urn":"u::x","type":"t"},"type":"updating"}}`,
				`{"version":1,"kind":0,"sequenceID":3,"operationID":3}`,
			},
			want: `{"version":3,"deployment":{` + manifest + `,"resources":[{"urn":"u::x","type":"t"},{"urn":"u::y","type":"t","parent":"u::x","dependencies":["u::x"]}],` +
				`"pending_operations":[{"resource":{"urn":"u::b","type":"t"},"type":"creating"},{"resource":{"urn":"u::x","type":"t"},"type":"updating"},` +
				`{"resource":{"urn":"u::q","type":"t"},"type":"creating"}]}}`,
		},
		{
			name: "delete before replace marks the old resource pending replacement",
			entries: []string{
				`{"version":1,"kind":0,"sequenceID":1,"operationID":1,"operation":{"resource":{"urn":"u::x","type":"t"},"type":"deleting"}}`,
				`{"version":1,"kind":1,"sequenceID":2,"operationID":1,"pendingReplacementOld":0}`,
			},
			want: `{"version":3,"deployment":{` + manifest + `,"resources":[{"urn":"u::x","type":"t","pendingReplacement":true},` +
				`{"urn":"u::y","type":"t","parent":"u::x","dependencies":["u::x"]}],` + kept + `}}`,
		},
		{
			name: "marks on a produced resource, until outputs replace it",
			entries: []string{
				`{"version":1,"kind":1,"sequenceID":1,"operationID":1,"state":{"urn":"u::n","type":"t"}}`,
				`{"version":1,"kind":1,"sequenceID":2,"operationID":2,"state":{"urn":"u::o","type":"t"},"deleteNew":1}`,
				`{"version":1,"kind":1,"sequenceID":3,"operationID":3,"pendingReplacementNew":1}`,
				`{"version":1,"kind":1,"sequenceID":4,"operationID":4,"state":{"urn":"u::z","type":"t"}}`,
				`{"version":1,"kind":1,"sequenceID":5,"operationID":5,"deleteNew":4}`,
				`{"version":1,"kind":4,"sequenceID":6,"operationID":6,"removeNew":4,"state":{"urn":"u::z","type":"t","outputs":{"k":1}}}`,
			},
			want: `{"version":3,"deployment":{` + manifest + `,"resources":[{"urn":"u::n","type":"t","delete":true,"pendingReplacement":true},` +
				`{"urn":"u::o","type":"t"},{"urn":"u::z","type":"t","outputs":{"k":1}},` +
				`{"urn":"u::x","type":"t"},{"urn":"u::y","type":"t","parent":"u::x","dependencies":["u::x"]}],` + kept + `}}`,
		},
		{
			name: "a resource produced then deleted",
			entries: []string{
				`{"version":1,"kind":1,"sequenceID":1,"operationID":1,"state":{"urn":"u::n","type":"t"}}`,
				`{"version":1,"kind":1,"sequenceID":2,"operationID":2,"removeNew":1}`,
			},
			want: `{"version":3,"deployment":{` + manifest + `,"resources":[{"urn":"u::x","type":"t"},{"urn":"u::y","type":"t","parent":"u::x","dependencies":["u::x"]}],` + kept + `}}`,
		},
		{
			name: "a refresh drops references to what it deleted",
			entries: []string{
				`{"version":1,"kind":0,"sequenceID":1,"operationID":1}`,
				`{"version":1,"kind":3,"sequenceID":2,"operationID":1,"removeOld":0,"isRefresh":true}`,
			},
			want: `{"version":3,"deployment":{` + manifest + `,"resources":[{"urn":"u::y","type":"t"}],` + kept + `}}`,
		},
		{
			name: "a refresh of a produced resource",
			entries: []string{
				`{"version":1,"kind":1,"sequenceID":1,"operationID":1,"state":{"urn":"u::n","type":"t","deletedWith":"u::x","replaceWith":["u::x"]}}`,
				`{"version":1,"kind":3,"sequenceID":2,"operationID":2,"removeNew":1,"state":{"urn":"u::n","type":"t","outputs":{"r":2},"deletedWith":"u::x","replaceWith":["u::x"]},"isRefresh":true}`,
			},
			// n comes before x: after a refresh its references to x go, as the engine's replay drops them.
			want: `{"version":3,"deployment":{` + manifest + `,"resources":[{"urn":"u::n","type":"t","outputs":{"r":2}},` +
				`{"urn":"u::x","type":"t"},{"urn":"u::y","type":"t","parent":"u::x","dependencies":["u::x"]}],` + kept + `}}`,
		},
		{
			name: "write replaces the base",
			entries: []string{
				`{"version":1,"kind":5,"sequenceID":1,"operationID":0,"newSnapshot":{"manifest":{"time":"2025-06-01T00:00:00Z","magic":"m2","version":"v3.230.0"},` +
					`"resources":[{"urn":"u::w","type":"t"},{"urn":"u::x","type":"t"}]}}`,
				`{"version":1,"kind":1,"sequenceID":2,"operationID":1,"removeOld":1,"state":{"urn":"u::x","type":"t","outputs":{"v":1}}}`,
			},
			want: `{"version":3,"deployment":{"manifest":{"time":"2026-01-02T03:04:05Z","magic":"m2","version":"v3.230.0"},` +
				`"resources":[{"urn":"u::x","type":"t","outputs":{"v":1}},{"urn":"u::w","type":"t"}]}}`,
		},
		{
			name: "rebuilt base state: later indices name the rebuilt base's resources",
			entries: []string{
				`{"version":1,"kind":1,"sequenceID":1,"operationID":1,"state":{"urn":"u::n","type":"t"}}`,
				`{"version":1,"kind":0,"sequenceID":2,"operationID":2,"operation":{"resource":{"urn":"u::b","type":"t"},"type":"updating"}}`,
				`{"version":1,"kind":7,"sequenceID":3,"operationID":0}`,
				`{"version":1,"kind":1,"sequenceID":4,"operationID":3,"removeOld":0,"state":{"urn":"u::n","type":"t","outputs":{"v":2}}}`,
			},
			// The update in flight became a pending operation of the rebuilt base; as it is no create, the
			// next replay drops it.
			want: `{"version":3,"deployment":{` + manifest + `,"resources":[{"urn":"u::n","type":"t","outputs":{"v":2}},` +
				`{"urn":"u::x","type":"t"},{"urn":"u::y","type":"t","parent":"u::x","dependencies":["u::x"]}],` + kept + `}}`,
		},
		{
			name: "extensions, snippets and byte strings",
			base: `{"version":4,"features":["refreshBeforeUpdate"],"deployment":{"manifest":{"time":"2025-01-01T00:00:00Z","magic":"m","version":"v3.225.0"},` +
				`"resources":[],"extensions":{"r1":{"name":"base"}}}}`,
			entries: []string{
				`{"version":1,"kind":8,"sequenceID":1,"operationID":1,"extensionRef":"r2","extension":{"name":"new"}}`,
				`{"version":1,"kind":8,"sequenceID":2,"operationID":2,"extensionRef":"r1","extension":{"name":"journal"}}`,
				`{"version":1,"kind":9,"sequenceID":3,"operationID":0,"snippets":[{"id":"s1"}]}`,
				`{"version":1,"kind":1,"sequenceID":4,"operationID":3,"state":{"urn":"u::n","type":"t"},"requiresByteString":true}`,
			},
			want: `{"version":4,"features":["byteString","refreshBeforeUpdate","snippets-prototype"],"deployment":{` + manifest + `,` +
				`"resources":[{"urn":"u::n","type":"t"}],"extensions":{"r2":{"name":"new"},"r1":{"name":"base"}},"snippets":[{"id":"s1"}]}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.base
			if b == "" {
				b = base
			}
			entries := make([]json.RawMessage, len(tt.entries))
			for i, e := range tt.entries {
				entries[i] = json.RawMessage(e)
			}
			got, count, err := Replay([]byte(b), entries, now)
			if err != nil {
				t.Fatalf("Replay() = %v", err)
			}
			var g, w any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatalf("Replay() = %s: %v", got, err)
			}
			if err := json.Unmarshal([]byte(tt.want), &w); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(w, g); diff != "" {
				t.Errorf("Replay() (-want +got):\n%s", diff)
			}
			if want := len(g.(map[string]any)["deployment"].(map[string]any)["resources"].([]any)); count != want {
				t.Errorf("Replay() counted %d resources, want %d", count, want)
			}
			// A Replayer asked for its deployment after every entry (as the server does after every
			// request) ends with the same bytes.
			r, err := NewReplayer([]byte(b))
			if err != nil {
				t.Fatal(err)
			}
			var step []byte
			for _, e := range entries {
				if err := r.Apply(e, now); err != nil {
					t.Fatalf("Apply(%s) = %v", e, err)
				}
				if step, _, err = r.Bytes(now); err != nil {
					t.Fatalf("Bytes() = %v", err)
				}
			}
			if string(step) != string(got) || r.Applied() != len(entries) {
				t.Errorf("entry by entry = %s (%d applied), want %s (%d)", step, r.Applied(), got, len(entries))
			}
		})
	}
}
