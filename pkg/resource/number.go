package resource

import "strings"

// IsJSONNumber reports whether s is a number as JSON writes it:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?. It takes time linear in len(s) and allocates nothing.
func IsJSONNumber(s string) bool {
	s, _ = strings.CutPrefix(s, "-")
	digits := func() bool { // consumes one or more digits
		n := 0
		for n < len(s) && s[n] >= '0' && s[n] <= '9' {
			n++
		}
		s = s[n:]
		return n > 0
	}
	switch {
	case strings.HasPrefix(s, "0"):
		s = s[1:]
	case !digits():
		return false
	}
	if rest, ok := strings.CutPrefix(s, "."); ok {
		if s = rest; !digits() {
			return false
		}
	}
	if len(s) > 0 && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
			s = s[1:]
		}
		if !digits() {
			return false
		}
	}
	return s == ""
}
