package assembly

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/cdkx-dev/cdkx/pkg/diag"
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

// duplicate is a key that appears more than once in one JSON object; the first value is kept.
type duplicate struct {
	parent string // JSON path of the object
	key    string
}

// decode parses one JSON document, keeping object key order and numbers as json.Number. It returns a
// *json.SyntaxError (whose Offset is exact) when data is not valid JSON, and every duplicate key.
func decode(data []byte) (any, []duplicate, error) {
	// The whole-input check gives exact error offsets, which json.Decoder.Token does not; after it the
	// token stream cannot fail (and nesting is bounded by encoding/json's limit).
	if !json.Valid(data) {
		var raw json.RawMessage
		return nil, nil, json.Unmarshal(data, &raw)
	}
	d := &decoder{dec: json.NewDecoder(bytes.NewReader(data))}
	d.dec.UseNumber()
	v, err := d.value()
	return v, d.dups, err
}

// decoder builds values from a token stream. at holds the path of the value being decoded, one segment
// per level, joined only when a duplicate is found (joining at every level is quadratic in the depth).
type decoder struct {
	dec  *json.Decoder
	at   []segment
	dups []duplicate
}

// segment is an object key, or a list index when key is nil.
type segment struct {
	key   *string
	index int
}

func (d *decoder) value() (any, error) {
	tok, err := d.dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		return d.object()
	case json.Delim('['):
		return d.array()
	}
	return tok, nil
}

func (d *decoder) object() (*object, error) {
	o := &object{vals: map[string]any{}}
	for d.dec.More() {
		tok, err := d.dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("object key is %v, not a string", tok)
		}
		d.at = append(d.at, segment{key: &key})
		v, err := d.value()
		d.at = d.at[:len(d.at)-1]
		if err != nil {
			return nil, err
		}
		if _, dup := o.vals[key]; dup {
			d.dups = append(d.dups, duplicate{parent: d.path(), key: key})
			continue
		}
		o.keys = append(o.keys, key)
		o.vals[key] = v
	}
	return o, d.end()
}

func (d *decoder) array() ([]any, error) {
	list := []any{}
	for d.dec.More() {
		d.at = append(d.at, segment{index: len(list)})
		v, err := d.value()
		d.at = d.at[:len(d.at)-1]
		if err != nil {
			return nil, err
		}
		list = append(list, v)
	}
	return list, d.end()
}

// path joins the segments of at into a JSON path such as "resources.X.records[0]".
func (d *decoder) path() string {
	var p string
	for _, seg := range d.at {
		if seg.key == nil {
			p += "[" + strconv.Itoa(seg.index) + "]"
		} else {
			p = JoinPath(p, *seg.key)
		}
	}
	return p
}

// end reads the closing delimiter of an object or array.
func (d *decoder) end() error {
	_, err := d.dec.Token()
	return err
}

// plain converts decoded values into the shapes of resource.Properties: *object becomes map[string]any.
func plain(v any) any {
	switch v := v.(type) {
	case *object:
		m := make(map[string]any, len(v.keys))
		for _, k := range v.keys {
			m[k] = plain(v.vals[k])
		}
		return m
	case []any:
		for i, e := range v {
			v[i] = plain(e)
		}
		return v
	}
	return v
}

// jsonError describes a JSON decoding error of file, with the line and column when the error carries an
// offset into data.
func jsonError(file string, data []byte, err error) diag.Diagnostic {
	d := diag.Diagnostic{Severity: diag.Error, File: file, Summary: "invalid JSON: " + err.Error()}
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
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
