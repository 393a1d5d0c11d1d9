package assembly

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// oneType is a resource.Catalog of one provider "p" serving the given schemas.
type oneType map[string]resource.Schema

func (c oneType) Schema(provider, resourceType string) (resource.Schema, bool, bool) {
	s, ok := c[resourceType]
	return s, provider == "p", ok && provider == "p"
}
func (oneType) Names() []string { return []string{"p"} }
func (c oneType) Types(string) []string {
	var out []string
	for t := range c {
		out = append(out, t)
	}
	return out
}

// TestCheckStackView: Validate calls CheckStack with the resource's logical ID, its stack's resources by
// type in template order, and a lookup that follows {ref} within the stack and {stackRef} to the resource
// another stack's output points at; CheckReferences' lookup does not follow stackRefs.
func TestCheckStackView(t *testing.T) {
	t.Parallel()
	type view struct {
		OfType     []string
		TargetType string
		TargetName any
		Found      bool
	}
	seen := map[string]view{}
	catalog := oneType{
		"P::X::Target": {Type: "P::X::Target", AllowUnknownProperties: true, Outputs: []string{"id"}},
		"P::X::Check": {Type: "P::X::Check", AllowUnknownProperties: true,
			CheckStack: func(props resource.Properties, stack resource.StackView) []resource.FieldError {
				var ids []string
				for _, r := range stack.OfType("P::X::Check") {
					ids = append(ids, r.LogicalID)
				}
				typ, target, ok := stack.Lookup(props["to"])
				seen[stack.Self] = view{OfType: ids, TargetType: typ, TargetName: target["name"], Found: ok}
				return []resource.FieldError{{Path: "to", Message: "checked"}}
			},
			CheckReferences: func(props resource.Properties, lookup resource.TargetLookup) []resource.FieldError {
				if _, _, ok := lookup(props["to"]); ok {
					return []resource.FieldError{{Path: "to", Message: "CheckReferences resolved it"}}
				}
				return nil
			}},
	}
	files := map[string][]byte{
		"manifest.json": []byte(`{"version":"1.0.0","artifacts":{
			"Other":{"type":"cdkx:stack","properties":{"templateFile":"Other.json"}},
			"App":{"type":"cdkx:stack","properties":{"templateFile":"App.json"},"dependencies":["Other"]}}}`),
		"Other.json": []byte(`{"resources":{"Far":{"type":"P::X::Target","provider":"p","properties":{"name":"far"}}},
			"outputs":{"FarId":{"value":{"ref":"Far","attr":"id"}},"Lit":{"value":"7"}}}`),
		"App.json": []byte(`{"resources":{
			"Near":{"type":"P::X::Target","provider":"p","properties":{"name":"near"}},
			"B":{"type":"P::X::Check","provider":"p","properties":{"to":{"stackRef":"Other","outputKey":"FarId"}}},
			"A":{"type":"P::X::Check","provider":"p","properties":{"to":{"ref":"Near","attr":"id"}}},
			"C":{"type":"P::X::Check","provider":"p","properties":{"to":{"stackRef":"Other","outputKey":"Lit"}}}}}`),
	}
	a, ds := LoadFiles("cdkx.out", files)
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	var got []string
	for _, d := range Validate(a, catalog) {
		got = append(got, d.Path+": "+d.Summary)
	}
	want := []string{"resources.A.properties.to: CheckReferences resolved it", "resources.A.properties.to: checked",
		"resources.B.properties.to: checked", "resources.C.properties.to: checked"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
	checks := []string{"A", "B", "C"}
	wantSeen := map[string]view{
		"A": {OfType: checks, TargetType: "P::X::Target", TargetName: "near", Found: true},
		"B": {OfType: checks, TargetType: "P::X::Target", TargetName: "far", Found: true},
		"C": {OfType: checks},
	}
	if diff := cmp.Diff(wantSeen, seen); diff != "" {
		t.Errorf("what CheckStack saw (-want +got):\n%s", diff)
	}
}
