package powerdns_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/adapters/internal/adaptertest"
	"github.com/cdkx-dev/cdkx/adapters/powerdns"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

func schema(t *testing.T, typ string) resource.Schema {
	t.Helper()
	p, err := powerdns.New(powerdns.Config{URL: "http://127.0.0.1:1", APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range p.Info().Schemas {
		if s.Type == typ {
			return s
		}
	}
	t.Fatalf("no schema for %s", typ)
	return resource.Schema{}
}

func TestSchemaShape(t *testing.T) {
	t.Parallel()
	zone, rs := schema(t, powerdns.TypeZone), schema(t, powerdns.TypeRecordSet)
	if diff := cmp.Diff([]string{"name", "nameservers"}, zone.CreateOnly()); diff != "" {
		t.Errorf("zone create-only (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"name", "type", "zoneId"}, rs.CreateOnly()); diff != "" {
		t.Errorf("record set create-only (-want +got):\n%s", diff)
	}
	for _, attr := range []string{"zoneId", "name", "serial", "crn"} {
		if !zone.HasOutput(attr) {
			t.Errorf("zone has no output %q", attr)
		}
	}
	for _, attr := range []string{"zoneId", "name", "type", "fqdn", "crn"} {
		if !rs.HasOutput(attr) {
			t.Errorf("record set has no output %q", attr)
		}
	}
	if !zone.DeleteBeforeReplace || !rs.DeleteBeforeReplace {
		t.Error("zones and record sets must be deleted before they are replaced")
	}
}

func TestZoneCheck(t *testing.T) {
	t.Parallel()
	s := schema(t, powerdns.TypeZone)
	tests := []struct {
		name  string
		props string
		want  []resource.FieldError
	}{
		{"ok", `{"name":"example.test.","kind":"Native","nameservers":["ns1.example.test."],"soaEditApi":"INCREASE","account":"a"}`, nil},
		{"root zone", `{"name":"."}`, nil},
		{"token name", `{"name":{"ref":"Other","attr":"zone"}}`, nil},
		{"not canonical", `{"name":"example.test"}`, []resource.FieldError{{Path: "name",
			Message: `"example.test" is not a canonical DNS name: it must end with a dot, e.g. "example.test."`}}},
		{"empty label", `{"name":"example..test."}`, []resource.FieldError{{Path: "name",
			Message: `"example..test." is not a canonical DNS name: it has an empty label`}}},
		{"nameserver not canonical", `{"name":"example.test.","nameservers":["ns1.example.test.","ns2.example.test"]}`,
			[]resource.FieldError{{Path: "nameservers[1]",
				Message: `"ns2.example.test" is not a canonical DNS name: it must end with a dot, e.g. "ns2.example.test."`}}},
		{"bad kind", `{"name":"example.test.","kind":"Primary"}`, []resource.FieldError{{Path: "kind",
			Message: `must be one of Native, Master, Slave, got "Primary"`}}},
		{"missing name", `{}`, []resource.FieldError{{Path: "name", Message: `required property "name" is missing`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := s.Validate(adaptertest.Props(t, tt.props), adaptertest.IsToken)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Validate(%s) mismatch (-want +got):\n%s", tt.props, diff)
			}
		})
	}
}

func TestRecordSetCheck(t *testing.T) {
	t.Parallel()
	s := schema(t, powerdns.TypeRecordSet)
	tests := []struct {
		name  string
		props string
		want  []resource.FieldError
	}{
		{"A", `{"zoneId":"example.test.","name":"www.example.test.","type":"A","ttl":300,"records":["192.0.2.1","192.0.2.2"]}`, nil},
		{"apex, mixed case", `{"zoneId":"example.test.","name":"Example.Test.","type":"NS","records":["ns1.example.test."]}`, nil},
		{"token zone and records", `{"zoneId":{"ref":"Zone","attr":"zoneId"},"name":"www.example.test.","type":"CNAME","records":[{"ref":"Other","attr":"fqdn"}]}`, nil},
		{"every type", `{"zoneId":"example.test.","name":"x.example.test.","type":"AAAA","records":["2001:db8::1"]}`, nil},
		{"MX", `{"zoneId":"example.test.","name":"example.test.","type":"MX","records":["10 mail.example.test."]}`, nil},
		{"SRV", `{"zoneId":"example.test.","name":"_sip._tcp.example.test.","type":"SRV","records":["10 5 5060 sip.example.test."]}`, nil},
		{"TXT", `{"zoneId":"example.test.","name":"example.test.","type":"TXT","records":["\"v=spf1 -all\"","\"a\" \"b\""]}`, nil},
		{"CAA", `{"zoneId":"example.test.","name":"example.test.","type":"CAA","records":["0 issue \"letsencrypt.org\""]}`, nil},
		{"PTR", `{"zoneId":"2.0.192.in-addr.arpa.","name":"1.2.0.192.in-addr.arpa.","type":"PTR","records":["www.example.test."]}`, nil},
		{"not canonical", `{"zoneId":"example.test.","name":"www","type":"A","records":["192.0.2.1"]}`, []resource.FieldError{{Path: "name",
			Message: `"www" is not a canonical DNS name: it must end with a dot, e.g. "www."`}}},
		{"out of zone", `{"zoneId":"example.test.","name":"www.other.test.","type":"A","records":["192.0.2.1"]}`, []resource.FieldError{{Path: "name",
			Message: `"www.other.test." is not inside zone "example.test."; the name must be the zone or end with ".example.test."`}}},
		{"suffix is not enough", `{"zoneId":"example.test.","name":"myexample.test.","type":"A","records":["192.0.2.1"]}`, []resource.FieldError{{Path: "name",
			Message: `"myexample.test." is not inside zone "example.test."; the name must be the zone or end with ".example.test."`}}},
		{"bad type", `{"zoneId":"example.test.","name":"www.example.test.","type":"SOA","records":["x"]}`, []resource.FieldError{{Path: "type",
			Message: `must be one of A, AAAA, CNAME, TXT, MX, SRV, NS, CAA, PTR, got "SOA"`}}},
		{"negative ttl", `{"zoneId":"example.test.","name":"www.example.test.","type":"A","ttl":-5,"records":["192.0.2.1"]}`, []resource.FieldError{{Path: "ttl",
			Message: `must be between 0 and 2147483647 seconds, got -5`}}},
		{"no records", `{"zoneId":"example.test.","name":"www.example.test.","type":"A","records":[]}`, []resource.FieldError{{Path: "records",
			Message: `must hold at least one record; delete the record set to remove it`}}},
		{"bad A", `{"zoneId":"example.test.","name":"www.example.test.","type":"A","records":["192.0.2.1","not-an-ip","2001:db8::1"]}`, []resource.FieldError{
			{Path: "records[1]", Message: `must be an IPv4 address, got "not-an-ip"`},
			{Path: "records[2]", Message: `must be an IPv4 address, got "2001:db8::1"`}}},
		{"duplicate", `{"zoneId":"example.test.","name":"www.example.test.","type":"A","records":["192.0.2.1","192.0.2.1"]}`, []resource.FieldError{
			{Path: "records[1]", Message: `duplicates records[0] "192.0.2.1"`}}},
		{"two CNAMEs", `{"zoneId":"example.test.","name":"c.example.test.","type":"CNAME","records":["a.example.test.","b.example.test."]}`, []resource.FieldError{
			{Path: "records", Message: `a CNAME record set holds exactly one record, got 2`}}},
		{"CNAME not canonical", `{"zoneId":"example.test.","name":"c.example.test.","type":"CNAME","records":["www.example.test"]}`, []resource.FieldError{
			{Path: "records[0]", Message: `must be one canonical name with a trailing dot, e.g. "target.example.test.", got "www.example.test"`}}},
		{"MX not canonical", `{"zoneId":"example.test.","name":"example.test.","type":"MX","records":["10 mail.example.test"]}`, []resource.FieldError{
			{Path: "records[0]", Message: `must be "<preference> <mail server.>", e.g. "10 mail.example.test.", got "10 mail.example.test"`}}},
		{"TXT unquoted", `{"zoneId":"example.test.","name":"example.test.","type":"TXT","records":["hello world"]}`, []resource.FieldError{
			{Path: "records[0]", Message: `must be quoted, e.g. "\"v=spf1 -all\"", got "hello world"`}}},
		{"CAA unquoted", `{"zoneId":"example.test.","name":"example.test.","type":"CAA","records":["0 issue letsencrypt.org"]}`, []resource.FieldError{
			{Path: "records[0]", Message: `must be "<flags> <tag> \"<value>\"", e.g. "0 issue \"letsencrypt.org\"", got "0 issue letsencrypt.org"`}}},
		{"missing", `{}`, []resource.FieldError{
			{Path: "name", Message: `required property "name" is missing`},
			{Path: "records", Message: `required property "records" is missing`},
			{Path: "type", Message: `required property "type" is missing`},
			{Path: "zoneId", Message: `required property "zoneId" is missing`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := s.Validate(adaptertest.Props(t, tt.props), adaptertest.IsToken)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Validate(%s) mismatch (-want +got):\n%s", tt.props, diff)
			}
		})
	}
}
