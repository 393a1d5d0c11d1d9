// Package text makes text that came from outside — providers, records, other clients — safe to show on a
// terminal, in a record or on a page.
package text

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Sanitize returns s with every character that would act on a terminal instead of being shown replaced
// by a visible escape: C0 and C1 control characters and DEL as \x1b or \u009b (\n, \r and \t as such),
// invisible formatting characters such as the Unicode bidirectional overrides as \u202e, line and
// paragraph separators as \u2028, and bytes that are not UTF-8 as \xff. Views pass every string that
// comes from user data through it (names, physical IDs, provider messages, values, diagnostics), so that
// none can move the cursor, forge a table row or set the terminal's title. Text without such characters
// is returned as it is.
func Sanitize(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < utf8.RuneSelf && Escapes(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case Escapes(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// needsEscape reports whether Sanitize would change s.
func needsEscape(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || Escapes(r) {
			return true
		}
		i += size
	}
	return false
}

// Escapes reports whether r must not reach a terminal as it is: control characters and the Unicode
// formatting and separator characters (Cf, Zl, Zp).
func Escapes(r rune) bool {
	return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
}

// Cap returns s cut to at most max bytes, at a character boundary, followed by " … (N more bytes)" when
// it was longer: provider answers end up in errors, events and records, and a provider may answer with
// megabytes.
func Cap(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s … (%d more bytes)", s[:cut], len(s)-cut)
}

// MaxProviderMessage is how much of a provider's error message cdkx keeps (Cap), in bytes.
const MaxProviderMessage = 2048

// ProviderMessage is a provider's message as cdkx shows and records it: capped to MaxProviderMessage
// bytes and sanitized (Sanitize), so that it can neither act on a terminal nor swell a record.
func ProviderMessage(s string) string {
	return Sanitize(Cap(s, MaxProviderMessage))
}
