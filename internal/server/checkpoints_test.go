package server

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cdkx-dev/cdkx/internal/server/storage"
	"github.com/google/go-cmp/cmp"
)

func TestEditsRoundTrip(t *testing.T) {
	tests := []struct {
		name, prev, next string
		want             int // edits diffText returns
	}{
		{"equal", "abc", "abc", 0},
		{"insert middle", "abcd", "abXYcd", 1},
		{"delete end", "abcd", "ab", 1},
		{"replace all", "abc", "xyz", 1},
		{"from empty", "", "new", 1},
		{"to empty", "old", "", 1},
		// The common prefix splits a two-byte character: the edit's text is not valid UTF-8 and must
		// still be kept byte for byte.
		{"split rune", "caf\u00e9", "caf\u00e8", 1},
		{"repeated bytes", "aaaa", "aaaaaa", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			edits := diffText([]byte(tt.prev), []byte(tt.next))
			if len(edits) != tt.want {
				t.Errorf("diffText() = %d edits, want %d", len(edits), tt.want)
			}
			decoded, err := decodeEdits(encodeEdits(edits))
			if err != nil {
				t.Fatalf("decodeEdits() = %v", err)
			}
			if diff := cmp.Diff(len(edits), len(decoded)); diff != "" {
				t.Fatalf("edit count changed (-want +got):\n%s", diff)
			}
			got, err := applyDelta([]byte(tt.prev), decoded)
			if err != nil {
				t.Fatalf("applyDelta() = %v", err)
			}
			if string(got) != tt.next {
				t.Errorf("round trip = %q, want %q", got, tt.next)
			}
		})
	}
	if _, err := decodeEdits([]byte{0x05}); err == nil {
		t.Errorf("decodeEdits(truncated) = nil error, want one")
	}
}

// growingDeployment is a deployment of n resources, each about 200 bytes.
func growingDeployment(n int) string {
	res := make([]string, n)
	for i := range res {
		res[i] = fmt.Sprintf(`{"urn":"urn:pulumi:dev::proj::cdkx:Core:Data::r%04d","type":"cdkx:Core:Data","custom":true,"id":"id-%04d","outputs":{"value":"%s"}}`,
			i, i, strings.Repeat("x", 100))
	}
	return `{"version":3,"deployment":{"manifest":{"time":"2026-01-02T03:04:05Z","magic":"","version":"cdkx"},"resources":[` + strings.Join(res, ",") + `]}}`
}

// TestCheckpointStorageIsLinear sends one verbatim checkpoint per resource added (the worst case for
// whole-checkpoint storage: N checkpoints of up to N resources) and checks that every version exports
// byte for byte, from this replica's cache and from a fresh replica that rebuilds it from the stored
// snapshots and deltas, and that the bytes stored stay within a small multiple of the final state.
func TestCheckpointStorageIsLinear(t *testing.T) {
	e := newEnv(t)
	e.createStack("dev")
	id, lease := e.startUpdate("dev", "update")
	path := "/api/stacks/org/proj/dev/update/" + id
	const n = 300
	sent := make([]string, n+1)
	for i := 1; i <= n; i++ {
		sent[i] = growingDeployment(i)
		e.must(200, "PATCH", path+"/checkpointverbatim", lease,
			`{"version":3,"untypedDeployment":`+sent[i]+fmt.Sprintf(`,"sequenceNumber":%d}`, i))
	}
	e.must(200, "POST", path+"/complete", lease, `{"status":"succeeded"}`)

	var stored, snapshots int64
	if err := e.srv.pool.QueryRow(context.Background(), `SELECT sum(coalesce(length(data), 0) + coalesce(length(delta), 0)),
 count(data) FROM svc_checkpoints`).Scan(&stored, &snapshots); err != nil {
		t.Fatal(err)
	}
	final := int64(len(sent[n]))
	whole := int64(0)
	for _, s := range sent[1:] {
		whole += int64(len(s))
	}
	t.Logf("%d versions: %d bytes stored (%d snapshots), final state %d bytes, whole checkpoints would be %d bytes",
		n, stored, snapshots, final, whole)
	if stored > 4*final {
		t.Errorf("stored %d bytes for a final state of %d bytes: want at most 4× (linear), whole checkpoints would take %d", stored, final, whole)
	}

	fresh, err := Open(context.Background(), e.srv.pool.Config().ConnString(), Options{Now: e.clock.now})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	for _, srv := range []*Server{e.srv, fresh} {
		for v := 1; v <= n; v++ {
			err := srv.inTx(context.Background(), func(tx *storage.Tx) error {
				got, err := srv.checkpointText(context.Background(), tx, 1, int64(v))
				if err != nil {
					return err
				}
				if string(got) != sent[v] {
					t.Errorf("version %d rebuilt as %d bytes, want the %d bytes sent", v, len(got), len(sent[v]))
				}
				return nil
			})
			if err != nil {
				t.Fatalf("version %d: %v", v, err)
			}
		}
	}
	if got := string(e.must(200, "GET", "/api/stacks/org/proj/dev/export/7?checkpoint=true", e.token, nil)); got != sent[7] {
		t.Errorf("export/7 = %d bytes, want the %d bytes sent", len(got), len(sent[7]))
	}
}

// TestApplyChain checks that applying a chain of random deltas at once gives what applying them one by
// one gives, and that a chain with an edit out of bounds is an error.
func TestApplyChain(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	base := []byte(strings.Repeat("0123456789", 20))
	text := base
	var chain [][]textEdit
	for range 200 {
		var edits []textEdit
		pos := 0
		for pos < len(text) && rng.IntN(3) > 0 {
			start := pos + rng.IntN(len(text)-pos+1)
			end := start + rng.IntN(min(8, len(text)-start)+1)
			var e textEdit
			e.Span.Start.Offset, e.Span.End.Offset, e.NewText = start, end, strings.Repeat(string(rune('a'+rng.IntN(26))), rng.IntN(6))
			edits = append(edits, e)
			pos = end
		}
		next, err := applyDelta(text, edits)
		if err != nil {
			t.Fatal(err)
		}
		chain = append(chain, edits)
		text = next
		got, err := applyChain(base, chain)
		if err != nil {
			t.Fatalf("applyChain(%d deltas) = %v", len(chain), err)
		}
		if string(got) != string(text) {
			t.Fatalf("applyChain(%d deltas) = %q, want %q", len(chain), got, text)
		}
	}
	var bad textEdit
	bad.Span.Start.Offset, bad.Span.End.Offset = 0, len(text)+1
	if _, err := applyChain(base, append(chain, []textEdit{bad})); err == nil {
		t.Errorf("applyChain(out of bounds) = nil error, want one")
	}
}
