package state_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

// decodeV1 is the reference: encoding/json with UseNumber, as the backends decoded rows before.
func decodeV1(data []byte, r *state.Resource) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(r)
}

func TestUnmarshalResourceMatchesEncodingJSON(t *testing.T) {
	tests := []struct {
		name string
		data string
	}{
		{"stored row", `{"logicalId":"Chain0Node000000000","type":"Cdkx::Core::Data","provider":"cdkx","physicalId":"79b1","inputs":{"input":{"chain":0,"depth":0,"payload":"value-x","previous":{"ref":"A","attr":"id"}}},"outputs":{"crn":"crn:cdkx:cdkx:core:data/79b1","id":"79b1","list":[1,2.50,-3e400,"s",true,false,null,{}],"empty":[]},"status":"CREATE_COMPLETE","updatedAt":"2026-11-27T17:02:24.287508125Z"}`},
		{"pending and replaced", `{"logicalId":"A","type":"T::a::B","provider":"t","inputs":{},"outputs":null,"dependencies":["B","C"],"status":"UPDATE_IN_PROGRESS","pending":{"op":"updating","inputs":{"n":12345678901234567890},"physicalId":"p","startedAt":"2026-11-27T17:02:24Z"},"replaced":[{"type":"T::a::B","provider":"t","physicalId":"old","inputs":{"a":"b"},"outputs":{"c":1}}],"updatedAt":"2026-11-27T17:02:24+01:00"}`},
		{"case, unknown members, duplicates, escapes", `{"LOGICALID":"A","extra":{"x":[1]},"inputs":{"k":"\u00e9\n\"q\"","k":"last"},"status":"X","updatedAt":"0001-01-01T00:00:00Z"}`},
		{"invalid UTF-8", "{\"logicalId\":\"a\xffb\",\"inputs\":{\"v\":\"\xfe\"},\"updatedAt\":\"0001-01-01T00:00:00Z\"}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want, got state.Resource
			if err := decodeV1([]byte(tt.data), &want); err != nil {
				t.Fatalf("encoding/json: %v", err)
			}
			if err := state.UnmarshalResource([]byte(tt.data), &got); err != nil {
				t.Fatalf("UnmarshalResource: %v", err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("UnmarshalResource differs from encoding/json (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUnmarshalResourceErrors(t *testing.T) {
	for _, data := range []string{``, `{`, `{"inputs":{"a":}}`, `{"inputs":[1]}`, `{"updatedAt":"yesterday"}`, `[]`} {
		var r state.Resource
		if err := state.UnmarshalResource([]byte(data), &r); err == nil {
			t.Errorf("UnmarshalResource(%q) = nil error, want one", data)
		}
		if err := decodeV1([]byte(data), &r); err == nil {
			t.Errorf("encoding/json accepts %q: the case tests nothing", data)
		}
	}
}

var benchRow = []byte(`{"logicalId":"Chain1024Node000002800","type":"Cdkx::Core::Data","provider":"cdkx","physicalId":"7ca0a7eb-a496-46aa-984b-b9549d5b60ac","inputs":{"input":{"chain":1024,"depth":1,"payload":"value-Chain1024Node000002800","previous":"7ca0a7eb-a496-46aa-984b-b9549d5b60ab"}},"outputs":{"crn":"crn:cdkx:cdkx:core:data/7ca0a7eb-a496-46aa-984b-b9549d5b60ac","id":"7ca0a7eb-a496-46aa-984b-b9549d5b60ac","output":{"chain":1024,"depth":1,"payload":"value-Chain1024Node000002800","previous":"7ca0a7eb-a496-46aa-984b-b9549d5b60ab"}},"dependencies":["Chain1024Node000002799"],"status":"CREATE_COMPLETE","updatedAt":"2026-11-27T17:02:24.287508125Z"}`)

// BenchmarkUnmarshalResource decodes one state row of the 100k bench (a Cdkx::Core::Data in a chain).
func BenchmarkUnmarshalResource(b *testing.B) {
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r state.Resource
			if err := decodeV1(benchRow, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("UnmarshalResource", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r state.Resource
			if err := state.UnmarshalResource(benchRow, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
