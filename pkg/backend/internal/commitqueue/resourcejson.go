package commitqueue

import (
	"encoding/json"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

// appendResource appends the JSON of r, byte for byte what json.Marshal(r) returns, and reports whether
// it could: the values it writes itself are the ones a resource is made of (objects, arrays, strings,
// json.Number, booleans, null); any other value is written by json.Marshal, and a resource with replaced
// objects or a time json.Marshal refuses (ok false) is left to json.Marshal whole. It is a third of the
// cost of json.Marshal, which reflects over every field and sorts every map's keys through reflect.Value.
func appendResource(buf []byte, r *state.Resource) (_ []byte, ok bool) {
	if len(r.Replaced) > 0 || !plainTime(r.UpdatedAt) || (r.Pending != nil && !plainTime(r.Pending.StartedAt)) {
		return buf, false
	}
	var err error
	buf = append(buf, `{"logicalId":`...)
	buf = appendString(buf, r.LogicalID)
	buf = append(buf, `,"type":`...)
	buf = appendString(buf, r.Type)
	buf = append(buf, `,"provider":`...)
	buf = appendString(buf, r.Provider)
	if r.PhysicalID != "" {
		buf = append(buf, `,"physicalId":`...)
		buf = appendString(buf, r.PhysicalID)
	}
	buf = append(buf, `,"inputs":`...)
	if buf, err = appendObject(buf, r.Inputs); err != nil {
		return buf, false
	}
	buf = append(buf, `,"outputs":`...)
	if buf, err = appendObject(buf, r.Outputs); err != nil {
		return buf, false
	}
	if len(r.Dependencies) > 0 {
		buf = append(buf, `,"dependencies":[`...)
		for i, d := range r.Dependencies {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendString(buf, d)
		}
		buf = append(buf, ']')
	}
	buf = append(buf, `,"status":`...)
	buf = appendString(buf, r.Status)
	if p := r.Pending; p != nil {
		buf = append(buf, `,"pending":{"op":`...)
		buf = appendString(buf, string(p.Op))
		if len(p.Inputs) > 0 {
			buf = append(buf, `,"inputs":`...)
			if buf, err = appendObject(buf, p.Inputs); err != nil {
				return buf, false
			}
		}
		if p.PhysicalID != "" {
			buf = append(buf, `,"physicalId":`...)
			buf = appendString(buf, p.PhysicalID)
		}
		buf = append(buf, `,"startedAt":`...)
		buf = appendTime(buf, p.StartedAt)
		buf = append(buf, '}')
	}
	buf = append(buf, `,"updatedAt":`...)
	buf = appendTime(buf, r.UpdatedAt)
	return append(buf, '}'), true
}

// plainTime reports whether json.Marshal writes t as appendTime does: its year has four digits.
func plainTime(t time.Time) bool {
	y := t.Year()
	return y >= 0 && y <= 9999
}

// appendTime appends t as time.Time's MarshalJSON does (RFC 3339 with nanoseconds, quoted).
func appendTime(buf []byte, t time.Time) []byte {
	buf = append(buf, '"')
	buf = t.AppendFormat(buf, time.RFC3339Nano)
	return append(buf, '"')
}

// appendObject appends m as json.Marshal does: null when nil, keys sorted.
func appendObject(buf []byte, m map[string]any) ([]byte, error) {
	if m == nil {
		return append(buf, "null"...), nil
	}
	var small [16]string
	keys := small[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	buf = append(buf, '{')
	var err error
	for i, k := range keys {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendString(buf, k)
		buf = append(buf, ':')
		if buf, err = appendValue(buf, m[k]); err != nil {
			return buf, err
		}
	}
	return append(buf, '}'), nil
}

// appendValue appends v as json.Marshal does.
func appendValue(buf []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(buf, "null"...), nil
	case string:
		return appendString(buf, v), nil
	case bool:
		if v {
			return append(buf, "true"...), nil
		}
		return append(buf, "false"...), nil
	case json.Number:
		if plainInteger(string(v)) {
			return append(buf, v...), nil
		}
	case map[string]any:
		return appendObject(buf, v)
	case []any:
		if v == nil {
			return append(buf, "null"...), nil
		}
		buf = append(buf, '[')
		var err error
		for i, e := range v {
			if i > 0 {
				buf = append(buf, ',')
			}
			if buf, err = appendValue(buf, e); err != nil {
				return buf, err
			}
		}
		return append(buf, ']'), nil
	}
	data, err := json.Marshal(v)
	return append(buf, data...), err
}

// plainInteger reports whether s is an integer json.Marshal writes as it is: digits, an optional minus,
// no leading zero.
func plainInteger(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" || (s[0] == '0' && len(s) > 1) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// appendString appends s quoted as json.Marshal does; a string with anything to escape (a quote, a
// backslash, a control character, <, > or &, or anything not ASCII) is written by json.Marshal.
func appendString(buf []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || c >= utf8.RuneSelf {
			data, _ := json.Marshal(s) // a string always encodes
			return append(buf, data...)
		}
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"')
}
