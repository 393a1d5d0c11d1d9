package assembly

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/pkg/resource"
)

func TestLoadRefusesNumbersOutOfRange(t *testing.T) {
	t.Parallel()
	const detail = "; cdkx keeps numbers as written, but providers read them as 64-bit floating point numbers; " +
		"write the value as a string if it is not meant as a number"
	long := "1" + strings.Repeat("0", 400)
	_, ds := loadFiles(t, map[string]string{
		"manifest.json": `{"version": "1.0.0", "artifacts": {"A": {"type": "cdkx:stack", "properties": {"templateFile": "A.json"}, "x": 1e999}}}`,
		"A.json": `{"resources": {"R": {"type": "Cdkx::Core::Data", "properties": {"input": {
			"big": 1e400, "negative": -1E+400, "tiny": 1e-400, "list": [1, 2e-999],
			"long": ` + long + `, "zero": 0e-400, "negativeZero": -0.0e999999,
			"max": 1.7976931348623157e308, "min": 4.9e-324, "digits": 123456789012345678901234567890}}}},
			"outputs": {"O": {"value": 1e400}}}`,
	})
	want := []string{
		`error: cdkx.out/A.json: outputs.O.value: number 1e400 is out of range: larger than any 64-bit floating point number (about 1.8e308)` + detail,
		`error: cdkx.out/A.json: resources.R.properties.input.big: number 1e400 is out of range: larger than any 64-bit floating point number (about 1.8e308)` + detail,
		`error: cdkx.out/A.json: resources.R.properties.input.list[1]: number 2e-999 is out of range: closer to 0 than any 64-bit floating point number (about 4.9e-324) but not 0` + detail,
		`error: cdkx.out/A.json: resources.R.properties.input.long: number 10000000000000000000…0000000000 (401 characters) is out of range: larger than any 64-bit floating point number (about 1.8e308)` + detail,
		`error: cdkx.out/A.json: resources.R.properties.input.negative: number -1E+400 is out of range: larger than any 64-bit floating point number (about 1.8e308)` + detail,
		`error: cdkx.out/A.json: resources.R.properties.input.tiny: number 1e-400 is out of range: closer to 0 than any 64-bit floating point number (about 4.9e-324) but not 0` + detail,
		`error: cdkx.out/manifest.json: artifacts.A.x: number 1e999 is out of range: larger than any 64-bit floating point number (about 1.8e308)` + detail,
		`warning: cdkx.out/manifest.json: artifacts.A.x: unknown key "x" is ignored; known keys here: type, properties, displayName, dependencies, outputKeys, provider, environment`,
	}
	if diff := cmp.Diff(want, lines(ds)); diff != "" {
		t.Errorf("Load() diagnostics mismatch (-want +got):\n%s", diff)
	}
}

// TestLoadKeepsNumbersExactly loads two templates that differ only in the last digit of a 30-digit
// integer: the numbers are kept as written, and resource.Equal sees the change (float64 did not).
func TestLoadKeepsNumbersExactly(t *testing.T) {
	t.Parallel()
	template := func(n string) string {
		return `{"resources": {"R": {"type": "Cdkx::Core::Data", "properties": {"input": {"n": ` + n + `, "f": 1.50}}}}}`
	}
	props := func(n string) resource.Properties {
		t.Helper()
		a, ds := loadFiles(t, map[string]string{"manifest.json": manifest("A"), "A.json": template(n)})
		if len(ds) != 0 {
			t.Fatalf("Load() diagnostics = %v, want none", lines(ds))
		}
		return a.Stacks[0].Resources[0].Properties
	}
	before, after := props("123456789012345678901234567890"), props("123456789012345678901234567891")
	want := resource.Properties{"input": map[string]any{"n": json.Number("123456789012345678901234567890"), "f": json.Number("1.50")}}
	if diff := cmp.Diff(want, before); diff != "" {
		t.Errorf("Load() properties mismatch (-want +got):\n%s", diff)
	}
	if resource.Equal(before, after) {
		t.Errorf("resource.Equal(%v, %v) = true, want false", before, after)
	}
	if same := props("1.23456789012345678901234567890e29"); !resource.Equal(before, same) {
		t.Errorf("resource.Equal(%v, %v) = false, want true", before, same)
	}
}

func TestNumberInRange(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want bool
	}{
		{"0", true},
		{"-0.000e-99999", true},
		{"1", true},
		{"123456789012345678901234567890", true},
		{"1.7976931348623157e308", true},
		{"-1.7976931348623157e308", true},
		{"1.8e308", false},
		{"1e400", false},
		{"4.9e-324", true},
		{"2e-324", false},
		{"1e-400", false},
		{"1E-400", false},
	}
	for _, tt := range tests {
		if got := numberInRange(json.Number(tt.in)); got != tt.want {
			t.Errorf("numberInRange(%s) = %t, want %t", tt.in, got, tt.want)
		}
	}
}
