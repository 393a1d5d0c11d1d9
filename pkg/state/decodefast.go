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
	rr := &recordReader{}
	rr.dec = jsontext.NewDecoder(&rr.src, readerOptions...)
	return rr
}}

type recordReader struct {
	src bytes.Reader
	dec *jsontext.Decoder
}

// readerOptions are decodeOptions' options of the syntax (see UnmarshalResource).
var readerOptions = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

// The members of a record decodeCommon reads, as bits of a set.
const (
	memberLogicalID = 1 << iota
	memberType
	memberProvider
	memberPhysicalID
	memberInputs
	memberOutputs
	memberDependencies
	memberStatus
	memberUpdatedAt
)

// decodeCommon decodes a record as UnmarshalResource's general path does, into r without inputs, outputs
// or dependencies (members it sets are set whole, others left as they are), when it has the
// common shape: every member named as the encoder writes it, none twice, none but those of a settled
// resource (no pending operation, no replaced objects), strings where strings belong, inputs and outputs
// objects (or null) without a repeated name, and updatedAt in UTC as time.Time writes it. It reports
// false for any other record, having perhaps filled r partly: the general path decides then. It reads
// the record once, without reflection.
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
		var bit int
		switch string(name) {
		case `"logicalId"`:
			bit = memberLogicalID
		case `"type"`:
			bit = memberType
		case `"provider"`:
			bit = memberProvider
		case `"physicalId"`:
			bit = memberPhysicalID
		case `"inputs"`:
			bit = memberInputs
		case `"outputs"`:
			bit = memberOutputs
		case `"dependencies"`:
			bit = memberDependencies
		case `"status"`:
			bit = memberStatus
		case `"updatedAt"`:
			bit = memberUpdatedAt
		default:
			return false
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		var ok bool
		switch bit {
		case memberLogicalID:
			r.LogicalID, ok = readString(dec)
		case memberType:
			r.Type, ok = readString(dec)
		case memberProvider:
			r.Provider, ok = readString(dec)
		case memberPhysicalID:
			r.PhysicalID, ok = readString(dec)
		case memberStatus:
			r.Status, ok = readString(dec)
		case memberInputs:
			r.Inputs, ok = readProperties(dec)
		case memberOutputs:
			r.Outputs, ok = readProperties(dec)
		case memberDependencies:
			r.Dependencies, ok = readStrings(dec)
		case memberUpdatedAt:
			var s string
			if s, ok = readString(dec); ok {
				r.UpdatedAt, ok = utcTime(s)
			}
		}
		if !ok {
			return false
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return false
	}
	_, err := dec.ReadToken() // nothing but white space may follow the record
	return err == io.EOF
}

// readString reads a string value written without escapes and in valid UTF-8 (others are left to the
// general path).
func readString(dec *jsontext.Decoder) (string, bool) {
	v, err := dec.ReadValue()
	if err != nil || v.Kind() != '"' {
		return "", false
	}
	raw := v[1 : len(v)-1]
	if bytes.IndexByte(raw, '\\') >= 0 || !utf8.Valid(raw) {
		return "", false
	}
	return string(raw), true
}

// readStrings reads a list of strings, or null (nil).
func readStrings(dec *jsontext.Decoder) ([]string, bool) {
	tok, err := dec.ReadToken()
	if err != nil || tok.Kind() == 'n' {
		return nil, err == nil
	}
	if tok.Kind() != '[' {
		return nil, false
	}
	l := []string{}
	for dec.PeekKind() != ']' {
		s, ok := readString(dec)
		if !ok {
			return nil, false
		}
		l = append(l, s)
	}
	_, err = dec.ReadToken()
	return l, err == nil
}

// readProperties reads an object without a repeated member name, or null (nil).
func readProperties(dec *jsontext.Decoder) (resource.Properties, bool) {
	tok, err := dec.ReadToken()
	if err != nil || tok.Kind() == 'n' {
		return nil, err == nil
	}
	if tok.Kind() != '{' {
		return nil, false
	}
	m, members := resource.Properties{}, 0
	for dec.PeekKind() != '}' {
		k, err := dec.ReadToken()
		if err != nil {
			return nil, false
		}
		key := k.String() // before the next read voids k
		v, err := decodeValue(dec)
		if err != nil {
			return nil, false
		}
		m[key] = v
		members++
	}
	_, err = dec.ReadToken()
	return m, err == nil && members == len(m)
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
