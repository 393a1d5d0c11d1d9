package state

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/google/go-cmp/cmp"
)

// TestDecodeCommonMatchesGeneral: UnmarshalResource, which reads records of the common shape with
// decodeCommon, decodes every record as the general path (encoding/json/v2 with decodeOptions) does —
// the same resource or an error where it errs — on random records: stored rows and their variations in
// member names (case, escapes, repeats, unknown ones), kinds of values, pending operations and replaced
// objects, times in other zones and forms, escapes and invalid UTF-8 in strings, trailing data; into an
// empty resource and into one holding values already.
func TestDecodeCommonMatchesGeneral(t *testing.T) {
	t.Parallel()
	members := map[string][]string{
		"logicalId":  {`"A"`, `"Chain1Node2"`, `"a\u00e9"`, `"a\"b"`, "\"a\xffb\"", `null`, `1`},
		"type":       {`"Cdkx::Core::Data"`, `""`, `["x"]`},
		"provider":   {`"cdkx"`, `"t"`},
		"physicalId": {`"79b1"`, `""`, `null`},
		"inputs": {`{"input":{"chain":1,"depth":0,"payload":"v","previous":{"ref":"A","attr":"id"}}}`, `{}`, `null`, `{"k":1,"k":2}`,
			`{"a":[1,2.50,-3e400,"s",true,false,null,{}]}`, `[1]`, `"s"`, `{ "a" : [ 1 , { } ] , "b" : null }`,
			`{"n":[0,-0,1e5,1E+5,1.5e-3,-12.25E-2,123456789012345678901234567890]}`, `{"n":01}`, `{"n":1.}`, `{"n":.5}`, `{"n":-}`, `{"n":1e}`, `{"n":+1}`, `{"n":1x}`,
			`{"s":["\u00e9","a\\b","\t"]}`, `{"s":["é","` + "\U0001F600" + `"]}`, `{"s":"` + "\t" + `"}`, `{"s":"` + "\xff" + `"}`,
			`{"lit":[true,false,null]}`, `{"lit":tru}`, `{"lit":nul}`, `{"lit":truex}`, `{"a":1,}`, `{"a" 1}`, `{"x":{"y":{"z":{"w":[[[[]]]]}}}}`,
			`{"` + "\u00e9" + `":1,"\u00e9":2}`, `{"k":"v"}x`, "{\"f\":\f1}"},
		"outputs":      {`{"crn":"crn:x","id":"79b1","output":{"a":1}}`, `{}`, `null`, `{"x":{"y":1},"x":{"z":2}}`},
		"dependencies": {`["B","C"]`, `[]`, `null`, `["B",1]`, `"B"`},
		"status":       {`"CREATE_COMPLETE"`, `"UPDATE_IN_PROGRESS"`},
		"pending":      {`{"op":"updating","inputs":{"n":12345678901234567890},"physicalId":"p","startedAt":"2026-11-27T17:02:24Z"}`, `null`},
		"replaced":     {`[{"type":"T","provider":"t","physicalId":"old","inputs":{"a":"b"},"outputs":{"c":1}}]`, `[]`},
		"updatedAt": {`"2026-11-27T17:02:24.287508125Z"`, `"2026-11-27T17:02:24Z"`, `"2026-11-27T17:02:24.100Z"`,
			`"2026-11-27T17:02:24+01:00"`, `"2026-11-27T17:02:24z"`, `"0001-01-01T00:00:00Z"`, `"yesterday"`, `null`},
		"extra": {`{"x":[1]}`},
	}
	common := []string{"logicalId", "type", "provider", "physicalId", "inputs", "outputs", "dependencies", "status", "updatedAt"}
	names := append(append([]string(nil), common...), "pending", "replaced", "extra")
	spell := func(r *rand.Rand, name string) string {
		switch r.IntN(30) {
		case 0:
			return `"` + strings.ToUpper(name) + `"`
		case 1:
			return `"\u` + fmt.Sprintf("%04x", name[0]) + name[1:] + `"`
		}
		return `"` + name + `"`
	}
	r := rand.New(rand.NewPCG(22, 2))
	fast := 0
	for i := range 20000 {
		var parts []string
		for _, name := range common {
			if r.IntN(10) > 0 { // most records have every common member, in the encoder's order
				vals := members[name]
				v := vals[0]
				if r.IntN(4) == 0 {
					v = vals[r.IntN(len(vals))]
				}
				parts = append(parts, spell(r, name)+":"+v)
			}
		}
		if r.IntN(5) == 0 {
			name := names[r.IntN(len(names))]
			vals := members[name]
			parts = append(parts, spell(r, name)+":"+vals[r.IntN(len(vals))])
		}
		if r.IntN(5) == 0 {
			r.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
		}
		data := " {" + strings.Join(parts, ",") + "}" + []string{"", " \n", "x", "{}"}[r.IntN(4)*r.IntN(2)]
		var want, got Resource
		if r.IntN(8) == 0 { // decoding into a resource holding values already: both keep what the record lacks
			want = Resource{LogicalID: "before", Status: "OLD", Pending: &PendingOperation{Op: PendingCreate},
				UpdatedAt: time.Unix(1, 0)}
			got = want
			got.Pending = &PendingOperation{Op: PendingCreate}
		}
		wantErr := jsonv2.Unmarshal([]byte(data), &want, decodeOptions)
		gotErr := UnmarshalResource([]byte(data), &got)
		if (wantErr != nil) != (gotErr != nil) {
			t.Fatalf("record %d %s: UnmarshalResource error %v, the general path's %v", i, data, gotErr, wantErr)
		}
		if wantErr != nil {
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("record %d %s: UnmarshalResource differs from the general path (-general +UnmarshalResource):\n%s", i, data, diff)
		}
		if want.UpdatedAt.Location() != got.UpdatedAt.Location() {
			t.Fatalf("record %d %s: time in %v, the general path's in %v", i, data, got.UpdatedAt.Location(), want.UpdatedAt.Location())
		}
		var c Resource
		if decodeCommon([]byte(data), &c) {
			fast++
		}
	}
	if fast < 2000 {
		t.Errorf("decodeCommon read %d records of 20,000: the test hardly exercises it", fast)
	}
}
