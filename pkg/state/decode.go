package state

import (
	"fmt"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// UnmarshalResource decodes one stored resource record (the JSON a backend keeps per resource row) into r
// as encoding/json with UseNumber does: numbers as json.Number (as written), objects as map[string]any,
// lists as []any, member names matched without regard to case, unknown members ignored, duplicate names
// and invalid UTF-8 let through. It reads the record with encoding/json/v2's decoder, which builds the
// values without reflection on every value and without scanning the record twice: reading 100,000 rows is
// most of a no-op plan's time. Records of the common shape (decodeCommon) are read without reflection at
// all. The error, if any, is a syntax or type error naming the offset.
func UnmarshalResource(data []byte, r *Resource) error {
	if r.Inputs == nil && r.Outputs == nil && r.Dependencies == nil { // what the general path would merge into
		was := *r
		if decodeCommon(data, r) {
			return nil
		}
		*r = was
	}
	if err := jsonv2.Unmarshal(data, r, decodeOptions); err != nil {
		return fmt.Errorf("decode resource: %w", err)
	}
	return nil
}

// decodeOptions make encoding/json/v2 decode as encoding/json with UseNumber does (see UnmarshalResource).
var decodeOptions = jsonv2.JoinOptions(
	jsonv2.MatchCaseInsensitiveNames(true),
	jsontext.AllowDuplicateNames(true),
	jsontext.AllowInvalidUTF8(true),
	jsonv2.WithUnmarshalers(jsonv2.UnmarshalFromFunc(func(dec *jsontext.Decoder, v *any) error {
		var err error
		*v, err = decodeValue(dec)
		return err
	})),
)

// decodeValue reads the next value of dec as encoding/json with UseNumber would decode it into an any.
func decodeValue(dec *jsontext.Decoder) (any, error) {
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, err
	}
	switch tok.Kind() {
	case '{':
		m := map[string]any{}
		for dec.PeekKind() != '}' {
			k, err := dec.ReadToken()
			if err != nil {
				return nil, err
			}
			key := k.String() // before the next read voids k
			v, err := decodeValue(dec)
			if err != nil {
				return nil, err
			}
			m[key] = v
		}
		_, err := dec.ReadToken()
		return m, err
	case '[':
		l := []any{}
		for dec.PeekKind() != ']' {
			v, err := decodeValue(dec)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		_, err := dec.ReadToken()
		return l, err
	}
	return resource.ScalarValue(tok), nil
}
