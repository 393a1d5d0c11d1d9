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

// firewallJSON is a firewall answer with the given rules and applied_to entries.
func firewallJSON(rules, appliedTo string) string {
	return `{"firewall":{"id":5,"name":"web","labels":{"env":"prod"},"created":"2026-01-01T00:00:00Z","rules":[` + rules +
		`],"applied_to":[` + appliedTo + `]}}`
}

// startedActions is the answer of a firewall action endpoint: one action already done, one running.
func startedActions(id int, command string) string {
	return `{"actions":[` + actionObj(id-1, command, "success") + `,` + actionObj(id, command, "running") + `]}`
}

func TestFirewallRequests(t *testing.T) {
	t.Parallel()
	props := adaptertest.Props(t, `{"name":"web","labels":{"env":"prod"}}`)
	wantOut := adaptertest.Props(t, `{"firewallId":5}`)
	t.Run("create", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, steps(
			scripted.Exchange{Method: "POST", Path: "/v1/firewalls", Body: `{"name":"web","labels":{"env":"prod"}}`, Status: 201,
				JSON: `{"firewall":` + strings.TrimSuffix(strings.TrimPrefix(firewallJSON("", ""), `{"firewall":`), "}") + `,"actions":[` + actionObj(31, "apply_firewall", "running") + `]}`},
			pollsOf(31, "apply_firewall", "success"),
		)...)
		got, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeFirewall, Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(resource.CreateResult{PhysicalID: "5", Outputs: wantOut}, got); diff != "" {
			t.Errorf("create (-want +got):\n%s", diff)
		}
	})
	t.Run("create exists", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "POST", Path: "/v1/firewalls", Body: `{"name":"web","labels":{"env":"prod"}}`, Status: 409,
			JSON: `{"error":{"code":"uniqueness_error","message":"name is already used","details":{}}}`})
		_, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeFirewall, Properties: props})
		if !errors.Is(err, resource.ErrAlreadyExists) || !strings.Contains(err.Error(), "import it") {
			t.Errorf("create = %v, want ErrAlreadyExists with advice", err)
		}
	})
	t.Run("read", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/firewalls/5", Status: 200, JSON: firewallJSON("", "")})
		got, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeFirewall, PhysicalID: "5", Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(resource.ReadResult{Properties: props, Outputs: wantOut}, got); diff != "" {
			t.Errorf("read (-want +got):\n%s", diff)
		}
	})
	t.Run("read gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/firewalls/5", Status: 404, JSON: errNotFoundBody})
		if _, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeFirewall, PhysicalID: "5"}); !errors.Is(err, resource.ErrNotFound) {
			t.Errorf("read = %v, want ErrNotFound", err)
		}
	})
	t.Run("update", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "PUT", Path: "/v1/firewalls/5", Body: `{"name":"web2","labels":{}}`, Status: 200, JSON: firewallJSON("", "")})
		got, err := p.Update(ctx(t), resource.UpdateRequest{Type: hcloud.TypeFirewall, PhysicalID: "5", Old: props,
			New: adaptertest.Props(t, `{"name":"web2"}`), Changed: []string{"labels", "name"}})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(wantOut, got.Outputs); diff != "" {
			t.Errorf("update outputs (-want +got):\n%s", diff)
		}
	})
	t.Run("delete", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "DELETE", Path: "/v1/firewalls/5", Status: 204})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeFirewall, PhysicalID: "5"}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("delete gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "DELETE", Path: "/v1/firewalls/5", Status: 404, JSON: errNotFoundBody})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeFirewall, PhysicalID: "5"}); err != nil {
			t.Errorf("delete = %v, want nil", err)
		}
	})
	t.Run("delete in use", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "DELETE", Path: "/v1/firewalls/5", Status: 422,
			JSON: `{"error":{"code":"resource_in_use","message":"firewall is still in use","details":{}}}`})
		err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeFirewall, PhysicalID: "5"})
		if err == nil || !strings.Contains(err.Error(), "FirewallAttachments") {
			t.Errorf("delete = %v, want advice on its attachments", err)
		}
	})
	t.Run("locate", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/firewalls", Query: "name=web", Status: 200,
			JSON: `{"firewalls":[{"id":5,"name":"web"}],"meta":{"pagination":{"page":1,"per_page":25,"previous_page":null,"next_page":null,"last_page":1,"total_entries":1}}}`})
		id, err := p.Locate(ctx(t), resource.CreateRequest{Type: hcloud.TypeFirewall, Properties: props})
		if err != nil || id != "5" {
			t.Errorf("locate = %q, %v; want 5", id, err)
		}
	})
}

func TestFirewallCheck(t *testing.T) {
	t.Parallel()
	validateCases(t, hcloud.TypeFirewall, []struct{ props, want string }{
		{`{"name":"web"}`, ""},
		{`{"name":"web","rules":[],"applyTo":[]}`, "applyTo: a firewall's targets are no longer a property of Hetzner::Security::Firewall: declare one Hetzner::Security::FirewallAttachment per server or label selector (the TypeScript cdkx 0.2.0 and later write that shape)\n" +
			"rules: a firewall's rules are no longer a property of Hetzner::Security::Firewall: declare a Hetzner::Security::FirewallRules with firewallId and rules (the TypeScript cdkx 0.2.0 and later write that shape)"},
		{`{}`, "name: required property \"name\" is missing"},
	})
}
