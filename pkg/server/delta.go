package server

import (
	"encoding/json"
	"net/http"
)

// textEdit is one edit of a deploymentDelta, as the Pulumi CLI sends it (capitalised keys); offsets
// are byte offsets into the previous checkpoint's bytes.
type textEdit struct {
	Span struct {
		Start struct {
			Offset int `json:"offset"`
		} `json:"start"`
		End struct {
			Offset int `json:"offset"`
		} `json:"end"`
	} `json:"Span"`
	NewText string `json:"NewText"`
}

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

// applyDelta applies edits, in order, to prev: each replaces the bytes [start, end) with its new text.
// Edits must be in bounds and must not overlap (each starts at or after the previous one's end).
func applyDelta(prev []byte, edits []textEdit) ([]byte, error) {
	out := make([]byte, 0, len(prev))
	pos := 0
	for i, e := range edits {
		start, end := e.Span.Start.Offset, e.Span.End.Offset
		switch {
		case start < 0 || end < start || end > len(prev):
			return nil, errorf(http.StatusBadRequest, "Bad Request: edit %d spans bytes %d-%d, outside the previous checkpoint (%d bytes)", i, start, end, len(prev))
		case start < pos:
			return nil, errorf(http.StatusBadRequest, "Bad Request: edit %d starts at byte %d, before the end of the previous edit (%d)", i, start, pos)
		}
		out = append(out, prev[pos:start]...)
		out = append(out, e.NewText...)
		pos = end
	}
	return append(out, prev[pos:]...), nil
}
