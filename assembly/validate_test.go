package assembly

import (
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// fakeSchemas stands for the adapters: the types of the dns example, by provider.
var fakeSchemas = map[string]map[string]resource.Schema{
	"powerdns": {
		"PowerDNS::DNS::Zone": {
			Type: "PowerDNS::DNS::Zone",
			Properties: map[string]resource.PropertySchema{
				"name":        {Kind: resource.KindString, Required: true, CreateOnly: true},
				"kind":        {Kind: resource.KindString, Enum: []string{"Native", "Master", "Slave"}},
				"nameservers": {Kind: resource.KindList, Items: &resource.PropertySchema{Kind: resource.KindString}},
				"soaEditApi":  {Kind: resource.KindString},
				"account":     {Kind: resource.KindString},
			},
			Outputs: []string{"zoneId", "name", "serial"},
		},
		"PowerDNS::DNS::RecordSet": {
			Type: "PowerDNS::DNS::RecordSet",
			Properties: map[string]resource.PropertySchema{
				"zoneId": {Kind: resource.KindString, Required: true},
				"name":   {Kind: resource.KindString, Required: true},
				"type": {Kind: resource.KindString, Required: true,
					Enum: []string{"A", "AAAA", "CNAME", "TXT", "MX", "SRV", "NS", "CAA", "PTR"}},
				"ttl":     {Kind: resource.KindInteger},
				"records": {Kind: resource.KindList, Required: true, Items: &resource.PropertySchema{Kind: resource.KindString}},
			},
			Outputs: []string{"zoneId", "name", "type", "fqdn"},
		},
	},
	"cdkx": {
		"Cdkx::Core::Data": {
			Type: "Cdkx::Core::Data",
			Properties: map[string]resource.PropertySchema{
				"input":           {Kind: resource.KindAny},
				"triggersReplace": {Kind: resource.KindAny},
			},
			Outputs: []string{"output", "id"},
		},
	},
}

func fakeLookup(provider, resourceType string) (resource.Schema, bool, bool) {
	types, providerKnown := fakeSchemas[provider]
	s, ok := types[resourceType]
	return s, providerKnown, ok
}

// fakeCatalog is the resource.Catalog of fakeSchemas.
type fakeCatalog struct{}

func (fakeCatalog) Schema(provider, resourceType string) (resource.Schema, bool, bool) {
	return fakeLookup(provider, resourceType)
}
func (fakeCatalog) Names() []string { return slices.Sorted(maps.Keys(fakeSchemas)) }
func (fakeCatalog) Types(provider string) []string {
	return slices.Sorted(maps.Keys(fakeSchemas[provider]))
}

func TestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		template string
		want     []string
	}{
		{
			name: "provider",
			template: `{"resources": {
				"Given": {"type": "PowerDNS::DNS::Zone", "provider": "pdns", "properties": {"name": "a."}},
				"Defaulted": {"type": "Route53::DNS::Zone"}}}`,
			want: []string{
				`error: cdkx.out/A.json: resources.Defaulted.type: unknown provider "route53" of resource type Route53::DNS::Zone; no cdkx adapter serves it: check the spelling of the first segment of "type" (cdkx knows cdkx, powerdns), or use a cdkx release that has an adapter for "route53"`,
				`error: cdkx.out/A.json: resources.Given.provider: unknown provider "pdns" of resource type PowerDNS::DNS::Zone; no cdkx adapter serves it: check the spelling of "provider" (cdkx knows cdkx, powerdns), or use a cdkx release that has an adapter for "pdns"`,
			},
		},
		{
			name: "provider suggestions",
			template: `{"resources": {
				"Typo": {"type": "PowerDNS::DNS::Zone", "provider": "powerdsn", "properties": {"name": "a."}},
				"Case": {"type": "PowerDNS::DNS::Zone", "provider": "PowerDNS", "properties": {"name": "a."}},
				"FromType": {"type": "PowerDSN::DNS::Zone", "properties": {"name": "a."}}}}`,
			want: []string{
				`error: cdkx.out/A.json: resources.Case.provider: unknown provider "PowerDNS" of resource type PowerDNS::DNS::Zone (did you mean "powerdns"?); no cdkx adapter serves it: check the spelling of "provider" (cdkx knows cdkx, powerdns), or use a cdkx release that has an adapter for "PowerDNS"`,
				`error: cdkx.out/A.json: resources.FromType.type: unknown provider "powerdsn" of resource type PowerDSN::DNS::Zone (did you mean "PowerDNS::DNS::Zone"?); no cdkx adapter serves it: check the spelling of the first segment of "type" (cdkx knows cdkx, powerdns), or use a cdkx release that has an adapter for "powerdsn"`,
				`error: cdkx.out/A.json: resources.Typo.provider: unknown provider "powerdsn" of resource type PowerDNS::DNS::Zone (did you mean "powerdns"?); no cdkx adapter serves it: check the spelling of "provider" (cdkx knows cdkx, powerdns), or use a cdkx release that has an adapter for "powerdsn"`,
			},
		},
		{
			name: "type suggestions",
			template: `{"resources": {
				"Case": {"type": "PowerDNS::DNS::Recordset", "properties": {"zoneId": "z", "name": "a.", "type": "A", "records": ["127.0.0.1"]}},
				"Near": {"type": "PowerDNS::DNS::Zon", "properties": {"name": "a."}},
				"Widget": {"type": "PowerDNS::DNS::Widget", "properties": {"name": "a."}},
				"Far": {"type": "PowerDNS::Cloud::Server", "properties": {"name": "a."}}}}`,
			want: []string{
				`error: cdkx.out/A.json: resources.Case.type: unknown type "PowerDNS::DNS::Recordset" for provider "powerdns" (did you mean "PowerDNS::DNS::RecordSet"?); check the spelling of "type"; the adapter of "powerdns" serves PowerDNS::DNS::RecordSet, PowerDNS::DNS::Zone`,
				`error: cdkx.out/A.json: resources.Far.type: unknown type "PowerDNS::Cloud::Server" for provider "powerdns"; check the spelling of "type"; the adapter of "powerdns" serves PowerDNS::DNS::RecordSet, PowerDNS::DNS::Zone`,
				`error: cdkx.out/A.json: resources.Near.type: unknown type "PowerDNS::DNS::Zon" for provider "powerdns" (did you mean "PowerDNS::DNS::Zone"?); check the spelling of "type"; the adapter of "powerdns" serves PowerDNS::DNS::RecordSet, PowerDNS::DNS::Zone`,
				`error: cdkx.out/A.json: resources.Widget.type: unknown type "PowerDNS::DNS::Widget" for provider "powerdns"; check the spelling of "type"; the adapter of "powerdns" serves PowerDNS::DNS::RecordSet, PowerDNS::DNS::Zone`,
			},
		},
		{
			name:     "type",
			template: `{"resources": {"Z": {"type": "PowerDNS::DNS::Zones", "properties": {"name": "a."}}}}`,
			want: []string{
				`error: cdkx.out/A.json: resources.Z.type: unknown type "PowerDNS::DNS::Zones" for provider "powerdns" (did you mean "PowerDNS::DNS::Zone"?); check the spelling of "type"; the adapter of "powerdns" serves PowerDNS::DNS::RecordSet, PowerDNS::DNS::Zone`,
			},
		},
		{
			name: "properties",
			template: `{"resources": {
				"Z": {"type": "PowerDNS::DNS::Zone", "properties": {"kind": "Primary", "nameservers": ["ns1.", 2], "sOAEditApi": "x"}},
				"R": {"type": "PowerDNS::DNS::RecordSet", "properties": {
					"zoneId": {"ref": "Z", "attr": "zoneId"}, "name": {"stackRef": "B", "outputKey": "Name"},
					"type": "A", "ttl": 1.5, "records": [{"ref": "Z", "attr": "name"}, "127.0.0.1"]}}}}`,
			want: []string{
				`error: cdkx.out/A.json: resources.R.properties.ttl: must be an integer, got number 1.5`,
				`error: cdkx.out/A.json: resources.Z.properties.kind: must be one of Native, Master, Slave, got "Primary"`,
				`error: cdkx.out/A.json: resources.Z.properties.name: required property "name" is missing`,
				`error: cdkx.out/A.json: resources.Z.properties.nameservers[1]: must be a string, got number 2`,
				`error: cdkx.out/A.json: resources.Z.properties.sOAEditApi: unknown property "sOAEditApi"; PowerDNS::DNS::Zone has account, kind, name, nameservers, soaEditApi`,
			},
		},
		{
			name: "ref attributes",
			template: `{"resources": {
				"Z": {"type": "PowerDNS::DNS::Zone", "properties": {"name": "a."}},
				"Unknown": {"type": "Foo::Bar::Baz"},
				"D": {"type": "Cdkx::Core::Data", "provider": "cdkx", "properties": {"input": [
					{"ref": "Z", "attr": "zoneID"}, {"ref": "Z", "attr": "crn"}, {"ref": "Unknown", "attr": "x"}, {"ref": "Z", "attr": "xyzzy"}]}}},
				"outputs": {"Serial": {"value": {"ref": "Z", "attr": "serials"}}}}`,
			want: []string{
				`error: cdkx.out/A.json: outputs.Serial.value: resource Z (PowerDNS::DNS::Zone) has no output "serials" (did you mean "serial"?); its outputs: crn, name, serial, zoneId`,
				`error: cdkx.out/A.json: resources.D.properties.input[0]: resource Z (PowerDNS::DNS::Zone) has no output "zoneID" (did you mean "zoneId"?); its outputs: crn, name, serial, zoneId`,
				`error: cdkx.out/A.json: resources.D.properties.input[3]: resource Z (PowerDNS::DNS::Zone) has no output "xyzzy"; its outputs: crn, name, serial, zoneId`,
				`error: cdkx.out/A.json: resources.Unknown.type: unknown provider "foo" of resource type Foo::Bar::Baz; no cdkx adapter serves it: check the spelling of the first segment of "type" (cdkx knows cdkx, powerdns), or use a cdkx release that has an adapter for "foo"`,
			},
		},
		{
			name:     "malformed types are left to Load",
			template: `{"resources": {"R": {"type": "test::Resource"}}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, _ := loadFiles(t, map[string]string{"manifest.json": manifest("A", "B"), "A.json": tt.template, "B.json": `{"outputs": {"Name": {"value": "b."}}}`})
			got := lines(Validate(a, fakeCatalog{}))
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Validate() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateSkipsMissingTemplates(t *testing.T) {
	t.Parallel()
	a, _ := loadFiles(t, map[string]string{"manifest.json": manifest("A")})
	if ds := Validate(a, fakeCatalog{}); len(ds) != 0 {
		t.Errorf("Validate() = %v, want no diagnostics", lines(ds))
	}
}

func TestValidateExampleDNS(t *testing.T) {
	t.Parallel()
	a, ds := Load(exampleDNS)
	if len(ds) != 0 {
		t.Fatalf("Load(%q) diagnostics = %v, want none", exampleDNS, lines(ds))
	}
	if ds := Validate(a, fakeCatalog{}); len(ds) != 0 {
		t.Errorf("Validate(%q) = %v, want no diagnostics", exampleDNS, lines(ds))
	}
}
