// Package resource is the vocabulary that the engine and the provider adapters share.
//
// Property values are decoded JSON: nil, bool, string, json.Number, []any and map[string]any. Adapters
// receive fully resolved values (no tokens, no Unknown) and return outputs of the same shapes.
package resource

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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

// Canonical returns v's JSON encoding with object keys sorted and numbers as written, so that two
// values are equal exactly when their canonical encodings are equal. Unknown encodes as a marker string.
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

// Equal reports whether a and b are the same JSON value. Numbers compare by value (1 and 1.0 are equal).
func Equal(a, b any) bool {
	return bytes.Equal(Canonical(normalize(a)), Canonical(normalize(b)))
}

func normalize(v any) any {
	switch v := v.(type) {
	case json.Number:
		if f, err := v.Float64(); err == nil {
			return f
		}
		return v.String()
	case int:
		return float64(v)
	case int64:
		return float64(v)
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
func ParseType(t string) (provider, domain, name string, ok bool) {
	parts := strings.Split(t, "::")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2], true
}

// CRN returns the cdkx resource name of an object, the output attribute "crn" of every resource:
// crn:cdkx:<provider>:<domain>:<type>/<physicalId>, segments lower-cased (cloud-assembly.md).
func CRN(resourceType, physicalID string) string {
	p, d, n, ok := ParseType(resourceType)
	if !ok {
		return "crn:cdkx:" + strings.ToLower(resourceType) + "/" + physicalID
	}
	return fmt.Sprintf("crn:cdkx:%s:%s:%s/%s", strings.ToLower(p), strings.ToLower(d), strings.ToLower(n), physicalID)
}

// ErrNotFound is returned (wrapped) by adapters when the object does not exist at the provider.
// Delete treats it as done; Read returns it for objects deleted out of band.
var ErrNotFound = errors.New("object not found")

// ErrUnreachable is matched (errors.Is) by an error after which the provider gave no response at all:
// the connection was refused or timed out on every attempt. The engine then treats the provider as down
// for a short while instead of spending every later call's retries on it.
var ErrUnreachable = errors.New("provider unreachable")

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
func (e *ProviderError) Error() string {
	return fmt.Sprintf("%s: %s %s: %d: %s", e.Provider, e.Method, e.URL, e.Status, e.Message)
}

// Unwrap lets errors.Is(err, ErrNotFound) and errors.Is(err, ErrAlreadyExists) work.
func (e *ProviderError) Unwrap() error { return e.Kind }
