package assembly

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// recordedSeeds are templates whose tokens and assets sit where a one-pass decoder could miss or
// miscount them.
var recordedSeeds = []string{
	`{"resources": {"A": {"type": "X::Y::Z", "properties": {"a": {"ref": "B", "attr": "id"}, "l": [{"ref": "C"}, [{"stackRef": "S", "outputKey": "k"}]]}}}}`,
	`{"resources": {"A": {"type": "X::Y::Z", "properties": {"ref": "B", "attr": "id"}}}}`,
	`{"resources": {"A": {"type": "X::Y::Z", "properties": {"a": {"ref": "B", "attr": "x"}}, "properties": {"b": {"ref": "C", "attr": "y"}}}}}`,
	`{"resources": {"A": {"type": "X::Y::Z", "properties": [{"ref": "B", "attr": "id"}]}}}`,
	`{"resources": {"A": {"type": "X::Y::Z", "metadata": {"m": {"ref": "B", "attr": "id"}}, "properties": {}}}}`,
	`{"resources": {"A": {"type": "X::Y::Z", "properties": {"a": {"ref": "B", "attr": "id", "x": 1}, "b": {"ref": 1, "attr": "id"}, "c": {"ref": "B", "ref": "C"}}}}}`,
	`{"resources": {"A": {"type": "X::Y::Z", "properties": {"p": "/tmp/asset.abc/f"}}, "B": {"type": "X::Y::Z", "properties": {"p": ["x", {"q": "C:\\asset.1"}]}}}}`,
	`{"resources": {"A": {"type": "X::Y::Z", "properties": {"a": {"ref": "B", "attr": "x"}, "a": [{"ref": "C", "attr": "y"}], "b": {"c": {"ref": "D"}, "c": {"ref": "E"}}}}}}`,
	`{"resources": {"A": {"type": "X::Y::Z", "properties": {"a": {"ref": "B", "attr": "id"}}}, "A": {"type": "X::Y::Z", "properties": {"b": {"ref": "C", "attr": "id"}}}}}`,
	`{"A": {"type": "X::Y::Z", "properties": {"a": {"ref": "B", "attr": "id"}}}}`,
	`{"resources": {"A": "no object", "B": {"type": "X::Y::Z", "properties": {"a": {"ref": "A", "attr": "id"}}}}, "outputs": {"o": {"value": {"ref": "B", "attr": "id"}}}}`,
}

// TestRecorded checks what the template decoder records against the walks it spares, on templates
// that put tokens and asset paths in every place the decoder must tell apart.
func TestRecorded(t *testing.T) {
	for _, s := range recordedSeeds {
		checkRecorded(t, []byte(s))
	}
	checkRecorded(t, []byte(chainsTemplate(20)))
}

// checkRecorded parses data as a template and compares, for each resource the decoder recorded, the
// recorded tokens with those FindTokens finds, and the asset hint with a walk over the strings.
func checkRecorded(t *testing.T, data []byte) {
	t.Helper()
	tpl, _ := parseTemplate("A.json", data)
	if tpl == nil || tpl.recorded == nil {
		return
	}
	s := &Stack{Resources: tpl.resources, recorded: tpl.recorded}
	for i, r := range s.Resources {
		rec, ok := s.recordedAt(i)
		if !ok {
			t.Fatalf("%s: resource %d not recorded", data, i)
		}
		var want []Token
		for _, ta := range FindTokens("", r.Properties) {
			want = append(want, ta.Token)
		}
		got := rec.tokens
		less := func(a, b Token) bool { return a.String() < b.String() }
		if diff := cmp.Diff(want, got, cmpopts.SortSlices(less), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: %s: recorded tokens mismatch (-walk +recorded):\n%s", data, r.Path, diff)
		}
		if hasAssetString(r.Properties) && !rec.assetHint {
			t.Errorf("%s: %s: a string may be an asset path, but no asset hint", data, r.Path)
		}
	}
}

// hasAssetString reports whether a string in v contains assetSegmentPrefix.
func hasAssetString(v any) bool {
	switch v := v.(type) {
	case string:
		return strings.Contains(v, assetSegmentPrefix)
	case map[string]any:
		for _, e := range v {
			if hasAssetString(e) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if hasAssetString(e) {
				return true
			}
		}
	}
	return false
}

// TestTokenOf checks tokenOf against AsToken on objects of every shape near a token's.
func TestTokenOf(t *testing.T) {
	objects := []map[string]any{
		{}, {"ref": "A"}, {"ref": 1}, {"attr": "x"}, {"ref": "A", "attr": "x"}, {"ref": "A", "attr": 1},
		{"ref": "A", "x": "y"}, {"stackRef": "S", "outputKey": "k"}, {"stackRef": "S", "outputKey": nil},
		{"stackRef": "S"}, {"ref": "A", "attr": "x", "z": "q"}, {"stackRef": "S", "attr": "x"}, {"ref": "", "attr": ""},
	}
	for _, m := range objects {
		var keys []string
		var vals []any
		for k, v := range m {
			keys, vals = append(keys, k), append(vals, v)
		}
		want, wantOK := AsToken(m)
		got, ok := tokenOf(keys, vals)
		if got != want || ok != wantOK {
			t.Errorf("tokenOf(%v) = %v, %t; AsToken says %v, %t", m, got, ok, want, wantOK)
		}
	}
}
