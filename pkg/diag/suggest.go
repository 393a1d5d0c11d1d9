package diag

import (
	"strings"
	"unicode/utf8"

	"github.com/agext/levenshtein"
)

// Nearest returns the candidate that name most likely misspells, or "" when none is close enough to
// suggest: first a candidate equal to name but for letter case ("Recordset" → "RecordSet"), else the one
// fewest edits away (Levenshtein distance), within max(2, len(name)/3) edits and fewer edits than name
// has characters, so that "X" never suggests "Y" and "pdns" never suggests "cdkx". A candidate equal to
// name is never suggested. Ties go to the earliest candidate.
func Nearest(name string, candidates []string) string {
	return NearestWithin(name, candidates, max(2, utf8.RuneCountInString(name)/3))
}

// NearestWithin is Nearest with its own bound: at most edits edits (and fewer than name has characters).
// Qualified names use it to measure the bound by their last part: "PowerDNS::DNS::Widget" is 5 edits
// from "PowerDNS::DNS::Zone", few for its 21 characters but too many for "Widget".
func NearestWithin(name string, candidates []string, edits int) string {
	for _, c := range candidates {
		if c != name && strings.EqualFold(c, name) {
			return c
		}
	}
	n := utf8.RuneCountInString(name)
	limit := min(edits, n-1)
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

func abs(n int) int {
	return max(n, -n)
}
