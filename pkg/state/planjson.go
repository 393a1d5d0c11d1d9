package state

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// AppendJSON appends p's JSON encoding to b and returns the extended buffer: byte for byte what
// encoding/json's Marshal gives for p (fields in order, omitempty as tagged, object keys sorted, HTML
// characters, U+2028 and U+2029 escaped, invalid UTF-8 as U+FFFD, numbers as written), written directly
// instead of by reflection. A 100,000-resource plan is ~30 MB of JSON: Marshal spends ~0.25 s of CPU on it
// and keeps a buffer that size in its pool for the rest of the process. Values of types other than those
// decoded JSON holds (and resource.Unknown) are encoded by encoding/json. The error is encoding/json's, for
// a value it cannot encode (an invalid json.Number, a channel).
func (p *Plan) AppendJSON(b []byte) ([]byte, error) {
	if p == nil {
		return append(b, "null"...), nil
	}
	b = append(b, `{"create":`...)
	b = strconv.AppendInt(b, int64(p.Create), 10)
	b = append(b, `,"update":`...)
	b = strconv.AppendInt(b, int64(p.Update), 10)
	b = append(b, `,"replace":`...)
	b = strconv.AppendInt(b, int64(p.Replace), 10)
	b = append(b, `,"delete":`...)
	b = strconv.AppendInt(b, int64(p.Delete), 10)
	b = append(b, `,"same":`...)
	b = strconv.AppendInt(b, int64(p.Same), 10)
	b = append(b, `,"steps":`...)
	if p.Steps == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range p.Steps {
			if cap(b)-len(b) < 4<<10 {
				b = slices.Grow(b, max(cap(b), 64<<10)) // double: append alone grows a large buffer by a quarter
			}
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = p.Steps[i].appendJSON(b); err != nil {
				return b, err
			}
		}
		b = append(b, ']')
	}
	if p.SnapshotHash != "" {
		b = append(b, `,"snapshotHash":`...)
		b = appendJSONString(b, p.SnapshotHash)
	}
	if p.Values {
		b = append(b, `,"values":true`...)
	}
	if len(p.Reads) > 0 {
		b = append(b, `,"reads":{`...)
		for i, k := range slices.Sorted(maps.Keys(p.Reads)) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			b = strconv.AppendInt(b, p.Reads[k], 10)
		}
		b = append(b, '}')
	}
	return append(b, '}'), nil
}

// JSON returns p's JSON encoding, AppendJSON's bytes, as a string that shares them instead of copying
// them (a 100k-resource plan: ~30 MB not copied while it is stored). Errors are AppendJSON's.
func (p *Plan) JSON() (string, error) {
	b, err := p.AppendJSON(nil)
	if err != nil {
		return "", err
	}
	return unsafe.String(unsafe.SliceData(b), len(b)), nil // b is this function's own, never written again
}

func (s *PlanStep) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"resource":`...)
	b = appendJSONString(b, s.Resource)
	b = append(b, `,"stack":`...)
	b = appendJSONString(b, s.Stack)
	b = append(b, `,"logicalId":`...)
	b = appendJSONString(b, s.LogicalID)
	b = append(b, `,"type":`...)
	b = appendJSONString(b, s.Type)
	b = append(b, `,"op":`...)
	b = appendJSONString(b, s.Op)
	for _, f := range [...]struct{ key, v string }{{`,"physicalId":`, s.PhysicalID}, {`,"reason":`, s.Reason},
		{`,"replacement":`, s.Replacement}} {
		if f.v != "" {
			b = append(b, f.key...)
			b = appendJSONString(b, f.v)
		}
	}
	var err error
	if len(s.Changes) > 0 {
		b = append(b, `,"changes":[`...)
		for i, c := range s.Changes {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"name":`...)
			b = appendJSONString(b, c.Name)
			b = append(b, `,"old":`...)
			if b, err = appendJSONValue(b, c.Old); err != nil {
				return b, err
			}
			b = append(b, `,"new":`...)
			if b, err = appendJSONValue(b, c.New); err != nil {
				return b, err
			}
			if c.CreateOnly {
				b = append(b, `,"createOnly":true`...)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if len(s.Inputs) > 0 {
		b = append(b, `,"inputs":`...)
		if b, err = appendJSONObject(b, s.Inputs); err != nil {
			return b, err
		}
	}
	for _, f := range [...]struct {
		key string
		v   []string
	}{{`,"notes":`, s.Notes}, {`,"paths":`, s.Paths}} {
		if len(f.v) > 0 {
			b = append(b, f.key...)
			b = append(b, '[')
			for i, v := range f.v {
				if i > 0 {
					b = append(b, ',')
				}
				b = appendJSONString(b, v)
			}
			b = append(b, ']')
		}
	}
	if s.Digest != "" {
		b = append(b, `,"digest":`...)
		b = appendJSONString(b, s.Digest)
	}
	return append(b, '}'), nil
}

// appendJSONValue appends v as encoding/json encodes it: decoded JSON values (and resource.Unknown)
// directly, anything else through encoding/json.
func appendJSONValue(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case string:
		return appendJSONString(b, v), nil
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
			if b, err = appendJSONValue(b, e); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	case resource.Unknown:
		return appendJSONString(b, v.String()), nil // its MarshalJSON
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
		b = appendJSONString(b, k)
		b = append(b, ':')
		if b, err = appendJSONValue(b, m[k]); err != nil {
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

// appendJSONString appends s quoted as encoding/json quotes strings (escapeHTML on): its appendString.
func appendJSONString(b []byte, s string) []byte {
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
