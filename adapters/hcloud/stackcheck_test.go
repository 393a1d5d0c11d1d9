package hcloud_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/adapters/hcloud"
	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/engine"
)

// stackErrors validates a two-stack assembly — Net (a network and a primary IP, published as outputs)
// and App (resources, as JSON) — against the Hetzner schemas, and returns its errors as "path: summary".
func stackErrors(t *testing.T, resources string) []string {
	t.Helper()
	net := `{"resources":{
		"Net":{"type":"Hetzner::Networking::Network","properties":{"name":"n","ipRange":"10.0.0.0/16"}},
		"Ip4":{"type":"Hetzner::Networking::PrimaryIp","properties":{"name":"ip4","type":"ipv4","assigneeType":"server","location":"nbg1"}}},
		"outputs":{"NetworkId":{"value":{"ref":"Net","attr":"networkId"}},"Ip4Id":{"value":{"ref":"Ip4","attr":"primaryIpId"}}}}`
	app := `{"resources":{` + resources + `}}`
	var probe map[string]any
	if err := json.Unmarshal([]byte(app), &probe); err != nil {
		t.Fatalf("App template: %v\n%s", err, app)
	}
	files := map[string][]byte{
		"manifest.json": []byte(`{"version":"1.0.0","artifacts":{
			"Net":{"type":"cdkx:stack","properties":{"templateFile":"Net.json"}},
			"App":{"type":"cdkx:stack","properties":{"templateFile":"App.json"},"dependencies":["Net"]}}}`),
		"Net.json": []byte(net),
		"App.json": []byte(app),
	}
	a, ds := assembly.LoadFiles("cdkx.out", files)
	if ds.HasErrors() {
		t.Fatalf("load: %v", ds)
	}
	var got []string
	for _, d := range assembly.Validate(a, engine.NewRegistry(&hcloud.Provider{})) {
		got = append(got, d.File+" "+d.Path+": "+d.Summary)
	}
	return got
}

// TestCheckStack: what Hetzner refuses with 422 mid-deploy is refused when the assembly is validated —
// a primary IP assigned to a server that gets its own by default, a second primary IP of one type for
// one server, and a server attached to one network twice — and what it accepts passes.
func TestCheckStack(t *testing.T) {
	t.Parallel()
	server := func(id, extra string) string {
		return `"` + id + `":{"type":"Hetzner::Compute::Server","properties":{"name":"` + strings.ToLower(id) +
			`","serverType":"cax11","image":"ubuntu-24.04","location":"nbg1"` + extra + `}}`
	}
	ip := func(id, typ string) string {
		return `"` + id + `":{"type":"Hetzner::Networking::PrimaryIp","properties":{"name":"` + strings.ToLower(id) +
			`","type":"` + typ + `","assigneeType":"server","location":"nbg1"}}`
	}
	assign := func(id, ipID, server string) string {
		return `"` + id + `":{"type":"Hetzner::Networking::PrimaryIpAssignment","properties":{"primaryIpId":` + ipID +
			`,"assigneeId":{"ref":"` + server + `","attr":"serverId"},"assigneeType":"server"}}`
	}
	attach := func(id, server, network string) string {
		return `"` + id + `":{"type":"Hetzner::Compute::NetworkAttachment","properties":{"serverId":{"ref":"` + server +
			`","attr":"serverId"},"networkId":` + network + `}}`
	}
	ref := func(id, attr string) string { return `{"ref":"` + id + `","attr":"` + attr + `"}` }
	netOut := `{"stackRef":"Net","outputKey":"NetworkId"}`
	ip4Out := `{"stackRef":"Net","outputKey":"Ip4Id"}`
	const v4off, v6off, bothOff = `,"publicNet":{"enableIpv4":false,"enableIpv6":true}`, `,"publicNet":{"enableIpv4":true,"enableIpv6":false}`,
		`,"publicNet":{"enableIpv4":false,"enableIpv6":false}`
	const app = "cdkx.out/App.json "
	for _, tc := range []struct {
		name      string
		resources []string
		want      []string
	}{
		{"an IPv4 assigned to a server without a default IPv4 passes",
			[]string{server("Web", v4off), ip("V4", "ipv4"), assign("A", ref("V4", "primaryIpId"), "Web")}, nil},
		{"an IPv4 assigned to a server with its default IPv4 is refused",
			[]string{server("Web", ""), ip("V4", "ipv4"), assign("A", ref("V4", "primaryIpId"), "Web")},
			[]string{app + "resources.A.properties.assigneeId: server Web gets a primary IPv4 of its own when it is created (its publicNet.enableIpv4 is not false), " +
				"and Hetzner refuses a second one (422 server_has_ipv4): set publicNet.enableIpv4 to false on server Web, or remove this assignment"}},
		{"an IPv6 assigned to a server that only turned its IPv4 off is refused",
			[]string{server("Web", v4off), ip("V6", "ipv6"), assign("A", ref("V6", "primaryIpId"), "Web")},
			[]string{app + "resources.A.properties.assigneeId: server Web gets a primary IPv6 of its own when it is created (its publicNet.enableIpv6 is not false), " +
				"and Hetzner refuses a second one (422 server_has_ipv6): set publicNet.enableIpv6 to false on server Web, or remove this assignment"}},
		{"an IPv4 of another stack (the docs example) assigned to a server with its default IPv4 is refused",
			[]string{server("Web", v6off), assign("A", ip4Out, "Web")},
			[]string{app + "resources.A.properties.assigneeId: server Web gets a primary IPv4 of its own when it is created (its publicNet.enableIpv4 is not false), " +
				"and Hetzner refuses a second one (422 server_has_ipv4): set publicNet.enableIpv4 to false on server Web, or remove this assignment"}},
		{"an IP of unknown type assigned to a server with both defaults is refused",
			[]string{server("Web", ""), assign("A", "17", "Web")},
			[]string{app + "resources.A.properties.assigneeId: server Web gets a primary IPv4 and a primary IPv6 of its own when it is created " +
				"(its publicNet.enableIpv4 and enableIpv6 are not false), and Hetzner refuses a second primary IP of either type " +
				"(422 server_has_ipv4/server_has_ipv6): set publicNet.enableIpv4 (for an IPv4) or publicNet.enableIpv6 (for an IPv6) to false on server Web, or remove this assignment"}},
		{"an IP of unknown type assigned to a server with one default passes (it may be the other type)",
			[]string{server("Web", v4off), assign("A", "17", "Web")}, nil},
		{"a publicNet decided at deploy passes",
			[]string{server("Web", `,"publicNet":{"enableIpv4":`+ref("X", "automount")+`}`), server("X", bothOff+`,"automount":false`), ip("V4", "ipv4"), assign("A", ref("V4", "primaryIpId"), "Web")}, nil},
		{"one IPv4 and one IPv6 for one server pass",
			[]string{server("Web", bothOff), ip("V4", "ipv4"), ip("V6", "ipv6"), assign("A", ref("V4", "primaryIpId"), "Web"), assign("B", ref("V6", "primaryIpId"), "Web")}, nil},
		{"a second IPv4 for one server is refused, once",
			[]string{server("Web", bothOff), ip("V4", "ipv4"), ip("W4", "ipv4"), assign("A", ref("V4", "primaryIpId"), "Web"), assign("B", ref("W4", "primaryIpId"), "Web")},
			[]string{app + "resources.B.properties.assigneeId: assigns a second primary IPv4 to server Web, which A assigns one already; " +
				"a Hetzner server has at most one primary IP of each type (422 server_has_ipv4): remove one of the two assignments"}},
		{"IPv4s for two servers pass",
			[]string{server("Web", bothOff), server("Db", bothOff), ip("V4", "ipv4"), ip("W4", "ipv4"), assign("A", ref("V4", "primaryIpId"), "Web"), assign("B", ref("W4", "primaryIpId"), "Db")}, nil},

		{"an attachment to a network the server is not in passes",
			[]string{server("Web", `,"networks":[7]`), attach("At", "Web", netOut)}, nil},
		{"an attachment to a network the server's networks name already is refused",
			[]string{server("Web", `,"networks":[`+netOut+`]`), attach("At", "Web", netOut)},
			[]string{app + "resources.At.properties.networkId: server Web is attached to this network already by its networks property, and Hetzner refuses " +
				"a second attachment (422 server_already_attached): remove the network from the networks of server Web, or remove this attachment"}},
		{"a literal network ID written as a string matches the integer",
			[]string{server("Web", `,"networks":["7"]`), attach("At", "Web", "7")},
			[]string{app + "resources.At.properties.networkId: server Web is attached to this network already by its networks property, and Hetzner refuses " +
				"a second attachment (422 server_already_attached): remove the network from the networks of server Web, or remove this attachment"}},
		{"two attachments of one server to one network are refused, once",
			[]string{server("Web", ""), attach("At1", "Web", netOut), attach("At2", "Web", netOut)},
			[]string{app + "resources.At2.properties.networkId: attaches server Web to this network a second time, after At1; Hetzner refuses a second " +
				"attachment (422 server_already_attached): remove one of the two"}},
		{"attachments of two servers to one network pass",
			[]string{server("Web", ""), server("Db", ""), attach("At1", "Web", netOut), attach("At2", "Db", netOut)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := stackErrors(t, strings.Join(tc.resources, ","))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Validate errors (-want +got):\n%s", diff)
			}
		})
	}
}
