package resource

import (
	"encoding/json"

	"github.com/go-json-experiment/json/jsontext"
)

// ScalarValue returns the property value of a scalar JSON token (its Kind one of 'n', 'f', 't', '"', '0'):
// nil, false, true, the string, or the number as written (json.Number), as encoding/json with UseNumber
// decodes it. Call it before the decoder reads on: a read voids tok.
func ScalarValue(tok jsontext.Token) any {
	switch tok.Kind() {
	case 'n':
		return nil
	case 'f':
		return false
	case 't':
		return true
	case '"':
		return tok.String()
	}
	return json.Number(tok.String())
}
