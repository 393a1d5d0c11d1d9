//go:build e2e

package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// The refusal tests run the real cdkx binary against hcloud-fake with plans that Hetzner would refuse
// mid-deploy (a 422 after other objects were made) or credentials it refuses: diff, deploy and deploy
// --propose exit 1 and name the property and the fix, or the variable, and the fake sees no change.

// changes returns the requests the fake answered that could change something (every method but GET).
func (f *hfake) changes(t *testing.T) []string {
	t.Helper()
	var log struct {
		Requests []struct {
			Method string `json:"method"`
			Route  string `json:"route"`
		} `json:"requests"`
	}
	f.control(t, http.MethodGet, "/_fake/requests", nil, &log)
	var out []string
	for _, q := range log.Requests {
		if q.Method != http.MethodGet {
			out = append(out, q.Method+" "+q.Route)
		}
	}
	return out
}

// refused runs each command of cmds on app and wants exit 1 and every one of want in its output.
func (r *runner) refused(app string, want []string, cmds ...[]string) {
	r.t.Helper()
	for _, args := range cmds {
		out := r.must(1, append(args, "--app", app)...)
		for _, w := range want {
			if !strings.Contains(out, w) {
				r.t.Errorf("cdkx %s: output lacks %q:\n%s", strings.Join(args, " "), w, out)
			}
		}
	}
}

var refusingCommands = [][]string{{"diff"}, {"deploy", "--yes"}, {"deploy", "--propose"}}

// TestRefuseAtPlan: cdkx's own Hetzner example as its docs extend it — a primary IP assigned to the
// server, which gets one by default — and the example with its server attached to its network a second
// time through a NetworkAttachment are refused by diff, deploy and deploy --propose, naming the property
// and the fix; nothing is created and no deployment is recorded.
func TestRefuseAtPlan(t *testing.T) {
	t.Parallel()
	const server = "ComputeAppServer2809D264"
	for _, tc := range []struct {
		name string
		edit func(tmpl map[string]any)
		want []string
	}{
		{"primary IP of the docs example", func(tmpl map[string]any) {
			tmpl["resources"].(map[string]any)["ComputeAppPrimaryIpAssignment"] = map[string]any{
				"type": "Hetzner::Networking::PrimaryIpAssignment", "provider": "hetzner",
				"properties": map[string]any{
					"primaryIpId":  map[string]any{"stackRef": "Networking", "outputKey": "PrimaryIpId"},
					"assigneeId":   map[string]any{"ref": server, "attr": "serverId"},
					"assigneeType": "server",
				},
			}
		}, []string{"resources.ComputeAppPrimaryIpAssignment.properties.assigneeId", "server_has_ipv4",
			"set publicNet.enableIpv4 to false on server " + server}},
		{"network attached twice", func(tmpl map[string]any) {
			tmpl["resources"].(map[string]any)["ComputeAppNetworkAttachment"] = map[string]any{
				"type": "Hetzner::Compute::NetworkAttachment", "provider": "hetzner",
				"properties": map[string]any{
					"serverId":  map[string]any{"ref": server, "attr": "serverId"},
					"networkId": map[string]any{"stackRef": "Networking", "outputKey": "NetworkId"},
				},
			}
		}, []string{"resources.ComputeAppNetworkAttachment.properties.networkId", "server_already_attached",
			"remove the network from the networks of server " + server}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := startFake(t)
			r := newRunner(t, f)
			app := copyAssembly(t, hetznerExample)
			editTemplate(t, app, "Compute.json", tc.edit)
			r.refused(app, tc.want, refusingCommands...)
			if got := f.inventory(t); got != (inventory{}) {
				t.Errorf("after refused runs, the project holds %+v, want nothing", got)
			}
			if got := f.changes(t); len(got) > 0 {
				t.Errorf("refused runs sent %v, want no change", got)
			}
			if out := r.must(0, "deployments", "list"); strings.Contains(out, "PROPOSED") || strings.Contains(out, "PENDING") {
				t.Errorf("refused runs recorded deployments:\n%s", out)
			}
		})
	}
}

// TestRefuseVolumeShrink: a volume deployed at 20 GB and then written at 10 GB is refused by diff and
// deploy, naming the size and the fix, before any change; the volume keeps its 20 GB.
func TestRefuseVolumeShrink(t *testing.T) {
	t.Parallel()
	const volume = "ComputeAppVolume033E92C2"
	f := startFake(t, "--action-polls", "2")
	r := newRunner(t, f)
	app := copyAssembly(t, hetznerExample)
	editTemplate(t, app, "Compute.json", func(tmpl map[string]any) { propsOf(tmpl, volume)["size"] = 20 })
	r.must(0, "deploy", "--app", app)
	before := len(f.changes(t))
	editTemplate(t, app, "Compute.json", func(tmpl map[string]any) { propsOf(tmpl, volume)["size"] = 10 })
	r.refused(app, []string{"resources." + volume + ".properties.size", "is 10 GB, but the volume has 20 GB", "set size to 20 or more"},
		[]string{"diff"}, []string{"diff", "--detailed-exitcode"}, []string{"deploy", "--yes"})
	if after := f.changes(t); len(after) != before {
		t.Errorf("refused runs sent %v, want no change", after[before:])
	}
	vol, _, err := f.client.Volume.GetByName(context.Background(), "e2e-app-volume")
	if err != nil || vol == nil || vol.Size != 20 {
		t.Errorf("volume %+v (%v), want 20 GB", vol, err)
	}
}

// TestRefuseWrongToken: with a token the API refuses, diff, deploy and destroy exit 1 naming HCLOUD_TOKEN
// after one read, and change nothing.
func TestRefuseWrongToken(t *testing.T) {
	t.Parallel()
	f := startFake(t, "--action-polls", "2")
	app := copyAssembly(t, hetznerExample)
	wrong := newRunner(t, f, "HCLOUD_TOKEN=not-the-token")
	want := []string{"hetzner refused the credentials in HCLOUD_TOKEN", "correct HCLOUD_TOKEN"}
	wrong.refused(app, want, refusingCommands...)
	if got := f.inventory(t); got != (inventory{}) {
		t.Errorf("after refused runs, the project holds %+v, want nothing", got)
	}
	if got := f.changes(t); len(got) > 0 {
		t.Errorf("refused runs sent %v, want no change", got)
	}
	// Deployed with the right token, the example survives a destroy with the wrong one.
	right := newRunner(t, f)
	right.must(0, "deploy", "--app", app)
	deployed := f.inventory(t)
	wrong.dir = right.dir
	out := wrong.must(1, "destroy", "--app", app, "--force")
	if !strings.Contains(out, want[0]) {
		t.Errorf("destroy with a wrong token: output lacks %q:\n%s", want[0], out)
	}
	if got := f.inventory(t); got != deployed {
		t.Errorf("after a refused destroy, the project holds %+v, want %+v", got, deployed)
	}
}

// TestRefuseAbsentSSHKey: a server naming an SSH key that is neither in the project nor planned is
// refused by diff after one listing of the project's keys.
func TestRefuseAbsentSSHKey(t *testing.T) {
	t.Parallel()
	const server = "ComputeAppServer2809D264"
	f := startFake(t)
	r := newRunner(t, f)
	app := copyAssembly(t, hetznerExample)
	editTemplate(t, app, "Compute.json", func(tmpl map[string]any) {
		propsOf(tmpl, server)["sshKeys"] = []any{map[string]any{"ref": "ComputeE2eSshKey54A637D3", "attr": "name"}, "nobody-key"}
	})
	r.refused(app, []string{"resources." + server + ".properties.sshKeys[1]", `SSH key "nobody-key" is not in the Hetzner project`},
		[]string{"diff"}, []string{"deploy", "--yes"})
	if got := f.changes(t); len(got) > 0 {
		t.Errorf("refused runs sent %v, want no change", got)
	}
}
