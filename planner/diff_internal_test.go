package planner

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TestEqualMatchesResourceEqual: equal answers as resource.Equal does on random decoded JSON, including
// numbers written differently, nil maps and lists, unknowns, strings that are not UTF-8, and values it
// leaves to resource.Equal.
func TestEqualMatchesResourceEqual(t *testing.T) {
	t.Parallel()
	scalars := []any{nil, true, false, "", "a", "(known after deploy)", resource.Unknown{}, "\xff", "\ufffd",
		json.Number("1"), json.Number("1.0"), json.Number("1e0"), json.Number("-0"), json.Number("0"), json.Number("x"),
		json.Number("1e400"), json.Number("NaN"), json.Number("01"), json.Number("1."), json.Number("-"),
		json.Number("123456789012345678901234567890"), json.Number("123456789012345678901234567891"),
		json.Number("1.23456789012345678901234567890e29"), 1, int64(1), uint8(1), 1.0, 0.0, math.Copysign(0, -1), 2.5,
		float32(2.5), math.NaN(), math.Inf(1), map[string]string{}, []string{"a"}, map[string]any(nil), []any(nil),
		struct{}{}}
	var value func(r *rand.Rand, depth int) any
	value = func(r *rand.Rand, depth int) any {
		switch k := r.IntN(6); {
		case k == 0 && depth < 3:
			m := map[string]any{}
			for range r.IntN(3) {
				m[[]string{"a", "b", "\xfe", "\xff", "\ufffd"}[r.IntN(5)]] = value(r, depth+1)
			}
			return m
		case k == 1 && depth < 3:
			var l []any
			for range r.IntN(3) {
				l = append(l, value(r, depth+1))
			}
			return l
		default:
			return scalars[r.IntN(len(scalars))]
		}
	}
	r := rand.New(rand.NewPCG(3, 3))
	for range 20000 {
		a, b := value(r, 0), value(r, 0)
		if r.IntN(4) == 0 {
			b = resource.Clone(a)
		}
		if got, want := equal(a, b), resource.Equal(a, b); got != want {
			t.Errorf("equal(%#v, %#v) = %v, resource.Equal = %v", a, b, got, want)
		}
	}
}
