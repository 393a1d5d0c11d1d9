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

const (
	appliedServer   = `{"type":"server","server":{"id":42}}`
	appliedSelector = `{"type":"label_selector","label_selector":{"selector":"example.com/role=web"},"applied_to_resources":[{"type":"server","server":{"id":42}}]}`
)

func TestFirewallAttachmentRequests(t *testing.T) {
	t.Parallel()
	byServer := adaptertest.Props(t, `{"firewallId":5,"serverId":42}`)
	bySelector := adaptertest.Props(t, `{"firewallId":5,"labelSelector":"example.com/role=web"}`)
	const serverEntry = `{"type":"server","server":{"id":42}}`
	const selectorEntry = `{"type":"label_selector","label_selector":{"selector":"example.com/role=web"}}`
	t.Run("create server", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, steps(
			scripted.Exchange{Method: "POST", Path: "/v1/firewalls/5/actions/apply_to_resources", Body: `{"apply_to":[` + serverEntry + `]}`,
				Status: 201, JSON: startedActions(51, "apply_firewall")},
			pollsOf(51, "apply_firewall", "success"),
		)...)
		got, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeFirewallAttachment, Properties: byServer})
		if err != nil {
			t.Fatal(err)
		}
		want := resource.CreateResult{PhysicalID: "5/server/42", Outputs: adaptertest.Props(t, `{"physicalId":"5/server/42","firewallId":5,"serverId":42}`)}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("create (-want +got):\n%s", diff)
		}
	})
	t.Run("create selector", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, steps(
			scripted.Exchange{Method: "POST", Path: "/v1/firewalls/5/actions/apply_to_resources", Body: `{"apply_to":[` + selectorEntry + `]}`,
				Status: 201, JSON: startedActions(51, "apply_firewall")},
			pollsOf(51, "apply_firewall", "success"),
		)...)
		got, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeFirewallAttachment, Properties: bySelector})
		if err != nil {
			t.Fatal(err)
		}
		want := resource.CreateResult{PhysicalID: "5/label_selector/example.com/role=web",
			Outputs: adaptertest.Props(t, `{"physicalId":"5/label_selector/example.com/role=web","firewallId":5,"labelSelector":"example.com/role=web"}`)}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("create (-want +got):\n%s", diff)
		}
	})
	t.Run("create already applied", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "POST", Path: "/v1/firewalls/5/actions/apply_to_resources", Body: `{"apply_to":[` + serverEntry + `]}`,
			Status: 422, JSON: `{"error":{"code":"firewall_already_applied","message":"firewall already applied","details":{}}}`})
		_, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeFirewallAttachment, Properties: byServer})
		if err == nil || !strings.Contains(err.Error(), "import the attachment") {
			t.Errorf("create = %v, want advice", err)
		}
	})
	t.Run("read server", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/firewalls/5", Status: 200, JSON: firewallJSON("", appliedSelector+","+appliedServer)})
		got, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeFirewallAttachment, PhysicalID: "5/server/42", Properties: byServer})
		if err != nil {
			t.Fatal(err)
		}
		want := resource.ReadResult{Properties: byServer, Outputs: adaptertest.Props(t, `{"physicalId":"5/server/42","firewallId":5,"serverId":42}`)}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("read (-want +got):\n%s", diff)
		}
	})
	t.Run("read selector", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/firewalls/5", Status: 200, JSON: firewallJSON("", appliedSelector)})
		got, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeFirewallAttachment, PhysicalID: "5/label_selector/example.com/role=web", Properties: bySelector})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(bySelector, got.Properties); diff != "" {
			t.Errorf("read (-want +got):\n%s", diff)
		}
	})
	t.Run("read removed", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/firewalls/5", Status: 200, JSON: firewallJSON("", appliedSelector)})
		if _, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeFirewallAttachment, PhysicalID: "5/server/42", Properties: byServer}); !errors.Is(err, resource.ErrNotFound) {
			t.Errorf("read = %v, want ErrNotFound", err)
		}
	})
	t.Run("read firewall gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/firewalls/5", Status: 404, JSON: errNotFoundBody})
		if _, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeFirewallAttachment, PhysicalID: "5/server/42", Properties: byServer}); !errors.Is(err, resource.ErrNotFound) {
			t.Errorf("read = %v, want ErrNotFound", err)
		}
	})
	t.Run("delete", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, steps(
			scripted.Exchange{Method: "POST", Path: "/v1/firewalls/5/actions/remove_from_resources", Body: `{"remove_from":[` + selectorEntry + `]}`,
				Status: 201, JSON: startedActions(52, "remove_firewall")},
			pollsOf(52, "remove_firewall", "success"),
		)...)
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeFirewallAttachment, PhysicalID: "5/label_selector/example.com/role=web", Properties: bySelector}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("delete resource gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "POST", Path: "/v1/firewalls/5/actions/remove_from_resources", Body: `{"remove_from":[` + serverEntry + `]}`,
			Status: 404, JSON: `{"error":{"code":"firewall_resource_not_found","message":"server not found","details":{}}}`})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeFirewallAttachment, PhysicalID: "5/server/42", Properties: byServer}); err != nil {
			t.Errorf("delete = %v, want nil", err)
		}
	})
	t.Run("delete not applied", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "POST", Path: "/v1/firewalls/5/actions/remove_from_resources", Body: `{"remove_from":[` + serverEntry + `]}`,
				Status: 422, JSON: `{"error":{"code":"invalid_input","message":"not applied","details":{}}}`},
			scripted.Exchange{Method: "GET", Path: "/v1/firewalls/5", Status: 200, JSON: firewallJSON("", "")})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeFirewallAttachment, PhysicalID: "5/server/42", Properties: byServer}); err != nil {
			t.Errorf("delete = %v, want nil", err)
		}
	})
	t.Run("locate", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/firewalls/5", Status: 200, JSON: firewallJSON("", appliedServer)})
		id, err := p.Locate(ctx(t), resource.CreateRequest{Type: hcloud.TypeFirewallAttachment, Properties: byServer})
		if err != nil || id != "5/server/42" {
			t.Errorf("locate = %q, %v; want 5/server/42", id, err)
		}
	})
	t.Run("locate not applied", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/firewalls/5", Status: 200, JSON: firewallJSON("", appliedServer)})
		if _, err := p.Locate(ctx(t), resource.CreateRequest{Type: hcloud.TypeFirewallAttachment, Properties: bySelector}); !errors.Is(err, resource.ErrNotFound) {
			t.Errorf("locate = %v, want ErrNotFound", err)
		}
	})
}

func TestFirewallAttachmentCheck(t *testing.T) {
	t.Parallel()
	validateCases(t, hcloud.TypeFirewallAttachment, []struct{ props, want string }{
		{`{"firewallId":5,"serverId":42}`, ""},
		{`{"firewallId":"5","serverId":"42"}`, ""},
		{`{"firewallId":{"ref":"F","attr":"firewallId"},"labelSelector":"role=web"}`, ""},
		{`{"firewallId":{"ref":"F","attr":"firewallId"},"serverId":{"ref":"S","attr":"serverId"}}`, ""},
		{`{"firewallId":5}`, "serverId: give serverId (one server) or labelSelector (the servers with matching labels)"},
		{`{"firewallId":5,"serverId":42,"labelSelector":"role=web"}`, "labelSelector: give serverId or labelSelector, not both: use one FirewallAttachment for each"},
		{`{"firewallId":5,"labelSelector":" "}`, "labelSelector: is empty; give a label selector such as role=web"},
		{`{"firewallId":5,"serverId":-1}`, "serverId: must be a positive integer ID, got \"-1\""},
	})
}
