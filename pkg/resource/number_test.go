package resource_test

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TestIsJSONNumberMatchesJSON: IsJSONNumber accepts exactly the strings encoding/json takes as a whole
// JSON number, on a table and on random strings of number characters.
func TestIsJSONNumberMatchesJSON(t *testing.T) {
	t.Parallel()
	number := func(s string) bool { // a JSON number and nothing else: not a string, literal or white space
		return s != "" && strings.TrimSpace(s) == s && strings.IndexAny(s[:1], "-0123456789") == 0 && json.Valid([]byte(s))
	}
	cases := []string{"0", "-0", "1", "10", "01", "-", "1.", ".5", "1.5", "1e5", "1E+5", "1e-5", "1e", "1e+", "+1", "--1",
		"1.5e3", "00", "0.0", "-01", "123456789012345678901234567890", "1x", "", " 1", "1 "}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		b := make([]byte, 1+r.IntN(8))
		for i := range b {
			b[i] = "0123456789-+.eE"[r.IntN(15)]
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		if got, want := resource.IsJSONNumber(s), number(s); got != want {
			t.Errorf("IsJSONNumber(%q) = %v, want %v", s, got, want)
		}
	}
}
