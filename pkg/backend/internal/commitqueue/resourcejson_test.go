package commitqueue

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// TestAppendResourceFields fails when state.Resource or state.PendingOperation gains, loses or renames
// a field: appendResource writes them one by one and must learn of it.
func TestAppendResourceFields(t *testing.T) {
	fields := func(v any) []string {
		var out []string
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			out = append(out, rt.Field(i).Name+" "+rt.Field(i).Tag.Get("json"))
		}
		return out
	}
	want := map[string][]string{
		"Resource": {"LogicalID logicalId", "Type type", "Provider provider", "PhysicalID physicalId,omitempty",
			"Inputs inputs", "Outputs outputs", "Dependencies dependencies,omitempty", "Status status",
			"Pending pending,omitempty", "Replaced replaced,omitempty", "UpdatedAt updatedAt"},
		"PendingOperation": {"Op op", "Inputs inputs,omitempty", "PhysicalID physicalId,omitempty", "StartedAt startedAt"},
	}
	got := map[string][]string{"Resource": fields(state.Resource{}), "PendingOperation": fields(state.PendingOperation{})}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fields (-what appendResource writes +the types):\n%s", diff)
	}
}

// TestAppendResourceMatchesMarshal compares appendResource with json.Marshal on varied resources.
func TestAppendResourceMatchesMarshal(t *testing.T) {
	at := time.Date(2026, 11, 27, 20, 10, 5, 123456789, time.UTC)
	zone := time.FixedZone("X", -(3*3600 + 30*60))
	nested := resource.Properties{
		"s": "plain", "html": "<a href=\"x\">&amp;</a>", "ctl": "tab\tnl\nnul\x00del\x7f", "uni": "grüße \u2028 😀",
		"bad": "\xff\xfe", "n": json.Number("42"), "neg": json.Number("-7"), "zero": json.Number("0"), "mzero": json.Number("-0"),
		"frac": json.Number("1.5e3"), "empty": json.Number(""), "t": true, "f": false, "null": nil,
		"list":    []any{"a", json.Number("1"), nil, []any{}, map[string]any{}, []any{map[string]any{"k": "v"}}},
		"nilList": []any(nil), "nilMap": map[string]any(nil), "float": 3.25, "int": 12, "strs": []string{"x", "<y>"},
		"unknown": resource.Unknown{}, "": "empty key", "é": "key not ASCII", "a\"b": "quoted key",
	}
	many := resource.Properties{}
	for i := range 40 {
		many[string(rune('a'+i%26))+string(rune('A'+i))] = i
	}
	tests := []struct {
		name string
		r    state.Resource
		// fallback: appendResource leaves it to json.Marshal (not ok); failing: json.Marshal fails.
		fallback, failing bool
	}{
		{"zero", state.Resource{}, false, false},
		{"bench", state.Resource{LogicalID: "Record1", Type: "Cdkx::PowerDNS::Record", Provider: "powerdns", PhysicalID: "p/1",
			Inputs:  resource.Properties{"zone": "example.org.", "ttl": json.Number("300"), "records": []any{"192.0.2.1"}},
			Outputs: resource.Properties{"crn": "crn:x"}, Status: "CREATE_COMPLETE", UpdatedAt: at}, false, false},
		{"empty maps", state.Resource{LogicalID: "a", Inputs: resource.Properties{}, Outputs: resource.Properties{}, Dependencies: []string{}}, false, false},
		{"nested values", state.Resource{LogicalID: "n", Inputs: nested, Outputs: resource.Properties{"deep": nested}, UpdatedAt: at.In(zone)}, false, false},
		{"many keys", state.Resource{LogicalID: "m", Inputs: many, Outputs: many}, false, false},
		{"dependencies", state.Resource{LogicalID: "d", Dependencies: []string{"a", "<b>", "c"}}, false, false},
		{"pending", state.Resource{LogicalID: "p", Status: "CREATE_IN_PROGRESS",
			Pending: &state.PendingOperation{Op: "creating", Inputs: nested, PhysicalID: "x", StartedAt: at}}, false, false},
		{"pending without inputs", state.Resource{LogicalID: "p", Pending: &state.PendingOperation{Op: "deleting", Inputs: resource.Properties{}}}, false, false},
		{"replaced", state.Resource{LogicalID: "r", Replaced: []state.Object{{Type: "T", PhysicalID: "old", Inputs: nested}}}, true, false},
		{"year outside 0–9999", state.Resource{LogicalID: "y", UpdatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, true, true},
		{"pending year outside 0–9999", state.Resource{LogicalID: "y", Pending: &state.PendingOperation{StartedAt: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)}}, true, true},
		{"invalid number", state.Resource{LogicalID: "x", Inputs: resource.Properties{"lead": json.Number("007")}}, true, true},
		{"NaN", state.Resource{LogicalID: "x", Outputs: resource.Properties{"nan": math.NaN()}}, true, true},
		{"string fields to escape", state.Resource{LogicalID: "<id>", Type: "T\"", Provider: "p\\", PhysicalID: "\u00e9", Status: "\n"}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := json.Marshal(&tt.r)
			got, ok := appendResource([]byte("prefix"), &tt.r)
			if ok == tt.fallback || (err != nil) != tt.failing {
				t.Fatalf("appendResource ok = %v, json.Marshal error = %v; want ok %v, an error %v", ok, err, !tt.fallback, tt.failing)
			}
			if !ok {
				return
			}
			if diff := cmp.Diff(string(want), string(got[len("prefix"):])); diff != "" {
				t.Errorf("appendResource (-json.Marshal +appendResource):\n%s", diff)
			}
		})
	}
}

// FuzzAppendResource compares appendResource with json.Marshal on resources made of fuzzed strings and
// numbers.
func FuzzAppendResource(f *testing.F) {
	f.Add("Record1", "zone", "example.org.", "300", int64(1_770_000_000_123))
	f.Add("<&>", "\u2028", "\xff", "-0", int64(0))
	f.Fuzz(func(t *testing.T, id, key, value, number string, nanos int64) {
		r := state.Resource{LogicalID: id, Type: value, Inputs: resource.Properties{key: value, value: json.Number(number), "l": []any{key, nil}},
			Outputs: resource.Properties{id: map[string]any{key: number}}, Dependencies: []string{key}, UpdatedAt: time.Unix(0, nanos).UTC()}
		want, err := json.Marshal(&r)
		got, ok := appendResource(nil, &r)
		if err != nil {
			if ok {
				t.Fatalf("json.Marshal fails (%v), appendResource wrote %s", err, got)
			}
			return
		}
		if ok && string(got) != string(want) {
			t.Fatalf("appendResource = %s, json.Marshal = %s", got, want)
		}
	})
}

// BenchmarkEncodeResource encodes a resource of the benchmarks' shape with appendResource and with
// json.Marshal.
func BenchmarkEncodeResource(b *testing.B) {
	r := &state.Resource{LogicalID: "Record1", Type: "Cdkx::PowerDNS::Record", Provider: "powerdns", PhysicalID: "example.org./Record1/A",
		Inputs:  resource.Properties{"zone": "example.org.", "name": "record1", "type": "A", "ttl": json.Number("300"), "records": []any{"192.0.2.1"}},
		Outputs: resource.Properties{"crn": "crn:powerdns:example.org./Record1"}, Status: "CREATE_COMPLETE", UpdatedAt: time.Unix(1_770_000_000, 0).UTC()}
	b.Run("append", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf, _ = appendResource(buf[:0], r)
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		for b.Loop() {
			_, _ = json.Marshal(r)
		}
	})
}
