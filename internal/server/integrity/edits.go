package integrity

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/cdkx-dev/cdkx/pkg/stateapi"
)

// SortEdits returns a copy of edits sorted, stably, by span (start, then end), as ApplyEdits applies them.
func SortEdits(edits []stateapi.TextEdit) []stateapi.TextEdit {
	edits = slices.Clone(edits)
	slices.SortStableFunc(edits, func(a, b stateapi.TextEdit) int {
		return cmp.Or(cmp.Compare(a.Span.Start.Offset, b.Span.Start.Offset), cmp.Compare(a.Span.End.Offset, b.Span.End.Offset))
	})
	return edits
}

// ApplyEdits applies edits to prev: each replaces the bytes [start, end) with its new text. Like the
// Pulumi CLI's own applier (gotextdiff.ApplyEdits), the edits are first sorted, stably, by span (start,
// then end); the CLI sends them in that order anyway. Edits must be in bounds and must not overlap (each
// starts at or after the previous one's end). Offsets are byte offsets: the text is never decoded, so
// multi-byte UTF-8 and escapes in prev are kept as they are.
func ApplyEdits(prev []byte, edits []stateapi.TextEdit) ([]byte, error) {
	edits = SortEdits(edits)
	size := len(prev) // an upper bound that untrusted offsets cannot inflate
	for _, e := range edits {
		size += len(e.NewText)
	}
	out := make([]byte, 0, size)
	pos := 0
	for i, e := range edits {
		start, end := e.Span.Start.Offset, e.Span.End.Offset
		switch {
		case start < 0 || end < start || end > len(prev):
			return nil, fmt.Errorf("edit %d spans bytes %d-%d, outside the previous checkpoint (%d bytes)", i, start, end, len(prev))
		case start < pos:
			return nil, fmt.Errorf("edits overlap: one spans bytes %d-%d, another ends at byte %d", start, end, pos)
		}
		out = append(out, prev[pos:start]...)
		out = append(out, e.NewText...)
		pos = end
	}
	return append(out, prev[pos:]...), nil
}
