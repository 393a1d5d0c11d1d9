package text_test

import (
	"strings"
	"testing"

	"github.com/cdkx-dev/cdkx/pkg/text"
)

func TestCap(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"0123456789abc", 10, "0123456789 … (3 more bytes)"},
		{"zoné", 4, "zon … (2 more bytes)"}, // é is 2 bytes: never cut inside a character
		{"", 0, ""},
	}
	for _, tt := range tests {
		if got := text.Cap(tt.in, tt.max); got != tt.want {
			t.Errorf("Cap(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}

func TestProviderMessage(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"RRset www.example.test. IN A: conflicts", "RRset www.example.test. IN A: conflicts"},
		{"bad\x1b]0;pwned\x07\x1b[2J", `bad\x1b]0;pwned\x07\x1b[2J`},
		{"forged\n2026-11-21T06:00:00Z  Zones  Forged  DELETE_COMPLETE", `forged\n2026-11-21T06:00:00Z  Zones  Forged  DELETE_COMPLETE`},
		{"rlo\u202egnp.exe", `rlo\u202egnp.exe`},
	}
	for _, tt := range tests {
		if got := text.ProviderMessage(tt.in); got != tt.want {
			t.Errorf("ProviderMessage(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	huge := strings.Repeat("x", 100<<20) // a provider that answers 100 MB
	if got := text.ProviderMessage(huge); len(got) > text.MaxProviderMessage+64 || !strings.HasSuffix(got, "more bytes)") {
		t.Errorf("ProviderMessage of 100 MB = %d bytes ending %q, want at most %d and the count of what was cut",
			len(got), got[max(0, len(got)-20):], text.MaxProviderMessage+64)
	}
}
