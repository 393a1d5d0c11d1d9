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
	tcpServiceJSON = `{"protocol":"tcp","listen_port":80,"destination_port":80,"proxyprotocol":false,` +
		`"health_check":{"protocol":"tcp","port":80,"interval":15,"timeout":10,"retries":3},"http":null}`
	httpsServiceJSON = `{"protocol":"https","listen_port":443,"destination_port":8080,"proxyprotocol":false,` +
		`"health_check":{"protocol":"http","port":8080,"interval":5,"timeout":3,"retries":2,"http":{"domain":null,"path":"/health","response":"","status_codes":["2??"],"tls":false}},` +
		`"http":{"cookie_name":"HCLBSTICKY","cookie_lifetime":300,"certificates":[31],"redirect_http":true,"sticky_sessions":false}}`
)

func TestLBServiceRequests(t *testing.T) {
	t.Parallel()
	// The e2e assembly's service.
	props := adaptertest.Props(t, `{"loadBalancerId":"21","listenPort":80,"protocol":"tcp","destinationPort":80,"proxyprotocol":false}`)
	wantOut := adaptertest.Props(t, `{"physicalId":"21/80","loadBalancerId":21,"listenPort":80}`)
	tcpBody := `{"protocol":"tcp","listen_port":80,"destination_port":80,"proxyprotocol":false,"health_check":{"protocol":"tcp","port":80,"interval":15,"timeout":10,"retries":3}}`
	t.Run("create", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "POST", Path: "/v1/load_balancers/21/actions/add_service", Body: tcpBody, Status: 201,
				JSON: `{"action":` + actJSON(6, "add_service", "running") + `}`},
			pollAction(6, "add_service", "success"))
		got, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeLoadBalancerService, Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(resource.CreateResult{PhysicalID: "21/80", Outputs: wantOut}, got); diff != "" {
			t.Errorf("create (-want +got):\n%s", diff)
		}
	})
	t.Run("create fills the defaults", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "POST", Path: "/v1/load_balancers/21/actions/add_service", Body: tcpBody, Status: 201,
				JSON: `{"action":` + actJSON(6, "add_service", "success") + `}`})
		if _, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeLoadBalancerService,
			Properties: adaptertest.Props(t, `{"loadBalancerId":21,"listenPort":80}`)}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("create https with every field", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "POST", Path: "/v1/load_balancers/21/actions/add_service", Status: 201,
				Body: `{"protocol":"https","listen_port":443,"destination_port":8080,"proxyprotocol":true,
					"health_check":{"protocol":"http","port":8080,"interval":5,"timeout":3,"retries":2,"http":{"domain":null,"path":"/health","status_codes":["2??"],"tls":false}},
					"http":{"cookie_name":"SID","cookie_lifetime":60,"certificates":[31],"redirect_http":true,"sticky_sessions":true}}`,
				JSON: `{"action":` + actJSON(6, "add_service", "success") + `}`})
		if _, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeLoadBalancerService, Properties: adaptertest.Props(t,
			`{"loadBalancerId":21,"listenPort":443,"protocol":"https","destinationPort":8080,"proxyprotocol":true,
			"healthCheck":{"protocol":"http","port":8080,"interval":5,"timeout":3,"retries":2,"http":{"path":"/health","statusCodes":["2??"],"tls":false}},
			"http":{"cookieName":"SID","cookieLifetime":60,"certificates":["31"],"redirectHttp":true,"stickySessions":true}}`)}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("create http defaults an http health check", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "POST", Path: "/v1/load_balancers/21/actions/add_service", Status: 201,
				Body: `{"protocol":"http","listen_port":80,"destination_port":80,"proxyprotocol":false,
					"health_check":{"protocol":"http","port":80,"interval":15,"timeout":10,"retries":3,"http":{"domain":null,"path":"/"}}}`,
				JSON: `{"action":` + actJSON(6, "add_service", "success") + `}`})
		if _, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeLoadBalancerService,
			Properties: adaptertest.Props(t, `{"loadBalancerId":21,"listenPort":80,"protocol":"http"}`)}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("create port taken", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "POST", Path: "/v1/load_balancers/21/actions/add_service", Body: tcpBody, Status: 412,
				JSON: `{"error":{"code":"source_port_already_used","message":"source port 80 is already used","details":{}}}`})
		_, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeLoadBalancerService, Properties: props})
		if pe := adaptertest.ProviderError(t, err); pe.Status != 412 {
			t.Errorf("create on a used port: status %d, want 412", pe.Status)
		}
	})
	t.Run("read", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/load_balancers/21", Status: 200,
			JSON: `{"load_balancer":` + lbJSON(tcpServiceJSON+","+httpsServiceJSON, "") + `}`})
		got, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeLoadBalancerService, PhysicalID: "21/80", Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(resource.ReadResult{Properties: props, Outputs: wantOut}, got); diff != "" {
			t.Errorf("read (-want +got):\n%s", diff)
		}
	})
	t.Run("read shows what was given", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/load_balancers/21", Status: 200,
			JSON: `{"load_balancer":` + lbJSON(tcpServiceJSON+","+httpsServiceJSON, "") + `}`})
		in := adaptertest.Props(t, `{"loadBalancerId":21,"listenPort":443,"protocol":"https",
			"healthCheck":{"protocol":"http","port":8080,"interval":5,"timeout":3,"retries":2,"http":{"path":"/"}},"http":{"certificates":[31]}}`)
		got, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeLoadBalancerService, PhysicalID: "21/443", Properties: in})
		if err != nil {
			t.Fatal(err)
		}
		want := adaptertest.Props(t, `{"loadBalancerId":21,"listenPort":443,"protocol":"https","destinationPort":8080,
			"healthCheck":{"protocol":"http","port":8080,"interval":5,"timeout":3,"retries":2,"http":{"path":"/health"}},"http":{"certificates":[31]}}`)
		if diff := cmp.Diff(want, got.Properties); diff != "" {
			t.Errorf("read properties (-want +got):\n%s", diff)
		}
	})
	t.Run("read gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/load_balancers/21", Status: 200,
			JSON: `{"load_balancer":` + lbJSON(httpsServiceJSON, "") + `}`})
		if _, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeLoadBalancerService, PhysicalID: "21/80", Properties: props}); !errors.Is(err, resource.ErrNotFound) {
			t.Errorf("read of a gone service = %v, want ErrNotFound", err)
		}
	})
	t.Run("read load balancer gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/load_balancers/21", Status: 404, JSON: notFoundJSON})
		if _, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeLoadBalancerService, PhysicalID: "21/80", Properties: props}); !errors.Is(err, resource.ErrNotFound) {
			t.Errorf("read of a service of a gone load balancer = %v, want ErrNotFound", err)
		}
	})
	t.Run("update", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "POST", Path: "/v1/load_balancers/21/actions/update_service", Status: 201,
				Body: `{"protocol":"tcp","listen_port":80,"destination_port":8080,"proxyprotocol":true,"health_check":{"protocol":"tcp","port":8080,"interval":15,"timeout":10,"retries":3}}`,
				JSON: `{"action":` + actJSON(7, "update_service", "running") + `}`},
			pollAction(7, "update_service", "success"))
		newProps := adaptertest.Props(t, `{"loadBalancerId":"21","listenPort":80,"protocol":"tcp","destinationPort":8080,"proxyprotocol":true}`)
		got, err := p.Update(ctx(t), resource.UpdateRequest{Type: hcloud.TypeLoadBalancerService, PhysicalID: "21/80", Old: props, New: newProps,
			Changed: []string{"destinationPort", "proxyprotocol"}})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(wantOut, got.Outputs); diff != "" {
			t.Errorf("update outputs (-want +got):\n%s", diff)
		}
	})
	t.Run("delete", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "POST", Path: "/v1/load_balancers/21/actions/delete_service", Body: `{"listen_port":80}`, Status: 201,
				JSON: `{"action":` + actJSON(8, "delete_service", "running") + `}`},
			pollAction(8, "delete_service", "success"))
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeLoadBalancerService, PhysicalID: "21/80"}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("delete gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "POST", Path: "/v1/load_balancers/21/actions/delete_service", Body: `{"listen_port":80}`, Status: 422,
				JSON: `{"error":{"code":"invalid_input","message":"invalid input in field 'listen_port'","details":{"fields":[{"name":"listen_port","messages":["service not found"]}]}}}`},
			scripted.Exchange{Method: "GET", Path: "/v1/load_balancers/21", Status: 200, JSON: `{"load_balancer":` + lbJSON(httpsServiceJSON, "") + `}`})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeLoadBalancerService, PhysicalID: "21/80"}); err != nil {
			t.Errorf("delete of a gone service = %v, want nil", err)
		}
	})
	t.Run("delete load balancer gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "POST", Path: "/v1/load_balancers/21/actions/delete_service", Body: `{"listen_port":80}`, Status: 404, JSON: notFoundJSON})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeLoadBalancerService, PhysicalID: "21/80"}); err != nil {
			t.Errorf("delete of a gone load balancer's service = %v, want nil", err)
		}
	})
	t.Run("locate", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/load_balancers/21", Status: 200,
			JSON: `{"load_balancer":` + lbJSON(tcpServiceJSON, "") + `}`})
		if id, err := p.Locate(ctx(t), resource.CreateRequest{Type: hcloud.TypeLoadBalancerService, Properties: props}); err != nil || id != "21/80" {
			t.Errorf("locate = %q, %v; want 21/80", id, err)
		}
	})
	t.Run("locate none", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/load_balancers/21", Status: 200,
			JSON: `{"load_balancer":` + lbJSON("", "") + `}`})
		if _, err := p.Locate(ctx(t), resource.CreateRequest{Type: hcloud.TypeLoadBalancerService, Properties: props}); !errors.Is(err, resource.ErrNotFound) {
			t.Errorf("locate of no service = %v, want ErrNotFound", err)
		}
	})
}

func TestLBServiceSchema(t *testing.T) {
	t.Parallel()
	s := typeSchema(t, hcloud.TypeLoadBalancerService)
	if diff := cmp.Diff([]string{"listenPort", "loadBalancerId"}, s.CreateOnly()); diff != "" {
		t.Errorf("create-only (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]resource.SerialKey{{Group: "load-balancer", Property: "loadBalancerId"}}, s.Serialize); diff != "" {
		t.Errorf("serialize (-want +got):\n%s", diff)
	}
}

func TestLBServiceCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ props, want string }{
		{`{"loadBalancerId":{"ref":"LB","attr":"loadBalancerId"},"listenPort":80,"protocol":"tcp","destinationPort":80,"proxyprotocol":false}`, ""},
		{`{"loadBalancerId":21,"listenPort":80,"protocol":"http","healthCheck":{"protocol":"http","port":80,"interval":15,"timeout":10,"retries":3,"http":{"path":"/"}},"http":{"stickySessions":true}}`, ""},
		{`{"loadBalancerId":21,"listenPort":443,"protocol":"https","http":{"certificates":[{"ref":"Cert","attr":"certificateId"}]}}`, ""},
		{`{"loadBalancerId":21,"listenPort":0,"destinationPort":70000}`, "destinationPort: must be a port, 1–65535, got 70000\nlistenPort: must be a port, 1–65535, got 0"},
		{`{"loadBalancerId":21,"listenPort":443,"protocol":"https"}`, "http.certificates: an https service needs at least one certificate (a Certificate's certificateId)"},
		{`{"loadBalancerId":21,"listenPort":80,"http":{"stickySessions":true}}`, "http: applies to http and https services only; Hetzner rejects it for tcp"},
		{`{"loadBalancerId":21,"listenPort":80,"protocol":"udp"}`, "protocol: must be one of tcp, http, https, got \"udp\""},
		{`{"loadBalancerId":21,"listenPort":80,"healthCheck":{"protocol":"icmp","port":99999,"retries":-1,"path":"/","http":{"domain":"x"}}}`,
			"healthCheck.http.path: is required: the path the health check requests, e.g. /\nhealthCheck.path: unknown key; healthCheck has protocol, port, interval, timeout, retries, http\n" +
				"healthCheck.port: must be a port, 1–65535, got 99999\nhealthCheck.protocol: must be tcp or http, got icmp\nhealthCheck.retries: must be a non-negative integer, got -1"},
		{`{"loadBalancerId":21,"listenPort":443,"protocol":"https","http":{"certificates":["x"],"cookie":"a"}}`,
			"http.certificates[0]: must be a positive integer ID, got \"x\"\nhttp.cookie: unknown key; http has cookieName, cookieLifetime, certificates, redirectHttp, stickySessions"},
		{`{"loadBalancerId":"lb","listenPort":80}`, "loadBalancerId: must be a positive integer ID, got \"lb\""},
	} {
		if got := validation(t, hcloud.TypeLoadBalancerService, tc.props); got != tc.want {
			t.Errorf("Validate(%s) = %q, want %q", tc.props, got, tc.want)
		}
	}
}
