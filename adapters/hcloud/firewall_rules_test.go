package hcloud_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/adapters/hcloud"
	"github.com/cdkx-dev/cdkx/adapters/internal/adaptertest"
	"github.com/cdkx-dev/cdkx/adapters/internal/scripted"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// The rules of the e2e assembly (synth-hetzner-e2e), and how Hetzner takes and shows them.
const (
	e2eRules = `[{"direction":"in","protocol":"tcp","port":"22","sourceIps":["0.0.0.0/0","::/0"],"description":"Allow SSH"},
		{"direction":"in","protocol":"icmp","sourceIps":["10.0.0.0/8"]},
		{"direction":"out","protocol":"tcp","destinationIps":["0.0.0.0/0","::/0"],"description":"Allow all outbound TCP"}]`
	e2eRulesAPI = `{"rules":[{"direction":"in","protocol":"tcp","port":"22","source_ips":["0.0.0.0/0","::/0"],"description":"Allow SSH"},
		{"direction":"in","protocol":"icmp","source_ips":["10.0.0.0/8"]},
		{"direction":"out","protocol":"tcp","port":"any","destination_ips":["0.0.0.0/0","::/0"],"description":"Allow all outbound TCP"}]}`
	e2eRulesLive = `{"direction":"in","protocol":"tcp","port":"22","source_ips":["0.0.0.0/0","::/0"],"destination_ips":[],"description":"Allow SSH"},
		{"direction":"in","protocol":"icmp","port":null,"source_ips":["10.0.0.0/8"],"destination_ips":[],"description":null},
		{"direction":"out","protocol":"tcp","port":"any","source_ips":[],"destination_ips":["0.0.0.0/0","::/0"],"description":"Allow all outbound TCP"}`
)

func TestFirewallRulesRequests(t *testing.T) {
	t.Parallel()
	props := adaptertest.Props(t, `{"firewallId":5,"rules":`+e2eRules+`}`)
	wantOut := adaptertest.Props(t, `{"firewallId":5}`)
	t.Run("create", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, steps(
			scripted.Exchange{Method: "POST", Path: "/v1/firewalls/5/actions/set_rules", Body: e2eRulesAPI, Status: 201, JSON: startedActions(41, "set_firewall_rules")},
			pollsOf(41, "set_firewall_rules", "success"),
		)...)
		got, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeFirewallRules, Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(resource.CreateResult{PhysicalID: "5", Outputs: wantOut}, got); diff != "" {
			t.Errorf("create (-want +got):\n%s", diff)
		}
	})
	t.Run("create action fails", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, steps(
			scripted.Exchange{Method: "POST", Path: "/v1/firewalls/5/actions/set_rules", Body: e2eRulesAPI, Status: 201, JSON: startedActions(41, "set_firewall_rules")},
			pollsOf(41, "set_firewall_rules", "error"),
		)...)
		_, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeFirewallRules, Properties: props})
		var ae *hcloud.ActionError
		if !errors.As(err, &ae) {
			t.Errorf("create = %v, want *ActionError", err)
		}
	})
	t.Run("read", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/firewalls/5", Status: 200, JSON: firewallJSON(e2eRulesLive, "")})
		got, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeFirewallRules, PhysicalID: "5", Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(resource.ReadResult{Properties: props, Outputs: wantOut}, got); diff != "" {
			t.Errorf("read (-want +got):\n%s", diff)
		}
	})
	t.Run("read drift", func(t *testing.T) {
		t.Parallel()
		live := `{"direction":"in","protocol":"tcp","port":"2222","source_ips":["2001:db8::/32"],"destination_ips":[],"description":null}`
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/firewalls/5", Status: 200, JSON: firewallJSON(live, "")})
		got, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeFirewallRules, PhysicalID: "5", Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		want := adaptertest.Props(t, `{"firewallId":5,"rules":[{"direction":"in","protocol":"tcp","port":"2222","sourceIps":["2001:db8::/32"]}]}`)
		if diff := cmp.Diff(want, got.Properties); diff != "" {
			t.Errorf("read properties (-want +got):\n%s", diff)
		}
	})
	t.Run("read IPv6 rewritten", func(t *testing.T) {
		t.Parallel()
		in := adaptertest.Props(t, `{"firewallId":"5","rules":[{"direction":"in","protocol":"udp","port":"53","sourceIps":["2001:0db8:0000::/48"],"description":null}]}`)
		live := `{"direction":"in","protocol":"udp","port":"53","source_ips":["2001:db8::/48"],"destination_ips":[],"description":null}`
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/firewalls/5", Status: 200, JSON: firewallJSON(live, "")})
		got, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeFirewallRules, PhysicalID: "5", Properties: in})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(in, got.Properties); diff != "" {
			t.Errorf("read properties (-want +got):\n%s", diff)
		}
	})
	t.Run("read gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/firewalls/5", Status: 404, JSON: errNotFoundBody})
		if _, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeFirewallRules, PhysicalID: "5", Properties: props}); !errors.Is(err, resource.ErrNotFound) {
			t.Errorf("read = %v, want ErrNotFound", err)
		}
	})
	t.Run("update", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, steps(
			scripted.Exchange{Method: "POST", Path: "/v1/firewalls/5/actions/set_rules",
				Body:   `{"rules":[{"direction":"in","protocol":"udp","port":"1000-2000","source_ips":["10.0.0.0/8"]}]}`,
				Status: 201, JSON: startedActions(42, "set_firewall_rules")},
			pollsOf(42, "set_firewall_rules", "success"),
		)...)
		newProps := adaptertest.Props(t, `{"firewallId":5,"rules":[{"direction":"in","protocol":"udp","port":"1000-2000","sourceIps":["10.0.0.0/8"]}]}`)
		got, err := p.Update(ctx(t), resource.UpdateRequest{Type: hcloud.TypeFirewallRules, PhysicalID: "5", Old: props, New: newProps, Changed: []string{"rules"}})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(wantOut, got.Outputs); diff != "" {
			t.Errorf("update outputs (-want +got):\n%s", diff)
		}
	})
	t.Run("single hosts", func(t *testing.T) {
		t.Parallel()
		// A bare address is the single host: sent as its /32 (/128) prefix, read back as written.
		in := adaptertest.Props(t, `{"firewallId":5,"rules":[{"direction":"in","protocol":"tcp","port":"22","sourceIps":["10.85.1.2","fd00::1","10.0.0.0/8"]}]}`)
		live := `{"direction":"in","protocol":"tcp","port":"22","source_ips":["10.85.1.2/32","fd00::1/128","10.0.0.0/8"],"destination_ips":[],"description":null}`
		p, _ := scriptedProvider(t, steps(
			scripted.Exchange{Method: "POST", Path: "/v1/firewalls/5/actions/set_rules",
				Body:   `{"rules":[{"direction":"in","protocol":"tcp","port":"22","source_ips":["10.85.1.2/32","fd00::1/128","10.0.0.0/8"]}]}`,
				Status: 201, JSON: startedActions(44, "set_firewall_rules")},
			pollsOf(44, "set_firewall_rules", "success"),
			scripted.Exchange{Method: "GET", Path: "/v1/firewalls/5", Status: 200, JSON: firewallJSON(live, "")},
		)...)
		if _, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeFirewallRules, Properties: in}); err != nil {
			t.Fatal(err)
		}
		got, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeFirewallRules, PhysicalID: "5", Properties: in})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(in, got.Properties); diff != "" {
			t.Errorf("read properties (-want +got):\n%s", diff)
		}
	})
	t.Run("create without rules", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "POST", Path: "/v1/firewalls/5/actions/set_rules", Body: `{"rules":[]}`,
			Status: 201, JSON: `{"actions":[]}`})
		if _, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeFirewallRules, Properties: adaptertest.Props(t, `{"firewallId":5}`)}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("delete", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, steps(
			scripted.Exchange{Method: "POST", Path: "/v1/firewalls/5/actions/set_rules", Body: `{"rules":[]}`, Status: 201, JSON: startedActions(43, "set_firewall_rules")},
			pollsOf(43, "set_firewall_rules", "success"),
		)...)
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeFirewallRules, PhysicalID: "5", Properties: props}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("delete firewall gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "POST", Path: "/v1/firewalls/5/actions/set_rules", Body: `{"rules":[]}`, Status: 404, JSON: errNotFoundBody})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeFirewallRules, PhysicalID: "5", Properties: props}); err != nil {
			t.Errorf("delete = %v, want nil", err)
		}
	})
	t.Run("locate", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/firewalls/5", Status: 200, JSON: firewallJSON(e2eRulesLive, "")})
		id, err := p.Locate(ctx(t), resource.CreateRequest{Type: hcloud.TypeFirewallRules, Properties: props})
		if err != nil || id != "5" {
			t.Errorf("locate = %q, %v; want 5", id, err)
		}
	})
	t.Run("locate not set", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/firewalls/5", Status: 200, JSON: firewallJSON("", "")})
		if _, err := p.Locate(ctx(t), resource.CreateRequest{Type: hcloud.TypeFirewallRules, Properties: props}); !errors.Is(err, resource.ErrNotFound) {
			t.Errorf("locate = %v, want ErrNotFound", err)
		}
	})
}

func TestFirewallRulesCheck(t *testing.T) {
	t.Parallel()
	rule := func(s string) string { return `{"firewallId":5,"rules":[` + s + `]}` }
	fifty := strings.Repeat(`{"direction":"in","protocol":"icmp","sourceIps":["0.0.0.0/0"]},`, 51)
	validateCases(t, hcloud.TypeFirewallRules, []struct{ props, want string }{
		{`{"firewallId":5,"rules":` + e2eRules + `}`, ""},
		{`{"firewallId":5}`, ""},
		{`{"firewallId":{"ref":"Fw","attr":"firewallId"},"rules":[{"ref":"X","attr":"y"}]}`, ""},
		{rule(`{"direction":"in","protocol":"tcp","port":"any","sourceIps":[{"ref":"S","attr":"ip"}]}`), ""},
		{rule(`{"direction":"in","protocol":"tcp","port":"1-65535","sourceIps":["10.0.0.1/32"],"description":null}`), ""},
		{rule(`{"direction":"in","protocol":"tcp","port":"22","sourceIps":["10.85.1.2","fd00::1"]}`), ""}, // single hosts
		{rule(strings.TrimSuffix(fifty, ",")), "rules: has 51 rules; Hetzner allows at most 50 per firewall: merge rules (a rule takes several CIDRs and a port range)"},
		{rule(`{"direction":"up","protocol":"http","sourceIps":["0.0.0.0/0"]}`),
			"rules[0].direction: must be one of in, out, got \"up\"\nrules[0].protocol: must be one of tcp, udp, icmp, esp, gre, got \"http\""},
		{rule(`{"sourceIps":["0.0.0.0/0"]}`), "rules[0].direction: required: one of in, out\nrules[0].protocol: required: one of tcp, udp, icmp, esp, gre"},
		{rule(`{"direction":"in","protocol":"tcp","port":"22"}`), "rules[0].sourceIps: required on a rule of direction in: the CIDRs it allows (0.0.0.0/0 and ::/0 for any)"},
		{rule(`{"direction":"out","protocol":"tcp","port":"22","destinationIps":[]}`), "rules[0].destinationIps: is empty: a rule of direction out needs at least one CIDR (0.0.0.0/0 and ::/0 for any)"},
		{rule(`{"direction":"in","protocol":"tcp","port":"22","sourceIps":["0.0.0.0/0"],"destinationIps":["0.0.0.0/0"]}`),
			"rules[0].destinationIps: not allowed on a rule of direction in, which takes sourceIps"},
		{rule(`{"direction":"in","protocol":"tcp","port":"22","sourceIps":["10.0.0.1/8","nope",7]}`),
			"rules[0].sourceIps[0]: \"10.0.0.1/8\" has host bits set; Hetzner wants a network (10.0.0.0/8) or a single host (10.0.0.1/32)\n" +
				"rules[0].sourceIps[1]: \"nope\" is not a CIDR such as 10.0.1.0/24, 10.0.1.1/32 or ::/0, nor a single address such as 10.0.1.1\n" +
				"rules[0].sourceIps[2]: must be a CIDR string such as 10.0.0.0/8, got 7"},
		{rule(`{"direction":"in","protocol":"icmp","port":"22","sourceIps":["0.0.0.0/0"]}`), "rules[0].port: only tcp and udp rules take a port; remove it from this icmp rule"},
		{rule(`{"direction":"in","protocol":"tcp","port":"0","sourceIps":["0.0.0.0/0"]}`), "rules[0].port: \"0\" is not a port (1-65535) or a range such as \"1024-2048\""},
		{rule(`{"direction":"in","protocol":"tcp","port":"80,443","sourceIps":["0.0.0.0/0"]}`), "rules[0].port: \"80,443\" is not a port (1-65535) or a range such as \"1024-2048\""},
		{rule(`{"direction":"in","protocol":"tcp","port":"2000-1000","sourceIps":["0.0.0.0/0"]}`), "rules[0].port: \"2000-1000\" starts above its end; write \"1000-2000\""},
		{rule(`{"direction":"in","protocol":"tcp","port":22,"sourceIps":["0.0.0.0/0"]}`), "rules[0].port: must be a string such as \"22\" or \"1024-2048\", got 22"},
		{rule(`{"direction":"in","protocol":"tcp","port":"22","sourceIps":["0.0.0.0/0"],"ports":"22"}`),
			"rules[0].ports: unknown rule property \"ports\"; a rule has description, destinationIps, direction, port, protocol, sourceIps"},
		{rule(`{"direction":"in","protocol":"gre","sourceIps":["0.0.0.0/0"],"description":"` + strings.Repeat("x", 256) + `"}`),
			"rules[0].description: is 256 characters long; Hetzner allows at most 255"},
		{`{"firewallId":5,"rules":[7]}`, "rules[0]: must be an object, got number 7"},
	})
}
