package service

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/pkg/stateapi"
)

// applyEdits applies edits the way the service does: sorted stably by span, non-overlapping.
func applyEdits(t *testing.T, prev []byte, edits []stateapi.TextEdit) []byte {
	t.Helper()
	edits = slices.Clone(edits)
	slices.SortStableFunc(edits, func(a, b stateapi.TextEdit) int {
		return cmp.Or(cmp.Compare(a.Span.Start.Offset, b.Span.Start.Offset), cmp.Compare(a.Span.End.Offset, b.Span.End.Offset))
	})
	var out []byte
	pos := 0
	for _, e := range edits {
		if e.Span.Start.Offset < pos || e.Span.End.Offset > len(prev) || e.Span.End.Offset < e.Span.Start.Offset {
			t.Fatalf("edit %+v overlaps or is out of bounds (pos %d, %d bytes)", e.Span, pos, len(prev))
		}
		out = append(out, prev[pos:e.Span.Start.Offset]...)
		out = append(out, e.NewText...)
		pos = e.Span.End.Offset
	}
	return append(out, prev[pos:]...)
}

func res(id string, n int) *state.Resource {
	return &state.Resource{LogicalID: id, Type: "Cdkx::Core::Data", Provider: "cdkx", PhysicalID: fmt.Sprintf("p-%s-%d", id, n),
		Inputs: resource.Properties{"n": fmt.Sprint(n), "s": "caf\u00e9 <&>"}, Outputs: resource.Properties{"crn": "crn:" + id},
		Status: "CREATE_COMPLETE", UpdatedAt: time.Date(2026, 1, 2, 3, 4, 5, n, time.UTC)}
}

// TestDocumentEdits applies random batches of puts, deletes and stack changes and checks after each
// that the edits turn the old text into the new one byte for byte, that the hash is the new text's,
// that the edits are small (each resource changed costs one line), and that the text parses back into
// the model.
func TestDocumentEdits(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	d, err := newDocument("proj", "web", 0)
	if err != nil {
		t.Fatal(err)
	}
	d.whole = false // pretend the service holds exactly d.text()
	model := state.NewStack("web")
	ids := []string{}
	for i := range 40 {
		ids = append(ids, fmt.Sprintf("r%02d", i))
	}
	now := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	for step := range 300 {
		var changes []state.Change
		for range 1 + rng.IntN(5) {
			id := ids[rng.IntN(len(ids))]
			switch rng.IntN(5) {
			case 0, 1:
				changes = append(changes, state.Change{Kind: state.DeleteResource, LogicalID: id})
			case 2:
				changes = append(changes, state.Change{Kind: state.PutStack, Status: fmt.Sprintf("S%d", step),
					Outputs: resource.Properties{"k": fmt.Sprint(step)}, Dependencies: []string{"net"}})
			default:
				changes = append(changes, state.Change{Kind: state.PutResource, Resource: res(id, step)})
			}
		}
		old := d.text()
		p, err := d.apply(changes, now)
		if err != nil {
			t.Fatalf("step %d: apply() = %v", step, err)
		}
		got := applyEdits(t, old, p.edits)
		want := p.next.text()
		if string(got) != string(want) {
			t.Fatalf("step %d: edits give\n%s\nwant\n%s", step, got, want)
		}
		if sum := sha256.Sum256(want); hex.EncodeToString(sum[:]) != p.hash {
			t.Fatalf("step %d: hash is not the SHA-256 of the new text", step)
		}
		edited := 0
		for _, e := range p.edits {
			edited += len(e.NewText)
		}
		if maxLine := 1200 * (len(changes) + 1); edited > maxLine {
			t.Errorf("step %d: %d changes sent %d bytes of new text, want at most %d", step, len(changes), edited, maxLine)
		}
		for _, c := range changes {
			if err := model.Apply(c); err != nil {
				t.Fatal(err)
			}
		}
		model.UpdatedAt = now
		p.next.version = int64(step + 1)
		_, parsed, err := parseDocument("proj", "web", int64(step+1), want)
		if err != nil {
			t.Fatalf("step %d: parseDocument() = %v", step, err)
		}
		model.Version = int64(step + 1)
		if diff := gocmp.Diff(model, parsed, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("step %d: parsed stack (-model +parsed):\n%s", step, diff)
		}
		d = p.next
	}
}

func TestParseDocumentErrors(t *testing.T) {
	tests := []struct{ name, data string }{
		{"not json", `{"version":3,`},
		{"foreign resources", `{"version":3,"deployment":{"resources":[{"urn":"urn:pulumi:s::p::aws:s3:Bucket::b"}]}}`},
		{"newer format", `{"version":3,"deployment":{"cdkx":{"format":99,"stack":"web"},"resources":[]}}`},
		{"unsorted", `{"version":3,"deployment":{"cdkx":{"format":1,"stack":"web"},"resources":[{"cdkx":{"logicalId":"b"}},{"cdkx":{"logicalId":"a"}}]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := parseDocument("proj", "web", 1, []byte(tt.data)); err == nil {
				t.Errorf("parseDocument(%s) = nil error, want one", tt.data)
			}
		})
	}
	// A Pulumi empty deployment is an empty stack, to be written whole.
	d, st, err := parseDocument("proj", "web", 4, []byte(`{"version":3,"deployment":{"manifest":{},"resources":[]}}`))
	if err != nil || !d.whole || len(st.Resources) != 0 || st.Version != 4 {
		t.Errorf("parseDocument(empty) = %+v, %+v, %v; want an empty stack at version 4, to be written whole", d, st, err)
	}
}
