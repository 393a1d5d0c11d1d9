package hcloud_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/adapters/hcloud"
	"github.com/cdkx-dev/cdkx/adapters/internal/adaptertest"
	"github.com/cdkx-dev/cdkx/adapters/internal/scripted"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// actJSON is an action object as the API returns it.
func actJSON(id int, command, status string) string {
	errPart := "null"
	if status == "error" {
		errPart = `{"code":"action_failed","message":"it broke"}`
	}
	return fmt.Sprintf(`{"id":%d,"command":%q,"status":%q,"progress":50,"started":"2026-01-01T00:00:00Z","finished":null,"resources":[],"error":%s}`,
		id, command, status, errPart)
}

// pollAction is the GET /v1/actions/{id} exchange answering the action with status.
func pollAction(id int, command, status string) scripted.Exchange {
	return scripted.Exchange{Method: "GET", Path: fmt.Sprintf("/v1/actions/%d", id), Status: 200,
		JSON: `{"action":` + actJSON(id, command, status) + `}`}
}

// listJSON wraps objects (JSON texts) as a list page of collection.
func listJSON(collection string, objs ...string) string {
	return `{"` + collection + `":[` + strings.Join(objs, ",") + `],"meta":{"pagination":{"page":1,"per_page":25,"previous_page":null,"next_page":null,"last_page":1,"total_entries":` +
		fmt.Sprint(len(objs)) + `}}}`
}

// typeSchema is the provider's schema of typ.
func typeSchema(t *testing.T, typ string) resource.Schema {
	t.Helper()
	for _, s := range (&hcloud.Provider{}).Info().Schemas {
		if s.Type == typ {
			return s
		}
	}
	t.Fatalf("no schema for %s", typ)
	return resource.Schema{}
}

// validation runs typ's schema validation on props and renders the errors as "path: message" lines.
func validation(t *testing.T, typ, props string) string {
	t.Helper()
	var got []string
	for _, e := range typeSchema(t, typ).Validate(adaptertest.Props(t, props), adaptertest.IsToken) {
		got = append(got, e.Path+": "+e.Message)
	}
	return strings.Join(got, "\n")
}

const notFoundJSON = `{"error":{"code":"not_found","message":"not found","details":{}}}`

func serverJSON(status string) string {
	return `{"id":42,"name":"web","status":"` + status + `","labels":{"env":"prod"},"location":{"id":2,"name":"nbg1"},` +
		`"datacenter":{"id":3,"name":"nbg1-dc3","location":{"id":2,"name":"nbg1"}},"server_type":{"id":1,"name":"cax11"},` +
		`"image":{"id":5,"name":"ubuntu-22.04"},"placement_group":{"id":9,"name":"pg","type":"spread","servers":[42]},` +
		`"public_net":{"ipv4":{"id":1,"ip":"1.2.3.4","blocked":false,"dns_ptr":"x"},"ipv6":null,"floating_ips":[],"firewalls":[]},` +
		`"private_net":[],"volumes":[],"load_balancers":[]}`
}

func TestServerRequests(t *testing.T) {
	t.Parallel()
	props := adaptertest.Props(t, `{"name":"web","location":"nbg1","serverType":"cax11","image":"ubuntu-22.04",
		"placementGroupId":9,"sshKeys":["e2e-ssh-key",17],"networks":["7"],"volumes":[8],"firewalls":[{"firewall":"3"}],
		"userData":"#cloud-config\n","automount":false,"labels":{"env":"prod"},
		"publicNet":{"enableIpv4":true,"enableIpv6":false,"ipv4":1}}`)
	wantBody := `{"name":"web","location":"nbg1","server_type":"cax11","image":"ubuntu-22.04","placement_group":9,
		"ssh_keys":["e2e-ssh-key","17"],"networks":[7],"volumes":[8],"firewalls":[{"firewall":3}],"user_data":"#cloud-config\n",
		"automount":false,"labels":{"env":"prod"},"public_net":{"enable_ipv4":true,"enable_ipv6":false,"ipv4":1}}`
	wantOut := adaptertest.Props(t, `{"serverId":42,"name":"web","labels":{"env":"prod"},"location":"nbg1","serverType":"cax11",
		"image":"ubuntu-22.04","placementGroupId":9,"sshKeys":["e2e-ssh-key",17],"networks":["7"],"volumes":[8],
		"firewalls":[{"firewall":"3"}],"userData":"#cloud-config\n","automount":false,
		"publicNet":{"enableIpv4":true,"enableIpv6":false,"ipv4":1}}`)
	created := func(action, next string) string {
		return `{"server":` + serverJSON("initializing") + `,"action":` + action + `,"next_actions":[` + next + `],"root_password":"s3cret-root"}`
	}
	t.Run("create", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "POST", Path: "/v1/servers", Body: wantBody, Status: 201,
				JSON: created(actJSON(1, "create_server", "running"), actJSON(2, "start_server", "success"))},
			pollAction(1, "create_server", "running"),
			pollAction(1, "create_server", "success"))
		got, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeServer, Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(resource.CreateResult{PhysicalID: "42", Outputs: wantOut}, got); diff != "" {
			t.Errorf("create (-want +got):\n%s", diff)
		}
		if strings.Contains(fmt.Sprint(got), "s3cret-root") {
			t.Errorf("create result holds the root password: %v", got)
		}
	})
	t.Run("create waits for next actions", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "POST", Path: "/v1/servers", Body: `{"name":"web","server_type":"cax11","image":"ubuntu-22.04","labels":{}}`, Status: 201,
				JSON: created(actJSON(1, "create_server", "success"), actJSON(2, "start_server", "running"))},
			pollAction(2, "start_server", "success"))
		if _, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeServer,
			Properties: adaptertest.Props(t, `{"name":"web","serverType":"cax11","image":"ubuntu-22.04"}`)}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("create stopped", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "POST", Path: "/v1/servers", Body: `{"name":"web","server_type":"cax11","image":"ubuntu-22.04","labels":{},"start_after_create":false}`, Status: 201,
				JSON: created(actJSON(1, "create_server", "running"), "")},
			pollAction(1, "create_server", "success"))
		got, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeServer,
			Properties: adaptertest.Props(t, `{"name":"web","serverType":"cax11","image":"ubuntu-22.04","startAfterCreate":false}`)})
		if err != nil {
			t.Fatal(err)
		}
		if got.Outputs["startAfterCreate"] != false {
			t.Errorf("outputs = %v, want startAfterCreate false echoed", got.Outputs)
		}
	})
	t.Run("create action fails", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "POST", Path: "/v1/servers", Body: `{"name":"web","server_type":"cax11","image":"ubuntu-22.04","labels":{}}`, Status: 201,
				JSON: created(actJSON(1, "create_server", "running"), "")},
			pollAction(1, "create_server", "error"),
			scripted.Exchange{Method: "GET", Path: "/v1/servers/42", Status: 200, JSON: `{"server":` + serverJSON("off") + `}`})
		got, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeServer,
			Properties: adaptertest.Props(t, `{"name":"web","serverType":"cax11","image":"ubuntu-22.04"}`)})
		var ae *hcloud.ActionError
		if !errors.As(err, &ae) || ae.Code != "action_failed" || !strings.Contains(err.Error(), "ID 42") {
			t.Errorf("create with a failed action = %v, want *hcloud.ActionError naming the server", err)
		}
		if got.PhysicalID != "42" {
			t.Errorf("create with a failed action returned physical ID %q, want 42 (so that state keeps the object to delete)", got.PhysicalID)
		}
	})
	t.Run("create action fails and takes the server", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "POST", Path: "/v1/servers", Body: `{"name":"web","server_type":"cax11","image":"ubuntu-22.04","labels":{}}`, Status: 201,
				JSON: created(actJSON(1, "create_server", "running"), "")},
			pollAction(1, "create_server", "error"),
			scripted.Exchange{Method: "GET", Path: "/v1/servers/42", Status: 404, JSON: notFoundJSON})
		got, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeServer,
			Properties: adaptertest.Props(t, `{"name":"web","serverType":"cax11","image":"ubuntu-22.04"}`)})
		if err == nil || got.PhysicalID != "" {
			t.Errorf("create whose failed action removed the server = %q, %v; want an error and no physical ID", got.PhysicalID, err)
		}
	})
	t.Run("create exists", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "POST", Path: "/v1/servers",
			Body: `{"name":"web","server_type":"cax11","image":"ubuntu-22.04","labels":{}}`, Status: 409,
			JSON: `{"error":{"code":"uniqueness_error","message":"server name is already used","details":{}}}`})
		_, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeServer,
			Properties: adaptertest.Props(t, `{"name":"web","serverType":"cax11","image":"ubuntu-22.04"}`)})
		if !errors.Is(err, resource.ErrAlreadyExists) || !strings.Contains(err.Error(), "import it") {
			t.Errorf("create of an existing server = %v, want ErrAlreadyExists with advice", err)
		}
	})
	t.Run("read", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/servers/42", Status: 200, JSON: `{"server":` + serverJSON("running") + `}`})
		got, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeServer, PhysicalID: "42", Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(resource.ReadResult{Properties: props, Outputs: wantOut}, got); diff != "" {
			t.Errorf("read (-want +got):\n%s", diff)
		}
	})
	t.Run("read drift", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/servers/42", Status: 200,
			JSON: `{"server":` + strings.ReplaceAll(serverJSON("running"), `"cax11"`, `"cax21"`) + `}`})
		got, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeServer, PhysicalID: "42",
			Properties: adaptertest.Props(t, `{"name":"web","serverType":"cax11","image":"ubuntu-22.04"}`)})
		if err != nil {
			t.Fatal(err)
		}
		want := adaptertest.Props(t, `{"name":"web","serverType":"cax21","image":"ubuntu-22.04","placementGroupId":9,"labels":{"env":"prod"}}`)
		if diff := cmp.Diff(want, got.Properties); diff != "" {
			t.Errorf("read properties (-want +got):\n%s", diff)
		}
	})
	t.Run("read gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/servers/42", Status: 404, JSON: notFoundJSON})
		if _, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeServer, PhysicalID: "42", Properties: props}); !errors.Is(err, resource.ErrNotFound) {
			t.Errorf("read of a gone server = %v, want ErrNotFound", err)
		}
	})
	t.Run("update", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "PUT", Path: "/v1/servers/42",
			Body: `{"name":"web2","labels":{}}`, Status: 200, JSON: `{"server":` + strings.Replace(serverJSON("running"), `"web"`, `"web2"`, 1) + `}`})
		newProps := adaptertest.Props(t, `{"name":"web2","serverType":"cax11","image":"ubuntu-22.04"}`)
		got, err := p.Update(ctx(t), resource.UpdateRequest{Type: hcloud.TypeServer, PhysicalID: "42", Old: props, New: newProps,
			Changed: []string{"labels", "name"}})
		if err != nil {
			t.Fatal(err)
		}
		want := adaptertest.Props(t, `{"serverId":42,"name":"web2","labels":{"env":"prod"},"serverType":"cax11","image":"ubuntu-22.04"}`)
		if diff := cmp.Diff(want, got.Outputs); diff != "" {
			t.Errorf("update outputs (-want +got):\n%s", diff)
		}
	})
	t.Run("delete", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "DELETE", Path: "/v1/servers/42", Status: 200, JSON: `{"action":` + actJSON(5, "delete_server", "running") + `}`},
			pollAction(5, "delete_server", "running"),
			pollAction(5, "delete_server", "success"))
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeServer, PhysicalID: "42"}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("delete gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "DELETE", Path: "/v1/servers/42", Status: 404, JSON: notFoundJSON})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeServer, PhysicalID: "42"}); err != nil {
			t.Errorf("delete of a gone server = %v, want nil", err)
		}
	})
	t.Run("locate", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/servers", Query: "name=web", Status: 200,
			JSON: listJSON("servers", serverJSON("running"))})
		if id, err := p.Locate(ctx(t), resource.CreateRequest{Type: hcloud.TypeServer, Properties: props}); err != nil || id != "42" {
			t.Errorf("locate = %q, %v; want 42", id, err)
		}
	})
	t.Run("locate none", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/servers", Query: "name=web", Status: 200, JSON: listJSON("servers")})
		if _, err := p.Locate(ctx(t), resource.CreateRequest{Type: hcloud.TypeServer, Properties: props}); !errors.Is(err, resource.ErrNotFound) {
			t.Errorf("locate of no server = %v, want ErrNotFound", err)
		}
	})
}

func TestServerSchema(t *testing.T) {
	t.Parallel()
	s := typeSchema(t, hcloud.TypeServer)
	// serverType is missing: it changes in place (a resize).
	want := []string{"automount", "datacenter", "firewalls", "image", "location", "networks", "placementGroupId", "publicNet",
		"sshKeys", "startAfterCreate", "userData", "volumes"}
	if diff := cmp.Diff(want, s.CreateOnly()); diff != "" {
		t.Errorf("create-only (-want +got):\n%s", diff)
	}
	if !s.DeleteBeforeReplace || !cmp.Equal(s.Identity, []string{"name"}) {
		t.Errorf("DeleteBeforeReplace, Identity = %v, %v; want true, [name]", s.DeleteBeforeReplace, s.Identity)
	}
	if slices.Contains(s.StableOutputs, "serverType") {
		t.Errorf("StableOutputs %v hold serverType, which a resize changes", s.StableOutputs)
	}
	if diff := cmp.Diff([]resource.SerialKey{{Group: "server"}}, s.Serialize); diff != "" {
		t.Errorf("Serialize (-want +got):\n%s", diff)
	}
	if !strings.Contains(s.ReplaceNote, "disk") || !strings.Contains(s.Properties["serverType"].UpdateNote, "powered off") {
		t.Errorf("ReplaceNote %q, serverType UpdateNote %q; want the disk loss and the power-off named", s.ReplaceNote, s.Properties["serverType"].UpdateNote)
	}
}

func TestServerCheck(t *testing.T) {
	t.Parallel()
	const base = `"name":"web","serverType":"cax11","image":"ubuntu-22.04"`
	for _, tc := range []struct{ props, want string }{
		{`{` + base + `}`, ""},
		// The e2e assembly's server, tokens resolved later.
		{`{"name":"e2e-app-server","location":"nbg1","serverType":"cax11","image":"ubuntu-22.04","placementGroupId":{"ref":"PG","attr":"placementGroupId"},
			"sshKeys":[{"ref":"Key","attr":"name"}],"networks":[{"ref":"Net","attr":"networkId"}]}`, ""},
		{`{` + base + `,"sshKeys":["k",5,"6"],"networks":[1,"2"],"volumes":[3],"firewalls":[{"firewall":4},{"firewall":"5"},{"firewall":{"ref":"F","attr":"firewallId"}}],
			"publicNet":{"enableIpv4":false,"enableIpv6":true,"ipv6":{"ref":"P","attr":"primaryIpId"}}}`, ""},
		{`{"name":"web_1","serverType":"cx11","image":"x"}`, "name: \"web_1\" is not an RFC 1123 hostname (letters, digits and hyphens in dot-separated labels of at most 63 characters, no hyphen at either end), which Hetzner requires of server names\n" +
			"serverType: must be one of " + strings.Join([]string{"cx22", "cx32", "cx42", "cx52", "cx23", "cx33", "cx43", "cx53", "cpx11", "cpx21", "cpx31", "cpx41", "cpx51",
			"cpx12", "cpx22", "cpx32", "cpx42", "cpx52", "cpx62", "cax11", "cax21", "cax31", "cax41", "ccx13", "ccx23", "ccx33", "ccx43", "ccx53", "ccx63"}, ", ") + ", got \"cx11\""},
		{`{` + base + `,"location":"fra1"}`, "location: must be one of fsn1, nbg1, hel1, ash, hil, sin, got \"fra1\""},
		{`{` + base + `,"location":"nbg1","datacenter":"nbg1-dc3"}`, "datacenter: give location or datacenter, not both (Hetzner rejects both; datacenter is deprecated)"},
		{`{` + base + `,"userData":"` + strings.Repeat("x", 32*1024+1) + `"}`, "userData: is 32769 bytes; Hetzner accepts at most 32 KiB (32768 bytes)"},
		{`{` + base + `,"sshKeys":["",true]}`, "sshKeys[0]: is empty; give an SSH key's name or ID\nsshKeys[1]: must be an SSH key's name or ID, got bool"},
		{`{` + base + `,"firewalls":[{"id":4},{"firewall":"x"}]}`, "firewalls[0].firewall: is required: a firewall's ID\nfirewalls[0].id: unknown key; a firewalls entry is {firewall: ID}\n" +
			"firewalls[1].firewall: must be a positive integer ID, got \"x\""},
		{`{` + base + `,"firewalls":[4]}`, "firewalls[0]: must be an object, got number 4"},
		{`{` + base + `,"networks":["net"]}`, "networks[0]: must be a positive integer ID, got \"net\""},
		{`{` + base + `,"publicNet":{"enableIpv4":"yes","ipv4":"a","ip":1}}`, "publicNet.enableIpv4: must be true or false\npublicNet.ip: unknown key; publicNet has enableIpv4, enableIpv6, ipv4 and ipv6\n" +
			"publicNet.ipv4: must be a positive integer ID, got \"a\" (a Primary IP's ID, or null)"},
		{`{` + base + `,"placementGroup":1}`, "placementGroup: unknown property \"placementGroup\"; Hetzner::Compute::Server has automount, datacenter, firewalls, image, labels, location, name, networks, placementGroupId, publicNet, serverType, sshKeys, startAfterCreate, userData, volumes"},
	} {
		if got := validation(t, hcloud.TypeServer, tc.props); got != tc.want {
			t.Errorf("Validate(%.120s) = %q, want %q", tc.props, got, tc.want)
		}
	}
}
