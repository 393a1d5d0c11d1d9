package resource

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestEqual(t *testing.T) {
	t.Parallel()
	n := func(s string) json.Number { return json.Number(s) }
	hugeExp := "1e" + strings.Repeat("9", 30)
	tests := []struct {
		a, b any
		want bool
	}{
		{n("1"), n("1.0"), true},
		{n("1"), n("1e0"), true},
		{n("1"), n("10e-1"), true},
		{n("1"), n("0.1E1"), true},
		{n("1"), n("1E+0"), true},
		{n("100"), n("1e2"), true},
		{n("0"), n("-0"), true},
		{n("0"), n("0.000e99"), true},
		{n("-1.5"), n("-15e-1"), true},
		{n("1.5"), n("-1.5"), false},
		{n("123456789012345678901234567890"), n("123456789012345678901234567890"), true},
		{n("123456789012345678901234567890"), n("123456789012345678901234567891"), false},
		{n("123456789012345678901234567890"), n("1.2345678901234567890123456789e29"), true},
		{n("0.1000000000000000000000000001"), n("0.1"), false},
		{n("1e400"), n("10e399"), true},
		{n("1e400"), n("1.7976931348623157e+308"), false},
		{n("1e-400"), n("0"), false},
		{n("1e-400"), n("0.1e-399"), true},
		{n(hugeExp), n(hugeExp), true},
		{n("1e999999999999999999"), n("10e999999999999999998"), true}, // past int64: math/big
		{n("1e999999999999999999"), n("1e999999999999999998"), false},
		{n("1"), "1", false},
		{n("1e400"), "1e400", false},
		{n("1"), 1, true},
		{n("1"), int64(1), true},
		{n("1"), uint8(1), true},
		{n("1"), 1.0, true},
		{n("0.1"), 0.1, true},
		{n("0.1"), float32(0.1), true},
		{n("9007199254740993"), float64(9007199254740993), false}, // 2^53+1 is not a float64
		{math.NaN(), math.NaN(), true},
		{map[string]any{"a": n("1"), "b": []any{n("2.50")}}, map[string]any{"b": []any{n("2.5")}, "a": n("1.0")}, true},
		{map[string]any{"a": n("123456789012345678901234567890")}, map[string]any{"a": n("123456789012345678901234567891")}, false},
		{[]any{"x", nil, true}, []any{"x", nil, true}, true},
		{[]any{"x"}, []any{"y"}, false},
		{Unknown{}, Unknown{}, true},
		{n("not a number"), n("not a number"), true},
	}
	for _, tt := range tests {
		if got := Equal(tt.a, tt.b); got != tt.want {
			t.Errorf("Equal(%#v, %#v) = %t, want %t", tt.a, tt.b, got, tt.want)
		}
		if got := Equal(tt.b, tt.a); got != tt.want {
			t.Errorf("Equal(%#v, %#v) = %t, want %t", tt.b, tt.a, got, tt.want)
		}
	}
}

func TestCanonicalNumber(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in     string
		want   json.Number
		wantOK bool
	}{
		{"0", "0", true},
		{"-0.0e-5", "0", true},
		{"1", "0.1e1", true},
		{"-12.340", "-0.1234e2", true},
		{"0.00120", "0.12e-2", true},
		{"1e400", "0.1e401", true},
		{"1E-400", "0.1e-399", true},
		{"5e+3", "0.5e4", true},
		{"1e0000000000000000000000000000000000005", "0.1e6", true},
		{"1e" + strings.Repeat("9", 19), "0.1e10000000000000000000", true},
		{"1e-" + strings.Repeat("9", 19), "0.1e-9999999999999999998", true},
		{"1e" + strings.Repeat("9", maxExponentDigits+1), "", false},
		{"0e" + strings.Repeat("9", maxExponentDigits+1), "0", true},
		{"", "", false},
		{"-", "", false},
		{"01", "", false},
		{"+1", "", false},
		{"1.", "", false},
		{".5", "", false},
		{"1e", "", false},
		{"1e+-5", "", false},
		{"1ee5", "", false},
		{"0x10", "", false},
		{"Infinity", "", false},
	}
	for _, tt := range tests {
		got, ok := canonicalNumber(tt.in)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("canonicalNumber(%q) = %q, %t, want %q, %t", tt.in, got, ok, tt.want, tt.wantOK)
		}
		if ok {
			if _, err := json.Marshal(got); err != nil {
				t.Errorf("canonicalNumber(%q) = %q, not a JSON number: %v", tt.in, got, err)
			}
		}
	}
}

func TestCanonicalKeepsNumbersAsWritten(t *testing.T) {
	t.Parallel()
	v := map[string]any{"b": json.Number("1.50"), "a": json.Number("123456789012345678901234567890"), "c": json.Number("1e400")}
	want := `{"a":123456789012345678901234567890,"b":1.50,"c":1e400}`
	if got := string(Canonical(v)); got != want {
		t.Errorf("Canonical(%v) = %s, want %s", v, got, want)
	}
}

// BenchmarkEqual compares two typical record sets' properties (equal, numbers written differently).
func BenchmarkEqual(b *testing.B) {
	a := map[string]any{"zoneId": "example.test.", "name": "www.example.test.", "type": "A", "ttl": json.Number("300"),
		"records": []any{"127.0.0.1", "127.0.0.2"}, "weight": json.Number("1.50")}
	c := map[string]any{"zoneId": "example.test.", "name": "www.example.test.", "type": "A", "ttl": json.Number("3e2"),
		"records": []any{"127.0.0.1", "127.0.0.2"}, "weight": json.Number("1.5")}
	b.ReportAllocs()
	for b.Loop() {
		if !Equal(a, c) {
			b.Fatal("Equal() = false")
		}
	}
}

func TestProviderErrorMessageIsData(t *testing.T) {
	t.Parallel()
	e := &ProviderError{Provider: "powerdns", Method: "POST", URL: "http://127.0.0.1:8081/api/v1/servers/localhost/zones",
		Status: 422, Message: "no\x1b[2J\nApproved by: mallory" + strings.Repeat("!", 1<<20)}
	got := e.Error()
	if strings.ContainsAny(got, "\x1b\n") || len(got) > 2500 {
		t.Errorf("ProviderError.Error() = %d bytes with raw control characters: %t; want at most 2500 bytes, sanitized", len(got), strings.ContainsAny(got, "\x1b\n"))
	}
	if !strings.HasPrefix(got, `powerdns: POST http://127.0.0.1:8081/api/v1/servers/localhost/zones: 422: no\x1b[2J\nApproved by: mallory!`) {
		t.Errorf("ProviderError.Error() = %.120q…", got)
	}
}

// TestCRNMatchesSegmentsLowerCased: CRN's ASCII path and ParseType's cuts give what splitting the type on
// "::" and lower-casing each segment gives, side by side on types of every shape.
func TestCRNMatchesSegmentsLowerCased(t *testing.T) {
	t.Parallel()
	old := func(typ, id string) string {
		parts := strings.Split(typ, "::")
		if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
			return "crn:cdkx:" + strings.ToLower(typ) + "/" + id
		}
		return fmt.Sprintf("crn:cdkx:%s:%s:%s/%s", strings.ToLower(parts[0]), strings.ToLower(parts[1]), strings.ToLower(parts[2]), id)
	}
	types := []string{"Cdkx::Core::Data", "PowerDNS::Zone::RecordSet", "a::b::c", "A::B", "A::B::C::D", "::B::C", "A::::C",
		"A::B::", "A:::B::C", "A::B:::C", "A:x::B::C", "", "NoColons", "Ünï::Cödé::ΣΑΣ", "A::B::C\u00c9", "ABC::DEF::GHI/x",
		"İ::K::Ω", "A::B::C::", "::::::", "A0-Z_9::b.c::D@E"}
	for _, typ := range types {
		for _, id := range []string{"", "0f8fad5b-d9cb-469f-a165-70867728950e", "ID/With:Colons"} {
			if got, want := CRN(typ, id), old(typ, id); got != want {
				t.Errorf("CRN(%q, %q) = %q, want %q", typ, id, got, want)
			}
		}
		p, d, n, ok := ParseType(typ)
		parts := strings.Split(typ, "::")
		wantOK := len(parts) == 3 && parts[0] != "" && parts[1] != "" && parts[2] != ""
		if ok != wantOK || (ok && (p != parts[0] || d != parts[1] || n != parts[2])) {
			t.Errorf("ParseType(%q) = %q, %q, %q, %v; Split gives %q", typ, p, d, n, ok, parts)
		}
	}
}
