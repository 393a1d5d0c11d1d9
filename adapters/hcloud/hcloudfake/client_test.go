package hcloudfake

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/binary"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hetznercloud/hcloud-go/v2/hcloud"
)

const testToken = "test-token"

// newClient returns an hcloud-go client for a new fake whose traffic is checked against the spec.
func newClient(t *testing.T, opts Options) (*Fake, *hcloud.Client) {
	t.Helper()
	if opts.Token == "" {
		opts.Token = testToken
	}
	f, url, hc := newSpecServer(t, opts)
	c := hcloud.NewClient(hcloud.WithToken(opts.Token), hcloud.WithEndpoint(url+"/v1"), hcloud.WithHTTPClient(hc),
		hcloud.WithPollOpts(hcloud.PollOpts{BackoffFunc: hcloud.ConstantBackoff(time.Millisecond)}),
		hcloud.WithRetryOpts(hcloud.RetryOpts{BackoffFunc: hcloud.ConstantBackoff(time.Millisecond), MaxRetries: 0}))
	return f, c
}

func sshPublicKey(t *testing.T) string {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var blob []byte
	for _, part := range [][]byte{[]byte("ssh-ed25519"), pub} {
		blob = binary.BigEndian.AppendUint32(blob, uint32(len(part)))
		blob = append(blob, part...)
	}
	return "ssh-ed25519 " + base64.StdEncoding.EncodeToString(blob) + " test@example"
}

func selfSigned(t *testing.T) (certPEM, keyPEM string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "example.com"}, DNSNames: []string{"example.com"},
		NotBefore: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), NotAfter: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}))
}

func cidr(t *testing.T, s string) *net.IPNet {
	t.Helper()
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func must[T any](t *testing.T) func(v T, _ *hcloud.Response, err error) T {
	return func(v T, _ *hcloud.Response, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// sameAsGet checks that every object of a list equals what GetByID returns for it.
func sameAsGet[T any](t *testing.T, what string, all []*T, get func(*T) (*T, error)) {
	t.Helper()
	for _, o := range all {
		got, err := get(o)
		if err != nil {
			t.Fatalf("%s GetByID: %v", what, err)
		}
		if diff := cmp.Diff(o, got); diff != "" {
			t.Errorf("%s: All() and GetByID differ (-all +get):\n%s", what, diff)
		}
	}
}

// TestOfficialClientReadsEverythingBack builds a small project with hcloud-go, reads every object back,
// then deletes everything.
func TestOfficialClientReadsEverythingBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f, c := newClient(t, Options{ActionPolls: 2})
	wait := func(as ...*hcloud.Action) {
		t.Helper()
		if err := c.Action.WaitFor(ctx, as...); err != nil {
			t.Fatalf("WaitFor: %v", err)
		}
	}
	fsn1 := &hcloud.Location{Name: "fsn1"}

	nw := must[*hcloud.Network](t)(c.Network.Create(ctx, hcloud.NetworkCreateOpts{Name: "net", IPRange: cidr(t, "10.0.0.0/16"), Labels: map[string]string{"env": "test"}}))
	wait(must[*hcloud.Action](t)(c.Network.AddSubnet(ctx, nw, hcloud.NetworkAddSubnetOpts{Subnet: hcloud.NetworkSubnet{Type: hcloud.NetworkSubnetTypeCloud, IPRange: cidr(t, "10.0.1.0/24"), NetworkZone: hcloud.NetworkZoneEUCentral}})))
	wait(must[*hcloud.Action](t)(c.Network.AddSubnet(ctx, nw, hcloud.NetworkAddSubnetOpts{Subnet: hcloud.NetworkSubnet{Type: hcloud.NetworkSubnetTypeCloud, NetworkZone: hcloud.NetworkZoneUSEast}})))
	wait(must[*hcloud.Action](t)(c.Network.AddRoute(ctx, nw, hcloud.NetworkAddRouteOpts{Route: hcloud.NetworkRoute{Destination: cidr(t, "192.168.0.0/24"), Gateway: net.ParseIP("10.0.1.10")}})))

	key := must[*hcloud.SSHKey](t)(c.SSHKey.Create(ctx, hcloud.SSHKeyCreateOpts{Name: "key", PublicKey: sshPublicKey(t)}))
	pg := must[hcloud.PlacementGroupCreateResult](t)(c.PlacementGroup.Create(ctx, hcloud.PlacementGroupCreateOpts{Name: "pg", Type: hcloud.PlacementGroupTypeSpread})).PlacementGroup
	pip := must[*hcloud.PrimaryIPCreateResult](t)(c.PrimaryIP.Create(ctx, hcloud.PrimaryIPCreateOpts{Name: "pip", Type: hcloud.PrimaryIPTypeIPv4, AssigneeType: "server", Location: "fsn1"}))
	wait(pip.Action)
	fwRes := must[hcloud.FirewallCreateResult](t)(c.Firewall.Create(ctx, hcloud.FirewallCreateOpts{Name: "fw"}))
	fw := fwRes.Firewall
	wait(must[[]*hcloud.Action](t)(c.Firewall.SetRules(ctx, fw, hcloud.FirewallSetRulesOpts{Rules: []hcloud.FirewallRule{
		{Direction: hcloud.FirewallRuleDirectionIn, Protocol: hcloud.FirewallRuleProtocolTCP, Port: hcloud.Ptr("22"), SourceIPs: []net.IPNet{*cidr(t, "0.0.0.0/0")}},
	}}))...)

	s1 := must[hcloud.ServerCreateResult](t)(c.Server.Create(ctx, hcloud.ServerCreateOpts{
		Name: "web1", ServerType: &hcloud.ServerType{Name: "cx22"}, Image: &hcloud.Image{Name: "ubuntu-24.04"}, Location: fsn1,
		SSHKeys: []*hcloud.SSHKey{key}, Networks: []*hcloud.Network{nw}, PlacementGroup: pg, Labels: map[string]string{"role": "web"},
		Firewalls: []*hcloud.ServerCreateFirewall{{Firewall: *fw}},
		PublicNet: &hcloud.ServerCreatePublicNet{EnableIPv4: true, EnableIPv6: true, IPv4: pip.PrimaryIP},
	}))
	if s1.Server.Status != hcloud.ServerStatusInitializing || s1.RootPassword != "" {
		t.Errorf("create: status %q, root password %q; want initializing and none (SSH key given)", s1.Server.Status, s1.RootPassword)
	}
	wait(append([]*hcloud.Action{s1.Action}, s1.NextActions...)...)
	s2 := must[hcloud.ServerCreateResult](t)(c.Server.Create(ctx, hcloud.ServerCreateOpts{
		Name: "web2", ServerType: &hcloud.ServerType{Name: "cax11"}, Image: &hcloud.Image{Name: "debian-12"}, Location: &hcloud.Location{Name: "nbg1"},
		StartAfterCreate: hcloud.Ptr(false), Labels: map[string]string{"role": "web"},
	}))
	wait(s2.Action)
	wait(must[*hcloud.Action](t)(c.Server.AttachToNetwork(ctx, s2.Server, hcloud.ServerAttachToNetworkOpts{Network: nw})))

	vol := must[hcloud.VolumeCreateResult](t)(c.Volume.Create(ctx, hcloud.VolumeCreateOpts{Name: "data", Size: 10, Location: fsn1, Format: hcloud.Ptr("ext4")}))
	wait(vol.Action)
	wait(must[*hcloud.Action](t)(c.Volume.Attach(ctx, vol.Volume, s1.Server)))
	fip := must[hcloud.FloatingIPCreateResult](t)(c.FloatingIP.Create(ctx, hcloud.FloatingIPCreateOpts{Type: hcloud.FloatingIPTypeIPv4, HomeLocation: fsn1, Name: hcloud.Ptr("fip")}))
	wait(fip.Action)
	wait(must[*hcloud.Action](t)(c.FloatingIP.Assign(ctx, fip.FloatingIP, s1.Server)))
	wait(must[[]*hcloud.Action](t)(c.Firewall.ApplyResources(ctx, fw, []hcloud.FirewallResource{
		{Type: hcloud.FirewallResourceTypeLabelSelector, LabelSelector: &hcloud.FirewallResourceLabelSelector{Selector: "role=web"}},
	}))...)
	certPEM, keyPEM := selfSigned(t)
	cert := must[*hcloud.Certificate](t)(c.Certificate.Create(ctx, hcloud.CertificateCreateOpts{Name: "cert", Type: hcloud.CertificateTypeUploaded, Certificate: certPEM, PrivateKey: keyPEM}))

	lbRes := must[hcloud.LoadBalancerCreateResult](t)(c.LoadBalancer.Create(ctx, hcloud.LoadBalancerCreateOpts{Name: "lb", LoadBalancerType: &hcloud.LoadBalancerType{Name: "lb11"}, Location: fsn1}))
	wait(lbRes.Action)
	lb := lbRes.LoadBalancer
	wait(must[*hcloud.Action](t)(c.LoadBalancer.AttachToNetwork(ctx, lb, hcloud.LoadBalancerAttachToNetworkOpts{Network: nw})))
	hc := &hcloud.LoadBalancerAddServiceOptsHealthCheck{Protocol: hcloud.LoadBalancerServiceProtocolTCP, Port: hcloud.Ptr(8080),
		Interval: hcloud.Ptr(15 * time.Second), Timeout: hcloud.Ptr(10 * time.Second), Retries: hcloud.Ptr(3)}
	wait(must[*hcloud.Action](t)(c.LoadBalancer.AddService(ctx, lb, hcloud.LoadBalancerAddServiceOpts{Protocol: hcloud.LoadBalancerServiceProtocolTCP,
		ListenPort: hcloud.Ptr(80), DestinationPort: hcloud.Ptr(8080), Proxyprotocol: hcloud.Ptr(false), HealthCheck: hc})))
	wait(must[*hcloud.Action](t)(c.LoadBalancer.AddService(ctx, lb, hcloud.LoadBalancerAddServiceOpts{Protocol: hcloud.LoadBalancerServiceProtocolHTTPS,
		ListenPort: hcloud.Ptr(443), DestinationPort: hcloud.Ptr(8080), Proxyprotocol: hcloud.Ptr(false), HealthCheck: hc,
		HTTP: &hcloud.LoadBalancerAddServiceOptsHTTP{Certificates: []*hcloud.Certificate{cert}}})))
	wait(must[*hcloud.Action](t)(c.LoadBalancer.AddServerTarget(ctx, lb, hcloud.LoadBalancerAddServerTargetOpts{Server: s1.Server, UsePrivateIP: hcloud.Ptr(true)})))

	// Read everything back.
	gotNet := must[*hcloud.Network](t)(c.Network.GetByID(ctx, nw.ID))
	if len(gotNet.Subnets) != 2 || gotNet.Subnets[1].IPRange.String() != "10.0.0.0/24" || gotNet.Subnets[0].Gateway.String() != "10.0.0.1" {
		t.Errorf("network subnets = %+v, want 10.0.1.0/24 and the first free /24 10.0.0.0/24, gateway 10.0.0.1", gotNet.Subnets)
	}
	if len(gotNet.Routes) != 1 || len(gotNet.Servers) != 2 || len(gotNet.LoadBalancers) != 1 {
		t.Errorf("network routes %d, servers %d, load balancers %d; want 1, 2, 1", len(gotNet.Routes), len(gotNet.Servers), len(gotNet.LoadBalancers))
	}
	got1 := must[*hcloud.Server](t)(c.Server.GetByID(ctx, s1.Server.ID))
	want1 := struct {
		Status            hcloud.ServerStatus
		IPv4, Volume, FIP int64
		PG                int64
		Firewalls, Nets   int
		LBs               int
		PrivateIP         string
	}{hcloud.ServerStatusRunning, pip.PrimaryIP.ID, vol.Volume.ID, fip.FloatingIP.ID, pg.ID, 1, 1, 1, "10.0.1.2"}
	var gotVol, gotFIP int64
	if len(got1.Volumes) == 1 {
		gotVol = got1.Volumes[0].ID
	}
	if len(got1.PublicNet.FloatingIPs) == 1 {
		gotFIP = got1.PublicNet.FloatingIPs[0].ID
	}
	var pgID int64
	if got1.PlacementGroup != nil {
		pgID = got1.PlacementGroup.ID
	}
	privIP := ""
	if len(got1.PrivateNet) == 1 {
		privIP = got1.PrivateNet[0].IP.String()
	}
	have1 := want1
	have1.Status, have1.IPv4, have1.Volume, have1.FIP, have1.PG = got1.Status, got1.PublicNet.IPv4.ID, gotVol, gotFIP, pgID
	have1.Firewalls, have1.Nets, have1.LBs, have1.PrivateIP = len(got1.PublicNet.Firewalls), len(got1.PrivateNet), len(got1.LoadBalancers), privIP
	if diff := cmp.Diff(want1, have1); diff != "" {
		t.Errorf("server web1 (-want +got):\n%s", diff)
	}
	got2 := must[*hcloud.Server](t)(c.Server.GetByID(ctx, s2.Server.ID))
	if got2.Status != hcloud.ServerStatusOff || got2.PublicNet.IPv4.IsUnspecified() || got2.ServerType.Architecture != hcloud.ArchitectureARM {
		t.Errorf("server web2: status %q, ipv4 %v, arch %q; want off, an auto-created IPv4, arm", got2.Status, got2.PublicNet.IPv4.IP, got2.ServerType.Architecture)
	}
	gotLB := must[*hcloud.LoadBalancer](t)(c.LoadBalancer.GetByID(ctx, lb.ID))
	if len(gotLB.Services) != 2 || len(gotLB.Targets) != 1 || len(gotLB.PrivateNet) != 1 || !gotLB.PublicNet.Enabled || gotLB.LoadBalancerType.Name != "lb11" {
		t.Errorf("load balancer = %+v", gotLB)
	}
	gotFW := must[*hcloud.Firewall](t)(c.Firewall.GetByID(ctx, fw.ID))
	if len(gotFW.Rules) != 1 || len(gotFW.AppliedTo) != 2 || len(gotFW.AppliedTo[1].LabelSelector.Selector) == 0 {
		t.Errorf("firewall = %+v", gotFW)
	}
	gotCert := must[*hcloud.Certificate](t)(c.Certificate.GetByID(ctx, cert.ID))
	if diff := cmp.Diff([]string{"example.com"}, gotCert.DomainNames); diff != "" || len(gotCert.UsedBy) != 1 {
		t.Errorf("certificate domains (-want +got):\n%s used_by %v", diff, gotCert.UsedBy)
	}
	gotPG := must[*hcloud.PlacementGroup](t)(c.PlacementGroup.GetByID(ctx, pg.ID))
	if diff := cmp.Diff([]int64{s1.Server.ID}, gotPG.Servers); diff != "" {
		t.Errorf("placement group servers (-want +got):\n%s", diff)
	}

	all := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	nets, err := c.Network.All(ctx)
	all(err)
	sameAsGet(t, "network", nets, func(o *hcloud.Network) (*hcloud.Network, error) {
		v, _, err := c.Network.GetByID(ctx, o.ID)
		return v, err
	})
	servers, err := c.Server.All(ctx)
	all(err)
	sameAsGet(t, "server", servers, func(o *hcloud.Server) (*hcloud.Server, error) {
		v, _, err := c.Server.GetByID(ctx, o.ID)
		return v, err
	})
	pips, err := c.PrimaryIP.All(ctx)
	all(err)
	if len(pips) != 3 { // pip, web1's IPv6, web2's IPv4 and IPv6 minus none: web1 has pip + auto IPv6, web2 auto IPv4 + IPv6
		if len(pips) != 4 {
			t.Errorf("primary IPs = %d, want 4", len(pips))
		}
	}
	sameAsGet(t, "primary IP", pips, func(o *hcloud.PrimaryIP) (*hcloud.PrimaryIP, error) {
		v, _, err := c.PrimaryIP.GetByID(ctx, o.ID)
		return v, err
	})
	fips, err := c.FloatingIP.All(ctx)
	all(err)
	sameAsGet(t, "floating IP", fips, func(o *hcloud.FloatingIP) (*hcloud.FloatingIP, error) {
		v, _, err := c.FloatingIP.GetByID(ctx, o.ID)
		return v, err
	})
	keys, err := c.SSHKey.All(ctx)
	all(err)
	sameAsGet(t, "ssh key", keys, func(o *hcloud.SSHKey) (*hcloud.SSHKey, error) {
		v, _, err := c.SSHKey.GetByID(ctx, o.ID)
		return v, err
	})
	pgs, err := c.PlacementGroup.All(ctx)
	all(err)
	sameAsGet(t, "placement group", pgs, func(o *hcloud.PlacementGroup) (*hcloud.PlacementGroup, error) {
		v, _, err := c.PlacementGroup.GetByID(ctx, o.ID)
		return v, err
	})
	certs, err := c.Certificate.All(ctx)
	all(err)
	sameAsGet(t, "certificate", certs, func(o *hcloud.Certificate) (*hcloud.Certificate, error) {
		v, _, err := c.Certificate.GetByID(ctx, o.ID)
		return v, err
	})
	vols, err := c.Volume.All(ctx)
	all(err)
	sameAsGet(t, "volume", vols, func(o *hcloud.Volume) (*hcloud.Volume, error) {
		v, _, err := c.Volume.GetByID(ctx, o.ID)
		return v, err
	})
	fws, err := c.Firewall.All(ctx)
	all(err)
	sameAsGet(t, "firewall", fws, func(o *hcloud.Firewall) (*hcloud.Firewall, error) {
		v, _, err := c.Firewall.GetByID(ctx, o.ID)
		return v, err
	})
	lbs, err := c.LoadBalancer.All(ctx)
	all(err)
	sameAsGet(t, "load balancer", lbs, func(o *hcloud.LoadBalancer) (*hcloud.LoadBalancer, error) {
		v, _, err := c.LoadBalancer.GetByID(ctx, o.ID)
		return v, err
	})
	for name, n := range map[string]func() (int, error){
		"locations":           func() (int, error) { v, err := c.Location.All(ctx); return len(v), err },
		"server_types":        func() (int, error) { v, err := c.ServerType.All(ctx); return len(v), err },
		"images":              func() (int, error) { v, err := c.Image.All(ctx); return len(v), err },
		"load_balancer_types": func() (int, error) { v, err := c.LoadBalancerType.All(ctx); return len(v), err },
	} {
		if got, err := n(); err != nil || got == 0 {
			t.Errorf("%s: %d, %v; want some", name, got, err)
		}
	}
	if _, _, err := c.Image.GetByID(ctx, 161547269); err != nil {
		t.Errorf("Image.GetByID: %v", err)
	}

	// Delete everything.
	// The spec answers DELETE /load_balancers/{id} with 204 and no body; hcloud-go v2.52's
	// LoadBalancer.Delete decodes the action Hetzner sends since 2026-10-05, so the request goes through
	// hcloud-go's client without a typed answer.
	lbReq, err := c.NewRequest(ctx, http.MethodDelete, fmt.Sprintf("/load_balancers/%d", lb.ID), nil)
	all(err)
	resp, err := c.Do(lbReq, nil)
	all(err)
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("DELETE /load_balancers/%d = %d, want %d", lb.ID, resp.StatusCode, http.StatusNoContent)
	}
	for _, s := range []*hcloud.Server{s1.Server, s2.Server} {
		res := must[*hcloud.ServerDeleteResult](t)(c.Server.DeleteWithResult(ctx, s))
		wait(res.Action)
	}
	_, err = c.FloatingIP.Delete(ctx, fip.FloatingIP)
	all(err)
	_, err = c.Volume.Delete(ctx, vol.Volume)
	all(err)
	_, err = c.PrimaryIP.Delete(ctx, pip.PrimaryIP)
	all(err)
	wait(must[[]*hcloud.Action](t)(c.Firewall.RemoveResources(ctx, fw, []hcloud.FirewallResource{
		{Type: hcloud.FirewallResourceTypeLabelSelector, LabelSelector: &hcloud.FirewallResourceLabelSelector{Selector: "role=web"}},
	}))...)
	_, err = c.Firewall.Delete(ctx, fw)
	all(err)
	_, err = c.Certificate.Delete(ctx, cert)
	all(err)
	_, err = c.SSHKey.Delete(ctx, key)
	all(err)
	_, err = c.PlacementGroup.Delete(ctx, pg)
	all(err)
	_, err = c.Network.Delete(ctx, nw)
	all(err)
	counts := map[string]func() (int, error){
		"networks":         func() (int, error) { v, err := c.Network.All(ctx); return len(v), err },
		"servers":          func() (int, error) { v, err := c.Server.All(ctx); return len(v), err },
		"primary_ips":      func() (int, error) { v, err := c.PrimaryIP.All(ctx); return len(v), err },
		"floating_ips":     func() (int, error) { v, err := c.FloatingIP.All(ctx); return len(v), err },
		"ssh_keys":         func() (int, error) { v, err := c.SSHKey.All(ctx); return len(v), err },
		"placement_groups": func() (int, error) { v, err := c.PlacementGroup.All(ctx); return len(v), err },
		"certificates":     func() (int, error) { v, err := c.Certificate.All(ctx); return len(v), err },
		"volumes":          func() (int, error) { v, err := c.Volume.All(ctx); return len(v), err },
		"firewalls":        func() (int, error) { v, err := c.Firewall.All(ctx); return len(v), err },
		"load_balancers":   func() (int, error) { v, err := c.LoadBalancer.All(ctx); return len(v), err },
	}
	for name, n := range counts {
		if got, err := n(); err != nil || got != 0 {
			t.Errorf("%s after deleting everything: %d, %v; want 0", name, got, err)
		}
	}
	if len(f.Requests()) == 0 {
		t.Error("Requests() is empty")
	}
}
