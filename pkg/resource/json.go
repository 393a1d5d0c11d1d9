package resource

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// AppendJSON appends v's JSON encoding to b and returns the extended buffer: byte for byte what
// encoding/json's Marshal gives for v (object keys sorted; HTML characters, U+2028 and U+2029 escaped;
// invalid UTF-8 as U+FFFD; numbers as written), written directly for the values properties hold (nil,
// bool, string, json.Number, []any, map[string]any (Properties), Unknown) and by encoding/json for any
// other. A third of Marshal's cost or less: no reflection, no sorting through reflect.Value, no pooled
// buffer kept for the rest of the process. The error is encoding/json's, for a value it cannot encode
// (an invalid json.Number, a channel); b may then hold part of the value.
func AppendJSON(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case string:
		return AppendJSONString(b, v), nil
	case json.Number:
		if s := string(v); validNumber(s) {
			return append(b, s...), nil
		}
	case map[string]any:
		if v != nil {
			return appendJSONObject(b, v)
		}
		return append(b, "null"...), nil
	case []any:
		if v == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = AppendJSON(b, e); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	case Unknown:
		return AppendJSONString(b, v.String()), nil // its MarshalJSON
	}
	data, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return append(b, data...), nil
}

// appendJSONObject appends m with its keys sorted, as encoding/json does.
func appendJSONObject(b []byte, m map[string]any) ([]byte, error) {
	b = append(b, '{')
	var err error
	var small [8]string // most objects are small: their keys need no allocation
	keys := small[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendJSONString(b, k)
		b = append(b, ':')
		if b, err = AppendJSON(b, m[k]); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// validNumber reports whether s is a JSON number (RFC 8259's grammar, nothing around it), as encoding/json
// requires of a json.Number. The empty string is left to encoding/json, which writes it as 0.
func validNumber(s string) bool {
	digits := func(s string) (rest string, n int) {
		for n < len(s) && s[n] >= '0' && s[n] <= '9' {
			n++
		}
		return s[n:], n
	}
	s = strings.TrimPrefix(s, "-")
	var n int
	switch {
	case strings.HasPrefix(s, "0"):
		s = s[1:]
	default:
		if s, n = digits(s); n == 0 {
			return false
		}
	}
	if rest, ok := strings.CutPrefix(s, "."); ok {
		if s, n = digits(rest); n == 0 {
			return false
		}
	}
	if len(s) > 0 && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
			s = s[1:]
		}
		if s, n = digits(s); n == 0 {
			return false
		}
	}
	return s == ""
}

// AppendJSONString appends s quoted as encoding/json's Marshal quotes a string (HTML characters escaped,
// invalid UTF-8 as U+FFFD).
func AppendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default: // other control characters, and <, > and &
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
