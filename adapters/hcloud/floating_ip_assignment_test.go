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

func floatingIPOn(server string) string {
	return `{"floating_ip":` + floatingIPObj("9", "ip", "null", server, "{}") + `}`
}

func TestFloatingIPAssignmentRequests(t *testing.T) {
	t.Parallel()
	props := adaptertest.Props(t, `{"floatingIpId":9,"serverId":42}`)
	wantOut := adaptertest.Props(t, `{"floatingIpId":9,"serverId":42}`)
	t.Run("create", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, steps(
			scripted.Exchange{Method: "POST", Path: "/v1/floating_ips/9/actions/assign", Body: `{"server":42}`, Status: 201, JSON: startedAction(71, "assign_floating_ip")},
			pollsOf(71, "assign_floating_ip", "success"),
		)...)
		got, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeFloatingIPAssignment, Properties: adaptertest.Props(t, `{"floatingIpId":"9","serverId":"42"}`)})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(resource.CreateResult{PhysicalID: "9", Outputs: wantOut}, got); diff != "" {
			t.Errorf("create (-want +got):\n%s", diff)
		}
	})
	t.Run("create action fails", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, steps(
			scripted.Exchange{Method: "POST", Path: "/v1/floating_ips/9/actions/assign", Body: `{"server":42}`, Status: 201, JSON: startedAction(71, "assign_floating_ip")},
			pollsOf(71, "assign_floating_ip", "error"),
		)...)
		_, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeFloatingIPAssignment, Properties: props})
		var ae *hcloud.ActionError
		if !errors.As(err, &ae) {
			t.Errorf("create = %v, want *ActionError", err)
		}
	})
	t.Run("read", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/floating_ips/9", Status: 200, JSON: floatingIPOn("42")})
		got, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeFloatingIPAssignment, PhysicalID: "9", Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(resource.ReadResult{Properties: props, Outputs: wantOut}, got); diff != "" {
			t.Errorf("read (-want +got):\n%s", diff)
		}
	})
	t.Run("read assigned elsewhere", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/floating_ips/9", Status: 200, JSON: floatingIPOn("43")})
		got, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeFloatingIPAssignment, PhysicalID: "9", Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		want := adaptertest.Props(t, `{"floatingIpId":9,"serverId":43}`)
		if diff := cmp.Diff(resource.ReadResult{Properties: want, Outputs: want}, got); diff != "" {
			t.Errorf("read (-want +got):\n%s", diff)
		}
	})
	t.Run("read unassigned", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/floating_ips/9", Status: 200, JSON: floatingIPOn("null")})
		if _, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeFloatingIPAssignment, PhysicalID: "9", Properties: props}); !errors.Is(err, resource.ErrNotFound) {
			t.Errorf("read = %v, want ErrNotFound", err)
		}
	})
	t.Run("update", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, steps(
			scripted.Exchange{Method: "GET", Path: "/v1/floating_ips/9", Status: 200, JSON: floatingIPOn("42")},
			scripted.Exchange{Method: "POST", Path: "/v1/floating_ips/9/actions/unassign", Status: 201, JSON: startedAction(72, "unassign_floating_ip")},
			pollsOf(72, "unassign_floating_ip", "success"),
			scripted.Exchange{Method: "POST", Path: "/v1/floating_ips/9/actions/assign", Body: `{"server":43}`, Status: 201, JSON: startedAction(73, "assign_floating_ip")},
			pollsOf(73, "assign_floating_ip", "success"),
		)...)
		got, err := p.Update(ctx(t), resource.UpdateRequest{Type: hcloud.TypeFloatingIPAssignment, PhysicalID: "9", Old: props,
			New: adaptertest.Props(t, `{"floatingIpId":9,"serverId":43}`), Changed: []string{"serverId"}})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(adaptertest.Props(t, `{"floatingIpId":9,"serverId":43}`), got.Outputs); diff != "" {
			t.Errorf("update outputs (-want +got):\n%s", diff)
		}
	})
	t.Run("update after the server was replaced", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, steps(
			scripted.Exchange{Method: "GET", Path: "/v1/floating_ips/9", Status: 200, JSON: floatingIPOn("null")},
			scripted.Exchange{Method: "POST", Path: "/v1/floating_ips/9/actions/assign", Body: `{"server":43}`, Status: 201, JSON: startedAction(73, "assign_floating_ip")},
			pollsOf(73, "assign_floating_ip", "success"),
		)...)
		if _, err := p.Update(ctx(t), resource.UpdateRequest{Type: hcloud.TypeFloatingIPAssignment, PhysicalID: "9", Old: props,
			New: adaptertest.Props(t, `{"floatingIpId":9,"serverId":43}`), Changed: []string{"serverId"}}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("delete", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, steps(
			scripted.Exchange{Method: "GET", Path: "/v1/floating_ips/9", Status: 200, JSON: floatingIPOn("42")},
			scripted.Exchange{Method: "POST", Path: "/v1/floating_ips/9/actions/unassign", Status: 201, JSON: startedAction(74, "unassign_floating_ip")},
			pollsOf(74, "unassign_floating_ip", "success"),
		)...)
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeFloatingIPAssignment, PhysicalID: "9", Properties: props}); err != nil {
			t.Fatal(err)
		}
	})
	for name, server := range map[string]string{"delete already unassigned": "null", "delete assigned elsewhere": "43"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/floating_ips/9", Status: 200, JSON: floatingIPOn(server)})
			if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeFloatingIPAssignment, PhysicalID: "9", Properties: props}); err != nil {
				t.Errorf("delete = %v, want nil", err)
			}
		})
	}
	t.Run("delete IP gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/floating_ips/9", Status: 404, JSON: errNotFoundBody})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeFloatingIPAssignment, PhysicalID: "9", Properties: props}); err != nil {
			t.Errorf("delete = %v, want nil", err)
		}
	})
	t.Run("locate", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/floating_ips/9", Status: 200, JSON: floatingIPOn("42")})
		id, err := p.Locate(ctx(t), resource.CreateRequest{Type: hcloud.TypeFloatingIPAssignment, Properties: props})
		if err != nil || id != "9" {
			t.Errorf("locate = %q, %v; want 9", id, err)
		}
	})
	t.Run("locate not assigned", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/floating_ips/9", Status: 200, JSON: floatingIPOn("null")})
		if _, err := p.Locate(ctx(t), resource.CreateRequest{Type: hcloud.TypeFloatingIPAssignment, Properties: props}); !errors.Is(err, resource.ErrNotFound) {
			t.Errorf("locate = %v, want ErrNotFound", err)
		}
	})
}

func TestFloatingIPAssignmentCheck(t *testing.T) {
	t.Parallel()
	validateCases(t, hcloud.TypeFloatingIPAssignment, []struct{ props, want string }{
		{`{"floatingIpId":{"ref":"Ip","attr":"floatingIpId"},"serverId":{"ref":"S","attr":"serverId"}}`, ""},
		{`{"floatingIpId":9,"serverId":"42"}`, ""},
		{`{"floatingIpId":9}`, "serverId: required property \"serverId\" is missing"},
		{`{"floatingIpId":9.5,"serverId":42}`, "floatingIpId: must be a positive integer ID, got \"9.5\""},
	})
}
