package assembly

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/cdkx-dev/cdkx/pkg/diag"
)

// suggestion renders ` (did you mean "X"?)` for the candidate that name most likely misspells
// (diag.Nearest), or "".
func suggestion(name string, candidates []string) string {
	if near := diag.Nearest(name, candidates); near != "" {
		return fmt.Sprintf(" (did you mean %q?)", near)
	}
	return ""
}

// typeSuggestion is suggestion for a resource type: the bound on edits is measured by the type's last
// segment, since the others are shared ("PowerDNS::DNS::Widget" suggests no "PowerDNS::DNS::Zone").
func typeSuggestion(typ string, types []string) string {
	last := typ[strings.LastIndex(typ, ":")+1:]
	if near := diag.NearestWithin(typ, types, max(2, utf8.RuneCountInString(last)/3)); near != "" {
		return fmt.Sprintf(" (did you mean %q?)", near)
	}
	return ""
}
