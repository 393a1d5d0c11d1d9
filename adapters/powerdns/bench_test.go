package powerdns_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/cdkx-dev/cdkx/adapters/powerdns"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// BenchmarkCreateRecordSet is the adapter's own cost of a record set's create: the existence GET and
// the PATCH against a server that answers at once, as PowerDNS 4.7 does for a missing rrset.
func BenchmarkCreateRecordSet(b *testing.B) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.Method == http.MethodPatch {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"account": "", "api_rectify": false, "catalog": "", "dnssec": false, "edited_serial": 2026112301, "id": "example.test.", "kind": "Native", "last_check": 0, "master_tsig_key_ids": [], "masters": [], "name": "example.test.", "notified_serial": 0, "nsec3narrow": false, "nsec3param": "", "rrsets": [], "serial": 2026112301, "slave_tsig_key_ids": [], "soa_edit": "", "soa_edit_api": "DEFAULT", "url": "/api/v1/servers/localhost/zones/example.test."}`)
	}))
	defer s.Close()
	p, err := powerdns.New(powerdns.Config{URL: s.URL, APIKey: testKey})
	if err != nil {
		b.Fatal(err)
	}
	req := resource.CreateRequest{Type: powerdns.TypeRecordSet, Properties: resource.Properties{
		"zoneId": "example.test.", "name": "www.example.test.", "type": "A", "ttl": json.Number("300"), "records": []any{"192.0.2.1"}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Create(b.Context(), req); err != nil {
			b.Fatal(err)
		}
	}
}
