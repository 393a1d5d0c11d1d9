package planner_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/planner"
)

func TestElements(t *testing.T) {
	t.Parallel()
	type ec = planner.ElementChange
	rule := func(ips ...any) map[string]any {
		return map[string]any{"direction": "in", "port": "22", "sourceIps": ips}
	}
	for _, tc := range []struct {
		name     string
		old, new any
		want     []ec
	}{
		{"scalar", json.Number("300"), json.Number("120"), []ec{{"p", json.Number("300"), json.Number("120")}}},
		{"added scalar", nil, "x", []ec{{"p", nil, "x"}}},
		{"removed scalar", "x", nil, []ec{{"p", "x", nil}}},
		{"list element changed", []any{"a", "b"}, []any{"a", "c"}, []ec{{"p[1]", "b", "c"}}},
		{"list grows", []any{"a"}, []any{"a", "b", "c"}, []ec{{"p[1]", nil, "b"}, {"p[2]", nil, "c"}}},
		{"list shrinks", []any{"a", "b"}, []any{"a"}, []ec{{"p[1]", "b", nil}}},
		{"nested rule", []any{rule("0.0.0.0/0")}, []any{rule("10.0.0.0/8")},
			[]ec{{"p[0].sourceIps[0]", "0.0.0.0/0", "10.0.0.0/8"}}},
		{"map keys sorted, quoted when not identifiers", map[string]any{"env": "dev", "a.b": "1", "keep": "k"},
			map[string]any{"env": "prod", "a.b": "2", "keep": "k", "new-key": true},
			[]ec{{`p["a.b"]`, "1", "2"}, {"p.env", "dev", "prod"}, {`p["new-key"]`, nil, true}}},
		{"added list is broken into its elements", nil, []any{"a", map[string]any{"k": "v"}},
			[]ec{{"p[0]", nil, "a"}, {"p[1].k", nil, "v"}}},
		{"removed object is broken into its keys", map[string]any{"x": json.Number("1")}, nil, []ec{{"p.x", json.Number("1"), nil}}},
		{"empty list added is a leaf", nil, []any{}, []ec{{"p", nil, []any{}}}},
		{"empty list to elements", []any{}, []any{"a"}, []ec{{"p[0]", nil, "a"}}},
		{"kinds differ: a leaf", []any{"a"}, map[string]any{"a": "b"}, []ec{{"p", []any{"a"}, map[string]any{"a": "b"}}}},
		{"whole value unknown", []any{"a"}, resource.Unknown{}, []ec{{"p", []any{"a"}, resource.Unknown{}}}},
		{"element unknown", []any{"a", "b"}, []any{"a", resource.Unknown{}}, []ec{{"p[1]", "b", resource.Unknown{}}}},
		{"numbers equal as JSON", []any{json.Number("1"), json.Number("2")}, []any{json.Number("1"), float64(3)},
			[]ec{{"p[1]", json.Number("2"), float64(3)}}},
		{"null element against a shorter list", []any{"a", nil}, []any{"a"}, []ec{{"p", []any{"a", nil}, []any{"a"}}}},
		{"sensitive", resource.Sensitive, resource.Sensitive + "x", []ec{{"p", resource.Sensitive, resource.Sensitive + "x"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := planner.PropertyChange{Name: "p", Old: tc.old, New: tc.new}.Elements()
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Elements(%v → %v) (-want +got):\n%s", tc.old, tc.new, diff)
			}
		})
	}
}

func TestKey(t *testing.T) {
	t.Parallel()
	for k, want := range map[string]string{"env": ".env", "_a1": "._a1", "a.b": `["a.b"]`, "1a": `["1a"]`,
		"": `[""]`, "my-key": `["my-key"]`, `q"`: `["q\""]`, "ünï": `["ünï"]`} {
		if got := planner.Key(k); got != want {
			t.Errorf("Key(%q) = %s, want %s", k, got, want)
		}
	}
}
