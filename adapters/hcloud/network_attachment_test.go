package hcloud_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/adapters/hcloud"
	"github.com/cdkx-dev/cdkx/adapters/internal/adaptertest"
	"github.com/cdkx-dev/cdkx/adapters/internal/scripted"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

func serverNetsJSON(nets string) string {
	return `{"server":{"id":42,"name":"web","status":"running","private_net":[` + nets + `]}}`
}

const attachedNet = `{"network":7,"ip":"10.0.1.5","alias_ips":["10.0.1.6"],"mac_address":"86:00:00:2a:7d:e0"}`

func TestNetworkAttachmentRequests(t *testing.T) {
	t.Parallel()
	props := adaptertest.Props(t, `{"serverId":42,"networkId":7,"ip":"10.0.1.5","aliasIps":["10.0.1.6"],"ipRange":"10.0.1.0/24"}`)
	wantOut := adaptertest.Props(t, `{"physicalId":"42/7","serverId":42,"networkId":7,"ip":"10.0.1.5","aliasIps":["10.0.1.6"],"ipRange":"10.0.1.0/24"}`)
	t.Run("create", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, steps(
			scripted.Exchange{Method: "POST", Path: "/v1/servers/42/actions/attach_to_network",
				Body: `{"network":7,"ip":"10.0.1.5","alias_ips":["10.0.1.6"],"ip_range":"10.0.1.0/24"}`, Status: 201, JSON: startedAction(101, "attach_to_network")},
			pollsOf(101, "attach_to_network", "success"),
			scripted.Exchange{Method: "GET", Path: "/v1/servers/42", Status: 200, JSON: serverNetsJSON(attachedNet)},
		)...)
		got, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeNetworkAttachment, Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(resource.CreateResult{PhysicalID: "42/7", Outputs: wantOut}, got); diff != "" {
			t.Errorf("create (-want +got):\n%s", diff)
		}
	})
	t.Run("create minimal", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, steps(
			scripted.Exchange{Method: "POST", Path: "/v1/servers/42/actions/attach_to_network", Body: `{"network":7}`, Status: 201, JSON: startedAction(101, "attach_to_network")},
			pollsOf(101, "attach_to_network", "success"),
			scripted.Exchange{Method: "GET", Path: "/v1/servers/42", Status: 200, JSON: serverNetsJSON(`{"network":7,"ip":"10.0.1.2","alias_ips":[]}`)},
		)...)
		got, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeNetworkAttachment, Properties: adaptertest.Props(t, `{"serverId":"42","networkId":"7"}`)})
		if err != nil {
			t.Fatal(err)
		}
		want := adaptertest.Props(t, `{"physicalId":"42/7","serverId":42,"networkId":7,"ip":"10.0.1.2","aliasIps":[]}`)
		if diff := cmp.Diff(want, got.Outputs); diff != "" {
			t.Errorf("create outputs (-want +got):\n%s", diff)
		}
	})
	t.Run("create action fails", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, steps(
			scripted.Exchange{Method: "POST", Path: "/v1/servers/42/actions/attach_to_network", Body: `{"network":7}`, Status: 201, JSON: startedAction(101, "attach_to_network")},
			pollsOf(101, "attach_to_network", "error"),
		)...)
		_, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeNetworkAttachment, Properties: adaptertest.Props(t, `{"serverId":42,"networkId":7}`)})
		var ae *hcloud.ActionError
		if !errors.As(err, &ae) {
			t.Errorf("create = %v, want *ActionError", err)
		}
	})
	t.Run("read", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/servers/42", Status: 200, JSON: serverNetsJSON(attachedNet)})
		got, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeNetworkAttachment, PhysicalID: "42/7", Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(resource.ReadResult{Properties: props, Outputs: wantOut}, got); diff != "" {
			t.Errorf("read (-want +got):\n%s", diff)
		}
	})
	t.Run("read detached", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/servers/42", Status: 200, JSON: serverNetsJSON("")})
		if _, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeNetworkAttachment, PhysicalID: "42/7", Properties: props}); !errors.Is(err, resource.ErrNotFound) {
			t.Errorf("read = %v, want ErrNotFound", err)
		}
	})
	t.Run("read server gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/servers/42", Status: 404, JSON: errNotFoundBody})
		if _, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeNetworkAttachment, PhysicalID: "42/7", Properties: props}); !errors.Is(err, resource.ErrNotFound) {
			t.Errorf("read = %v, want ErrNotFound", err)
		}
	})
	t.Run("update", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t)
		if _, err := p.Update(ctx(t), resource.UpdateRequest{Type: hcloud.TypeNetworkAttachment, PhysicalID: "42/7", Old: props, New: props, Changed: []string{"ip"}}); err == nil {
			t.Error("update succeeded, want an error: every property is create-only")
		}
	})
	t.Run("delete", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, steps(
			scripted.Exchange{Method: "POST", Path: "/v1/servers/42/actions/detach_from_network", Body: `{"network":7}`, Status: 201, JSON: startedAction(102, "detach_from_network")},
			pollsOf(102, "detach_from_network", "success"),
		)...)
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeNetworkAttachment, PhysicalID: "42/7", Properties: props}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("delete server gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "POST", Path: "/v1/servers/42/actions/detach_from_network", Body: `{"network":7}`, Status: 404, JSON: errNotFoundBody})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeNetworkAttachment, PhysicalID: "42/7", Properties: props}); err != nil {
			t.Errorf("delete = %v, want nil", err)
		}
	})
	t.Run("delete not attached", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "POST", Path: "/v1/servers/42/actions/detach_from_network", Body: `{"network":7}`, Status: 422,
				JSON: `{"error":{"code":"server_not_attached_to_network","message":"not attached","details":{}}}`},
			scripted.Exchange{Method: "GET", Path: "/v1/servers/42", Status: 200, JSON: serverNetsJSON("")})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeNetworkAttachment, PhysicalID: "42/7", Properties: props}); err != nil {
			t.Errorf("delete = %v, want nil", err)
		}
	})
	t.Run("locate", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/servers/42", Status: 200, JSON: serverNetsJSON(attachedNet)})
		id, err := p.Locate(ctx(t), resource.CreateRequest{Type: hcloud.TypeNetworkAttachment, Properties: props})
		if err != nil || id != "42/7" {
			t.Errorf("locate = %q, %v; want 42/7", id, err)
		}
	})
	t.Run("locate not attached", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/servers/42", Status: 200, JSON: serverNetsJSON("")})
		if _, err := p.Locate(ctx(t), resource.CreateRequest{Type: hcloud.TypeNetworkAttachment, Properties: props}); !errors.Is(err, resource.ErrNotFound) {
			t.Errorf("locate = %v, want ErrNotFound", err)
		}
	})
}

func TestNetworkAttachmentCheck(t *testing.T) {
	t.Parallel()
	validateCases(t, hcloud.TypeNetworkAttachment, []struct{ props, want string }{
		{`{"serverId":42,"networkId":7}`, ""},
		{`{"serverId":{"ref":"S","attr":"serverId"},"networkId":{"ref":"N","attr":"networkId"},"ip":"10.0.1.5","aliasIps":["10.0.1.6"],"ipRange":"10.0.1.0/24"}`, ""},
		{`{"serverId":42,"networkId":7,"ip":"10.0.1","aliasIps":["fd00::1"],"ipRange":"10.0.1.0"}`,
			"aliasIps[0]: \"fd00::1\" is not an IPv4 address such as 10.0.1.5\nip: \"10.0.1\" is not an IPv4 address such as 10.0.1.5\nipRange: \"10.0.1.0\" is not a CIDR like 10.0.0.0/16"},
		{`{"serverId":42}`, "networkId: required property \"networkId\" is missing"},
	})
	s := declaredSchema(t, hcloud.TypeNetworkAttachment)
	for name, ps := range s.Properties {
		if !ps.CreateOnly {
			t.Errorf("property %s is not create-only", name)
		}
	}
}
