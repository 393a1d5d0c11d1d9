package hcloud_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/adapters/hcloud"
	"github.com/cdkx-dev/cdkx/adapters/internal/adaptertest"
	"github.com/cdkx-dev/cdkx/adapters/internal/scripted"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// actionObj is an action object with the given ID, command and status.
func actionObj(id int, command, status string) string {
	e := "null"
	if status == "error" {
		e = `{"code":"action_failed","message":"it broke"}`
	}
	return fmt.Sprintf(`{"id":%d,"command":%q,"status":%q,"progress":0,"started":"2026-01-01T00:00:00Z","finished":null,"resources":[],"error":%s}`,
		id, command, status, e)
}

// startedAction is the answer of an action endpoint: {"action": …running}.
func startedAction(id int, command string) string {
	return `{"action":` + actionObj(id, command, "running") + `}`
}

// pollsOf are the polls of a running action: running once, then status.
func pollsOf(id int, command, status string) []scripted.Exchange {
	path := fmt.Sprintf("/v1/actions/%d", id)
	return []scripted.Exchange{
		{Method: "GET", Path: path, Status: 200, JSON: `{"action":` + actionObj(id, command, "running") + `}`},
		{Method: "GET", Path: path, Status: 200, JSON: `{"action":` + actionObj(id, command, status) + `}`},
	}
}

// steps joins exchanges and lists of them into one script.
func steps(parts ...any) []scripted.Exchange {
	var out []scripted.Exchange
	for _, p := range parts {
		switch p := p.(type) {
		case scripted.Exchange:
			out = append(out, p)
		case []scripted.Exchange:
			out = append(out, p...)
		default:
			panic(fmt.Sprintf("steps: %T", p))
		}
	}
	return out
}

// declaredSchema is the schema of typ as the provider declares it.
func declaredSchema(t *testing.T, typ string) resource.Schema {
	t.Helper()
	for _, s := range (&hcloud.Provider{}).Info().Schemas {
		if s.Type == typ {
			return s
		}
	}
	t.Fatalf("no schema for %s", typ)
	return resource.Schema{}
}

// validateCases runs the schema's validation of each case's props and compares the "path: message" lines.
func validateCases(t *testing.T, typ string, cases []struct{ props, want string }) {
	t.Helper()
	schema := declaredSchema(t, typ)
	for _, tc := range cases {
		var got []string
		for _, e := range schema.Validate(adaptertest.Props(t, tc.props), adaptertest.IsToken) {
			got = append(got, e.Path+": "+e.Message)
		}
		if strings.Join(got, "\n") != tc.want {
			t.Errorf("Validate(%s) =\n%s\nwant\n%s", tc.props, strings.Join(got, "\n"), tc.want)
		}
	}
}

const errNotFoundBody = `{"error":{"code":"not_found","message":"not found","details":{}}}`

func netWithSubnets(subnets string) string {
	return `{"network":{"id":7,"name":"net","ip_range":"10.0.0.0/16","labels":{},"subnets":[` + subnets + `],"routes":[]}}`
}

const subnet1 = `{"type":"cloud","ip_range":"10.0.1.0/24","network_zone":"eu-central","gateway":"10.0.0.1","vswitch_id":null}`

func TestSubnetRequests(t *testing.T) {
	t.Parallel()
	props := adaptertest.Props(t, `{"networkId":7,"type":"cloud","networkZone":"eu-central","ipRange":"10.0.1.0/24"}`)
	wantOut := adaptertest.Props(t, `{"physicalId":"7/10.0.1.0/24","networkId":7,"type":"cloud","networkZone":"eu-central","ipRange":"10.0.1.0/24","gateway":"10.0.0.1"}`)
	t.Run("create", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, steps(
			scripted.Exchange{Method: "POST", Path: "/v1/networks/7/actions/add_subnet",
				Body: `{"type":"cloud","network_zone":"eu-central","ip_range":"10.0.1.0/24"}`, Status: 201, JSON: startedAction(11, "add_subnet")},
			pollsOf(11, "add_subnet", "success"),
			scripted.Exchange{Method: "GET", Path: "/v1/networks/7", Status: 200, JSON: netWithSubnets(subnet1)},
		)...)
		got, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeSubnet, Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(resource.CreateResult{PhysicalID: "7/10.0.1.0/24", Outputs: wantOut}, got); diff != "" {
			t.Errorf("create (-want +got):\n%s", diff)
		}
	})
	t.Run("create with defaults and no range", func(t *testing.T) {
		t.Parallel()
		other := `{"type":"cloud","ip_range":"10.0.0.0/24","network_zone":"eu-central","gateway":"10.0.0.1"}`
		p, _ := scriptedProvider(t, steps(
			scripted.Exchange{Method: "GET", Path: "/v1/networks/7", Status: 200, JSON: netWithSubnets(other)},
			scripted.Exchange{Method: "POST", Path: "/v1/networks/7/actions/add_subnet",
				Body: `{"type":"cloud","network_zone":"eu-central"}`, Status: 201, JSON: startedAction(11, "add_subnet")},
			pollsOf(11, "add_subnet", "success"),
			scripted.Exchange{Method: "GET", Path: "/v1/networks/7", Status: 200, JSON: netWithSubnets(other + "," + subnet1)},
		)...)
		got, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeSubnet, Properties: adaptertest.Props(t, `{"networkId":"7"}`)})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(resource.CreateResult{PhysicalID: "7/10.0.1.0/24", Outputs: wantOut}, got); diff != "" {
			t.Errorf("create (-want +got):\n%s", diff)
		}
	})
	t.Run("create vswitch", func(t *testing.T) {
		t.Parallel()
		vs := `{"type":"vswitch","ip_range":"10.0.2.0/24","network_zone":"eu-central","gateway":"10.0.0.1","vswitch_id":1000}`
		p, _ := scriptedProvider(t, steps(
			scripted.Exchange{Method: "POST", Path: "/v1/networks/7/actions/add_subnet",
				Body: `{"type":"vswitch","network_zone":"eu-central","ip_range":"10.0.2.0/24","vswitch_id":1000}`, Status: 201, JSON: startedAction(11, "add_subnet")},
			pollsOf(11, "add_subnet", "success"),
			scripted.Exchange{Method: "GET", Path: "/v1/networks/7", Status: 200, JSON: netWithSubnets(subnet1 + "," + vs)},
		)...)
		got, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeSubnet,
			Properties: adaptertest.Props(t, `{"networkId":7,"type":"vswitch","networkZone":"eu-central","ipRange":"10.0.2.0/24","vswitchId":1000}`)})
		if err != nil {
			t.Fatal(err)
		}
		if got.Outputs["vswitchId"] != adaptertest.Props(t, `{"x":1000}`)["x"] || got.PhysicalID != "7/10.0.2.0/24" {
			t.Errorf("create vswitch = %v", got)
		}
	})
	t.Run("create action fails", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, steps(
			scripted.Exchange{Method: "POST", Path: "/v1/networks/7/actions/add_subnet",
				Body: `{"type":"cloud","network_zone":"eu-central","ip_range":"10.0.1.0/24"}`, Status: 201, JSON: startedAction(11, "add_subnet")},
			pollsOf(11, "add_subnet", "error"),
		)...)
		_, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeSubnet, Properties: props})
		var ae *hcloud.ActionError
		if !errors.As(err, &ae) || ae.Code != "action_failed" {
			t.Errorf("create = %v, want *ActionError", err)
		}
	})
	t.Run("read", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/networks/7", Status: 200, JSON: netWithSubnets(subnet1)})
		got, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeSubnet, PhysicalID: "7/10.0.1.0/24", Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(resource.ReadResult{Properties: props, Outputs: wantOut}, got); diff != "" {
			t.Errorf("read (-want +got):\n%s", diff)
		}
	})
	t.Run("read subnet gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/networks/7", Status: 200, JSON: netWithSubnets("")})
		_, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeSubnet, PhysicalID: "7/10.0.1.0/24", Properties: props})
		if !errors.Is(err, resource.ErrNotFound) {
			t.Errorf("read = %v, want ErrNotFound", err)
		}
	})
	t.Run("read network gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/networks/7", Status: 404, JSON: errNotFoundBody})
		_, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeSubnet, PhysicalID: "7/10.0.1.0/24", Properties: props})
		if !errors.Is(err, resource.ErrNotFound) {
			t.Errorf("read = %v, want ErrNotFound", err)
		}
	})
	t.Run("update", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t)
		_, err := p.Update(ctx(t), resource.UpdateRequest{Type: hcloud.TypeSubnet, PhysicalID: "7/10.0.1.0/24", Old: props, New: props, Changed: []string{"ipRange"}})
		if err == nil {
			t.Error("update succeeded, want an error: every property is create-only")
		}
	})
	t.Run("delete", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, steps(
			scripted.Exchange{Method: "POST", Path: "/v1/networks/7/actions/delete_subnet", Body: `{"ip_range":"10.0.1.0/24"}`,
				Status: 201, JSON: startedAction(12, "delete_subnet")},
			pollsOf(12, "delete_subnet", "success"),
		)...)
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeSubnet, PhysicalID: "7/10.0.1.0/24"}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("delete network gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "POST", Path: "/v1/networks/7/actions/delete_subnet", Body: `{"ip_range":"10.0.1.0/24"}`,
			Status: 404, JSON: errNotFoundBody})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeSubnet, PhysicalID: "7/10.0.1.0/24"}); err != nil {
			t.Errorf("delete = %v, want nil", err)
		}
	})
	t.Run("delete subnet gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "POST", Path: "/v1/networks/7/actions/delete_subnet", Body: `{"ip_range":"10.0.1.0/24"}`,
				Status: 422, JSON: `{"error":{"code":"invalid_input","message":"subnet not found","details":{}}}`},
			scripted.Exchange{Method: "GET", Path: "/v1/networks/7", Status: 200, JSON: netWithSubnets("")})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeSubnet, PhysicalID: "7/10.0.1.0/24"}); err != nil {
			t.Errorf("delete = %v, want nil", err)
		}
	})
	t.Run("delete in use", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "POST", Path: "/v1/networks/7/actions/delete_subnet", Body: `{"ip_range":"10.0.1.0/24"}`,
				Status: 422, JSON: `{"error":{"code":"service_error","message":"subnet has attached resources","details":{}}}`},
			scripted.Exchange{Method: "GET", Path: "/v1/networks/7", Status: 200, JSON: netWithSubnets(subnet1)})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeSubnet, PhysicalID: "7/10.0.1.0/24"}); err == nil || !strings.Contains(err.Error(), "attached") {
			t.Errorf("delete = %v, want the API's error", err)
		}
	})
	t.Run("locate", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/networks/7", Status: 200, JSON: netWithSubnets(subnet1)})
		id, err := p.Locate(ctx(t), resource.CreateRequest{Type: hcloud.TypeSubnet, Properties: props})
		if err != nil || id != "7/10.0.1.0/24" {
			t.Errorf("locate = %q, %v; want 7/10.0.1.0/24", id, err)
		}
	})
	t.Run("locate not found", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/networks/7", Status: 200, JSON: netWithSubnets("")})
		if _, err := p.Locate(ctx(t), resource.CreateRequest{Type: hcloud.TypeSubnet, Properties: props}); !errors.Is(err, resource.ErrNotFound) {
			t.Errorf("locate = %v, want ErrNotFound", err)
		}
	})
	t.Run("locate ambiguous", func(t *testing.T) {
		t.Parallel()
		two := subnet1 + `,{"type":"cloud","ip_range":"10.0.2.0/24","network_zone":"eu-central","gateway":"10.0.0.1"}`
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/networks/7", Status: 200, JSON: netWithSubnets(two)})
		if _, err := p.Locate(ctx(t), resource.CreateRequest{Type: hcloud.TypeSubnet, Properties: adaptertest.Props(t, `{"networkId":7}`)}); !errors.Is(err, resource.ErrCannotLocate) {
			t.Errorf("locate = %v, want ErrCannotLocate", err)
		}
	})
}

func TestSubnetCheck(t *testing.T) {
	t.Parallel()
	validateCases(t, hcloud.TypeSubnet, []struct{ props, want string }{
		{`{"networkId":7,"type":"cloud","networkZone":"eu-central","ipRange":"10.0.1.0/24"}`, ""},
		{`{"networkId":{"ref":"Net","attr":"networkId"},"ipRange":"10.0.1.0/24"}`, ""},
		{`{"networkId":"7"}`, ""},
		{`{"networkId":7,"ipRange":"10.0.1.0/28"}`, ""},
		{`{"networkId":7,"ipRange":"10.0.1.1/24"}`, "ipRange: \"10.0.1.1/24\" has host bits set; Hetzner wants the network address, 10.0.1.0/24"},
		{`{"networkId":7,"ipRange":"fd00::/64"}`, "ipRange: \"fd00::/64\" is not an IPv4 range; Hetzner networks are IPv4 only"},
		{`{"networkId":7,"type":"vswitch"}`, "vswitchId: required for a subnet of type vswitch: give the ID of the Robot vSwitch to connect"},
		{`{"networkId":7,"type":"lan","networkZone":"mars"}`, "networkZone: must be one of eu-central, us-east, us-west, ap-southeast, got \"mars\"\ntype: must be one of cloud, server, vswitch, got \"lan\""},
		{`{"networkId":"x"}`, "networkId: must be a positive integer ID, got \"x\""},
		{`{}`, "networkId: required property \"networkId\" is missing"},
	})
	s := declaredSchema(t, hcloud.TypeSubnet)
	if s.Properties["type"].Default != "cloud" || s.Properties["networkZone"].Default != "eu-central" {
		t.Errorf("defaults = %v, %v; want cloud, eu-central", s.Properties["type"].Default, s.Properties["networkZone"].Default)
	}
}
