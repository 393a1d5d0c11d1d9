package powerdns_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/adapters/internal/adaptertest"
	"github.com/cdkx-dev/cdkx/adapters/powerdns"
	"github.com/cdkx-dev/cdkx/adapters/transport"
	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

var _ engine.Provider = (*powerdns.Provider)(nil)

const (
	base    = "/api/v1/servers/localhost"
	zoneURL = base + "/zones/example.test."
	wwwA    = "rrset_name=www.example.test.&rrset_type=A"
)

// zoneJSON is a zone as PowerDNS 4.7 answers it (copied from a real response), with extra rrsets.
func zoneJSON(rrsets string) string {
	if rrsets != "" {
		rrsets = ", " + rrsets
	}
	return `{"account": "", "api_rectify": false, "catalog": "", "dnssec": false, "edited_serial": 2026112101,
	"id": "example.test.", "kind": "Native", "last_check": 0, "master_tsig_key_ids": [], "masters": [],
	"name": "example.test.", "notified_serial": 0, "nsec3narrow": false, "nsec3param": "",
	"rrsets": [{"comments": [], "name": "example.test.", "records": [{"content": "a.misconfigured.dns.server.invalid. hostmaster.example.test. 2026112101 10800 3600 604800 3600", "disabled": false}], "ttl": 3600, "type": "SOA"}` + rrsets + `],
	"serial": 2026112101, "slave_tsig_key_ids": [], "soa_edit": "", "soa_edit_api": "DEFAULT",
	"url": "/api/v1/servers/localhost/zones/example.test."}`
}

const serverJSON = `{"id": "localhost", "type": "Server", "daemon_type": "authoritative", "version": "4.7.3"}`

func TestZoneCreate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		props    string
		wantBody string
	}{
		{"defaults",
			`{"name":"example.test.","nameservers":["ns1.example.test.","ns2.example.test."]}`,
			`{"name":"example.test.","kind":"Native","nameservers":["ns1.example.test.","ns2.example.test."]}`},
		{"every property",
			`{"name":"example.test.","kind":"Master","soaEditApi":"INCREASE","account":"team-a"}`,
			`{"name":"example.test.","kind":"Master","soa_edit_api":"INCREASE","account":"team-a"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, p := newFake(t, exchange{Method: "POST", Path: base + "/zones", Body: tt.wantBody, Status: 201, JSON: zoneJSON("")})
			got, err := p.Create(t.Context(), resource.CreateRequest{Type: powerdns.TypeZone, LogicalID: "Zone", Properties: adaptertest.Props(t, tt.props)})
			if err != nil {
				t.Fatalf("Create = %v", err)
			}
			want := resource.CreateResult{PhysicalID: "example.test.",
				Outputs: resource.Properties{"zoneId": "example.test.", "name": "example.test.", "serial": json.Number("2026112101")}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Create mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestZoneCreateConflict(t *testing.T) {
	t.Parallel()
	f, p := newFake(t, exchange{Method: "POST", Path: base + "/zones", Body: `{"name":"example.test.","kind":"Native"}`, Status: 409, Text: "Conflict"})
	_, err := p.Create(t.Context(), resource.CreateRequest{Type: powerdns.TypeZone, Properties: adaptertest.Props(t, `{"name":"example.test."}`)})
	if !errors.Is(err, resource.ErrAlreadyExists) {
		t.Fatalf("Create error = %v, want resource.ErrAlreadyExists", err)
	}
	pe := adaptertest.ProviderError(t, err)
	want := "powerdns: POST " + f.url(base+"/zones") + ": 409: zone example.test. already exists in PowerDNS but not in cdkx state; delete it in PowerDNS or import it into cdkx"
	if pe.Status != 409 || err.Error() != want {
		t.Errorf("error =\n%s\nwant\n%s", err, want)
	}
}

func TestZoneRead(t *testing.T) {
	t.Parallel()
	noNS := `{"id":"example.test.","name":"example.test.","rrsets":[]}`
	twoNS := `{"id":"example.test.","name":"example.test.","rrsets":[{"name":"example.test.","type":"NS","ttl":3600,
		"records":[{"content":"ns2.example.test.","disabled":false},{"content":"ns1.example.test.","disabled":false}]}]}`
	tests := []struct {
		name      string
		hint      string
		live      string
		ns        string // answer to the apex NS rrset query; "" when none is expected
		wantProps string
	}{
		{"defaults left out", `{"name":"example.test."}`, zoneJSON(""), noNS,
			`{"name":"example.test.","kind":"Native"}`},
		{"set values kept", `{"name":"Example.Test.","nameservers":["ns1.example.test."],"soaEditApi":"DEFAULT","account":""}`, zoneJSON(""), "",
			`{"name":"Example.Test.","kind":"Native","nameservers":["ns1.example.test."],"soaEditApi":"DEFAULT","account":""}`},
		{"drift shows", `{"name":"example.test.","nameservers":["ns1.example.test."]}`,
			strings.NewReplacer(`"kind": "Native"`, `"kind": "Master"`, `"account": ""`, `"account": "ops"`, `"soa_edit_api": "DEFAULT"`, `"soa_edit_api": "EPOCH"`).Replace(zoneJSON("")), "",
			`{"name":"example.test.","kind":"Master","nameservers":["ns1.example.test."],"soaEditApi":"EPOCH","account":"ops"}`},
		{"import reads nameservers from the apex NS rrset", `{}`, zoneJSON(""), twoNS,
			`{"name":"example.test.","kind":"Native","nameservers":["ns1.example.test.","ns2.example.test."]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			calls := []exchange{{Method: "GET", Path: zoneURL, Query: "rrsets=false", Status: 200, JSON: tt.live}}
			if tt.ns != "" {
				calls = append(calls, exchange{Method: "GET", Path: zoneURL, Query: "rrset_name=example.test.&rrset_type=NS", Status: 200, JSON: tt.ns})
			}
			_, p := newFake(t, calls...)
			got, err := p.Read(t.Context(), resource.ReadRequest{Type: powerdns.TypeZone, PhysicalID: "example.test.", Properties: adaptertest.Props(t, tt.hint)})
			if err != nil {
				t.Fatalf("Read = %v", err)
			}
			want := resource.ReadResult{Properties: adaptertest.Props(t, tt.wantProps),
				Outputs: resource.Properties{"zoneId": "example.test.", "name": "example.test.", "serial": json.Number("2026112101")}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Read mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestZoneReadNotFound(t *testing.T) {
	t.Parallel()
	_, p := newFake(t,
		exchange{Method: "GET", Path: zoneURL, Query: "rrsets=false", Status: 404, Text: "Not Found"},
		exchange{Method: "GET", Path: base, Status: 200, JSON: serverJSON},
		// The server is known to exist now: no second check.
		exchange{Method: "GET", Path: zoneURL, Query: "rrsets=false", Status: 404, Text: "Not Found"},
	)
	for range 2 {
		_, err := p.Read(t.Context(), resource.ReadRequest{Type: powerdns.TypeZone, PhysicalID: "example.test."})
		if !errors.Is(err, resource.ErrNotFound) {
			t.Fatalf("Read error = %v, want resource.ErrNotFound", err)
		}
	}
}

func TestWrongServerIsNotNotFound(t *testing.T) {
	t.Parallel()
	_, p := newFake(t,
		exchange{Method: "DELETE", Path: zoneURL, Status: 404, Text: "Not Found"},
		exchange{Method: "GET", Path: base, Status: 404, Text: "Not Found"},
	)
	err := p.Delete(t.Context(), resource.DeleteRequest{Type: powerdns.TypeZone, PhysicalID: "example.test."})
	if err == nil || errors.Is(err, resource.ErrNotFound) {
		t.Fatalf("Delete error = %v, want an error that is not ErrNotFound", err)
	}
	if !strings.Contains(err.Error(), "PDNS_SERVER_ID") {
		t.Errorf("error %q does not say what to check", err)
	}
}

func TestZoneUpdate(t *testing.T) {
	t.Parallel()
	live := strings.Replace(zoneJSON(""), `"serial": 2026112101`, `"serial": 2026112102`, 1)
	_, p := newFake(t,
		exchange{Method: "PUT", Path: zoneURL, Body: `{"kind":"Master","soa_edit_api":"DEFAULT","account":""}`, Status: 204},
		exchange{Method: "GET", Path: zoneURL, Query: "rrsets=false", Status: 200, JSON: live},
	)
	got, err := p.Update(t.Context(), resource.UpdateRequest{Type: powerdns.TypeZone, PhysicalID: "example.test.",
		Old:     adaptertest.Props(t, `{"name":"example.test.","account":"team-a"}`),
		New:     adaptertest.Props(t, `{"name":"example.test.","kind":"Master"}`),
		Changed: []string{"account", "kind"}})
	if err != nil {
		t.Fatalf("Update = %v", err)
	}
	want := resource.UpdateResult{Outputs: resource.Properties{"zoneId": "example.test.", "name": "example.test.", "serial": json.Number("2026112102")}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Update mismatch (-want +got):\n%s", diff)
	}
}

func TestZoneDelete(t *testing.T) {
	t.Parallel()
	_, p := newFake(t,
		exchange{Method: "DELETE", Path: zoneURL, Status: 204},
		exchange{Method: "DELETE", Path: zoneURL, Status: 404, Text: "Not Found"},
		exchange{Method: "GET", Path: base, Status: 200, JSON: serverJSON},
	)
	for i := range 2 {
		if err := p.Delete(t.Context(), resource.DeleteRequest{Type: powerdns.TypeZone, PhysicalID: "example.test."}); err != nil {
			t.Errorf("Delete #%d = %v, want success", i+1, err)
		}
	}
}

const wwwProps = `{"zoneId":"example.test.","name":"www.example.test.","type":"A","records":["192.0.2.1","192.0.2.2"]}`

func TestRecordSetCreate(t *testing.T) {
	t.Parallel()
	_, p := newFake(t,
		exchange{Method: "GET", Path: zoneURL, Query: wwwA, Status: 200, JSON: zoneJSON("")},
		exchange{Method: "PATCH", Path: zoneURL, Status: 204, Body: `{"rrsets":[{"name":"www.example.test.","type":"A","ttl":3600,
			"changetype":"REPLACE","records":[{"content":"192.0.2.1","disabled":false},{"content":"192.0.2.2","disabled":false}]}]}`},
	)
	got, err := p.Create(t.Context(), resource.CreateRequest{Type: powerdns.TypeRecordSet, Properties: adaptertest.Props(t, wwwProps)})
	if err != nil {
		t.Fatalf("Create = %v", err)
	}
	want := resource.CreateResult{PhysicalID: "example.test./www.example.test./A",
		Outputs: resource.Properties{"zoneId": "example.test.", "name": "www.example.test.", "type": "A", "fqdn": "www.example.test."}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Create mismatch (-want +got):\n%s", diff)
	}
}

func TestRecordSetCreateExisting(t *testing.T) {
	t.Parallel()
	_, p := newFake(t, exchange{Method: "GET", Path: zoneURL, Query: wwwA, Status: 200,
		JSON: zoneJSON(`{"comments": [], "name": "www.example.test.", "records": [{"content": "198.51.100.7", "disabled": false}], "ttl": 60, "type": "A"}`)})
	_, err := p.Create(t.Context(), resource.CreateRequest{Type: powerdns.TypeRecordSet, Properties: adaptertest.Props(t, wwwProps)})
	if !errors.Is(err, resource.ErrAlreadyExists) {
		t.Fatalf("Create error = %v, want resource.ErrAlreadyExists", err)
	}
	if !strings.Contains(err.Error(), "www.example.test. A already exists in zone example.test. but not in cdkx state") {
		t.Errorf("error %q does not explain the conflict", err)
	}
}

func TestRecordSetCreateZoneMissing(t *testing.T) {
	t.Parallel()
	_, p := newFake(t,
		exchange{Method: "GET", Path: zoneURL, Query: wwwA, Status: 404, Text: "Not Found"},
		exchange{Method: "GET", Path: base, Status: 200, JSON: serverJSON},
	)
	_, err := p.Create(t.Context(), resource.CreateRequest{Type: powerdns.TypeRecordSet, Properties: adaptertest.Props(t, wwwProps)})
	if err == nil || errors.Is(err, resource.ErrNotFound) {
		t.Fatalf("Create error = %v, want a failure that is not ErrNotFound", err)
	}
	if pe := adaptertest.ProviderError(t, err); pe.Status != 404 || pe.Message != "zone example.test. does not exist" {
		t.Errorf("error = %v, want 404 zone example.test. does not exist", err)
	}
}

func TestRecordSetCreateUnprocessable(t *testing.T) {
	t.Parallel()
	const msg = "Record www.example.test./A 'not-an-ip': Parsing record content (try 'pdnsutil check-zone'): while parsing IP address, expected digits at position 0 in 'not-an-ip'"
	f, p := newFake(t,
		exchange{Method: "GET", Path: zoneURL, Query: wwwA, Status: 200, JSON: zoneJSON("")},
		exchange{Method: "PATCH", Path: zoneURL, Status: 422, JSON: `{"error": "` + msg + `"}`,
			Body: `{"rrsets":[{"name":"www.example.test.","type":"A","ttl":60,"changetype":"REPLACE","records":[{"content":"not-an-ip","disabled":false}]}]}`},
	)
	_, err := p.Create(t.Context(), resource.CreateRequest{Type: powerdns.TypeRecordSet,
		Properties: adaptertest.Props(t, `{"zoneId":"example.test.","name":"www.example.test.","type":"A","ttl":60,"records":["not-an-ip"]}`)})
	pe := adaptertest.ProviderError(t, err)
	if pe.Status != 422 || pe.Message != msg || pe.Kind != nil {
		t.Errorf("ProviderError = %+v, want 422 with the PowerDNS message", pe)
	}
	if want := "powerdns: PATCH " + f.url(zoneURL) + ": 422: " + msg; err.Error() != want {
		t.Errorf("error =\n%s\nwant\n%s", err, want)
	}
}

func TestRecordSetRead(t *testing.T) {
	t.Parallel()
	// An old server ignores the rrset filter and sends every rrset; the adapter picks the right one.
	live := zoneJSON(`{"comments": [], "name": "www.example.test.", "records": [{"content": "192.0.2.1", "disabled": false}], "ttl": 60, "type": "AAAA"},
		{"comments": [], "name": "www.example.test.", "records": [{"content": "192.0.2.2", "disabled": false}, {"content": "192.0.2.1", "disabled": false}], "ttl": 300, "type": "A"}`)
	_, p := newFake(t, exchange{Method: "GET", Path: zoneURL, Query: wwwA, Status: 200, JSON: live})
	got, err := p.Read(t.Context(), resource.ReadRequest{Type: powerdns.TypeRecordSet, PhysicalID: "example.test./www.example.test./A",
		Properties: adaptertest.Props(t, wwwProps)})
	if err != nil {
		t.Fatalf("Read = %v", err)
	}
	want := resource.ReadResult{
		// Same records in another order read back in the template's order.
		Properties: adaptertest.Props(t, `{"zoneId":"example.test.","name":"www.example.test.","type":"A","ttl":300,"records":["192.0.2.1","192.0.2.2"]}`),
		Outputs:    resource.Properties{"zoneId": "example.test.", "name": "www.example.test.", "type": "A", "fqdn": "www.example.test."},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Read mismatch (-want +got):\n%s", diff)
	}
}

func TestRecordSetReadNotFound(t *testing.T) {
	t.Parallel()
	_, p := newFake(t,
		exchange{Method: "GET", Path: zoneURL, Query: wwwA, Status: 200, JSON: zoneJSON("")},
		exchange{Method: "GET", Path: zoneURL, Query: wwwA, Status: 404, Text: "Not Found"},
		exchange{Method: "GET", Path: base, Status: 200, JSON: serverJSON},
	)
	for _, what := range []string{"rrset gone", "zone gone"} {
		_, err := p.Read(t.Context(), resource.ReadRequest{Type: powerdns.TypeRecordSet, PhysicalID: "example.test./www.example.test./A"})
		if !errors.Is(err, resource.ErrNotFound) {
			t.Errorf("Read (%s) error = %v, want resource.ErrNotFound", what, err)
		}
	}
}

func TestRecordSetUpdate(t *testing.T) {
	t.Parallel()
	_, p := newFake(t, exchange{Method: "PATCH", Path: zoneURL, Status: 204, Body: `{"rrsets":[{"name":"www.example.test.","type":"A","ttl":120,
		"changetype":"REPLACE","records":[{"content":"192.0.2.9","disabled":false}]}]}`})
	got, err := p.Update(t.Context(), resource.UpdateRequest{Type: powerdns.TypeRecordSet, PhysicalID: "example.test./www.example.test./A",
		Old:     adaptertest.Props(t, wwwProps),
		New:     adaptertest.Props(t, `{"zoneId":"example.test.","name":"www.example.test.","type":"A","ttl":120,"records":["192.0.2.9"]}`),
		Changed: []string{"records", "ttl"}})
	if err != nil {
		t.Fatalf("Update = %v", err)
	}
	want := resource.UpdateResult{Outputs: resource.Properties{"zoneId": "example.test.", "name": "www.example.test.", "type": "A", "fqdn": "www.example.test."}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Update mismatch (-want +got):\n%s", diff)
	}
}

func TestRecordSetDelete(t *testing.T) {
	t.Parallel()
	const body = `{"rrsets":[{"name":"www.example.test.","type":"A","changetype":"DELETE","records":[]}]}`
	_, p := newFake(t,
		exchange{Method: "PATCH", Path: zoneURL, Body: body, Status: 204},
		exchange{Method: "PATCH", Path: zoneURL, Body: body, Status: 404, Text: "Not Found"},
		exchange{Method: "GET", Path: base, Status: 200, JSON: serverJSON},
	)
	for _, what := range []string{"rrset", "zone gone"} {
		if err := p.Delete(t.Context(), resource.DeleteRequest{Type: powerdns.TypeRecordSet, PhysicalID: "example.test./www.example.test./A"}); err != nil {
			t.Errorf("Delete (%s) = %v, want success", what, err)
		}
	}
}

func TestRecordSetBadPhysicalID(t *testing.T) {
	t.Parallel()
	_, p := newFake(t)
	for _, id := range []string{"", "example.test.", "example.test./A", "/www.example.test./A", "example.test./www.example.test./"} {
		_, err := p.Read(t.Context(), resource.ReadRequest{Type: powerdns.TypeRecordSet, PhysicalID: id})
		if err == nil || !strings.Contains(err.Error(), "is not <zoneId>/<name>/<type>") {
			t.Errorf("Read(%q) error = %v, want a bad id error", id, err)
		}
	}
}

func TestUnauthorizedIsNotRetried(t *testing.T) {
	t.Parallel()
	// The fake fails the test on a second request.
	f, p := newFake(t, exchange{Method: "GET", Path: zoneURL, Query: "rrsets=false", Status: 401, Text: "Unauthorized"})
	_, err := p.Read(t.Context(), resource.ReadRequest{Type: powerdns.TypeZone, PhysicalID: "example.test."})
	pe := adaptertest.ProviderError(t, err)
	want := "powerdns: GET " + f.url(zoneURL) + "?rrsets=false: 401: Unauthorized: check PDNS_API_KEY"
	if pe.Status != 401 || err.Error() != want {
		t.Errorf("error =\n%s\nwant\n%s", err, want)
	}
	if strings.Contains(err.Error(), testKey) {
		t.Errorf("error shows the API key: %v", err)
	}
}

func TestServerErrorsAreRetried(t *testing.T) {
	t.Parallel()
	busy := exchange{Method: "DELETE", Path: zoneURL, Status: 500, Text: "database is locked"}
	f, p := newFake(t, busy, busy, busy)
	err := p.Delete(t.Context(), resource.DeleteRequest{Type: powerdns.TypeZone, PhysicalID: "example.test."})
	var re *transport.RetryError
	if !errors.As(err, &re) || re.Attempts != 3 {
		t.Fatalf("Delete error = %v, want a RetryError after 3 attempts", err)
	}
	if pe := adaptertest.ProviderError(t, err); pe.Status != 500 || pe.Message != "database is locked" {
		t.Errorf("ProviderError = %+v, want 500 database is locked", pe)
	}
	want := "powerdns: DELETE " + f.url(zoneURL) + ": giving up after 3 attempts: 500: database is locked"
	if err.Error() != want {
		t.Errorf("error =\n%s\nwant\n%s", err, want)
	}
}

func TestPowerDNSDown(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p, err := powerdns.New(powerdns.Config{URL: "http://" + addr, APIKey: testKey,
		Retry: transport.Retry{Max: 1, WaitMin: time.Millisecond, WaitMax: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Read(t.Context(), resource.ReadRequest{Type: powerdns.TypeZone, PhysicalID: "example.test."})
	want := "PowerDNS at http://" + addr + " (PDNS_API_URL) refused the connection: is it running, and is PDNS_API_URL right? " +
		"(GET " + zoneURL + "?rrsets=REDACTED, 2 attempts)"
	if err == nil || err.Error() != want || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("Read error = %v, want %q wrapping ECONNREFUSED", err, want)
	}
}

func TestUnknownType(t *testing.T) {
	t.Parallel()
	_, p := newFake(t)
	_, err := p.Create(t.Context(), resource.CreateRequest{Type: "PowerDNS::DNS::View"})
	if err == nil || !strings.Contains(err.Error(), `unknown resource type "PowerDNS::DNS::View"`) {
		t.Errorf("Create error = %v, want unknown resource type", err)
	}
}

func TestNewFromEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string
	}{
		{"nothing set", nil, "powerdns: set PDNS_API_URL (the PowerDNS web server, e.g. http://127.0.0.1:8081) and PDNS_API_KEY (the api-key in pdns.conf)"},
		{"no key", map[string]string{"PDNS_API_URL": "http://127.0.0.1:8081"}, "powerdns: set PDNS_API_KEY (the api-key in pdns.conf)"},
		{"no url", map[string]string{"PDNS_API_KEY": "k"}, "powerdns: set PDNS_API_URL (the PowerDNS web server, e.g. http://127.0.0.1:8081)"},
		{"bad url", map[string]string{"PDNS_API_URL": "127.0.0.1:8081", "PDNS_API_KEY": "k"}, `powerdns: API URL "127.0.0.1:8081" is not an http(s) URL like http://127.0.0.1:8081; check PDNS_API_URL`},
		{"bad limit", map[string]string{"PDNS_API_URL": "http://127.0.0.1:8081", "PDNS_API_KEY": "k", "CDKX_MAX_BODY_POWERDNS": "lots"},
			`powerdns: CDKX_MAX_BODY_POWERDNS="lots" is not a positive size like 1048576, 512KiB or 64MiB`},
		{"ok", map[string]string{"PDNS_API_URL": "http://127.0.0.1:8081/api/v1/", "PDNS_API_KEY": "k", "PDNS_SERVER_ID": "other"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := powerdns.NewFromEnv(func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Errorf("NewFromEnv error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || p.Info().Name != "powerdns" {
				t.Errorf("NewFromEnv = %v, %v, want a provider", p, err)
			}
		})
	}
}

// TestNewFromEnvLimits: CDKX_MAX_BODY_POWERDNS lowers the cap on the answers of this provider alone.
func TestNewFromEnvLimits(t *testing.T) {
	t.Parallel()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"id":"localhost","padding":%q}`, strings.Repeat("x", 2<<10))
	}))
	t.Cleanup(s.Close)
	for _, tc := range []struct {
		limit   string
		wantCap bool
	}{{"", false}, {"1KiB", true}} {
		env := map[string]string{"PDNS_API_URL": s.URL, "PDNS_API_KEY": testKey, "CDKX_MAX_BODY_POWERDNS": tc.limit}
		p, err := powerdns.NewFromEnv(func(k string) string { return env[k] })
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Preflight(t.Context(), resource.PreflightRequest{})
		var tooLarge *transport.BodyTooLargeError
		if got := errors.As(err, &tooLarge); got != tc.wantCap {
			t.Errorf("CDKX_MAX_BODY_POWERDNS=%q: Preflight = %v; want a body cap error: %v", tc.limit, err, tc.wantCap)
		}
	}
}

func TestConfigURLAndServerID(t *testing.T) {
	t.Parallel()
	for _, suffix := range []string{"", "/", "/api/v1", "/api/v1/"} {
		f := startFake(t, exchange{Method: "DELETE", Path: "/api/v1/servers/other/zones/example.test.", Status: 204})
		p, err := powerdns.New(powerdns.Config{URL: f.URL + suffix, APIKey: testKey, ServerID: "other"})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Delete(t.Context(), resource.DeleteRequest{Type: powerdns.TypeZone, PhysicalID: "example.test."}); err != nil {
			t.Errorf("URL %q: Delete = %v", f.URL+suffix, err)
		}
	}
}
