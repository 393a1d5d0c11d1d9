package resource_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/pkg/resource"
)

func TestScalarValue(t *testing.T) {
	tests := []struct {
		json string
		want any
	}{
		{`null`, nil},
		{`false`, false},
		{`true`, true},
		{`"a\u00e9\n"`, "aé\n"},
		{`""`, ""},
		{`1.50`, json.Number("1.50")},
		{`-3e400`, json.Number("-3e400")},
	}
	for _, tt := range tests {
		tok, err := jsontext.NewDecoder(bytes.NewReader([]byte(tt.json))).ReadToken()
		if err != nil {
			t.Fatalf("ReadToken(%s): %v", tt.json, err)
		}
		if diff := cmp.Diff(tt.want, resource.ScalarValue(tok)); diff != "" {
			t.Errorf("ScalarValue(%s) (-want +got):\n%s", tt.json, diff)
		}
	}
}
