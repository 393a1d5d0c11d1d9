package state

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// recordReaders holds what decodeCommon reads a record with, reset for each record.
var recordReaders = sync.Pool{New: func() any {
	rr := &recordReader{names: map[string]string{}}
	rr.dec = jsontext.NewDecoder(&rr.src, readerOptions...)
	return rr
}}

type recordReader struct {
	src bytes.Reader
	dec *jsontext.Decoder
	// names holds strings that recur from record to record, so that they are kept once: the member names
	// of inputs and outputs, and the values of type, provider and status. At most maxNames.
	names map[string]string
}

// maxNames bounds recordReader.names: records whose names never repeat do not grow it past that.
const maxNames = 1024

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

// readerOptions are decodeOptions' options of the syntax (see UnmarshalResource).
var readerOptions = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

// commonMembers are the members of a record decodeCommon reads, by name as the encoder writes it (quoted),
// each with its bit in the set of members read and how it reads the member's value into r.
var commonMembers = map[string]struct {
	bit  int
	read func(rr *recordReader, r *Resource) (ok bool)
}{
	`"logicalId"`:    {1 << 0, func(rr *recordReader, r *Resource) (ok bool) { r.LogicalID, ok = rr.string(false); return ok }},
	`"type"`:         {1 << 1, func(rr *recordReader, r *Resource) (ok bool) { r.Type, ok = rr.string(true); return ok }},
	`"provider"`:     {1 << 2, func(rr *recordReader, r *Resource) (ok bool) { r.Provider, ok = rr.string(true); return ok }},
	`"physicalId"`:   {1 << 3, func(rr *recordReader, r *Resource) (ok bool) { r.PhysicalID, ok = rr.string(false); return ok }},
	`"inputs"`:       {1 << 4, func(rr *recordReader, r *Resource) (ok bool) { r.Inputs, ok = rr.properties(); return ok }},
	`"outputs"`:      {1 << 5, func(rr *recordReader, r *Resource) (ok bool) { r.Outputs, ok = rr.properties(); return ok }},
	`"dependencies"`: {1 << 6, func(rr *recordReader, r *Resource) (ok bool) { r.Dependencies, ok = rr.strings(); return ok }},
	`"status"`:       {1 << 7, func(rr *recordReader, r *Resource) (ok bool) { r.Status, ok = rr.string(true); return ok }},
	`"updatedAt"`: {1 << 8, func(rr *recordReader, r *Resource) (ok bool) {
		s, ok := rr.string(false)
		if ok {
			r.UpdatedAt, ok = utcTime(s)
		}
		return ok
	}},
}

// decodeCommon decodes a record as UnmarshalResource's general path does, into r without inputs, outputs
// or dependencies (members it sets are set whole, others left as they are), when it has the
// common shape: every member named as the encoder writes it, none twice, none but those of a settled
// resource (no pending operation, no replaced objects), strings where strings belong and written without
// escapes, inputs and outputs objects (or null) whose objects repeat no member name and write names
// without escapes, and updatedAt in UTC as time.Time writes it. It reports false for any other record,
// having perhaps filled r partly: the general path decides then. It reads the record once, without
// reflection, and keeps recurring strings once (recordReader.names).
func decodeCommon(data []byte, r *Resource) bool {
	rr := recordReaders.Get().(*recordReader)
	defer recordReaders.Put(rr)
	rr.src.Reset(data)
	dec := rr.dec
	dec.Reset(&rr.src, readerOptions...)
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return false
	}
	seen := 0
	for dec.PeekKind() != '}' {
		name, err := dec.ReadValue() // quoted as written: a name written with escapes is left to the general path
		if err != nil {
			return false
		}
		m, known := commonMembers[string(name)]
		if !known || seen&m.bit != 0 {
			return false
		}
		seen |= m.bit
		if !m.read(rr, r) {
			return false
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return false
	}
	_, err := dec.ReadToken() // nothing but white space may follow the record
	return err == io.EOF
}

// string reads a string value written without escapes and in valid UTF-8 (others are left to the
// general path), interned when it is a value that recurs.
func (rr *recordReader) string(recurs bool) (string, bool) {
	v, err := rr.dec.ReadValue()
	if err != nil || v.Kind() != '"' {
		return "", false
	}
	raw := v[1 : len(v)-1]
	if bytes.IndexByte(raw, '\\') >= 0 || !utf8.Valid(raw) {
		return "", false
	}
	if recurs {
		return rr.intern(raw), true
	}
	return string(raw), true
}

// strings reads a list of strings, or null (nil).
func (rr *recordReader) strings() ([]string, bool) {
	tok, err := rr.dec.ReadToken()
	if err != nil || tok.Kind() == 'n' {
		return nil, err == nil
	}
	if tok.Kind() != '[' {
		return nil, false
	}
	l := []string{}
	for rr.dec.PeekKind() != ']' {
		s, ok := rr.string(false)
		if !ok {
			return nil, false
		}
		l = append(l, s)
	}
	_, err = rr.dec.ReadToken()
	return l, err == nil
}

// properties reads an object without a repeated member name, or null (nil).
func (rr *recordReader) properties() (resource.Properties, bool) {
	if rr.dec.PeekKind() == 'n' {
		_, err := rr.dec.ReadToken()
		return nil, err == nil
	}
	v, ok := rr.value()
	m, isObject := v.(map[string]any)
	return m, ok && isObject
}

// value reads the next value as decodeValue does, but for objects with a repeated member name or a
// member name written with escapes or not in UTF-8, which it leaves to the general path (ok false).
// Member names are interned.
func (rr *recordReader) value() (v any, ok bool) {
	dec := rr.dec
	switch dec.PeekKind() {
	case '{':
		if _, err := dec.ReadToken(); err != nil {
			return nil, false
		}
		m, members := map[string]any{}, 0
		for dec.PeekKind() != '}' {
			name, err := dec.ReadValue()
			if err != nil || name.Kind() != '"' {
				return nil, false
			}
			raw := name[1 : len(name)-1]
			if bytes.IndexByte(raw, '\\') >= 0 || !utf8.Valid(raw) {
				return nil, false
			}
			key := rr.intern(raw) // before the next read voids raw
			if m[key], ok = rr.value(); !ok {
				return nil, false
			}
			members++
		}
		_, err := dec.ReadToken()
		return m, err == nil && members == len(m)
	case '[':
		if _, err := dec.ReadToken(); err != nil {
			return nil, false
		}
		l := []any{}
		for dec.PeekKind() != ']' {
			e, ok := rr.value()
			if !ok {
				return nil, false
			}
			l = append(l, e)
		}
		_, err := dec.ReadToken()
		return l, err == nil
	}
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, false
	}
	return resource.ScalarValue(tok), true
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
