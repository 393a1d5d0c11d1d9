// Package resource is the vocabulary that the engine and the provider adapters share.
//
// Property values are decoded JSON: nil, bool, string, json.Number, []any and map[string]any. Adapters
// receive fully resolved values (no tokens, no Unknown) and return outputs of the same shapes.
//
// Property values are never changed in place, once decoded or returned: the engine, the planner and
// adapters share them (a resolved input shares the template's values, Cdkx::Core::Data's output is its
// input, a dependent's input holds another resource's output) instead of copying them, which at 100,000
// resources is hundreds of megabytes. Whoever needs a changed value builds a new one (a new map or list on
// the way to the change, or Clone).
package resource

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cdkx-dev/cdkx/pkg/text"
)

// Properties are a resource's inputs or outputs: a JSON object keyed by camelCase property name.
type Properties = map[string]any

// Unknown stands for a value that is known only after deploy (a token whose target is not yet created,
// or is being updated or replaced). It never reaches an adapter.
type Unknown struct{}

// String renders the value as the plan shows it.
func (Unknown) String() string { return "(known after deploy)" }

// MarshalJSON renders Unknown as the string the plan shows.
func (u Unknown) MarshalJSON() ([]byte, error) { return json.Marshal(u.String()) }

// ContainsUnknown reports whether v holds an Unknown anywhere.
func ContainsUnknown(v any) bool {
	switch v := v.(type) {
	case Unknown:
		return true
	case map[string]any:
		for _, e := range v {
			if ContainsUnknown(e) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if ContainsUnknown(e) {
				return true
			}
		}
	}
	return false
}

// Canonical returns v's JSON encoding with object keys sorted and numbers as written (1.0 stays 1.0, and
// 123456789012345678901234567890 keeps every digit), a stable text for hashing or recording a value.
// Unknown encodes as a marker string. Compare values with Equal: it also takes 1 and 1.0 as equal.
func Canonical(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Values are decoded JSON, which always encodes; keep a deterministic answer anyway.
		return []byte(fmt.Sprintf("%#v", v))
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// Equal reports whether a and b are the same JSON value. Numbers compare exactly by value, whatever their
// size or precision: 1, 1.0, 1e0 and 10e-1 are equal; 123456789012345678901234567890 and
// 123456789012345678901234567891 are not, nor are 1e400 and 1.7976931348623157e308, nor 1e-400 and 0.
// Numbers may be json.Number (as decoded) or Go integers and floats; a number is never equal to a string.
func Equal(a, b any) bool {
	return bytes.Equal(Canonical(normalize(a)), Canonical(normalize(b)))
}

// normalize rewrites every number of v in the one form canonicalNumber gives, so that Canonical encodes
// equal numbers alike.
func normalize(v any) any {
	switch v := v.(type) {
	case json.Number:
		if c, ok := canonicalNumber(string(v)); ok {
			return c
		}
		return v
	case int:
		return mustCanonical(strconv.FormatInt(int64(v), 10))
	case int8:
		return mustCanonical(strconv.FormatInt(int64(v), 10))
	case int16:
		return mustCanonical(strconv.FormatInt(int64(v), 10))
	case int32:
		return mustCanonical(strconv.FormatInt(int64(v), 10))
	case int64:
		return mustCanonical(strconv.FormatInt(v, 10))
	case uint:
		return mustCanonical(strconv.FormatUint(uint64(v), 10))
	case uint8:
		return mustCanonical(strconv.FormatUint(uint64(v), 10))
	case uint16:
		return mustCanonical(strconv.FormatUint(uint64(v), 10))
	case uint32:
		return mustCanonical(strconv.FormatUint(uint64(v), 10))
	case uint64:
		return mustCanonical(strconv.FormatUint(v, 10))
	case float32:
		return floatNumber(float64(v), 32)
	case float64:
		return floatNumber(v, 64)
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = normalize(e)
		}
		return m
	case []any:
		s := make([]any, len(v))
		for i, e := range v {
			s[i] = normalize(e)
		}
		return s
	}
	return v
}

// floatNumber is the canonical number of f (the shortest decimal that reads back as f at bitSize), or f
// itself when it is NaN or infinite, which JSON cannot hold.
func floatNumber(f float64, bitSize int) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return f
	}
	return mustCanonical(strconv.FormatFloat(f, 'g', -1, bitSize))
}

// mustCanonical is canonicalNumber of a number strconv formatted, which is always valid.
func mustCanonical(s string) json.Number {
	c, _ := canonicalNumber(s)
	return c
}

// maxExponentDigits bounds the exponents canonicalNumber rewrites: parsing a longer one would cost time
// quadratic in its length. No provider reads such numbers; they compare as written.
const maxExponentDigits = 1000

// canonicalNumber rewrites the JSON number s as "0" or [-]0.DIGITSeEXP, where DIGITS has neither leading
// nor trailing zeros: two JSON numbers have the same value exactly when their canonical forms are equal.
// It works on the decimal text, in time linear in its length: no float64 rounding, and no big.Rat, whose
// 10^exponent a hostile "1e999999999" would make enormous. ok is false when s is not a JSON number or its
// exponent has more than maxExponentDigits digits.
func canonicalNumber(s string) (c json.Number, ok bool) {
	rest, neg := strings.CutPrefix(s, "-")
	mantissa, exp, hasExp := rest, "", false
	if i := strings.IndexAny(rest, "eE"); i >= 0 {
		mantissa, exp, hasExp = rest[:i], rest[i+1:], true
	}
	intPart, frac, hasFrac := strings.Cut(mantissa, ".")
	if !digits(intPart) || (len(intPart) > 1 && intPart[0] == '0') || (hasFrac && !digits(frac)) {
		return "", false
	}
	expNeg := false
	if hasExp {
		switch {
		case strings.HasPrefix(exp, "-"):
			exp, expNeg = exp[1:], true
		case strings.HasPrefix(exp, "+"):
			exp = exp[1:]
		}
		if !digits(exp) {
			return "", false
		}
	}
	// The value is 0.(intPart frac) × 10^(len(intPart) + exp).
	all := intPart + frac
	trimmed := strings.TrimLeft(all, "0")
	if trimmed == "" {
		return "0", true
	}
	point := int64(len(intPart) - (len(all) - len(trimmed)))
	e := strconv.FormatInt(point, 10)
	switch exp = strings.TrimLeft(exp, "0"); {
	case exp == "":
	case len(exp) <= 18: // below 10^18: point + exp fits an int64
		n, _ := strconv.ParseInt(exp, 10, 64)
		if expNeg {
			n = -n
		}
		e = strconv.FormatInt(point+n, 10)
	case len(exp) <= maxExponentDigits:
		n, _ := new(big.Int).SetString(exp, 10)
		if expNeg {
			n.Neg(n)
		}
		e = n.Add(n, big.NewInt(point)).String()
	default:
		return "", false
	}
	sign := ""
	if neg {
		sign = "-"
	}
	return json.Number(sign + "0." + strings.TrimRight(trimmed, "0") + "e" + e), true
}

// digits reports whether s is one or more ASCII digits.
func digits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// Decode converts decoded JSON (such as Properties) into a typed value by re-encoding it. Errors name the
// field that did not fit, e.g. `json: cannot unmarshal string into Go struct field .ttl of type int`.
func Decode(v any, into any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode properties: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(into)
}

// Encode converts a typed value into decoded JSON Properties (numbers as json.Number).
func Encode(v any) (Properties, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	var p Properties
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	return p, nil
}

// Clone returns a deep copy of decoded JSON.
func Clone(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = Clone(e)
		}
		return m
	case []any:
		s := make([]any, len(v))
		for i, e := range v {
			s[i] = Clone(e)
		}
		return s
	}
	return v
}

// ParseType splits "Provider::Domain::Type" into its three segments; ok is false for any other shape.
// It allocates nothing: loading a template parses the type of each of its resources.
func ParseType(t string) (provider, domain, name string, ok bool) {
	provider, rest, ok1 := strings.Cut(t, "::")
	domain, name, ok2 := strings.Cut(rest, "::")
	if !ok1 || !ok2 || provider == "" || domain == "" || name == "" || strings.Contains(name, "::") {
		return "", "", "", false
	}
	return provider, domain, name, true
}

// CRN returns the cdkx resource name of an object, the output attribute "crn" of every resource:
// crn:cdkx:<provider>:<domain>:<type>/<physicalId>, segments lower-cased (cloud-assembly.md).
func CRN(resourceType, physicalID string) string {
	p, d, n, ok := ParseType(resourceType)
	if !ok {
		return "crn:cdkx:" + strings.ToLower(resourceType) + "/" + physicalID
	}
	for i := range len(resourceType) {
		if resourceType[i] >= utf8.RuneSelf {
			return fmt.Sprintf("crn:cdkx:%s:%s:%s/%s", strings.ToLower(p), strings.ToLower(d), strings.ToLower(n), physicalID)
		}
	}
	// ASCII (every type cdkx knows): one allocation, where Sprintf and ToLower make eight (one CRN per object made).
	var b strings.Builder
	b.Grow(len("crn:cdkx::://") + len(p) + len(d) + len(n) + len(physicalID))
	b.WriteString("crn:cdkx:")
	for i, seg := range [...]string{p, d, n} {
		if i > 0 {
			b.WriteByte(':')
		}
		for j := range len(seg) {
			c := seg[j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			b.WriteByte(c)
		}
	}
	b.WriteByte('/')
	b.WriteString(physicalID)
	return b.String()
}

// ErrNotFound is returned (wrapped) by adapters when the object does not exist at the provider.
// Delete treats it as done; Read returns it for objects deleted out of band.
var ErrNotFound = errors.New("object not found")

// ErrUnreachable is matched (errors.Is) by an error after which the provider gave no response at all:
// the connection was refused or timed out on every attempt. The engine then treats the provider as down
// for a short while instead of spending every later call's retries on it.
var ErrUnreachable = errors.New("provider unreachable")

// ErrOutcomeUnknown is matched (errors.Is) by the error of a call that changes something at the provider
// and may have been received there although no answer came: a timeout waiting for the answer, a
// connection reset after the request was written, a 5xx from the API or a proxy in front of it. Such a
// call is not sent again blindly (a create would be made twice): the engine looks the object up first.
var ErrOutcomeUnknown = errors.New("outcome unknown: the request may have been received")

// ErrAlreadyExists is returned (wrapped) by Create when an object with the same unique name exists at the
// provider but is not recorded in state. cdkx never adopts it silently.
var ErrAlreadyExists = errors.New("object already exists")

// ProviderError is an error answered by a provider API, decoded by the adapter.
//
// Status is the HTTP status code (0 for errors that did not come from a response); Message is the
// provider's own error text, never containing secrets.
type ProviderError struct {
	Provider string
	Method   string
	URL      string
	Status   int
	Message  string
	// Kind is ErrNotFound, ErrAlreadyExists or nil, so that errors.Is works on the decoded error.
	Kind error
}

// Error renders e.g. `powerdns: PATCH http://127.0.0.1:8081/api/v1/servers/localhost/zones/x.: 422: RRset …`.
// The message is the provider's text, and errors reach terminals, events and records: it is capped and
// sanitized there (text.ProviderMessage), so an answer can neither act on a terminal nor swell state.
func (e *ProviderError) Error() string {
	return fmt.Sprintf("%s: %s %s: %d: %s", e.Provider, e.Method, e.URL, e.Status, text.ProviderMessage(e.Message))
}

// Unwrap lets errors.Is(err, ErrNotFound) and errors.Is(err, ErrAlreadyExists) work.
func (e *ProviderError) Unwrap() error { return e.Kind }
