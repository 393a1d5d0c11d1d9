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

// lbJSON is a load balancer object with the given services and targets (JSON arrays' contents).
func lbJSON(services, targets string) string {
	return `{"id":21,"name":"web-lb","labels":{"env":"production"},"load_balancer_type":{"id":1,"name":"lb11"},` +
		`"algorithm":{"type":"round_robin"},"public_net":{"enabled":true,"ipv4":{"ip":"1.2.3.4"},"ipv6":{"ip":"2001:db8::1"}},` +
		`"private_net":[{"network":7,"ip":"10.0.0.2"}],"location":{"id":1,"name":"nbg1","network_zone":"eu-central"},` +
		`"services":[` + services + `],"targets":[` + targets + `]}`
}

func TestLoadBalancerRequests(t *testing.T) {
	t.Parallel()
	props := adaptertest.Props(t, `{"name":"web-lb","loadBalancerType":"lb11","labels":{"env":"production"},"networkId":7,"networkZone":"eu-central"}`)
	wantOut := adaptertest.Props(t, `{"loadBalancerId":21,"name":"web-lb","labels":{"env":"production"},"loadBalancerType":"lb11","algorithm":"round_robin","publicInterface":true}`)
	t.Run("create", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "POST", Path: "/v1/load_balancers",
				Body:   `{"name":"web-lb","load_balancer_type":"lb11","algorithm":{"type":"round_robin"},"labels":{"env":"production"},"network_zone":"eu-central"}`,
				Status: 201, JSON: `{"load_balancer":` + lbJSON("", "") + `,"action":` + actJSON(1, "create_load_balancer", "running") + `}`},
			pollAction(1, "create_load_balancer", "success"),
			scripted.Exchange{Method: "POST", Path: "/v1/load_balancers/21/actions/attach_to_network", Body: `{"network":7}`, Status: 201,
				JSON: `{"action":` + actJSON(2, "attach_load_balancer_to_network", "running") + `}`},
			pollAction(2, "attach_load_balancer_to_network", "running"),
			pollAction(2, "attach_load_balancer_to_network", "success"))
		got, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeLoadBalancer, Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(resource.CreateResult{PhysicalID: "21", Outputs: wantOut}, got); diff != "" {
			t.Errorf("create (-want +got):\n%s", diff)
		}
	})
	t.Run("create private", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "POST", Path: "/v1/load_balancers",
				Body:   `{"name":"web-lb","load_balancer_type":"lb21","algorithm":{"type":"least_connections"},"labels":{},"location":"fsn1","public_interface":false}`,
				Status: 201, JSON: `{"load_balancer":` + lbJSON("", "") + `,"action":` + actJSON(1, "create_load_balancer", "success") + `}`})
		if _, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeLoadBalancer, Properties: adaptertest.Props(t,
			`{"name":"web-lb","loadBalancerType":"lb21","algorithm":{"type":"least_connections"},"location":"fsn1","publicInterface":false}`)}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("create attach fails", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "POST", Path: "/v1/load_balancers",
				Body:   `{"name":"web-lb","load_balancer_type":"lb11","algorithm":{"type":"round_robin"},"labels":{"env":"production"},"network_zone":"eu-central"}`,
				Status: 201, JSON: `{"load_balancer":` + lbJSON("", "") + `,"action":` + actJSON(1, "create_load_balancer", "success") + `}`},
			scripted.Exchange{Method: "POST", Path: "/v1/load_balancers/21/actions/attach_to_network", Body: `{"network":7}`, Status: 422,
				JSON: `{"error":{"code":"load_balancer_already_attached","message":"load balancer is already attached to a network","details":{}}}`},
			scripted.Exchange{Method: "GET", Path: "/v1/load_balancers/21", Status: 200, JSON: `{"load_balancer":` + lbJSON("", "") + `}`})
		_, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeLoadBalancer, Properties: props})
		if err == nil || !strings.Contains(err.Error(), "load_balancer_already_attached") || !strings.Contains(err.Error(), "ID 21") {
			t.Errorf("create with a failed attach = %v, want the API's error naming the load balancer", err)
		}
	})
	t.Run("create exists", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "POST", Path: "/v1/load_balancers",
			Body:   `{"name":"web-lb","load_balancer_type":"lb11","algorithm":{"type":"round_robin"},"labels":{"env":"production"},"network_zone":"eu-central"}`,
			Status: 409, JSON: `{"error":{"code":"uniqueness_error","message":"name is already used","details":{}}}`})
		if _, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeLoadBalancer, Properties: props}); !errors.Is(err, resource.ErrAlreadyExists) {
			t.Errorf("create of an existing load balancer = %v, want ErrAlreadyExists", err)
		}
	})
	t.Run("read", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/load_balancers/21", Status: 200, JSON: `{"load_balancer":` + lbJSON("", "") + `}`})
		got, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeLoadBalancer, PhysicalID: "21", Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(resource.ReadResult{Properties: props, Outputs: wantOut}, got); diff != "" {
			t.Errorf("read (-want +got):\n%s", diff)
		}
	})
	t.Run("read drift", func(t *testing.T) {
		t.Parallel()
		live := strings.NewReplacer(`"round_robin"`, `"least_connections"`, `"enabled":true`, `"enabled":false`, `"network":7`, `"network":8`).Replace(lbJSON("", ""))
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/load_balancers/21", Status: 200, JSON: `{"load_balancer":` + live + `}`})
		got, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeLoadBalancer, PhysicalID: "21", Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		want := adaptertest.Props(t, `{"name":"web-lb","loadBalancerType":"lb11","labels":{"env":"production"},"networkId":8,"networkZone":"eu-central",
			"algorithm":{"type":"least_connections"},"publicInterface":false}`)
		if diff := cmp.Diff(want, got.Properties); diff != "" {
			t.Errorf("read properties (-want +got):\n%s", diff)
		}
	})
	t.Run("read gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/load_balancers/21", Status: 404, JSON: notFoundJSON})
		if _, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeLoadBalancer, PhysicalID: "21"}); !errors.Is(err, resource.ErrNotFound) {
			t.Errorf("read of a gone load balancer = %v, want ErrNotFound", err)
		}
	})
	t.Run("update labels only", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "PUT", Path: "/v1/load_balancers/21",
			Body: `{"name":"web-lb","labels":{}}`, Status: 200, JSON: `{"load_balancer":` + lbJSON("", "") + `}`})
		newProps := adaptertest.Props(t, `{"name":"web-lb","loadBalancerType":"lb11","networkId":7,"networkZone":"eu-central"}`)
		if _, err := p.Update(ctx(t), resource.UpdateRequest{Type: hcloud.TypeLoadBalancer, PhysicalID: "21", Old: props, New: newProps, Changed: []string{"labels"}}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("update everything", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "PUT", Path: "/v1/load_balancers/21", Body: `{"name":"web-lb2","labels":{"env":"production"}}`, Status: 200,
				JSON: `{"load_balancer":` + lbJSON("", "") + `}`},
			scripted.Exchange{Method: "POST", Path: "/v1/load_balancers/21/actions/change_algorithm", Body: `{"type":"least_connections"}`, Status: 201,
				JSON: `{"action":` + actJSON(3, "change_algorithm", "running") + `}`},
			pollAction(3, "change_algorithm", "success"),
			scripted.Exchange{Method: "POST", Path: "/v1/load_balancers/21/actions/change_type", Body: `{"load_balancer_type":"lb21"}`, Status: 201,
				JSON: `{"action":` + actJSON(4, "change_load_balancer_type", "running") + `}`},
			pollAction(4, "change_load_balancer_type", "success"),
			scripted.Exchange{Method: "POST", Path: "/v1/load_balancers/21/actions/disable_public_interface", Status: 201,
				JSON: `{"action":` + actJSON(5, "disable_public_interface", "running") + `}`},
			pollAction(5, "disable_public_interface", "success"))
		newProps := adaptertest.Props(t, `{"name":"web-lb2","loadBalancerType":"lb21","labels":{"env":"production"},"networkId":7,"networkZone":"eu-central",
			"algorithm":{"type":"least_connections"},"publicInterface":false}`)
		got, err := p.Update(ctx(t), resource.UpdateRequest{Type: hcloud.TypeLoadBalancer, PhysicalID: "21", Old: props, New: newProps,
			Changed: []string{"algorithm", "loadBalancerType", "name", "publicInterface"}})
		if err != nil {
			t.Fatal(err)
		}
		want := adaptertest.Props(t, `{"loadBalancerId":21,"name":"web-lb","labels":{"env":"production"},"loadBalancerType":"lb21","algorithm":"least_connections","publicInterface":false}`)
		if diff := cmp.Diff(want, got.Outputs); diff != "" {
			t.Errorf("update outputs (-want +got):\n%s", diff)
		}
	})
	t.Run("update enables the public interface", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "PUT", Path: "/v1/load_balancers/21", Body: `{"name":"web-lb","labels":{"env":"production"}}`, Status: 200,
				JSON: `{"load_balancer":` + lbJSON("", "") + `}`},
			scripted.Exchange{Method: "POST", Path: "/v1/load_balancers/21/actions/enable_public_interface", Status: 201,
				JSON: `{"action":` + actJSON(5, "enable_public_interface", "error") + `}`})
		old := adaptertest.Props(t, `{"name":"web-lb","loadBalancerType":"lb11","labels":{"env":"production"},"networkZone":"eu-central","publicInterface":false}`)
		newProps := adaptertest.Props(t, `{"name":"web-lb","loadBalancerType":"lb11","labels":{"env":"production"},"networkZone":"eu-central"}`)
		var ae *hcloud.ActionError
		if _, err := p.Update(ctx(t), resource.UpdateRequest{Type: hcloud.TypeLoadBalancer, PhysicalID: "21", Old: old, New: newProps,
			Changed: []string{"publicInterface"}}); !errors.As(err, &ae) {
			t.Errorf("update with a failed action = %v, want *hcloud.ActionError", err)
		}
	})
	t.Run("delete", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "DELETE", Path: "/v1/load_balancers/21", Status: 204})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeLoadBalancer, PhysicalID: "21"}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("delete gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "DELETE", Path: "/v1/load_balancers/21", Status: 404, JSON: notFoundJSON})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeLoadBalancer, PhysicalID: "21"}); err != nil {
			t.Errorf("delete of a gone load balancer = %v, want nil", err)
		}
	})
	t.Run("locate", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/load_balancers", Query: "name=web-lb", Status: 200,
			JSON: listJSON("load_balancers", lbJSON("", ""))})
		if id, err := p.Locate(ctx(t), resource.CreateRequest{Type: hcloud.TypeLoadBalancer, Properties: props}); err != nil || id != "21" {
			t.Errorf("locate = %q, %v; want 21", id, err)
		}
	})
}

func TestLoadBalancerSchema(t *testing.T) {
	t.Parallel()
	s := typeSchema(t, hcloud.TypeLoadBalancer)
	if diff := cmp.Diff([]string{"location", "networkId", "networkZone"}, s.CreateOnly()); diff != "" {
		t.Errorf("create-only (-want +got):\n%s", diff)
	}
	want := []resource.SerialKey{{Group: "network", Property: "networkId"}, {Group: "load-balancer"}}
	if diff := cmp.Diff(want, s.Serialize); diff != "" {
		t.Errorf("serialize (-want +got):\n%s", diff)
	}
}

func TestLoadBalancerCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ props, want string }{
		{`{"name":"e2e-load-balancer","loadBalancerType":"lb11","networkId":{"ref":"Net","attr":"networkId"},"networkZone":"eu-central"}`, ""},
		{`{"name":"lb","loadBalancerType":"lb11","location":"nbg1","networkId":"7","algorithm":{"type":"least_connections"},"publicInterface":false}`, ""},
		{`{"name":"lb","loadBalancerType":"lb11"}`, "location: give location or networkZone: Hetzner needs one to place the load balancer"},
		{`{"name":"lb","loadBalancerType":"lb41","networkZone":"eu-west"}`, "loadBalancerType: must be one of lb11, lb21, lb31, got \"lb41\"\nnetworkZone: must be one of eu-central, us-east, us-west, ap-southeast, got \"eu-west\""},
		{`{"name":"lb","loadBalancerType":"lb11","location":"nbg1","algorithm":{"kind":"x"}}`, "algorithm.kind: unknown key; algorithm is {type: round_robin or least_connections}\nalgorithm.type: is required: round_robin or least_connections"},
		{`{"name":"lb","loadBalancerType":"lb11","location":"nbg1","algorithm":{"type":"random"}}`, "algorithm.type: must be round_robin or least_connections, got random"},
		{`{"name":"lb","loadBalancerType":"lb11","location":"nbg1","services":[]}`, "services: unknown property \"services\"; Hetzner::Compute::LoadBalancer has algorithm, labels, loadBalancerType, location, name, networkId, networkZone, publicInterface"},
	} {
		if got := validation(t, hcloud.TypeLoadBalancer, tc.props); got != tc.want {
			t.Errorf("Validate(%s) = %q, want %q", tc.props, got, tc.want)
		}
	}
}
