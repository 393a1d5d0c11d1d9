//go:build e2e

package powerdns_test

// End-to-end tests against a real PowerDNS Authoritative started by scripts/pdns-up.sh:
//
//	PDNS_API_PORT=18081 PDNS_DNS_PORT=15353 scripts/pdns-up.sh /tmp/pdns-e2e
//	PDNS_API_URL=http://127.0.0.1:18081 PDNS_API_KEY=e2e-key PDNS_DNS_PORT=15353 go test -tags e2e ./adapters/powerdns
//	scripts/pdns-down.sh /tmp/pdns-e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/adapters/powerdns"
	"github.com/cdkx-dev/cdkx/adapters/transport"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

func e2eProvider(t *testing.T) *powerdns.Provider {
	t.Helper()
	if os.Getenv("PDNS_API_URL") == "" || os.Getenv("PDNS_API_KEY") == "" {
		t.Skip("PDNS_API_URL and PDNS_API_KEY are not set; start PowerDNS with scripts/pdns-up.sh DIR and set " +
			"PDNS_API_URL=http://127.0.0.1:$PDNS_API_PORT PDNS_API_KEY=$PDNS_API_KEY (defaults 18081, e2e-key)")
	}
	p, err := powerdns.NewFromEnv(os.Getenv)
	if err != nil {
		t.Fatalf("NewFromEnv = %v", err)
	}
	return p
}

// resolver asks the PowerDNS under test directly, over UDP on 127.0.0.1:$PDNS_DNS_PORT (default 15353).
func resolver() *net.Resolver {
	port := os.Getenv("PDNS_DNS_PORT")
	if port == "" {
		port = "15353"
	}
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, net.JoinHostPort("127.0.0.1", port))
	}}
}

func uniqueZone(t *testing.T) string {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "e2e-" + hex.EncodeToString(b) + ".test."
}

func lookupHost(t *testing.T, host string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	addrs, err := resolver().LookupHost(ctx, host)
	if err != nil {
		t.Fatalf("LookupHost(%q) = %v", host, err)
	}
	slices.Sort(addrs)
	return addrs
}

func TestE2EZoneAndRecordSet(t *testing.T) {
	p := e2eProvider(t)
	ctx := t.Context()
	zone := uniqueZone(t)
	www := "www." + zone

	// Zone: create, and a second create is refused.
	zprops := resource.Properties{"name": zone, "nameservers": []any{"ns1." + zone}}
	zc, err := p.Create(ctx, resource.CreateRequest{Type: powerdns.TypeZone, LogicalID: "Zone", Properties: zprops})
	if err != nil {
		t.Fatalf("create zone: %v", err)
	}
	t.Cleanup(func() {
		_ = p.Delete(context.Background(), resource.DeleteRequest{Type: powerdns.TypeZone, PhysicalID: zc.PhysicalID})
	})
	if zc.PhysicalID != zone || zc.Outputs["zoneId"] != zone || zc.Outputs["serial"] == nil {
		t.Errorf("create zone = %+v, want id %s and a serial", zc, zone)
	}
	t.Logf("zone %s created, serial %v", zone, zc.Outputs["serial"])
	if _, err := p.Create(ctx, resource.CreateRequest{Type: powerdns.TypeZone, Properties: zprops}); !errors.Is(err, resource.ErrAlreadyExists) {
		t.Errorf("second create zone = %v, want ErrAlreadyExists", err)
	} else {
		t.Logf("second create zone: %v", err)
	}
	zr, err := p.Read(ctx, resource.ReadRequest{Type: powerdns.TypeZone, PhysicalID: zc.PhysicalID, Properties: zprops})
	if err != nil {
		t.Fatalf("read zone: %v", err)
	}
	if diff := cmp.Diff(resource.Properties{"name": zone, "kind": "Native", "nameservers": []any{"ns1." + zone}}, zr.Properties); diff != "" {
		t.Errorf("read zone properties (-want +got):\n%s", diff)
	}

	// Zone update in place.
	zNew := resource.Properties{"name": zone, "nameservers": []any{"ns1." + zone}, "kind": "Master", "account": "team-a", "soaEditApi": "INCREASE"}
	if _, err := p.Update(ctx, resource.UpdateRequest{Type: powerdns.TypeZone, PhysicalID: zc.PhysicalID, Old: zprops, New: zNew,
		Changed: []string{"account", "kind", "soaEditApi"}}); err != nil {
		t.Fatalf("update zone: %v", err)
	}
	zr, err = p.Read(ctx, resource.ReadRequest{Type: powerdns.TypeZone, PhysicalID: zc.PhysicalID, Properties: zNew})
	if err != nil {
		t.Fatalf("read zone: %v", err)
	}
	if diff := cmp.Diff(zNew, zr.Properties); diff != "" {
		t.Errorf("read updated zone (-want +got):\n%s", diff)
	}

	// Record set: create, refuse a second create, resolve over DNS.
	rprops := resource.Properties{"zoneId": zc.Outputs["zoneId"], "name": www, "type": "A", "ttl": json.Number("300"),
		"records": []any{"192.0.2.10", "192.0.2.11"}}
	rc, err := p.Create(ctx, resource.CreateRequest{Type: powerdns.TypeRecordSet, LogicalID: "Www", Properties: rprops})
	if err != nil {
		t.Fatalf("create record set: %v", err)
	}
	if want := zone + "/" + www + "/A"; rc.PhysicalID != want || rc.Outputs["fqdn"] != www {
		t.Errorf("create record set = %+v, want id %s, fqdn %s", rc, want, www)
	}
	if _, err := p.Create(ctx, resource.CreateRequest{Type: powerdns.TypeRecordSet, Properties: rprops}); !errors.Is(err, resource.ErrAlreadyExists) {
		t.Errorf("second create record set = %v, want ErrAlreadyExists", err)
	}
	if got, want := lookupHost(t, www), []string{"192.0.2.10", "192.0.2.11"}; !slices.Equal(got, want) {
		t.Errorf("resolve %s = %v, want %v", www, got, want)
	}

	// Update TTL and records; the change is visible over DNS at once.
	rNew := resource.Properties{"zoneId": zone, "name": www, "type": "A", "ttl": json.Number("120"), "records": []any{"192.0.2.20"}}
	if _, err := p.Update(ctx, resource.UpdateRequest{Type: powerdns.TypeRecordSet, PhysicalID: rc.PhysicalID, Old: rprops, New: rNew,
		Changed: []string{"records", "ttl"}}); err != nil {
		t.Fatalf("update record set: %v", err)
	}
	if got := lookupHost(t, www); !slices.Equal(got, []string{"192.0.2.20"}) {
		t.Errorf("resolve %s after update = %v, want [192.0.2.20]", www, got)
	}
	rr, err := p.Read(ctx, resource.ReadRequest{Type: powerdns.TypeRecordSet, PhysicalID: rc.PhysicalID, Properties: rNew})
	if err != nil {
		t.Fatalf("read record set: %v", err)
	}
	if diff := cmp.Diff(rNew, rr.Properties); diff != "" {
		t.Errorf("read record set (-want +got):\n%s", diff)
	}

	// A CNAME to the fqdn output, a TXT and an AAAA PowerDNS rewrites; each reads back as written.
	cname := resource.Properties{"zoneId": zone, "name": "alias." + zone, "type": "CNAME", "records": []any{rc.Outputs["fqdn"]}}
	txt := resource.Properties{"zoneId": zone, "name": zone, "type": "TXT", "records": []any{`"v=spf1 -all"`, `"hello world"`}}
	aaaa := resource.Properties{"zoneId": zone, "name": "v6." + zone, "type": "AAAA", "records": []any{"2001:DB8:0::1"}}
	for _, props := range []resource.Properties{cname, txt, aaaa} {
		c, err := p.Create(ctx, resource.CreateRequest{Type: powerdns.TypeRecordSet, Properties: props})
		if err != nil {
			t.Fatalf("create %v: %v", props["type"], err)
		}
		r, err := p.Read(ctx, resource.ReadRequest{Type: powerdns.TypeRecordSet, PhysicalID: c.PhysicalID, Properties: props})
		if err != nil {
			t.Fatalf("read %v: %v", props["type"], err)
		}
		want := resource.Clone(props).(map[string]any)
		want["ttl"] = json.Number("3600")
		if diff := cmp.Diff(resource.Properties(want), r.Properties); diff != "" {
			t.Errorf("read %v (-want +got):\n%s", props["type"], diff)
		}
	}
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if got, err := resolver().LookupCNAME(lctx, "alias."+zone); err != nil || got != www {
		t.Errorf("LookupCNAME(alias.%s) = %q, %v, want %q", zone, got, err, www)
	}
	if got, err := resolver().LookupTXT(lctx, zone); err != nil || !slices.Contains(got, "hello world") {
		t.Errorf("LookupTXT(%s) = %q, %v, want \"hello world\" among them", zone, got, err)
	}

	// Invalid content: PowerDNS answers 422 with its own message.
	bad := resource.Properties{"zoneId": zone, "name": "bad." + zone, "type": "A", "records": []any{"not-an-ip"}}
	_, err = p.Create(ctx, resource.CreateRequest{Type: powerdns.TypeRecordSet, Properties: bad})
	var pe *resource.ProviderError
	if !errors.As(err, &pe) || pe.Status != 422 || !strings.Contains(pe.Message, "'not-an-ip': Parsing record content") {
		t.Errorf("create invalid A = %v, want a 422 about parsing 'not-an-ip'", err)
	} else {
		t.Logf("invalid A: %v", err)
	}

	// Delete: gone, and deleting again is fine.
	for range 2 {
		if err := p.Delete(ctx, resource.DeleteRequest{Type: powerdns.TypeRecordSet, PhysicalID: rc.PhysicalID}); err != nil {
			t.Errorf("delete record set: %v", err)
		}
	}
	if _, err := p.Read(ctx, resource.ReadRequest{Type: powerdns.TypeRecordSet, PhysicalID: rc.PhysicalID}); !errors.Is(err, resource.ErrNotFound) {
		t.Errorf("read deleted record set = %v, want ErrNotFound", err)
	}
	if _, err := resolver().LookupHost(lctx, www); err == nil {
		t.Errorf("%s still resolves after delete", www)
	}
	for range 2 {
		if err := p.Delete(ctx, resource.DeleteRequest{Type: powerdns.TypeZone, PhysicalID: zc.PhysicalID}); err != nil {
			t.Errorf("delete zone: %v", err)
		}
	}
	if _, err := p.Read(ctx, resource.ReadRequest{Type: powerdns.TypeZone, PhysicalID: zc.PhysicalID}); !errors.Is(err, resource.ErrNotFound) {
		t.Errorf("read deleted zone = %v, want ErrNotFound", err)
	}
	if err := p.Delete(ctx, resource.DeleteRequest{Type: powerdns.TypeRecordSet, PhysicalID: rc.PhysicalID}); err != nil {
		t.Errorf("delete record set of a deleted zone = %v, want success", err)
	}
}

func TestE2EErrors(t *testing.T) {
	e2eProvider(t)
	ctx := t.Context()

	wrongKey, err := powerdns.New(powerdns.Config{URL: os.Getenv("PDNS_API_URL"), APIKey: "wrong-key"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = wrongKey.Read(ctx, resource.ReadRequest{Type: powerdns.TypeZone, PhysicalID: "example.test."})
	var pe *resource.ProviderError
	if !errors.As(err, &pe) || pe.Status != 401 || !strings.HasSuffix(err.Error(), ": 401: Unauthorized: check PDNS_API_KEY") {
		t.Errorf("read with a wrong key = %v, want 401 Unauthorized: check PDNS_API_KEY", err)
	}

	wrongServer, err := powerdns.New(powerdns.Config{URL: os.Getenv("PDNS_API_URL"), APIKey: os.Getenv("PDNS_API_KEY"), ServerID: "nope"})
	if err != nil {
		t.Fatal(err)
	}
	err = wrongServer.Delete(ctx, resource.DeleteRequest{Type: powerdns.TypeZone, PhysicalID: "example.test."})
	if err == nil || errors.Is(err, resource.ErrNotFound) || !strings.Contains(err.Error(), "PDNS_SERVER_ID") {
		t.Errorf("delete on a wrong server id = %v, want an error naming PDNS_SERVER_ID", err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close()
	p, err := powerdns.New(powerdns.Config{URL: down, APIKey: "k", Retry: transport.Retry{Max: 2, WaitMin: 10 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	err = p.Delete(ctx, resource.DeleteRequest{Type: powerdns.TypeZone, PhysicalID: "example.test."})
	var re *transport.RetryError
	if !errors.As(err, &re) || re.Attempts != 3 || !strings.Contains(err.Error(), down) {
		t.Errorf("delete on a server that is down = %v, want a RetryError after 3 attempts naming %s", err, down)
	} else {
		t.Logf("PowerDNS down: %v", err)
	}
}
