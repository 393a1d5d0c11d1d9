package assembly

import (
	"fmt"
	"unicode/utf8"

	"github.com/agext/levenshtein"
)

// nearest returns the candidate closest to name by edit distance, or "" when none is reasonably close:
// within max(3, len(name)/3) edits, and fewer edits than name has characters (so that "X" does not suggest
// "Y"). Ties go to the earliest candidate.
func nearest(name string, candidates []string) string {
	n := utf8.RuneCountInString(name)
	limit := min(max(3, n/3), n-1)
	best, bestDist := "", limit+1
	for _, c := range candidates {
		// The distance is at least the difference in length: skip the quadratic computation then.
		// (levenshtein's MaxCost shortcut is not used: v1.2.3 returns distances below the true one.)
		if c == name || abs(utf8.RuneCountInString(c)-n) > limit {
			continue
		}
		if d := levenshtein.Distance(name, c, nil); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// suggestion renders ` (did you mean "X"?)` for the nearest candidate, or "".
func suggestion(name string, candidates []string) string {
	if near := nearest(name, candidates); near != "" {
		return fmt.Sprintf(" (did you mean %q?)", near)
	}
	return ""
}

func abs(n int) int {
	return max(n, -n)
}
