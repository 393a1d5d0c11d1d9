package integrity

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/pkg/stateapi"
)

// TestEditsRoundTrip checks that Diff, EncodeEdits and DecodeEdits turn one text into another byte for
// byte, and that a truncated encoding is an error.
func TestEditsRoundTrip(t *testing.T) {
	tests := []struct {
		name, prev, next string
		want             int // edits Diff returns
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
			edits := Diff([]byte(tt.prev), []byte(tt.next))
			if len(edits) != tt.want {
				t.Errorf("Diff() = %d edits, want %d", len(edits), tt.want)
			}
			decoded, err := DecodeEdits(EncodeEdits(edits))
			if err != nil {
				t.Fatalf("DecodeEdits() = %v", err)
			}
			if diff := cmp.Diff(len(edits), len(decoded)); diff != "" {
				t.Fatalf("edit count changed (-want +got):\n%s", diff)
			}
			got, err := ApplyEdits([]byte(tt.prev), decoded)
			if err != nil {
				t.Fatalf("ApplyEdits() = %v", err)
			}
			if string(got) != tt.next {
				t.Errorf("round trip = %q, want %q", got, tt.next)
			}
		})
	}
	if _, err := DecodeEdits([]byte{0x05}); err == nil {
		t.Errorf("DecodeEdits(truncated) = nil error, want one")
	}
}

// TestApplyChain checks that applying a chain of random deltas at once gives what applying them one by
// one gives, and that a chain with an edit out of bounds is an error.
func TestApplyChain(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	base := []byte(strings.Repeat("0123456789", 20))
	text := base
	var chain [][]stateapi.TextEdit
	for range 200 {
		var edits []stateapi.TextEdit
		pos := 0
		for pos < len(text) && rng.IntN(3) > 0 {
			start := pos + rng.IntN(len(text)-pos+1)
			end := start + rng.IntN(min(8, len(text)-start)+1)
			var e stateapi.TextEdit
			e.Span.Start.Offset, e.Span.End.Offset, e.NewText = start, end, strings.Repeat(string(rune('a'+rng.IntN(26))), rng.IntN(6))
			edits = append(edits, e)
			pos = end
		}
		next, err := ApplyEdits(text, edits)
		if err != nil {
			t.Fatal(err)
		}
		chain = append(chain, edits)
		text = next
		got, err := ApplyChain(base, chain)
		if err != nil {
			t.Fatalf("ApplyChain(%d deltas) = %v", len(chain), err)
		}
		if string(got) != string(text) {
			t.Fatalf("ApplyChain(%d deltas) = %q, want %q", len(chain), got, text)
		}
	}
	var bad stateapi.TextEdit
	bad.Span.Start.Offset, bad.Span.End.Offset = 0, len(text)+1
	if _, err := ApplyChain(base, append(chain, []stateapi.TextEdit{bad})); err == nil {
		t.Errorf("ApplyChain(out of bounds) = nil error, want one")
	}
}
