package view

import (
	"encoding/json"
	"fmt"
	"io"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/cdkx-dev/cdkx/pkg/text"
)

// Sanitize returns s with every character that would act on a terminal instead of being shown replaced
// by a visible escape (text.Sanitize): C0 and C1 control characters and DEL as \x1b or \u009b (\n, \r
// and \t as such), invisible formatting characters such as the Unicode bidirectional overrides as
// \u202e, line and paragraph separators as \u2028, and bytes that are not UTF-8 as \xff. Views pass
// every string that comes from user data through it (names, physical IDs, provider messages, values,
// diagnostics), so that none can move the cursor, forge a table row or set the terminal's title.
func Sanitize(s string) string { return text.Sanitize(s) }

// JSONEncoder returns an encoder that writes to w JSON whose strings show, as \uXXXX escapes, the
// characters Sanitize escapes and encoding/json leaves as they are: invisible formatting characters such
// as the bidirectional overrides and isolates (U+202A–U+202E, U+2066–U+2069), zero-width characters and
// the like. The JSON means the same; a terminal or a reviewer's editor that shows it shows no hidden
// reordering. Every --json output goes through it.
func JSONEncoder(w io.Writer) *json.Encoder {
	return json.NewEncoder(jsonEscaper{w})
}

// jsonEscaper escapes, in each Write (one whole JSON value from json.Encoder), the characters text.Escapes
// text.Escapes reports outside ASCII. encoding/json already escapes control characters, U+2028 and U+2029.
type jsonEscaper struct{ w io.Writer }

func (j jsonEscaper) Write(p []byte) (int, error) {
	if _, err := j.w.Write(EscapeJSON(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// EscapeJSON returns encoded JSON b with every non-ASCII character that text.Escapes reports written as a
// \uXXXX escape (a surrogate pair above U+FFFF). Outside strings JSON holds only ASCII, so only strings
// change, and only in form. b is returned as it is when nothing needs it.
func EscapeJSON(b []byte) []byte {
	needs := false
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r >= utf8.RuneSelf && r != utf8.RuneError && text.Escapes(r) {
			needs = true
			break
		}
		i += size
	}
	if !needs {
		return b
	}
	out := make([]byte, 0, len(b)+32)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		switch {
		case r >= utf8.RuneSelf && r != utf8.RuneError && text.Escapes(r):
			if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
				out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
			} else {
				out = fmt.Appendf(out, `\u%04x`, r)
			}
		default:
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out
}
