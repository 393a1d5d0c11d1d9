package assembly

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/cdkx-dev/cdkx/pkg/diag"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// object is a decoded JSON object that keeps its keys in document order. Values are nil, bool, string,
// json.Number, []any or *object.
type object struct {
	keys []string
	vals map[string]any
}

// get returns the value of key; ok is false when the key is absent or null (the synthesizer drops nulls,
// so null and absent mean the same).
func (o *object) get(key string) (v any, ok bool) {
	v = o.vals[key]
	return v, v != nil
}

// has reports whether key is present, null or not.
func (o *object) has(key string) bool {
	_, ok := o.vals[key]
	return ok
}

// MaxDepth is how deeply lists and objects may nest in a manifest or template: 1,000 levels. Real
// templates nest a few levels; the cap keeps every walk over a value (validation, planning, state) cheap and
// its recursion shallow, and leaves room below encoding/json's own limit of 10,000 for the documents that
// wrap values in state.
const MaxDepth = 1000

// duplicate is a key that appears more than once in one JSON object; the first value is kept.
type duplicate struct {
	parent string // JSON path of the object
	key    string
}

// badNumber is a number that no provider can read (see numberInRange), at path.
type badNumber struct {
	path  string
	text  string
	large bool // larger than any float64, else closer to 0 than any
}

// issues are what decode finds in valid JSON that a cloud assembly must not have.
type issues struct {
	dups    []duplicate
	numbers []badNumber
}

// depthError is a document nested deeper than MaxDepth; Offset is that of the '[' or '{' one too deep.
type depthError struct {
	Offset int64
}

func (e *depthError) Error() string {
	return fmt.Sprintf("lists and objects nested more than %d deep", MaxDepth)
}

// decode parses one JSON document, keeping object key order and numbers as json.Number (as written). It
// returns a *depthError when the document nests deeper than MaxDepth, a *json.SyntaxError (whose Offset is
// exact) when it is not valid JSON, and otherwise every duplicate key and every number out of range.
func decode(data []byte) (any, issues, error) {
	if off := tooDeep(data); off >= 0 {
		return nil, issues{}, &depthError{Offset: off}
	}
	// The whole-input check gives encoding/json's errors with exact offsets; after it the token stream
	// cannot fail. The stream is jsontext's (encoding/json/v2's tokenizer): encoding/json's Decoder.Token
	// builds an error value at the end of every scalar, which was a third of the time to load a large
	// template. Duplicate keys are allowed through and reported by the decoder; invalid UTF-8 becomes
	// U+FFFD, as encoding/json does.
	if !json.Valid(data) {
		var raw json.RawMessage
		return nil, issues{}, json.Unmarshal(data, &raw)
	}
	// A *bytes.Buffer is parsed in place, without a copy of the document.
	d := &decoder{dec: jsontext.NewDecoder(bytes.NewBuffer(data), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))}
	v, err := d.value()
	return v, d.found, err
}

// tooDeep returns the offset of the first '[' or '{' that opens a level deeper than MaxDepth, or -1. It
// scans data once, skipping strings, and need not be given valid JSON.
func tooDeep(data []byte) int64 {
	depth, inString, escaped := 0, false, false
	for i, c := range data {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			if depth++; depth > MaxDepth {
				return int64(i)
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return -1
}

// decoder builds values from a token stream. at is the path of the value being decoded, rendered only for
// what is reported.
type decoder struct {
	dec   *jsontext.Decoder
	at    jsonPath
	found issues
}

func (d *decoder) value() (any, error) {
	tok, err := d.dec.ReadToken()
	if err != nil {
		return nil, err
	}
	switch tok.Kind() {
	case '{':
		return d.object()
	case '[':
		return d.array()
	}
	v := resource.ScalarValue(tok)
	n, ok := v.(json.Number) // a number, as written
	if ok && !numberInRange(n) {
		_, err := strconv.ParseFloat(string(n), 64)
		d.found.numbers = append(d.found.numbers, badNumber{path: d.at.String(), text: string(n), large: err != nil})
	}
	return v, nil
}

func (d *decoder) object() (*object, error) {
	o := &object{vals: map[string]any{}}
	for d.dec.PeekKind() != '}' {
		tok, err := d.dec.ReadToken()
		if err != nil {
			return nil, err
		}
		if tok.Kind() != '"' {
			return nil, fmt.Errorf("object key is %v, not a string", tok)
		}
		key := tok.String()
		d.at.pushKey(key)
		v, err := d.value()
		d.at.pop()
		if err != nil {
			return nil, err
		}
		if _, dup := o.vals[key]; dup {
			d.found.dups = append(d.found.dups, duplicate{parent: d.at.String(), key: key})
			continue
		}
		o.keys = append(o.keys, key)
		o.vals[key] = v
	}
	return o, d.end()
}

func (d *decoder) array() ([]any, error) {
	list := []any{}
	for d.dec.PeekKind() != ']' {
		d.at.pushIndex(len(list))
		v, err := d.value()
		d.at.pop()
		if err != nil {
			return nil, err
		}
		list = append(list, v)
	}
	return list, d.end()
}

// numberInRange reports whether n is a number every provider can read: 0, or of a magnitude that a
// float64 holds, from about 4.9e-324 to 1.8e308. cdkx keeps numbers as written (json.Number) from template
// to state, all their digits included, and compares them exactly (resource.Equal); but providers and their
// APIs read numbers as float64, which would turn 1e400 into +Inf or 1.8e308 and 1e-400 into 0, and a
// diff could not see the change. Such numbers are refused instead.
func numberInRange(n json.Number) bool {
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return false // out of range: a valid JSON number has no other error
	}
	return f != 0 || isZero(n)
}

// isZero reports whether the JSON number n is zero, whatever its exponent: all its digits are 0.
func isZero(n json.Number) bool {
	mantissa, _, _ := strings.Cut(strings.ToLower(string(n)), "e")
	return strings.Trim(mantissa, "-0.") == ""
}

// end reads the closing delimiter of an object or array.
func (d *decoder) end() error {
	_, err := d.dec.ReadToken()
	return err
}

// isList reports whether v is a decoded list.
func isList(v any) bool {
	_, ok := v.([]any)
	return ok
}

// plain converts decoded values into the shapes of resource.Properties: *object becomes map[string]any.
// It takes the values over: the *object must not be used afterwards.
func plain(v any) any {
	switch v := v.(type) {
	case *object:
		// vals holds exactly the kept keys: it becomes the map, converted in place, instead of a copy (a
		// large template's properties are most of a deploy's memory).
		for k, e := range v.vals {
			if _, leaf := e.(*object); leaf || isList(e) {
				v.vals[k] = plain(e)
			}
		}
		return v.vals
	case []any:
		for i, e := range v {
			v[i] = plain(e)
		}
		return v
	}
	return v
}

// jsonError describes a JSON decoding error of file (or a *depthError), with the line and column when the
// error carries an offset into data.
func jsonError(file string, data []byte, err error) diag.Diagnostic {
	d := diag.Diagnostic{Severity: diag.Error, File: file, Summary: "invalid JSON: " + err.Error()}
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var deep *depthError
	switch {
	case errors.As(err, &deep):
		d.Line, d.Column = position(data, deep.Offset+1)
		d.Summary = err.Error()
		d.Detail = "no synthesizer writes such nesting: check what wrote this file"
	case errors.As(err, &syntax):
		d.Line, d.Column = position(data, syntax.Offset)
	case errors.As(err, &typ):
		d.Line, d.Column = position(data, typ.Offset)
	}
	return d
}

// position returns the 1-based line and column (in characters) of the byte that an encoding/json error
// offset designates: the error occurred after reading offset bytes, so the culprit is the byte before.
func position(data []byte, offset int64) (line, col int) {
	i := int(min(max(offset-1, 0), int64(len(data))))
	before := data[:i]
	start := bytes.LastIndexByte(before, '\n') + 1
	return bytes.Count(before, []byte{'\n'}) + 1, utf8.RuneCount(before[start:]) + 1
}

// describe names the JSON type of a decoded value for messages, e.g. "a list".
func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case []any:
		return "a list"
	case *object, map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
