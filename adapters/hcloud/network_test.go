package hcloud_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/adapters/hcloud"
	"github.com/cdkx-dev/cdkx/adapters/internal/adaptertest"
	"github.com/cdkx-dev/cdkx/adapters/internal/scripted"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

const networkJSON = `{"network":{"id":7,"name":"net","ip_range":"10.0.0.0/16","labels":{"env":"prod"},"expose_routes_to_vswitch":false,"subnets":[],"routes":[]}}`

func TestNetworkRequests(t *testing.T) {
	t.Parallel()
	props := adaptertest.Props(t, `{"name":"net","ipRange":"10.0.0.0/16","labels":{"env":"prod"}}`)
	wantOut := adaptertest.Props(t, `{"networkId":7,"name":"net","ipRange":"10.0.0.0/16","labels":{"env":"prod"},"exposeRoutesToVswitch":false}`)
	t.Run("create", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "POST", Path: "/v1/networks",
			Body: `{"name":"net","ip_range":"10.0.0.0/16","labels":{"env":"prod"}}`, Status: 201, JSON: networkJSON})
		got, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeNetwork, Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(resource.CreateResult{PhysicalID: "7", Outputs: wantOut}, got); diff != "" {
			t.Errorf("create (-want +got):\n%s", diff)
		}
	})
	t.Run("create exists", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "POST", Path: "/v1/networks",
			Body: `{"name":"net","ip_range":"10.0.0.0/16","labels":{"env":"prod"}}`, Status: 409,
			JSON: `{"error":{"code":"uniqueness_error","message":"network name is already used","details":{}}}`})
		_, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeNetwork, Properties: props})
		if !errors.Is(err, resource.ErrAlreadyExists) || !strings.Contains(err.Error(), "import it") {
			t.Errorf("create of an existing network = %v, want ErrAlreadyExists with advice", err)
		}
	})
	t.Run("read", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/networks/7", Status: 200, JSON: networkJSON})
		got, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeNetwork, PhysicalID: "7", Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(resource.ReadResult{Properties: props, Outputs: wantOut}, got); diff != "" {
			t.Errorf("read (-want +got):\n%s", diff)
		}
	})
	t.Run("read gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/networks/7", Status: 404,
			JSON: `{"error":{"code":"not_found","message":"network with ID '7' not found","details":{}}}`})
		_, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeNetwork, PhysicalID: "7"})
		if !errors.Is(err, resource.ErrNotFound) {
			t.Errorf("read of a gone network = %v, want ErrNotFound", err)
		}
	})
	t.Run("update", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "PUT", Path: "/v1/networks/7",
			Body: `{"name":"net2","labels":{}}`, Status: 200, JSON: networkJSON})
		newProps := adaptertest.Props(t, `{"name":"net2","ipRange":"10.0.0.0/16"}`)
		if _, err := p.Update(ctx(t), resource.UpdateRequest{Type: hcloud.TypeNetwork, PhysicalID: "7", Old: props, New: newProps,
			Changed: []string{"labels", "name"}}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("delete", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "DELETE", Path: "/v1/networks/7", Status: 204})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeNetwork, PhysicalID: "7"}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("delete gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "DELETE", Path: "/v1/networks/7", Status: 404,
			JSON: `{"error":{"code":"not_found","message":"not found","details":{}}}`})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeNetwork, PhysicalID: "7"}); err != nil {
			t.Errorf("delete of a gone network = %v, want nil", err)
		}
	})
	t.Run("locate", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/networks", Query: "name=net", Status: 200,
			JSON: `{"networks":[` + strings.TrimSuffix(strings.TrimPrefix(networkJSON, `{"network":`), "}") + `],"meta":{"pagination":{"page":1,"per_page":25,"previous_page":null,"next_page":null,"last_page":1,"total_entries":1}}}`})
		id, err := p.Locate(ctx(t), resource.CreateRequest{Type: hcloud.TypeNetwork, Properties: props})
		if err != nil || id != "7" {
			t.Errorf("locate = %q, %v; want 7", id, err)
		}
	})
	_ = http.MethodGet
}

func TestNetworkCheck(t *testing.T) {
	t.Parallel()
	s, _ := (&hcloud.Provider{}).Info().Schemas, 0
	var schema resource.Schema
	for _, x := range s {
		if x.Type == hcloud.TypeNetwork {
			schema = x
		}
	}
	for _, tc := range []struct{ props, want string }{
		{`{"name":"n","ipRange":"10.0.0.0/16"}`, ""},
		{`{"name":"n","ipRange":"10.0.0.0/25"}`, "ipRange: \"10.0.0.0/25\" is smaller than /24, the smallest network Hetzner accepts"},
		{`{"name":"n","ipRange":"8.8.0.0/16"}`, "ipRange: \"8.8.0.0/16\" is not a private IPv4 range (RFC 1918: 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16)"},
		{`{"name":"n","ipRange":"10.0.0.1/16"}`, "ipRange: \"10.0.0.1/16\" has host bits set; Hetzner wants the network address, 10.0.0.0/16"},
		{`{"name":"n","ipRange":"10.0.0.0/16","labels":{"a":1}}`, "labels.a: must be a string (Hetzner labels map strings to strings), got 1"},
	} {
		var got []string
		for _, e := range schema.Validate(adaptertest.Props(t, tc.props), adaptertest.IsToken) {
			got = append(got, e.Path+": "+e.Message)
		}
		if strings.Join(got, "\n") != tc.want {
			t.Errorf("Validate(%s) = %q, want %q", tc.props, got, tc.want)
		}
	}
}
