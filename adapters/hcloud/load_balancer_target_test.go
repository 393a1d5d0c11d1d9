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

const (
	serverTargetJSON   = `{"type":"server","server":{"id":42},"use_private_ip":true,"health_status":[]}`
	selectorTargetJSON = `{"type":"label_selector","label_selector":{"selector":"role=web"},"use_private_ip":false,"targets":[{"type":"server","server":{"id":43}}]}`
	ipTargetJSON       = `{"type":"ip","ip":{"ip":"203.0.113.5"}}`
)

func TestLBTargetRequests(t *testing.T) {
	t.Parallel()
	// The e2e assembly's target.
	props := adaptertest.Props(t, `{"loadBalancerId":"21","type":"server","serverId":42,"usePrivateIp":true}`)
	wantOut := adaptertest.Props(t, `{"physicalId":"21/server/42","loadBalancerId":21,"type":"server","serverId":42}`)
	t.Run("create", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "POST", Path: "/v1/load_balancers/21/actions/add_target", Status: 201,
				Body: `{"type":"server","server":{"id":42},"use_private_ip":true}`, JSON: `{"action":` + actJSON(9, "add_target", "running") + `}`},
			pollAction(9, "add_target", "success"))
		got, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeLoadBalancerTarget, Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(resource.CreateResult{PhysicalID: "21/server/42", Outputs: wantOut}, got); diff != "" {
			t.Errorf("create (-want +got):\n%s", diff)
		}
	})
	for _, tc := range []struct{ name, props, body, id, out string }{
		{"label selector", `{"loadBalancerId":21,"type":"label_selector","labelSelector":"role=web"}`, `{"type":"label_selector","label_selector":{"selector":"role=web"}}`,
			"21/label_selector/role=web", `{"physicalId":"21/label_selector/role=web","loadBalancerId":21,"type":"label_selector","labelSelector":"role=web"}`},
		{"ip", `{"loadBalancerId":21,"type":"ip","ip":"203.0.113.5"}`, `{"type":"ip","ip":{"ip":"203.0.113.5"}}`,
			"21/ip/203.0.113.5", `{"physicalId":"21/ip/203.0.113.5","loadBalancerId":21,"type":"ip","ip":"203.0.113.5"}`},
	} {
		t.Run("create "+tc.name, func(t *testing.T) {
			t.Parallel()
			p, _ := scriptedProvider(t,
				scripted.Exchange{Method: "POST", Path: "/v1/load_balancers/21/actions/add_target", Status: 201,
					Body: tc.body, JSON: `{"action":` + actJSON(9, "add_target", "success") + `}`})
			got, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeLoadBalancerTarget, Properties: adaptertest.Props(t, tc.props)})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(resource.CreateResult{PhysicalID: tc.id, Outputs: adaptertest.Props(t, tc.out)}, got); diff != "" {
				t.Errorf("create (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("create fails", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "POST", Path: "/v1/load_balancers/21/actions/add_target", Status: 201,
				Body: `{"type":"server","server":{"id":42},"use_private_ip":true}`, JSON: `{"action":` + actJSON(9, "add_target", "running") + `}`},
			pollAction(9, "add_target", "error"))
		var ae *hcloud.ActionError
		if _, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeLoadBalancerTarget, Properties: props}); !errors.As(err, &ae) {
			t.Errorf("create with a failed action = %v, want *hcloud.ActionError", err)
		}
	})
	t.Run("read", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/load_balancers/21", Status: 200,
			JSON: `{"load_balancer":` + lbJSON("", selectorTargetJSON+","+serverTargetJSON+","+ipTargetJSON) + `}`})
		got, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeLoadBalancerTarget, PhysicalID: "21/server/42", Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(resource.ReadResult{Properties: props, Outputs: wantOut}, got); diff != "" {
			t.Errorf("read (-want +got):\n%s", diff)
		}
	})
	t.Run("read drift", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/load_balancers/21", Status: 200,
			JSON: `{"load_balancer":` + lbJSON("", `{"type":"server","server":{"id":42},"use_private_ip":false}`) + `}`})
		got, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeLoadBalancerTarget, PhysicalID: "21/server/42", Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		if got.Properties["usePrivateIp"] != false {
			t.Errorf("read properties = %v, want usePrivateIp false", got.Properties)
		}
	})
	t.Run("read a selector with a slash", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/load_balancers/21", Status: 200,
			JSON: `{"load_balancer":` + lbJSON("", `{"type":"label_selector","label_selector":{"selector":"example.com/role=web"}}`) + `}`})
		got, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeLoadBalancerTarget, PhysicalID: "21/label_selector/example.com/role=web"})
		if err != nil {
			t.Fatal(err)
		}
		want := adaptertest.Props(t, `{"loadBalancerId":21,"type":"label_selector","labelSelector":"example.com/role=web"}`)
		if diff := cmp.Diff(want, got.Properties); diff != "" {
			t.Errorf("read properties (-want +got):\n%s", diff)
		}
	})
	t.Run("read gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/load_balancers/21", Status: 200,
			JSON: `{"load_balancer":` + lbJSON("", ipTargetJSON) + `}`})
		if _, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeLoadBalancerTarget, PhysicalID: "21/server/42", Properties: props}); !errors.Is(err, resource.ErrNotFound) {
			t.Errorf("read of a gone target = %v, want ErrNotFound", err)
		}
	})
	t.Run("update", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t)
		if _, err := p.Update(ctx(t), resource.UpdateRequest{Type: hcloud.TypeLoadBalancerTarget, PhysicalID: "21/server/42", Old: props, New: props,
			Changed: []string{"usePrivateIp"}}); err == nil {
			t.Error("update of a target succeeded, want an error (every property is create-only)")
		}
	})
	t.Run("delete", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "POST", Path: "/v1/load_balancers/21/actions/remove_target", Status: 201,
				Body: `{"type":"server","server":{"id":42}}`, JSON: `{"action":` + actJSON(10, "remove_target", "running") + `}`},
			pollAction(10, "remove_target", "success"))
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeLoadBalancerTarget, PhysicalID: "21/server/42"}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("delete ip", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "POST", Path: "/v1/load_balancers/21/actions/remove_target", Status: 201,
				Body: `{"type":"ip","ip":{"ip":"2001:db8::1"}}`, JSON: `{"action":` + actJSON(10, "remove_target", "success") + `}`})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeLoadBalancerTarget, PhysicalID: "21/ip/2001:db8::1"}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("delete gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "POST", Path: "/v1/load_balancers/21/actions/remove_target", Status: 422,
				Body: `{"type":"server","server":{"id":42}}`, JSON: `{"error":{"code":"target_not_found","message":"target not found","details":{}}}`},
			scripted.Exchange{Method: "GET", Path: "/v1/load_balancers/21", Status: 200, JSON: `{"load_balancer":` + lbJSON("", ipTargetJSON) + `}`})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeLoadBalancerTarget, PhysicalID: "21/server/42"}); err != nil {
			t.Errorf("delete of a gone target = %v, want nil", err)
		}
	})
	t.Run("delete fails", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "POST", Path: "/v1/load_balancers/21/actions/remove_target", Status: 422,
				Body: `{"type":"server","server":{"id":42}}`, JSON: `{"error":{"code":"invalid_input","message":"no","details":{}}}`},
			scripted.Exchange{Method: "GET", Path: "/v1/load_balancers/21", Status: 200, JSON: `{"load_balancer":` + lbJSON("", serverTargetJSON) + `}`})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeLoadBalancerTarget, PhysicalID: "21/server/42"}); err == nil {
			t.Error("delete of a target that stays = nil, want the API's error")
		}
	})
	t.Run("locate", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/load_balancers/21", Status: 200,
			JSON: `{"load_balancer":` + lbJSON("", serverTargetJSON) + `}`})
		if id, err := p.Locate(ctx(t), resource.CreateRequest{Type: hcloud.TypeLoadBalancerTarget, Properties: props}); err != nil || id != "21/server/42" {
			t.Errorf("locate = %q, %v; want 21/server/42", id, err)
		}
	})
}

func TestLBTargetSchema(t *testing.T) {
	t.Parallel()
	s := typeSchema(t, hcloud.TypeLoadBalancerTarget)
	if diff := cmp.Diff([]string{"ip", "labelSelector", "loadBalancerId", "serverId", "type", "usePrivateIp"}, s.CreateOnly()); diff != "" {
		t.Errorf("create-only (-want +got):\n%s", diff)
	}
}

func TestLBTargetCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ props, want string }{
		{`{"loadBalancerId":{"ref":"LB","attr":"loadBalancerId"},"type":"server","serverId":{"ref":"S","attr":"serverId"},"usePrivateIp":true}`, ""},
		{`{"loadBalancerId":21,"type":"label_selector","labelSelector":"role=web","usePrivateIp":false}`, ""},
		{`{"loadBalancerId":21,"type":"ip","ip":"2001:db8::1"}`, ""},
		{`{"loadBalancerId":21,"type":"server"}`, "serverId: is required for a target of type server"},
		{`{"loadBalancerId":21,"type":"server","serverId":1,"ip":"1.2.3.4"}`, "ip: does not apply to a target of type server (it takes serverId)"},
		{`{"loadBalancerId":21,"type":"ip","ip":"1.2.3","usePrivateIp":true}`, "ip: \"1.2.3\" is not an IP address\nusePrivateIp: applies to server and label_selector targets only"},
		{`{"loadBalancerId":21,"type":"label_selector","labelSelector":" "}`, "labelSelector: is empty; give a label selector such as role=web"},
		{`{"loadBalancerId":21,"type":"network"}`, "type: must be one of server, label_selector, ip, got \"network\""},
	} {
		if got := validation(t, hcloud.TypeLoadBalancerTarget, tc.props); got != tc.want {
			t.Errorf("Validate(%s) = %q, want %q", tc.props, got, tc.want)
		}
	}
}
