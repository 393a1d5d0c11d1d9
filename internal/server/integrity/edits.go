package integrity

import (
	"cmp"
	"encoding/binary"
	"errors"
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

// ApplyChain applies each delta of chain in turn to base and returns the result. It keeps the text as a
// list of pieces (slices of base and of the edits' new texts) and copies bytes once, at the end, so that
// rebuilding k deltas of a text of S bytes costs O(S + k × pieces) rather than O(k × S).
func ApplyChain(base []byte, chain [][]stateapi.TextEdit) ([]byte, error) {
	if len(chain) == 0 {
		return base, nil
	}
	pieces := [][]byte{base}
	size := len(base)
	for ci, edits := range chain {
		edits = SortEdits(edits)
		next := make([][]byte, 0, len(pieces)+2*len(edits)+1)
		pi, off, pos := 0, 0, 0 // cursor: piece index, offset in it, offset in the text
		advance := func(n int, keep bool) {
			for n > 0 {
				p := pieces[pi][off:]
				if len(p) > n {
					if keep {
						next = append(next, p[:n])
					}
					off, pos = off+n, pos+n
					return
				}
				if keep && len(p) > 0 {
					next = append(next, p)
				}
				n, pos = n-len(p), pos+len(p)
				pi, off = pi+1, 0
			}
		}
		newSize := size
		for i, e := range edits {
			start, end := e.Span.Start.Offset, e.Span.End.Offset
			if start < pos || end < start || end > size {
				return nil, fmt.Errorf("delta %d, edit %d: bytes %d-%d overlap or lie outside the text (%d bytes)", ci, i, start, end, size)
			}
			advance(start-pos, true)
			advance(end-start, false)
			if e.NewText != "" {
				next = append(next, []byte(e.NewText))
			}
			newSize += len(e.NewText) - (end - start)
		}
		advance(size-pos, true)
		pieces, size = next, newSize
	}
	out := make([]byte, 0, size)
	for _, p := range pieces {
		out = append(out, p...)
	}
	return out, nil
}

// Diff returns the edits that turn prev into next: none when they are equal, else one edit
// replacing what lies between their common prefix and common suffix.
func Diff(prev, next []byte) []stateapi.TextEdit {
	p := 0
	for p < len(prev) && p < len(next) && prev[p] == next[p] {
		p++
	}
	if p == len(prev) && p == len(next) {
		return []stateapi.TextEdit{}
	}
	q := 0
	for q < len(prev)-p && q < len(next)-p && prev[len(prev)-1-q] == next[len(next)-1-q] {
		q++
	}
	var e stateapi.TextEdit
	e.Span.Start.Offset, e.Span.End.Offset, e.NewText = p, len(prev)-q, string(next[p:len(next)-q])
	return []stateapi.TextEdit{e}
}

// EncodeEdits encodes edits for storage, byte-exact (a new text may be any bytes, even part of a UTF-8
// sequence): per edit, three unsigned varints (start, end, length of the new text), then the new text.
func EncodeEdits(edits []stateapi.TextEdit) []byte {
	var b []byte
	for _, e := range edits {
		b = binary.AppendUvarint(b, uint64(e.Span.Start.Offset))
		b = binary.AppendUvarint(b, uint64(e.Span.End.Offset))
		b = binary.AppendUvarint(b, uint64(len(e.NewText)))
		b = append(b, e.NewText...)
	}
	if b == nil {
		b = []byte{}
	}
	return b
}

// DecodeEdits decodes what EncodeEdits wrote.
func DecodeEdits(data []byte) ([]stateapi.TextEdit, error) {
	var edits []stateapi.TextEdit
	for len(data) > 0 {
		var f [3]uint64
		for i := range f {
			v, n := binary.Uvarint(data)
			if n <= 0 {
				return nil, errors.New("decode stored delta: truncated edit header")
			}
			f[i], data = v, data[n:]
		}
		if f[2] > uint64(len(data)) {
			return nil, errors.New("decode stored delta: truncated edit text")
		}
		var e stateapi.TextEdit
		e.Span.Start.Offset, e.Span.End.Offset, e.NewText = int(f[0]), int(f[1]), string(data[:f[2]])
		edits, data = append(edits, e), data[f[2]:]
	}
	return edits, nil
}
