package transport_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/cdkx-dev/cdkx/adapters/transport"
)

// zoneBody is what PowerDNS 4.7 answers to GET /zones/{zone}?rrset_name=…&rrset_type=… for a missing rrset.
const zoneBody = `{"account": "", "api_rectify": false, "catalog": "", "dnssec": false, "edited_serial": 2026112301, "id": "probe.test.", "kind": "Native", "last_check": 0, "master_tsig_key_ids": [], "masters": [], "name": "probe.test.", "notified_serial": 0, "nsec3narrow": false, "nsec3param": "", "rrsets": [], "serial": 2026112301, "slave_tsig_key_ids": [], "soa_edit": "", "soa_edit_api": "DEFAULT", "url": "/api/v1/servers/localhost/zones/probe.test."}`

// BenchmarkCall compares JSON.Call with a bare net/http client sending the same pair of requests as a
// PowerDNS record set's create (the existence GET, then the PATCH), against a server that keeps the
// connection alive and one that closes it after each response, as PowerDNS does. The difference is
// the client's own cost per pair.
func BenchmarkCall(b *testing.B) {
	type zone struct {
		RRSets []struct {
			Name string `json:"name"`
			Type string `json:"type"`
		} `json:"rrsets"`
	}
	patch := map[string]any{"rrsets": []map[string]any{{"name": "www.probe.test.", "type": "A", "ttl": 300,
		"changetype": "REPLACE", "records": []map[string]any{{"content": "192.0.2.1", "disabled": false}}}}}
	for _, server := range []struct {
		name  string
		close bool
	}{{"keep-alive", false}, {"close", true}} {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			if server.close {
				w.Header().Set("Connection", "close")
			}
			if r.Method == http.MethodPatch {
				w.WriteHeader(http.StatusNoContent)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, zoneBody)
		}))
		b.Run(server.name+"/bare", func(b *testing.B) {
			hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 10}}
			do := func(method string, body []byte) {
				req, err := http.NewRequestWithContext(b.Context(), method, s.URL, bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				req.Header.Set("X-API-Key", "k")
				resp, err := hc.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			b.ReportAllocs()
			for b.Loop() {
				do(http.MethodGet, nil)
				body, err := json.Marshal(patch)
				if err != nil {
					b.Fatal(err)
				}
				do(http.MethodPatch, body)
			}
		})
		b.Run(server.name+"/JSON", func(b *testing.B) {
			c := &transport.JSON{Client: transport.New(transport.Options{Provider: "bench"}),
				Auth: func(r *http.Request) { r.Header.Set("X-API-Key", "k") }}
			b.ReportAllocs()
			for b.Loop() {
				var z zone
				if _, err := c.Call(b.Context(), http.MethodGet, s.URL, nil, &z); err != nil {
					b.Fatal(err)
				}
				if _, err := c.Call(b.Context(), http.MethodPatch, s.URL, patch, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		s.Close()
	}
}
