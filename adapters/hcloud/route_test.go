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

func netWithRoutes(routes string) string {
	return `{"network":{"id":7,"name":"net","ip_range":"10.0.0.0/16","labels":{},"subnets":[],"routes":[` + routes + `]}}`
}

const route1 = `{"destination":"10.100.0.0/24","gateway":"10.0.1.1"}`

func TestRouteRequests(t *testing.T) {
	t.Parallel()
	props := adaptertest.Props(t, `{"networkId":7,"destination":"10.100.0.0/24","gateway":"10.0.1.1"}`)
	wantOut := adaptertest.Props(t, `{"physicalId":"7/10.100.0.0/24","networkId":7,"destination":"10.100.0.0/24","gateway":"10.0.1.1"}`)
	const body = `{"destination":"10.100.0.0/24","gateway":"10.0.1.1"}`
	t.Run("create", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, steps(
			scripted.Exchange{Method: "POST", Path: "/v1/networks/7/actions/add_route", Body: body, Status: 201, JSON: startedAction(21, "add_route")},
			pollsOf(21, "add_route", "success"),
			scripted.Exchange{Method: "GET", Path: "/v1/networks/7", Status: 200, JSON: netWithRoutes(route1)},
		)...)
		got, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeRoute, Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(resource.CreateResult{PhysicalID: "7/10.100.0.0/24", Outputs: wantOut}, got); diff != "" {
			t.Errorf("create (-want +got):\n%s", diff)
		}
	})
	t.Run("create conflict retried", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, steps(
			scripted.Exchange{Method: "POST", Path: "/v1/networks/7/actions/add_route", Body: body, Status: 409,
				JSON: `{"error":{"code":"conflict","message":"network is changing","details":{}}}`},
			scripted.Exchange{Method: "POST", Path: "/v1/networks/7/actions/add_route", Body: body, Status: 201, JSON: startedAction(21, "add_route")},
			pollsOf(21, "add_route", "success"),
			scripted.Exchange{Method: "GET", Path: "/v1/networks/7", Status: 200, JSON: netWithRoutes(route1)},
		)...)
		if _, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeRoute, Properties: props}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("create action fails", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, steps(
			scripted.Exchange{Method: "POST", Path: "/v1/networks/7/actions/add_route", Body: body, Status: 201, JSON: startedAction(21, "add_route")},
			pollsOf(21, "add_route", "error"),
		)...)
		_, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeRoute, Properties: props})
		var ae *hcloud.ActionError
		if !errors.As(err, &ae) {
			t.Errorf("create = %v, want *ActionError", err)
		}
	})
	t.Run("read", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/networks/7", Status: 200, JSON: netWithRoutes(route1)})
		got, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeRoute, PhysicalID: "7/10.100.0.0/24", Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(resource.ReadResult{Properties: props, Outputs: wantOut}, got); diff != "" {
			t.Errorf("read (-want +got):\n%s", diff)
		}
	})
	t.Run("read gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/networks/7", Status: 200, JSON: netWithRoutes("")})
		if _, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeRoute, PhysicalID: "7/10.100.0.0/24", Properties: props}); !errors.Is(err, resource.ErrNotFound) {
			t.Errorf("read = %v, want ErrNotFound", err)
		}
	})
	t.Run("delete", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, steps(
			scripted.Exchange{Method: "POST", Path: "/v1/networks/7/actions/delete_route", Body: body, Status: 201, JSON: startedAction(22, "delete_route")},
			pollsOf(22, "delete_route", "success"),
		)...)
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeRoute, PhysicalID: "7/10.100.0.0/24", Properties: props}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("delete without recorded gateway", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, steps(
			scripted.Exchange{Method: "GET", Path: "/v1/networks/7", Status: 200, JSON: netWithRoutes(route1)},
			scripted.Exchange{Method: "POST", Path: "/v1/networks/7/actions/delete_route", Body: body, Status: 201, JSON: startedAction(22, "delete_route")},
			pollsOf(22, "delete_route", "success"),
		)...)
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeRoute, PhysicalID: "7/10.100.0.0/24"}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("delete gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "POST", Path: "/v1/networks/7/actions/delete_route", Body: body, Status: 422,
				JSON: `{"error":{"code":"invalid_input","message":"route not found","details":{}}}`},
			scripted.Exchange{Method: "GET", Path: "/v1/networks/7", Status: 200, JSON: netWithRoutes("")})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeRoute, PhysicalID: "7/10.100.0.0/24", Properties: props}); err != nil {
			t.Errorf("delete = %v, want nil", err)
		}
	})
	t.Run("delete network gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "POST", Path: "/v1/networks/7/actions/delete_route", Body: body, Status: 404, JSON: errNotFoundBody})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeRoute, PhysicalID: "7/10.100.0.0/24", Properties: props}); err != nil {
			t.Errorf("delete = %v, want nil", err)
		}
	})
	t.Run("locate", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/networks/7", Status: 200, JSON: netWithRoutes(route1)})
		id, err := p.Locate(ctx(t), resource.CreateRequest{Type: hcloud.TypeRoute, Properties: props})
		if err != nil || id != "7/10.100.0.0/24" {
			t.Errorf("locate = %q, %v; want 7/10.100.0.0/24", id, err)
		}
	})
	t.Run("locate other gateway", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/networks/7", Status: 200,
			JSON: netWithRoutes(`{"destination":"10.100.0.0/24","gateway":"10.0.1.9"}`)})
		if _, err := p.Locate(ctx(t), resource.CreateRequest{Type: hcloud.TypeRoute, Properties: props}); !errors.Is(err, resource.ErrNotFound) {
			t.Errorf("locate = %v, want ErrNotFound", err)
		}
	})
}

func TestRouteCheck(t *testing.T) {
	t.Parallel()
	validateCases(t, hcloud.TypeRoute, []struct{ props, want string }{
		{`{"networkId":7,"destination":"10.100.0.0/24","gateway":"10.0.1.1"}`, ""},
		{`{"networkId":7,"destination":"0.0.0.0/0","gateway":"10.0.0.1"}`, ""},
		{`{"networkId":{"ref":"N","attr":"networkId"},"destination":{"ref":"X","attr":"y"},"gateway":{"ref":"S","attr":"ip"}}`, ""},
		{`{"networkId":7,"destination":"10.100.0.1/24","gateway":"10.0.1.1"}`, "destination: \"10.100.0.1/24\" has host bits set; Hetzner wants the network address, 10.100.0.0/24"},
		{`{"networkId":7,"destination":"10.100.0.0","gateway":"10.0.1.1"}`, "destination: \"10.100.0.0\" is not a CIDR like 10.0.0.0/16"},
		{`{"networkId":7,"destination":"fd00::/64","gateway":"10.0.1.1"}`, "destination: \"fd00::/64\" is not an IPv4 range; Hetzner networks route IPv4 only"},
		{`{"networkId":7,"destination":"10.100.0.0/24","gateway":"172.31.1.1"}`, "gateway: 172.31.1.1 is Hetzner's own gateway and cannot be a route's gateway; give a server's private IP"},
		{`{"networkId":7,"destination":"10.100.0.0/24","gateway":"10.0.1.0/24"}`, "gateway: \"10.0.1.0/24\" is not an IPv4 address such as 10.0.1.2"},
		{`{"networkId":7}`, "destination: required property \"destination\" is missing\ngateway: required property \"gateway\" is missing"},
	})
}
