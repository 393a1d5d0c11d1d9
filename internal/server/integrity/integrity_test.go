package integrity

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cdkx-dev/cdkx/internal/server/integrity/integritytest"
	"github.com/cdkx-dev/cdkx/pkg/stateapi"
)

// TestIndexDeployment checks the rules on whole texts: what each kind accepts and refuses, and where.
func TestIndexDeployment(t *testing.T) {
	tests := []struct {
		name string
		kind Kind
		text string
		want string // "" when valid, else a part of the error
	}{
		{"pulumi", Pulumi, integritytest.PulumiText(3), ""},
		{"empty deployment", Pulumi, `{"version":3,"deployment":{"manifest":{"time":"0001-01-01T00:00:00Z","magic":"","version":""},"resources":[]}}`, ""},
		{"no resources", Pulumi, `{"version":3,"deployment":{}}`, ""},
		{"null resources", Pulumi, `{"version":3,"deployment":{"resources":null}}`, ""},
		{"version after deployment", Pulumi, `{"deployment":{"resources":[]},"version":3}`, ""},
		{"version 4", Pulumi, `{"version":4,"features":["x"],"deployment":{"resources":[]}}`, ""},
		{"version 4 import", Import, `{"version":4,"features":["x"],"deployment":{"resources":[]}}`, "version 4 is not supported"},
		{"a string", Pulumi, `"just a string"`, `unexpected '"', want '{'`},
		{"no closing brace", Pulumi, integritytest.PulumiText(2)[:len(integritytest.PulumiText(2))-1], "unexpected end of the text"},
		{"deployment a list", Pulumi, `{"version":3,"deployment":[]}`, "the deployment is not a JSON object"},
		{"no version", Pulumi, `{"deployment":{"resources":[]}}`, "no version"},
		{"version 2", Pulumi, `{"version":2,"deployment":{"resources":[]}}`, "version 2 is not supported"},
		{"no deployment", Pulumi, `{"version":3}`, "no deployment object"},
		{"resources an object", Pulumi, `{"version":3,"deployment":{"resources":{}}}`, "resources are not a list"},
		{"resource a string", Pulumi, `{"version":3,"deployment":{"resources":["r"]}}`, "byte 40 (deployment.resources[0]): unexpected '\"', want a resource object"},
		{"resource without type", Pulumi, `{"version":3,"deployment":{"resources":[{"urn":"u"}]}}`, "(deployment.resources[0]): the resource has no type"},
		{"resource without urn", Pulumi, `{"version":3,"deployment":{"resources":[{"type":"t"}]}}`, "the resource has no urn"},
		{"urn a number", Pulumi, `{"version":3,"deployment":{"resources":[{"urn":1,"type":"t"}]}}`, "cannot unmarshal number"},
		{"duplicate urn", Pulumi, `{"version":3,"deployment":{"resources":[{"urn":"u","type":"t"},{"urn":"u","type":"t"}]}}`, "byte 63 (deployment.resources[1]): duplicate resource u"},
		{"duplicate urn, one deleted", Pulumi, `{"version":3,"deployment":{"resources":[{"urn":"u","type":"t","delete":true},{"urn":"u","type":"t"}]}}`, ""},
		{"duplicate key", Pulumi, `{"version":3,"deployment":{"resources":[]},"Version":3}`, `duplicate key "Version"`},
		{"duplicate resources", Pulumi, `{"version":3,"deployment":{"resources":[],"RESOURCES":[{}]}}`, `duplicate key "RESOURCES"`},
		{"trailing data", Pulumi, `{"version":3,"deployment":{}} x`, "data after the deployment"},
		{"trailing NUL", Pulumi, "{\"version\":3,\"deployment\":{}}\x00", "data after the deployment"},
		{"manifest a string", Pulumi, `{"version":3,"deployment":{"manifest":"m","resources":[]}}`, "the manifest is not a JSON object"},
		{"pending operations an object", Pulumi, `{"version":3,"deployment":{"pending_operations":{}}}`, "pending_operations is not a list"},
		{"bad escape", Pulumi, `{"version":3,"deployment":{"manifest":{"a":"\q"}}}`, `invalid escape`},
		{"cdkx", Cdkx, integritytest.CdkxText(3), ""},
		{"cdkx empty", Cdkx, integritytest.CdkxText(0), ""},
		{"cdkx without header", Cdkx, `{"version":3,"deployment":{"resources":[]}}`, "needs its cdkx header"},
		{"cdkx resource without logical ID", Cdkx, strings.Replace(integritytest.PulumiText(1), `"resources"`, `"cdkx":{"format":1},"resources"`, 1), "no cdkx logical ID"},
		{"cdkx format 2", Cdkx, strings.Replace(integritytest.CdkxText(1), `"format":1`, `"format":2`, 1), "format 2"},
		{"cdkx without logical ID", Cdkx, strings.Replace(integritytest.CdkxText(1), `"logicalId":"r000"`, `"logicalId":""`, 1), "no cdkx logical ID"},
		{"cdkx without type", Cdkx, strings.Replace(integritytest.CdkxText(1), `"type":"cdkx:Core:Data"`, `"type":""`, 1), "no type"},
		{"cdkx out of order", Cdkx, strings.Replace(integritytest.CdkxText(2), `"logicalId":"r002"`, `"logicalId":"a"`, 1), `logical ID "a" follows "r000"`},
		{"cdkx bad updatedAt", Cdkx, strings.Replace(integritytest.CdkxText(1), `"updatedAt":"2026-01-02T03:04:05Z","cdkx"`, `"updatedAt":"soon","cdkx"`, 1), ""},
		{"cdkx bad resource updatedAt", Cdkx, strings.Replace(integritytest.CdkxText(1), `"status":"CREATE_COMPLETE","updatedAt":"2026-01-02T03:04:05Z"`, `"status":"CREATE_COMPLETE","updatedAt":5`, 1), "Time.UnmarshalJSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := buildIndex([]byte(tt.text), tt.kind)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("buildIndex(%q) = %v, want no error", tt.text, err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("buildIndex(%q) = %v, want an error with %q", tt.text, err, tt.want)
			}
			if err == nil && !json.Valid([]byte(tt.text)) {
				t.Errorf("buildIndex(%q) accepted invalid JSON", tt.text)
			}
		})
	}
}

// randomEdit returns random, non-overlapping edits of text, sorted: whole resources replaced, inserted
// or deleted (valid ones and ones that break a rule), bytes deleted or inserted anywhere.
func randomEdits(rng *rand.Rand, text string, kind Kind, ix *Index) []stateapi.TextEdit {
	var edits []stateapi.TextEdit
	pos := 0
	for range 1 + rng.IntN(3) {
		if pos >= len(text) {
			break
		}
		st := pos + rng.IntN(min(len(text)-pos, 400))
		en := st
		var nt string
		resource := func() string {
			if kind == Cdkx {
				id := fmt.Sprintf("r%03d", rng.IntN(40))
				switch rng.IntN(8) {
				case 0:
					return strings.Replace(integritytest.CdkxResource(id, ""), `"type":"cdkx:Core:Data"`, `"type":""`, 1)
				case 1:
					return `"just a string"`
				}
				return integritytest.CdkxResource(id, `,"id":"x"`)
			}
			switch rng.IntN(8) {
			case 0:
				return `{"urn":"u"}`
			case 1:
				return integritytest.PulumiResource(rng.IntN(40), `,"delete":true`)
			case 2:
				return `[]`
			}
			return integritytest.PulumiResource(rng.IntN(40), `,"id":"x"`)
		}
		switch op := rng.IntN(10); {
		case op < 3 && ix != nil && len(ix.elems) > 0: // replace a resource
			e := ix.elems[rng.IntN(len(ix.elems))]
			if e.start < pos {
				continue
			}
			st, en, nt = e.start, e.end, resource()
		case op < 5 && ix != nil && len(ix.elems) > 0: // insert a resource before one
			e := ix.elems[rng.IntN(len(ix.elems))]
			if e.start < pos {
				continue
			}
			st, en, nt = e.start, e.start, resource()+",\n"
		case op < 6 && ix != nil && len(ix.elems) > 1: // delete a resource and its separator
			i := 1 + rng.IntN(len(ix.elems)-1)
			if ix.elems[i-1].end < pos {
				continue
			}
			st, en = ix.elems[i-1].end, ix.elems[i].end
		case op < 8: // delete bytes
			en = min(len(text), st+1+rng.IntN(3))
		default: // insert bytes
			chars := []string{"{", "}", "[", "]", ",", ":", `"`, `\`, "a", "1", " ", "\n", `"urn"`, `,{}`}
			nt = chars[rng.IntN(len(chars))]
		}
		edits = append(edits, stateapi.TextEdit{NewText: nt})
		edits[len(edits)-1].Span.Start.Offset, edits[len(edits)-1].Span.End.Offset = st, en
		pos = en + 1
	}
	return edits
}

// TestIndexUpdateMatchesFullParse is a property test: for random sequences of random edits, valid and
// not, of Pulumi checkpoints and cdkx documents, the incremental check's verdict is the verdict of
// reading the result whole, and the index it returns is the one reading it whole builds.
func TestIndexUpdateMatchesFullParse(t *testing.T) {
	for _, kind := range []Kind{Pulumi, Cdkx} {
		t.Run(fmt.Sprint(kind), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(kind)))
			valid, invalid := 0, 0
			for seq := range 300 {
				n := rng.IntN(12)
				text := integritytest.PulumiText(n)
				if kind == Cdkx {
					text = integritytest.CdkxText(n)
				}
				ix, err := buildIndex([]byte(text), kind)
				if err != nil {
					t.Fatalf("buildIndex(base) = %v", err)
				}
				for step := range 40 {
					edits := SortEdits(randomEdits(rng, text, kind, ix))
					next, err := ApplyEdits([]byte(text), edits)
					if err != nil {
						continue
					}
					want, wantErr := buildIndex(next, kind)
					got, gotErr := ix.Update(next, edits)
					if (gotErr == nil) != (wantErr == nil) {
						t.Fatalf("sequence %d step %d: edits %+v of\n%s\ngive\n%s\nincremental: %v, whole: %v", seq, step, edits, text, next, gotErr, wantErr)
					}
					if wantErr == nil && !json.Valid(next) {
						t.Fatalf("buildIndex accepted invalid JSON:\n%s", next)
					}
					if gotErr != nil {
						invalid++
						continue
					}
					valid++
					if diff := cmp.Diff(want, got, cmp.AllowUnexported(Index{}, docElem{}, docPart{}), cmpopts.EquateEmpty()); diff != "" {
						t.Fatalf("sequence %d step %d: index after edits %+v (-whole +incremental):\n%s", seq, step, edits, diff)
					}
					text, ix = string(next), got
				}
			}
			if valid < 100 || invalid < 100 {
				t.Errorf("%d valid and %d invalid results; want at least 100 of each", valid, invalid)
			}
		})
	}
}
