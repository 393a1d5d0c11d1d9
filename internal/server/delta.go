package server

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/cdkx-dev/cdkx/pkg/stateapi"
)

// textEdit is one edit of a deploymentDelta (stateapi.TextEdit); offsets are byte offsets into the
// previous checkpoint's bytes.
type textEdit = stateapi.TextEdit

// parseDelta decodes a deploymentDelta.
func parseDelta(raw json.RawMessage) ([]textEdit, error) {
	if len(raw) == 0 {
		return nil, errorf(http.StatusBadRequest, "Bad Request: the checkpoint has no deploymentDelta")
	}
	var edits []textEdit
	if err := json.Unmarshal(raw, &edits); err != nil {
		return nil, errorf(http.StatusBadRequest, "Bad Request: deploymentDelta is not a list of edits: %v", err)
	}
	return edits, nil
}

// sortEdits returns edits sorted, stably, by span (start, then end), as applyDelta applies them.
func sortEdits(edits []textEdit) []textEdit {
	edits = slices.Clone(edits)
	slices.SortStableFunc(edits, func(a, b textEdit) int {
		return cmp.Or(cmp.Compare(a.Span.Start.Offset, b.Span.Start.Offset), cmp.Compare(a.Span.End.Offset, b.Span.End.Offset))
	})
	return edits
}

// applyDelta applies edits to prev: each replaces the bytes [start, end) with its new text. Like the
// Pulumi CLI's own applier (gotextdiff.ApplyEdits), the edits are first sorted, stably, by span (start,
// then end); the CLI sends them in that order anyway. Edits must be in bounds and must not overlap (each
// starts at or after the previous one's end). Offsets are byte offsets: the text is never decoded, so
// multi-byte UTF-8 and escapes in prev are kept as they are.
func applyDelta(prev []byte, edits []textEdit) ([]byte, error) {
	edits = sortEdits(edits)
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
			return nil, errorf(http.StatusBadRequest, "Bad Request: edit %d spans bytes %d-%d, outside the previous checkpoint (%d bytes)", i, start, end, len(prev))
		case start < pos:
			return nil, errorf(http.StatusBadRequest, "Bad Request: edits overlap: one spans bytes %d-%d, another ends at byte %d", start, end, pos)
		}
		out = append(out, prev[pos:start]...)
		out = append(out, e.NewText...)
		pos = end
	}
	return append(out, prev[pos:]...), nil
}

// checkHash checks that want is the SHA-256 of text (hex, any case): 400 when it is not.
func checkHash(text []byte, want string) error {
	sum := sha256.Sum256(text)
	if got := hex.EncodeToString(sum[:]); got != strings.ToLower(want) {
		return errorf(http.StatusBadRequest, "Bad Request: checkpointHash mismatch: the delta gives %s, want %s", got, want)
	}
	return nil
}
