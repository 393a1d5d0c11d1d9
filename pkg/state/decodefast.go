package state

import (
	"encoding/json"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// recordReaders holds what decodeCommon reads records with.
var recordReaders = sync.Pool{New: func() any { return &recordReader{names: map[string]string{}} }}

// recordReader reads one record of the common shape (decodeCommon) from data, at i. Its reads report
// false on anything it leaves to the general path.
type recordReader struct {
	data []byte
	i    int
	// names holds strings that recur from record to record, so that they are kept once: the member names
	// of inputs and outputs, and the values of type, provider and status. At most maxNames.
	names map[string]string
}

// maxNames bounds recordReader.names: records whose names never repeat do not grow it past that.
const maxNames = 1024

// maxDepth is the deepest nesting of objects and lists decodeCommon reads; deeper records are left to
// the general path, which has its own limit.
const maxDepth = 100

// intern returns raw (a string's contents) as a string, the same one as for raw read before.
func (rr *recordReader) intern(raw []byte) string {
	if s, ok := rr.names[string(raw)]; ok {
		return s
	}
	s := string(raw)
	if len(rr.names) < maxNames {
		rr.names[s] = s
	}
	return s
}

// commonMembers are the members of a record decodeCommon reads, by name as the encoder writes it, each
// with its bit in the set of members read and how it reads the member's value into r.
var commonMembers = map[string]struct {
	bit  int
	read func(rr *recordReader, r *Resource) (ok bool)
}{
	"logicalId":    {1 << 0, func(rr *recordReader, r *Resource) (ok bool) { r.LogicalID, ok = rr.string(false); return ok }},
	"type":         {1 << 1, func(rr *recordReader, r *Resource) (ok bool) { r.Type, ok = rr.string(true); return ok }},
	"provider":     {1 << 2, func(rr *recordReader, r *Resource) (ok bool) { r.Provider, ok = rr.string(true); return ok }},
	"physicalId":   {1 << 3, func(rr *recordReader, r *Resource) (ok bool) { r.PhysicalID, ok = rr.string(false); return ok }},
	"inputs":       {1 << 4, func(rr *recordReader, r *Resource) (ok bool) { r.Inputs, ok = rr.properties(); return ok }},
	"outputs":      {1 << 5, func(rr *recordReader, r *Resource) (ok bool) { r.Outputs, ok = rr.properties(); return ok }},
	"dependencies": {1 << 6, func(rr *recordReader, r *Resource) (ok bool) { r.Dependencies, ok = rr.strings(); return ok }},
	"status":       {1 << 7, func(rr *recordReader, r *Resource) (ok bool) { r.Status, ok = rr.string(true); return ok }},
	"updatedAt": {1 << 8, func(rr *recordReader, r *Resource) (ok bool) {
		s, ok := rr.string(false)
		if ok {
			r.UpdatedAt, ok = utcTime(s)
		}
		return ok
	}},
}

// decodeCommon decodes a record as UnmarshalResource's general path does, into r without inputs, outputs
// or dependencies (members it sets are set whole, others left as they are), when it has the common
// shape: every member named as the encoder writes it, none twice, none but those of a settled resource
// (no pending operation, no replaced objects), strings where strings belong, inputs and outputs objects
// (or null) whose objects repeat no member name, every string and name written without escapes in valid
// UTF-8, and updatedAt in UTC as time.Time writes it. It reports false for any other record (and for
// what is not JSON), having perhaps filled r partly: the general path decides then. It reads the record
// once, byte by byte, without reflection, and keeps recurring strings once (recordReader.names).
func decodeCommon(data []byte, r *Resource) bool {
	rr := recordReaders.Get().(*recordReader)
	defer recordReaders.Put(rr)
	rr.data, rr.i = data, 0
	defer func() { rr.data = nil }()
	if !rr.next('{') {
		return false
	}
	seen := 0
	for first := true; !rr.next('}'); first = false {
		if !first && !rr.next(',') {
			return false
		}
		rr.space()
		name, ok := rr.raw()
		if !ok || !rr.next(':') {
			return false
		}
		m, known := commonMembers[string(name)]
		if !known || seen&m.bit != 0 {
			return false
		}
		seen |= m.bit
		rr.space()
		if !m.read(rr, r) {
			return false
		}
	}
	rr.space()
	return rr.i == len(rr.data) // nothing but white space may follow the record
}

// space skips white space.
func (rr *recordReader) space() {
	for rr.i < len(rr.data) {
		switch rr.data[rr.i] {
		case ' ', '\t', '\n', '\r':
			rr.i++
		default:
			return
		}
	}
}

// next skips white space and then c, reporting whether c was there (and skips nothing else).
func (rr *recordReader) next(c byte) bool {
	rr.space()
	if rr.i < len(rr.data) && rr.data[rr.i] == c {
		rr.i++
		return true
	}
	return false
}

// peek returns the next byte, 0 at the end.
func (rr *recordReader) peek() byte {
	if rr.i < len(rr.data) {
		return rr.data[rr.i]
	}
	return 0
}

// raw reads a string written without escapes and in valid UTF-8 and returns its contents.
func (rr *recordReader) raw() ([]byte, bool) {
	if rr.peek() != '"' {
		return nil, false
	}
	start := rr.i + 1
	for j := start; j < len(rr.data); j++ {
		switch c := rr.data[j]; {
		case c == '"':
			raw := rr.data[start:j]
			rr.i = j + 1
			return raw, utf8.Valid(raw)
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// string reads a string value, interned when it is a value that recurs.
func (rr *recordReader) string(recurs bool) (string, bool) {
	raw, ok := rr.raw()
	switch {
	case !ok:
		return "", false
	case recurs:
		return rr.intern(raw), true
	}
	return string(raw), true
}

// literal reads word (true, false or null).
func (rr *recordReader) literal(word string) bool {
	if end := rr.i + len(word); end <= len(rr.data) && string(rr.data[rr.i:end]) == word {
		rr.i += len(word)
		return true
	}
	return false
}

// strings reads a list of strings, or null (nil).
func (rr *recordReader) strings() ([]string, bool) {
	if rr.peek() == 'n' {
		return nil, rr.literal("null")
	}
	if !rr.next('[') {
		return nil, false
	}
	l := []string{}
	for first := true; !rr.next(']'); first = false {
		if !first && !rr.next(',') {
			return nil, false
		}
		rr.space()
		s, ok := rr.string(false)
		if !ok {
			return nil, false
		}
		l = append(l, s)
	}
	return l, true
}

// properties reads an object, or null (nil).
func (rr *recordReader) properties() (resource.Properties, bool) {
	if rr.peek() == 'n' {
		return nil, rr.literal("null")
	}
	if rr.peek() != '{' {
		return nil, false
	}
	v, ok := rr.value(0)
	m, _ := v.(map[string]any)
	return m, ok
}

// value reads the value that starts at rr.i as decodeValue would decode it: objects as map[string]any
// (their member names interned), lists as []any, strings, numbers as json.Number as written, booleans,
// null. It reports false for an object that repeats a member name and for anything decodeCommon leaves to
// the general path.
func (rr *recordReader) value(depth int) (any, bool) {
	if depth > maxDepth {
		return nil, false
	}
	switch c := rr.peek(); {
	case c == '{':
		rr.i++
		m := map[string]any{}
		members := 0
		for first := true; !rr.next('}'); first = false {
			if !first && !rr.next(',') {
				return nil, false
			}
			rr.space()
			name, ok := rr.raw()
			if !ok || !rr.next(':') {
				return nil, false
			}
			key := rr.intern(name)
			rr.space()
			if m[key], ok = rr.value(depth + 1); !ok {
				return nil, false
			}
			members++
		}
		return m, members == len(m)
	case c == '[':
		rr.i++
		l := []any{}
		for first := true; !rr.next(']'); first = false {
			if !first && !rr.next(',') {
				return nil, false
			}
			rr.space()
			e, ok := rr.value(depth + 1)
			if !ok {
				return nil, false
			}
			l = append(l, e)
		}
		return l, true
	case c == '"':
		return rr.string(false)
	case c == 't':
		return true, rr.literal("true")
	case c == 'f':
		return false, rr.literal("false")
	case c == 'n':
		return nil, rr.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		start := rr.i
		for rr.i < len(rr.data) && strings.IndexByte("+-0123456789.eE", rr.data[rr.i]) >= 0 {
			rr.i++
		}
		n := string(rr.data[start:rr.i])
		return json.Number(n), resource.IsJSONNumber(n)
	}
	return nil, false
}

// utcTime parses s when it is a time in UTC exactly as time.Time's MarshalText writes it.
func utcTime(s string) (time.Time, bool) {
	if !strings.HasSuffix(s, "Z") {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	var buf [len(time.RFC3339Nano) + 8]byte
	if err != nil || string(t.AppendFormat(buf[:0], time.RFC3339Nano)) != s {
		return time.Time{}, false
	}
	return t, true
}
