package assembly

import (
	"fmt"

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
