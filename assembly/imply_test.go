package assembly

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/pkg/resource"
)

func TestImply(t *testing.T) {
	t.Parallel()
	lookup := func(provider, typ string) (resource.Schema, bool, bool) {
		switch typ {
		case "X::Net::Attach":
			return resource.Schema{Type: typ, After: []resource.After{{Type: "X::Net::Subnet", Property: "networkId", OtherProperty: "networkId"}}}, true, true
		case "X::Net::Server":
			return resource.Schema{Type: typ, After: []resource.After{{Type: "X::Net::Subnet", Property: "networks", OtherProperty: "networkId"}}}, true, true
		}
		return resource.Schema{Type: typ}, true, true
	}
	a, ds := loadFiles(t, map[string]string{
		"manifest.json": manifest("A"),
		"A.json": `{"resources": {
			"Net": {"type": "X::Net::Network"},
			"Other": {"type": "X::Net::Network"},
			"SubA": {"type": "X::Net::Subnet", "properties": {"networkId": {"ref": "Net", "attr": "networkId"}}},
			"SubB": {"type": "X::Net::Subnet", "properties": {"networkId": {"ref": "Net", "attr": "networkId"}}},
			"SubOther": {"type": "X::Net::Subnet", "properties": {"networkId": {"ref": "Other", "attr": "networkId"}}},
			"SubLiteral": {"type": "X::Net::Subnet", "properties": {"networkId": 42}},
			"Lb": {"type": "X::Net::Attach", "properties": {"networkId": {"ref": "Net", "attr": "networkId"}}},
			"LbLiteral": {"type": "X::Net::Attach", "properties": {"networkId": "42"}},
			"Server": {"type": "X::Net::Server", "properties": {"networks": [{"ref": "Other", "attr": "networkId"}, 42]}},
			"Alone": {"type": "X::Net::Server", "properties": {"networks": [7]}}
		}}`,
	})
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	Imply(a, lookup)
	got := map[string][]string{}
	for _, r := range a.Stacks[0].Resources {
		if len(r.Implied) > 0 {
			got[r.LogicalID] = r.Implied
		}
	}
	want := map[string][]string{
		"Lb":        {"SubA", "SubB"},
		"LbLiteral": {"SubLiteral"},
		"Server":    {"SubLiteral", "SubOther"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("implied dependencies (-want +got):\n%s", diff)
	}
}
