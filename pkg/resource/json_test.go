package resource_test

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TestAppendJSONMatchesMarshal compares AppendJSON with encoding/json's Marshal on the values properties
// hold, odd strings and numbers included, and on random nested values.
func TestAppendJSONMatchesMarshal(t *testing.T) {
	values := []any{
		nil, true, false, "", "plain", "quote \" backslash \\ tab \t nl \n", "<b>&amp;</b>", "\x00\x1f\x7f",
		"é ✓ 😀", "bad \xff utf-8", "line\u2028sep\u2029", json.Number("0"), json.Number("-12"),
		json.Number("1.5e-7"), json.Number("1E+3"), []any{}, []any(nil), map[string]any{},
		map[string]any(nil), resource.Properties{"b": 1.5, "a": []any{"x", nil, map[string]any{"z": true}}},
		resource.Unknown{}, 3, 2.5, uint8(7), []string{"typed"}, map[string]int{"n": 1},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		values = append(values, randomValue(r, 4))
	}
	for _, v := range values {
		want, wantErr := json.Marshal(v)
		got, err := resource.AppendJSON([]byte("prefix:"), v)
		if (err != nil) != (wantErr != nil) {
			t.Errorf("AppendJSON(%#v) error %v, json.Marshal's %v", v, err, wantErr)
			continue
		}
		if err == nil {
			if diff := cmp.Diff("prefix:"+string(want), string(got)); diff != "" {
				t.Errorf("AppendJSON(%#v) (-json.Marshal +got):\n%s", v, diff)
			}
		}
	}
	for _, bad := range []json.Number{"01", "1.", ".5", "1e", "--1", "NaN"} {
		if _, err := resource.AppendJSON(nil, bad); err == nil {
			t.Errorf("AppendJSON(json.Number(%q)) = nil error, want encoding/json's", bad)
		}
	}
}

func randomValue(r *rand.Rand, depth int) any {
	strs := []string{"a", "key", "<x>", "ü", "\"q\"", "\n", "\xfe", "\u2028"}
	switch n := r.IntN(7); {
	case depth == 0 || n == 0:
		return strs[r.IntN(len(strs))]
	case n == 1:
		return json.Number([]string{"1", "-0", "3.25", "6.02e23"}[r.IntN(4)])
	case n == 2:
		return r.IntN(2) == 0
	case n == 3:
		return nil
	case n == 4:
		l := make([]any, r.IntN(4))
		for i := range l {
			l[i] = randomValue(r, depth-1)
		}
		return l
	default:
		m := map[string]any{}
		for range r.IntN(5) {
			m[strs[r.IntN(len(strs))]] = randomValue(r, depth-1)
		}
		return m
	}
}
