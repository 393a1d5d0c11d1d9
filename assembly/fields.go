package assembly

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/cdkx-dev/cdkx/pkg/diag"
)

// fields reads typed values out of one decoded file and collects a diagnostic for every value that does
// not have the expected shape. Its methods never stop at a problem: they report it and let the caller go on.
type fields struct {
	file string
	ds   diag.Diagnostics
}

func (f *fields) errorf(path, format string, args ...any) {
	f.ds.Errorf(f.file, path, format, args...)
}

func (f *fields) warnf(path, format string, args ...any) {
	f.ds.Warnf(f.file, path, format, args...)
}

// detail sets the detail of the last diagnostic.
func (f *fields) detail(format string, args ...any) {
	f.ds[len(f.ds)-1].Detail = fmt.Sprintf(format, args...)
}

// object returns v as an object, or reports that the value at path is not one.
func (f *fields) object(path string, v any) (*object, bool) {
	o, ok := v.(*object)
	if !ok {
		f.errorf(path, "must be an object, got %s", describe(v))
	}
	return o, ok
}

// required returns the value of key in o, or reports that it is missing.
func (f *fields) required(path string, o *object, key string) (any, bool) {
	v, ok := o.get(key)
	if !ok {
		f.errorf(path, "missing %q", key)
	}
	return v, ok
}

// string returns v as a string, or reports at path that it is not one.
func (f *fields) string(path string, v any) (string, bool) {
	s, ok := v.(string)
	if !ok {
		f.errorf(path, "must be a string, got %s", describe(v))
	}
	return s, ok
}

// name returns v as a non-empty string (an ID, a type, a file name), or reports at path that it is not one.
// A string holding a character that is not printable text is reported too (see printable), but returned
// with ok set: what it names is still known.
func (f *fields) name(path string, v any) (string, bool) {
	s, ok := f.string(path, v)
	if ok && s == "" {
		f.errorf(path, "must not be empty")
		ok = false
	}
	if ok {
		f.printable(path, "", s)
	}
	return s, ok
}

// MaxNameLen is the longest stack ID, logical ID or output key Load accepts, in bytes: these names fill
// table columns, so one of megabytes would pad every row to megabytes.
const MaxNameLen = 255

// id checks an artifact ID, logical ID or output key (what names which) at path: not empty, printable,
// at most MaxNameLen bytes. It reports every problem and returns false when there is one.
func (f *fields) id(path, what, id string) bool {
	switch {
	case id == "":
		f.errorf(path, "%s must not be empty", what)
		return false
	case len(id) > MaxNameLen:
		f.errorf(path, "%s %s is %d bytes long, more than %d", what, quote(id), len(id), MaxNameLen)
		f.detail("use a shorter name")
		f.printable(path, what, id)
		return false
	}
	return f.printable(path, what, id)
}

// printable reports at path when s (a name of kind what, e.g. "logical ID", or "" for any text) holds a
// character that is not printable text: a C0 or C1 control character (ESC, NUL, newline, …), DEL, an
// invisible formatting character (such as the Unicode bidirectional overrides) or a line or paragraph
// separator. Names reach terminals, where such characters move the cursor, forge table rows or set the
// window title; no synthesizer writes them.
func (f *fields) printable(path, what, s string) bool {
	if printableASCII(s) {
		return true
	}
	i := strings.IndexFunc(s, unprintable)
	if i < 0 {
		return true
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	if what != "" {
		what += " "
	}
	f.errorf(path, "%s%s contains %s (U+%04X)", what, quote(s), describeRune(r), r)
	f.detail("cdkx prints names in tables and logs: use letters, digits and punctuation")
	return false
}

// printableASCII reports whether s is all printable ASCII (space to '~'), which printable accepts: most
// names are, and telling so takes a tenth of the time of looking each rune up.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c > '~' {
			return false
		}
	}
	return true
}

// unprintable reports whether r must not appear in a name: see printable.
func unprintable(r rune) bool {
	return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
}

// describeRune names the kind of an unprintable rune, e.g. "a control character".
func describeRune(r rune) string {
	switch {
	case unicode.IsControl(r):
		return "a control character"
	case unicode.In(r, unicode.Zl, unicode.Zp):
		return "a line separator"
	}
	return "an invisible formatting character"
}

// quote renders s as a Go string literal, escaping what is not printable, and cut to its first 64 bytes
// when it is longer.
func quote(s string) string {
	const limit = 64
	if len(s) <= limit {
		return fmt.Sprintf("%q", s)
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%q…", s[:cut])
}

// optionalString returns the string at key of o, "" when the key is absent.
func (f *fields) optionalString(path string, o *object, key string) string {
	v, ok := o.get(key)
	if !ok {
		return ""
	}
	s, _ := f.string(JoinPath(path, key), v)
	return s
}

// optionalName is optionalString for a name that is printed (such as a display name): see printable.
func (f *fields) optionalName(path string, o *object, key string) string {
	s := f.optionalString(path, o, key)
	f.printable(JoinPath(path, key), "", s)
	return s
}

// strings returns the list of non-empty strings at key of o, or nil when the key is absent or an element
// is not such a string (each is reported). Dropping the whole list keeps the index of every entry that is
// returned equal to its index in the file, which later diagnostics name.
func (f *fields) strings(path string, o *object, key string) []string {
	v, ok := o.get(key)
	if !ok {
		return nil
	}
	path = JoinPath(path, key)
	list, ok := v.([]any)
	if !ok {
		f.errorf(path, "must be a list of strings, got %s", describe(v))
		return nil
	}
	out := make([]string, 0, len(list))
	for i, e := range list {
		if s, ok := f.name(fmt.Sprintf("%s[%d]", path, i), e); ok {
			out = append(out, s)
		}
	}
	if len(out) < len(list) {
		return nil
	}
	return out
}

// unknownKeys warns about keys of o that are not in known: they are ignored, and often a typo.
func (f *fields) unknownKeys(path string, o *object, known ...string) {
	for _, k := range o.keys {
		if !slices.Contains(known, k) {
			f.warnf(JoinPath(path, k), "unknown key %q is ignored", k)
			f.detail("known keys here: %s", strings.Join(known, ", "))
		}
	}
}

// duplicates reports every duplicate key; under the object at idsAt a key is an ID of kind what (such as
// "logical ID").
func (f *fields) duplicates(dups []duplicate, idsAt, what string) {
	for _, d := range dups {
		name := "key"
		if d.parent == idsAt {
			name = what
		}
		f.errorf(JoinPath(d.parent, d.key), "duplicate %s %q", name, d.key)
		f.detail("a key may appear only once in a JSON object; the first one is read")
	}
}

// numbers reports every number out of range (see numberInRange).
func (f *fields) numbers(nums []badNumber) {
	for _, n := range nums {
		what := "larger than any 64-bit floating point number (about 1.8e308)"
		if !n.large {
			what = "closer to 0 than any 64-bit floating point number (about 4.9e-324) but not 0"
		}
		f.errorf(n.path, "number %s is out of range: %s", shortNumber(n.text), what)
		f.detail("cdkx keeps numbers as written, but providers read them as 64-bit floating point numbers; " +
			"write the value as a string if it is not meant as a number")
	}
}

// shortNumber renders a number's text for a message: as written, or its beginning and end when it is
// longer than 40 characters.
func shortNumber(s string) string {
	if len(s) <= 40 {
		return s
	}
	return fmt.Sprintf("%s…%s (%d characters)", s[:20], s[len(s)-10:], len(s))
}
