package resource

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseType checks ParseType against splitting at every "::", what it did before it stopped
// allocating.
func TestParseType(t *testing.T) {
	split := func(t string) []any {
		parts := strings.Split(t, "::")
		if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
			return []any{"", "", "", false}
		}
		return []any{parts[0], parts[1], parts[2], true}
	}
	for _, typ := range []string{"PowerDNS::DNS::Zone", "Cdkx::Core::Data", "", "::", "::::", "A::B", "A::B::",
		"::B::C", "A::::C", "A::B::C::D", "A:::B::C", "A::B:::C", "A::B::C:", ":A::B::C", "A:B::C::D", "A::B::C::"} {
		p, d, n, ok := ParseType(typ)
		if diff := cmp.Diff(split(typ), []any{p, d, n, ok}); diff != "" {
			t.Errorf("ParseType(%q) mismatch (-want +got):\n%s", typ, diff)
		}
	}
}
