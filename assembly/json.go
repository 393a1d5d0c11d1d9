package assembly

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/cdkx-dev/cdkx/pkg/diag"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// object is a decoded JSON object that keeps its keys in document order: keys[i] holds vals[i]. Values
// are nil, bool, string, json.Number, []any, map[string]any (below a decoder's plainBelow) or *object.
type object struct {
	keys []string
	vals []any
	// index maps keys to their position in objects of more than smallObject keys; smaller ones are
	// searched in order, which costs less than a map of their own.
	index map[string]int
	// tokens are the tokens (AsToken) found under the key "properties" of an object that a template
	// decoder recorded (see decoder.rec), in document order; recorded says it did.
	tokens   []Token
	recorded bool
	// assetHint is set on a recorded object when one of its strings contains assetSegmentPrefix.
	assetHint bool
}

// smallObject is the most keys an object is searched in order for.
const smallObject = 8

// lookup returns the position of key, or false.
func (o *object) lookup(key string) (int, bool) {
	if o.index != nil {
		i, ok := o.index[key]
		return i, ok
	}
	for i, k := range o.keys {
		if k == key {
			return i, true
		}
	}
	return -1, false
}

// get returns the value of key; ok is false when the key is absent or null (the synthesizer drops nulls,
// so null and absent mean the same).
func (o *object) get(key string) (v any, ok bool) {
	i, found := o.lookup(key)
	if !found {
		return nil, false
	}
	return o.vals[i], o.vals[i] != nil
}

// has reports whether key is present, null or not.
func (o *object) has(key string) bool {
	_, ok := o.lookup(key)
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
	return decodeBelow(data, nil, 0)
}

// decodeBelow is decode that builds the objects nested deeper than plainBelow levels (the top-level value
// is at level 1) as map[string]any, the shape of resource.Properties, instead of *object (0: none), and
// records what the walks over a template's resources look for in every object at level plainBelow (see
// object.tokens). keys, when not nil, interns object keys and short strings across the documents decoded
// with it.
func decodeBelow(data []byte, keys *interner, plainBelow int) (any, issues, error) {
	if keys == nil {
		keys = newInterner()
	}
	// The stream is jsontext's (encoding/json/v2's tokenizer): encoding/json's Decoder.Token builds an
	// error value at the end of every scalar, which was a third of the time to load a large template.
	// Duplicate keys are allowed through and reported by the decoder; invalid UTF-8 becomes U+FFFD, as
	// encoding/json does. A *bytes.Buffer is parsed in place, without a copy of the document.
	d := &decoder{
		dec:        jsontext.NewDecoder(bytes.NewBuffer(data), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)),
		plainBelow: plainBelow, keys: keys,
	}
	v, err := d.value()
	if err == nil {
		err = d.eof()
	}
	if err != nil {
		// Errors are reported as they were when the document was checked whole before it was decoded:
		// nesting first, then encoding/json's error with its exact offset.
		if off := tooDeep(data); off >= 0 {
			return nil, issues{}, &depthError{Offset: off}
		}
		var raw json.RawMessage
		if uerr := json.Unmarshal(data, &raw); uerr != nil {
			return nil, issues{}, uerr
		}
		return nil, issues{}, err // not reached: the two tokenizers accept the same documents (FuzzDecode)
	}
	return v, d.found, nil
}

// errTooDeep stops a decoder at a list or object nested deeper than MaxDepth; decodeBelow reports where.
var errTooDeep = errors.New("nested too deep")

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

// interner hands out one copy of each object key and short string value of the documents it decodes
// (the few keys of a template repeat for each of its resources), boxed once for the values. It holds at
// most maxInterned of each, so that unique names do not grow it without end.
type interner struct {
	recent [64]string // the keys met last, by recentSlot
	keys   map[string]string
	strs   map[string]any
	nums   map[string]any // numbers known to be in range, boxed as json.Number
}

// maxInterned is the most keys, strings and numbers an interner holds, each; maxInternedLen the longest
// string value it holds, in bytes.
const (
	maxInterned    = 4096
	maxInternedLen = 16
)

func newInterner() *interner {
	return &interner{keys: map[string]string{}, strs: map[string]any{}, nums: map[string]any{}}
}

// key returns b as a string, the interned one if there is one.
func (in *interner) key(b []byte) string {
	slot := &in.recent[recentSlot(b)]
	if *slot == string(b) {
		return *slot // a key met before, most often
	}
	s, ok := in.keys[string(b)]
	switch {
	case ok:
		*slot = s // met twice: it may repeat (a unique name would only push others out)
	case len(in.keys) < maxInterned:
		s = string(b)
		in.keys[s] = s
	default:
		s = string(b)
	}
	return s
}

// recentSlot picks b's place among the interner's recent keys, from its length and first and last bytes.
func recentSlot(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	return (len(b)*31 + int(b[0])*7 + int(b[len(b)-1])) % len(interner{}.recent)
}

// str returns b as a boxed string, the interned one if there is one.
func (in *interner) str(b []byte) any {
	if len(b) > maxInternedLen {
		return string(b)
	}
	if v, ok := in.strs[string(b)]; ok {
		return v
	}
	var v any = string(b)
	if len(in.strs) < maxInterned {
		in.strs[v.(string)] = v
	}
	return v
}

// decoder builds values from a token stream. at is the path of the value being decoded, rendered only for
// what is reported; depth is the nesting level of the value being decoded (1 for the top-level one).
type decoder struct {
	dec        *jsontext.Decoder
	at         jsonPath
	found      issues
	depth      int
	plainBelow int     // see decodeBelow
	rec        *object // the object being decoded at level plainBelow, which records tokens and assetHint
	keys       *interner
	buf        []byte // unquoted strings
	list       []any  // the elements of the lists being decoded, innermost last
	okeys      []string
	ovals      []any   // the members of the *objects being decoded, innermost last
	toks       []Token // the tokens of the object being recorded

	// The *objects of a document, their members and the recorded tokens are cut from slabs: the
	// objects are garbage once the document is read, the tokens once Validate ran, and allocating each
	// on its own took an eighth of the time to load a large template.
	objects slab[object]
	keySlab slab[string]
	valSlab slab[any]
	tokSlab slab[Token]
}

// slab hands out small slices of larger allocations: what it hands out stays allocated as long as
// anything else cut from the same allocation is referenced.
type slab[T any] struct{ free []T }

// slabLen is the length of a slab's allocations; slices longer than a sixteenth of it are allocated on
// their own.
const slabLen = 1024

// clone returns a copy of src (nil when it is empty).
func (s *slab[T]) clone(src []T) []T {
	n := len(src)
	switch {
	case n == 0:
		return nil
	case n > slabLen/16:
		return slices.Clone(src)
	case n > len(s.free):
		s.free = make([]T, slabLen)
	}
	dst := s.free[:n:n]
	s.free = s.free[n:]
	copy(dst, src)
	return dst
}

// one returns a new zero T.
func (s *slab[T]) one() *T {
	if len(s.free) == 0 {
		s.free = make([]T, slabLen)
	}
	p := &s.free[0]
	s.free = s.free[1:]
	return p
}

func (d *decoder) value() (any, error) {
	switch d.dec.PeekKind() {
	case '{', '[':
		tok, err := d.dec.ReadToken()
		if err != nil {
			return nil, err
		}
		if d.depth >= MaxDepth {
			return nil, errTooDeep
		}
		d.depth++
		var v any
		switch {
		case tok.Kind() == '[':
			v, err = d.array()
		case d.plainBelow > 0 && d.depth > d.plainBelow:
			v, err = d.plainObject()
		default:
			v, err = d.object()
		}
		d.depth--
		return v, err
	case '"':
		raw, err := d.dec.ReadValue()
		if err != nil {
			return nil, err
		}
		b := d.unquote(raw)
		if d.rec != nil && !d.rec.assetHint && bytes.Contains(b, []byte(assetSegmentPrefix)) {
			d.rec.assetHint = true
		}
		return d.keys.str(b), nil
	case '0':
		raw, err := d.dec.ReadValue()
		if err != nil {
			return nil, err
		}
		return d.number(raw), nil
	}
	tok, err := d.dec.ReadToken()
	if err != nil {
		return nil, err
	}
	return resource.ScalarValue(tok), nil
}

// number returns the number raw (as written) boxed as a json.Number, and records it when it is out of
// range.
func (d *decoder) number(raw []byte) any {
	if len(raw) <= maxInternedLen {
		if v, ok := d.keys.nums[string(raw)]; ok {
			return v
		}
	}
	n := json.Number(raw)
	var v any = n
	if !numberInRange(n) {
		_, err := strconv.ParseFloat(string(n), 64)
		d.found.numbers = append(d.found.numbers, badNumber{path: d.at.String(), text: string(n), large: err != nil})
	} else if len(raw) <= maxInternedLen && len(d.keys.nums) < maxInterned {
		d.keys.nums[string(n)] = v
	}
	return v
}

// unquote returns the text of the JSON string raw (quotes included, valid as the decoder read it), valid
// until the next call.
func (d *decoder) unquote(raw []byte) []byte {
	body := raw[1 : len(raw)-1]
	for _, c := range body {
		if c == '\\' || c >= utf8.RuneSelf {
			// Invalid UTF-8 is the only error left once the decoder read the string: it becomes U+FFFD.
			d.buf, _ = jsontext.AppendUnquote(d.buf[:0], raw)
			return d.buf
		}
	}
	return body
}

// key reads an object's key.
func (d *decoder) key() (string, error) {
	raw, err := d.dec.ReadValue()
	if err != nil {
		return "", err
	}
	if raw.Kind() != '"' {
		return "", fmt.Errorf("object key is %v, not a string", raw)
	}
	return d.keys.key(d.unquote(raw)), nil
}

// object decodes the members of an object, after its '{', as an *object.
func (d *decoder) object() (*object, error) {
	o := d.objects.one()
	if d.plainBelow > 0 && d.depth == d.plainBelow {
		outer, tokStart := d.rec, len(d.toks)
		d.rec, o.recorded = o, true
		defer func() {
			o.tokens = d.tokSlab.clone(d.toks[tokStart:])
			d.rec, d.toks = outer, d.toks[:tokStart]
		}()
	}
	start := len(d.okeys)
	index, err := d.members()
	if err == nil {
		o.keys, o.vals, o.index = d.keySlab.clone(d.okeys[start:]), d.valSlab.clone(d.ovals[start:]), index
	}
	d.drop(start)
	if err != nil {
		return nil, err
	}
	return o, d.end()
}

// plainObject decodes the members of an object, after its '{', as a map[string]any; in an object a
// template decoder records, it records the object when it is a token under "properties".
func (d *decoder) plainObject() (map[string]any, error) {
	start := len(d.okeys)
	_, err := d.members()
	if err != nil {
		d.drop(start)
		return nil, err
	}
	keys, vals := d.okeys[start:], d.ovals[start:]
	m := make(map[string]any, len(keys))
	for i, k := range keys {
		m[k] = vals[i]
	}
	if d.rec != nil && d.underProperties() {
		if t, ok := tokenOf(keys, vals); ok {
			d.toks = append(d.toks, t)
		}
	}
	d.drop(start)
	return m, d.end()
}

// members reads the members of an object up to its '}' onto okeys and ovals, without duplicates (each is
// recorded; the first value is kept). It returns the index of the keys once there are more than
// smallObject.
func (d *decoder) members() (map[string]int, error) {
	start := len(d.okeys)
	var index map[string]int
	for d.dec.PeekKind() != '}' {
		key, err := d.key()
		if err != nil {
			return nil, err
		}
		marked := len(d.toks)
		d.at.pushKey(key)
		v, err := d.value()
		d.at.pop()
		if err != nil {
			return nil, err
		}
		n := len(d.okeys) - start
		dup := false
		if index != nil {
			_, dup = index[key]
		} else {
			dup = slices.Contains(d.okeys[start:], key)
		}
		if dup {
			d.toks = d.toks[:marked] // those of the value dropped
			d.found.dups = append(d.found.dups, duplicate{parent: d.at.String(), key: key})
			continue
		}
		if index != nil {
			index[key] = n
		} else if n == smallObject {
			index = make(map[string]int, 2*smallObject)
			for i, k := range d.okeys[start:] {
				index[k] = i
			}
			index[key] = n
		}
		d.okeys, d.ovals = append(d.okeys, key), append(d.ovals, v)
	}
	return index, nil
}

// drop removes the members from start on from okeys and ovals.
func (d *decoder) drop(start int) {
	clear(d.ovals[start:])
	d.okeys, d.ovals = d.okeys[:start], d.ovals[:start]
}

// tokenOf returns the token an object of these members is, as AsToken returns it from the map of them.
func tokenOf(keys []string, vals []any) (Token, bool) {
	return tokenFrom(len(keys), func(key string) (string, bool) {
		if i := slices.Index(keys, key); i >= 0 {
			s, ok := vals[i].(string)
			return s, ok
		}
		return "", false
	})
}

// underProperties reports whether the value being decoded is under the key "properties" of the recorded
// object (a resource of a template).
func (d *decoder) underProperties() bool {
	i := d.plainBelow - 1 // the segment of the recorded object's key
	return len(d.at.segs) > i && d.at.segs[i].isKey && d.at.segs[i].key == "properties"
}

func (d *decoder) array() ([]any, error) {
	start := len(d.list)
	defer func() {
		clear(d.list[start:])
		d.list = d.list[:start]
	}()
	for d.dec.PeekKind() != ']' {
		d.at.pushIndex(len(d.list) - start)
		v, err := d.value()
		d.at.pop()
		if err != nil {
			return nil, err
		}
		d.list = append(d.list, v)
	}
	list := make([]any, len(d.list)-start)
	copy(list, d.list[start:])
	return list, d.end()
}

// eof checks that nothing but whitespace follows the top-level value.
func (d *decoder) eof() error {
	if _, err := d.dec.ReadToken(); err != io.EOF {
		if err == nil {
			err = errors.New("data after the top-level value")
		}
		return err
	}
	return nil
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

// plain converts decoded values into the shapes of resource.Properties: *object becomes map[string]any.
// It takes the values over: the *object must not be used afterwards.
func plain(v any) any {
	switch v := v.(type) {
	case *object:
		m := make(map[string]any, len(v.keys))
		for i, k := range v.keys {
			m[k] = plain(v.vals[i])
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
