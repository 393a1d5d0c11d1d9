//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
)

// The Hetzner tests run the real cdkx binary against cmd/hcloud-fake, a stateful fake of the Hetzner
// Cloud API checked against Hetzner's OpenAPI spec, and check the result with the official client,
// hcloud-go, never with the fake's own code. They need no external server: each test starts its own
// fake on a free loopback port.

const hcloudToken = "e2e-hcloud-token-0123456789"

var (
	binsOnce           sync.Once
	binsDir, binsError = "", error(nil)
)

// hetznerBins builds cdkx and hcloud-fake once per test binary and returns their directory.
func hetznerBins(t *testing.T) string {
	t.Helper()
	binsOnce.Do(func() {
		binsDir, binsError = os.MkdirTemp("", "cdkx-e2e-bin-")
		if binsError != nil {
			return
		}
		for _, pkg := range []string{"./cmd/cdkx", "./cmd/hcloud-fake"} {
			build := exec.Command("go", "build", "-o", binsDir, pkg)
			build.Dir = ".."
			if out, err := build.CombinedOutput(); err != nil {
				binsError = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
				return
			}
		}
	})
	if binsError != nil {
		t.Fatal(binsError)
	}
	return binsDir
}

// hfake is one running hcloud-fake process.
type hfake struct {
	url    string // base URL including /v1
	cmd    *exec.Cmd
	client *hcloud.Client
}

// startFake starts hcloud-fake with args on a free loopback port and stops it (by its PID) when the
// test ends.
func startFake(t *testing.T, args ...string) *hfake {
	t.Helper()
	bin := hetznerBins(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(filepath.Join(bin, "hcloud-fake"), append([]string{"--listen", addr, "--token", hcloudToken}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if _, u, ok := strings.Cut(sc.Text(), "listening on "); ok {
				ready <- strings.TrimSpace(u)
			}
		}
		close(ready)
	}()
	select {
	case u, ok := <-ready:
		if !ok {
			t.Fatal("hcloud-fake exited before it listened")
		}
		f := &hfake{url: u, cmd: cmd}
		f.client = hcloud.NewClient(hcloud.WithToken(hcloudToken), hcloud.WithEndpoint(u),
			hcloud.WithPollOpts(hcloud.PollOpts{BackoffFunc: hcloud.ConstantBackoff(20 * time.Millisecond)}))
		return f
	case <-time.After(20 * time.Second):
		t.Fatal("hcloud-fake did not listen within 20 s")
	}
	return nil
}

// control sends a request to one of the fake's control routes (outside /v1).
func (f *hfake) control(t *testing.T, method, path string, in, out any) {
	t.Helper()
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, strings.TrimSuffix(f.url, "/v1")+path, body)
	req.Header.Set("Authorization", "Bearer "+hcloudToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
}

// inventory is everything the project holds, read with hcloud-go.
type inventory struct {
	Networks, Servers, SSHKeys, PlacementGroups, Certificates, Volumes, FloatingIPs, PrimaryIPs, Firewalls, LoadBalancers int
}

func (f *hfake) inventory(t *testing.T) inventory {
	t.Helper()
	ctx := context.Background()
	c := f.client
	count := func(n int, err error) int {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	var inv inventory
	nets, err := c.Network.All(ctx)
	inv.Networks = count(len(nets), err)
	servers, err := c.Server.All(ctx)
	inv.Servers = count(len(servers), err)
	keys, err := c.SSHKey.All(ctx)
	inv.SSHKeys = count(len(keys), err)
	pgs, err := c.PlacementGroup.All(ctx)
	inv.PlacementGroups = count(len(pgs), err)
	certs, err := c.Certificate.All(ctx)
	inv.Certificates = count(len(certs), err)
	vols, err := c.Volume.All(ctx)
	inv.Volumes = count(len(vols), err)
	fips, err := c.FloatingIP.All(ctx)
	inv.FloatingIPs = count(len(fips), err)
	pips, err := c.PrimaryIP.All(ctx)
	inv.PrimaryIPs = count(len(pips), err)
	fws, err := c.Firewall.All(ctx)
	inv.Firewalls = count(len(fws), err)
	lbs, err := c.LoadBalancer.All(ctx)
	inv.LoadBalancers = count(len(lbs), err)
	return inv
}

// runner runs the cdkx binary in one working directory (its state is .cdkx/state.db there) against a
// fake.
type runner struct {
	t   *testing.T
	dir string
	env []string
}

func newRunner(t *testing.T, f *hfake, extraEnv ...string) *runner {
	t.Helper()
	env := append(os.Environ(), "CI=true", "HCLOUD_TOKEN="+hcloudToken, "HCLOUD_ENDPOINT="+f.url,
		"HCLOUD_POLL_INTERVAL=20ms")
	return &runner{t: t, dir: t.TempDir(), env: append(env, extraEnv...)}
}

// run runs cdkx with args and returns its exit code and combined output.
func (r *runner) run(args ...string) (int, string) {
	r.t.Helper()
	cmd := exec.Command(filepath.Join(hetznerBins(r.t), "cdkx"), args...)
	cmd.Dir, cmd.Env = r.dir, r.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok { //nolint:errorlint // exec returns it unwrapped
		code = ee.ExitCode()
	} else if err != nil {
		r.t.Fatal(err)
	}
	return code, out.String()
}

// must runs cdkx and fails the test unless it exits with want.
func (r *runner) must(want int, args ...string) string {
	r.t.Helper()
	code, out := r.run(args...)
	if code != want {
		r.t.Fatalf("cdkx %s: exit %d, want %d\n%s", strings.Join(args, " "), code, want, out)
	}
	return out
}

// copyAssembly copies the assembly at src into a new directory and returns it.
func copyAssembly(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "cdkx.out")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	if err := filepath.WalkDir(dst, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if d.IsDir() {
			mode = 0o755
		}
		return os.Chmod(p, mode)
	}); err != nil {
		t.Fatal(err)
	}
	return dst
}

// editTemplate rewrites the template file of an assembly through edit, which gets its decoded JSON.
func editTemplate(t *testing.T, app, file string, edit func(tmpl map[string]any)) {
	t.Helper()
	p := filepath.Join(app, file)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var tmpl map[string]any
	if err := json.Unmarshal(b, &tmpl); err != nil {
		t.Fatal(err)
	}
	edit(tmpl)
	b, err = json.MarshalIndent(tmpl, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// resourceOf returns the resource logicalID of a decoded template.
func resourceOf(tmpl map[string]any, logicalID string) map[string]any {
	return tmpl["resources"].(map[string]any)[logicalID].(map[string]any)
}

func propsOf(tmpl map[string]any, logicalID string) map[string]any {
	return resourceOf(tmpl, logicalID)["properties"].(map[string]any)
}

var hetznerExample = filepath.Join("..", "testdata", "examples", "hetzner", "cdkx.out")

// TestHetznerAssembliesDeploy deploys each real Hetzner assembly of the TypeScript cdkx unchanged
// against the fake; `cdkx diff --detailed-exitcode` right after finds nothing to do; destroy leaves the
// project empty, as hcloud-go sees it.
func TestHetznerAssembliesDeploy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, app string
		want      inventory
	}{
		{"synth-hetzner-e2e", hetznerExample, inventory{Networks: 1, Servers: 1, SSHKeys: 1, PlacementGroups: 1,
			Volumes: 1, FloatingIPs: 1, PrimaryIPs: 3, Firewalls: 1, LoadBalancers: 1}},
		{"synth-hetzner-it-network-topology", filepath.Join("testdata", "hetzner", "network-topology"), inventory{Networks: 1, LoadBalancers: 1}},
		{"cdkx-rules-legacy-provider-env", filepath.Join("testdata", "hetzner", "legacy-provider-env"), inventory{Networks: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := startFake(t, "--action-polls", "2")
			r := newRunner(t, f)
			app, err := filepath.Abs(tc.app)
			if err != nil {
				t.Fatal(err)
			}
			r.must(0, "deploy", "--app", app)
			if got := f.inventory(t); got != tc.want {
				t.Errorf("after deploy, the project holds %+v, want %+v", got, tc.want)
			}
			r.must(0, "diff", "--app", app, "--detailed-exitcode")
			r.must(0, "destroy", "--app", app, "--force")
			if got := f.inventory(t); got != (inventory{}) {
				t.Errorf("after destroy, the project holds %+v, want nothing", got)
			}
		})
	}
}

// TestHetznerLifecycle takes the example app through the changes a team makes: a label change updates in
// place; a server-type change resizes the server in place (the same ID, powered on again); an image change
// replaces the server (same name: the old one goes first, and the plan says so) and re-points what pointed
// at it — the load-balancer target, the floating-IP, primary-IP and volume assignments; removing a
// resource deletes it; destroy empties the project. Everything is checked with hcloud-go.
func TestHetznerLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := startFake(t, "--action-polls", "2")
	r := newRunner(t, f)
	app := copyAssembly(t, hetznerExample)
	const server = "ComputeAppServer2809D264"
	// The server gets the project's primary IPv4 through an assignment, so it is created without one.
	editTemplate(t, app, "Compute.json", func(tmpl map[string]any) {
		propsOf(tmpl, server)["publicNet"] = map[string]any{"enableIpv4": false, "enableIpv6": true}
		tmpl["resources"].(map[string]any)["ComputeAppPrimaryIpAssignment"] = map[string]any{
			"type": "Hetzner::Networking::PrimaryIpAssignment", "provider": "hetzner",
			"properties": map[string]any{
				"primaryIpId":  map[string]any{"stackRef": "Networking", "outputKey": "PrimaryIpId"},
				"assigneeId":   map[string]any{"ref": server, "attr": "serverId"},
				"assigneeType": "server",
			},
		}
	})
	r.must(0, "deploy", "--app", app)
	r.must(0, "diff", "--app", app, "--detailed-exitcode")
	before := serverNamed(t, f, "e2e-app-server")
	checkPointedAt(t, f, before.ID)

	// A label change updates the server in place.
	editTemplate(t, app, "Compute.json", func(tmpl map[string]any) {
		propsOf(tmpl, server)["labels"] = map[string]any{"role": "web", "tier": "app"}
	})
	r.must(2, "diff", "--app", app, "--detailed-exitcode")
	r.must(0, "deploy", "--app", app)
	same := serverNamed(t, f, "e2e-app-server")
	if same.ID != before.ID || same.Labels["tier"] != "app" {
		t.Errorf("after a label change: server %d with labels %v, want server %d with tier=app", same.ID, same.Labels, before.ID)
	}

	// A server-type change resizes the server in place: an update, not a replacement; the same server,
	// of the new type, running again, its disk the size it had; nothing re-pointed.
	editTemplate(t, app, "Compute.json", func(tmpl map[string]any) { propsOf(tmpl, server)["serverType"] = "cax21" })
	if step := planStep(t, r, app, "Compute", server); step.Op != "update" {
		t.Errorf("a server-type change is planned as %q (%s), want update", step.Op, step.Reason)
	}
	r.must(0, "deploy", "--app", app)
	resized := serverNamed(t, f, "e2e-app-server")
	if resized.ID != before.ID || resized.ServerType.Name != "cax21" || resized.Status != hcloud.ServerStatusRunning || resized.PrimaryDiskSize != before.PrimaryDiskSize {
		t.Errorf("after a server-type change: server %d (%s, %s, %d GB disk), want server %d (cax21, running, %d GB disk)",
			resized.ID, resized.ServerType.Name, resized.Status, resized.PrimaryDiskSize, before.ID, before.PrimaryDiskSize)
	}
	checkPointedAt(t, f, before.ID)
	r.must(0, "diff", "--app", app, "--detailed-exitcode")

	// An image change replaces the server. Its name stays, and names are unique in a Hetzner project, so
	// the old server is deleted before the new one is created, and the plan says so.
	editTemplate(t, app, "Compute.json", func(tmpl map[string]any) { propsOf(tmpl, server)["image"] = "ubuntu-24.04" })
	step := planStep(t, r, app, "Compute", server)
	if step.Op != "replace" {
		t.Errorf("an image change is planned as %q (%s), want replace", step.Op, step.Reason)
	}
	if step.Replacement == nil || *step.Replacement != "delete-first" {
		t.Errorf("the server's replacement is planned %v, want delete-first (its name stays)", step.Replacement)
	}
	// The text plan marks it -/+ delete first and says what is lost.
	if out := r.must(0, "diff", "--app", app); !strings.Contains(out, "-/+ Hetzner::Compute::Server "+server+" (replace, delete first:") ||
		!strings.Contains(out, "# its disk and all data on it are lost") {
		t.Errorf("diff of an image change does not show the server's -/+ delete-first replacement and its lost disk:\n%s", out)
	}
	r.must(0, "deploy", "--app", app, "--yes") // a replacement needs approval
	after := serverNamed(t, f, "e2e-app-server")
	if after.ID == before.ID || after.Image == nil || after.Image.Name != "ubuntu-24.04" || after.ServerType.Name != "cax21" {
		t.Errorf("after an image change: server %d (%+v, %s), want a new cax21 server of ubuntu-24.04", after.ID, after.Image, after.ServerType.Name)
	}
	if old, _, err := f.client.Server.GetByID(ctx, before.ID); err != nil || old != nil {
		t.Errorf("the replaced server %d still exists (%v)", before.ID, err)
	}
	checkPointedAt(t, f, after.ID)
	r.must(0, "diff", "--app", app, "--detailed-exitcode")

	// Removing the route deletes it.
	editTemplate(t, app, "Networking.json", func(tmpl map[string]any) {
		delete(tmpl["resources"].(map[string]any), "NetworkingRoute4CB44DFB")
		propsOf(tmpl, "NetworkingLoadBalancer70C95831") // still there
		lb := resourceOf(tmpl, "NetworkingLoadBalancer70C95831")
		lb["dependsOn"] = []any{"NetworkingSubnet1918991E", "NetworkingNetworkDA639174"}
	})
	r.must(0, "deploy", "--app", app, "--yes") // a deletion needs approval
	nets, err := f.client.Network.All(ctx)
	if err != nil || len(nets) != 1 || len(nets[0].Routes) != 0 {
		t.Errorf("after removing the route: networks %v (%v), want one without routes", nets, err)
	}
	r.must(0, "diff", "--app", app, "--detailed-exitcode")

	r.must(0, "destroy", "--app", app, "--force")
	if got := f.inventory(t); got != (inventory{}) {
		t.Errorf("after destroy, the project holds %+v, want nothing", got)
	}
}

// planJSONStep is one step of `cdkx diff --json`.
type planJSONStep struct {
	Op        string `json:"op"`
	Stack     string `json:"stack"`
	LogicalID string `json:"logicalId"`
	Reason    string `json:"reason"`
	// Replacement is "delete-first" or "create-first" on a replace step; nil when the field is absent.
	Replacement *string `json:"replacement"`
}

// planStep runs `cdkx diff --json` on app (exit 0; with --detailed-exitcode it would be 2) and returns
// the step of stack/logicalID.
func planStep(t *testing.T, r *runner, app, stack, logicalID string) planJSONStep {
	t.Helper()
	out := r.must(0, "diff", "--app", app, "--json")
	var plan struct {
		Steps []planJSONStep `json:"steps"`
	}
	// Only stdout is JSON, but run merges stderr in: decode the first JSON value.
	if err := json.NewDecoder(strings.NewReader(out[strings.Index(out, "{"):])).Decode(&plan); err != nil {
		t.Fatalf("cdkx diff --json: %v\n%s", err, out)
	}
	for _, s := range plan.Steps {
		if s.Stack == stack && s.LogicalID == logicalID {
			return s
		}
	}
	t.Fatalf("cdkx diff --json has no step for %s/%s:\n%s", stack, logicalID, out)
	return planJSONStep{}
}

func serverNamed(t *testing.T, f *hfake, name string) *hcloud.Server {
	t.Helper()
	s, _, err := f.client.Server.GetByName(context.Background(), name)
	if err != nil || s == nil {
		t.Fatalf("server %q: %v, %v", name, s, err)
	}
	return s
}

// checkPointedAt checks that the example's load-balancer target, floating IP, primary IP and volume all
// point at server id.
func checkPointedAt(t *testing.T, f *hfake, id int64) {
	t.Helper()
	ctx := context.Background()
	lb, _, err := f.client.LoadBalancer.GetByName(ctx, "e2e-load-balancer")
	if err != nil || lb == nil {
		t.Fatalf("load balancer: %v", err)
	}
	var targets []int64
	for _, tg := range lb.Targets {
		if tg.Server != nil {
			targets = append(targets, tg.Server.Server.ID)
		}
	}
	if len(targets) != 1 || targets[0] != id {
		t.Errorf("load balancer targets servers %v, want [%d]", targets, id)
	}
	fip, _, err := f.client.FloatingIP.GetByName(ctx, "e2e-floating-ip")
	if err != nil || fip == nil || fip.Server == nil || fip.Server.ID != id {
		t.Errorf("floating IP %+v (%v), want it assigned to server %d", fip, err, id)
	}
	pip, _, err := f.client.PrimaryIP.GetByName(ctx, "e2e-primary-ip")
	if err != nil || pip == nil || pip.AssigneeID != id {
		t.Errorf("primary IP %+v (%v), want it assigned to server %d", pip, err, id)
	}
	vol, _, err := f.client.Volume.GetByName(ctx, "e2e-app-volume")
	if err != nil || vol == nil || vol.Server == nil || vol.Server.ID != id {
		t.Errorf("volume %+v (%v), want it attached to server %d", vol, err, id)
	}
}

// TestHetznerFaults: with a tenth of all requests answered 429 or 503 and every action running for five
// polls, the example deploys and destroys completely.
func TestHetznerFaults(t *testing.T) {
	t.Parallel()
	f := startFake(t, "--fault-rate", "0.1", "--action-polls", "5", "--seed", "7")
	r := newRunner(t, f)
	app, _ := filepath.Abs(hetznerExample)
	r.must(0, "deploy", "--app", app)
	r.must(0, "diff", "--app", app, "--detailed-exitcode")
	r.must(0, "destroy", "--app", app, "--force")
	if got := f.inventory(t); got != (inventory{}) {
		t.Errorf("after destroy, the project holds %+v, want nothing", got)
	}
}

// writeAssembly writes a one-stack assembly of resources into a new directory and returns it.
func writeAssembly(t *testing.T, stack string, resources map[string]any) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "cdkx.out")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := map[string]any{"version": "1.0.0", "artifacts": map[string]any{
		stack: map[string]any{"type": "cdkx:stack", "properties": map[string]any{"templateFile": stack + ".json"}}}}
	for name, v := range map[string]any{"manifest.json": manifest, stack + ".json": map[string]any{"resources": resources}} {
		b, _ := json.MarshalIndent(v, "", "  ")
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestHetznerServerResize changes a server's type up, back down, and to another architecture: the first
// two resize the server in place (powered off, change_type, powered on; never deleted), the third fails
// before any change and says to replace the server, which --replace then does. hcloud-go reads every
// result back.
func TestHetznerServerResize(t *testing.T) {
	t.Parallel()
	f := startFake(t, "--action-polls", "2")
	r := newRunner(t, f)
	serverOf := func(typ string) map[string]any {
		return map[string]any{"Web": map[string]any{"type": "Hetzner::Compute::Server",
			"properties": map[string]any{"name": "resize-web", "serverType": typ, "image": "ubuntu-24.04", "location": "fsn1"}}}
	}
	app := writeAssembly(t, "Servers", serverOf("cx22"))
	r.must(0, "deploy", "--app", app)
	first := serverNamed(t, f, "resize-web")

	type live struct {
		ID     int64
		Type   string
		Status hcloud.ServerStatus
		Disk   int
	}
	for _, typ := range []string{"cx32", "cx22"} {
		app := writeAssembly(t, "Servers", serverOf(typ))
		r.must(0, "deploy", "--app", app)
		s := serverNamed(t, f, "resize-web")
		if got, want := (live{s.ID, s.ServerType.Name, s.Status, s.PrimaryDiskSize}), (live{first.ID, typ, hcloud.ServerStatusRunning, 40}); got != want {
			t.Errorf("after a resize to %s: server %+v, want %+v", typ, got, want)
		}
		r.must(0, "diff", "--app", app, "--detailed-exitcode")
	}
	var log struct {
		Counts map[string]int `json:"counts"`
	}
	f.control(t, http.MethodGet, "/_fake/requests", nil, &log)
	calls := map[string]int{}
	for _, k := range []string{"POST /servers", "DELETE /servers/{id}", "POST /servers/{id}/actions/poweroff",
		"POST /servers/{id}/actions/change_type", "POST /servers/{id}/actions/poweron"} {
		calls[k] = log.Counts[k]
	}
	want := map[string]int{"POST /servers": 1, "DELETE /servers/{id}": 0, "POST /servers/{id}/actions/poweroff": 2,
		"POST /servers/{id}/actions/change_type": 2, "POST /servers/{id}/actions/poweron": 2}
	if fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Errorf("server calls of two resizes: %v, want %v", calls, want)
	}

	// Another architecture cannot be resized in place: the deploy fails before the server is touched.
	arm := writeAssembly(t, "Servers", serverOf("cax11"))
	code, out := r.run("deploy", "--app", arm)
	if code == 0 || !strings.Contains(out, "architecture") || !strings.Contains(out, "--replace") {
		t.Errorf("deploy of an x86 → arm change: exit %d, want a failure naming the architecture and --replace:\n%s", code, out)
	}
	s := serverNamed(t, f, "resize-web")
	if got, want := (live{s.ID, s.ServerType.Name, s.Status, s.PrimaryDiskSize}), (live{first.ID, "cx22", hcloud.ServerStatusRunning, 40}); got != want {
		t.Errorf("after the refused change: server %+v, want %+v", got, want)
	}
	// The advice works: --replace replaces the server by one of the new architecture.
	r.must(0, "deploy", "--app", arm, "--replace", "Servers/Web", "--yes")
	s = serverNamed(t, f, "resize-web")
	if s.ID == first.ID || s.ServerType.Name != "cax11" || s.ServerType.Architecture != hcloud.ArchitectureARM {
		t.Errorf("after --replace: server %d (%s, %s), want a new cax11 (arm) server", s.ID, s.ServerType.Name, s.ServerType.Architecture)
	}
	r.must(0, "diff", "--app", arm, "--detailed-exitcode")
	r.must(0, "destroy", "--app", arm, "--force")
	if got := f.inventory(t); got != (inventory{}) {
		t.Errorf("after destroy, the project holds %+v, want nothing", got)
	}
}

// TestHetznerRateLimit: against a project budget of 200 requests refilled at 1 per second, a deploy
// that needs 500 requests completes without a failed step: the adapter slows down to the refill rate
// instead of running into 429s.
func TestHetznerRateLimit(t *testing.T) {
	t.Parallel()
	const n = 500
	f := startFake(t, "--rate-limit", "200")
	resources := map[string]any{}
	for i := range n {
		resources[fmt.Sprintf("Pg%03d", i)] = map[string]any{"type": "Hetzner::Compute::PlacementGroup",
			"properties": map[string]any{"name": fmt.Sprintf("pg-%03d", i), "type": "spread"}}
	}
	app := writeAssembly(t, "Groups", resources)
	r := newRunner(t, f)
	start := time.Now()
	out := r.must(0, "deploy", "--app", app, "--concurrency", "20")
	took := time.Since(start)
	if strings.Contains(out, "FAILED") {
		t.Errorf("deploy reported a failed step:\n%s", out)
	}
	// cdkx's requests are counted before hcloud-go lists the groups: the budget is spent by then, so the
	// official client's own requests meet 429s (and retry).
	var log struct {
		Requests []struct {
			Status int `json:"status"`
		} `json:"requests"`
	}
	f.control(t, http.MethodGet, "/_fake/requests", nil, &log)
	refused := 0
	for _, q := range log.Requests {
		if q.Status == http.StatusTooManyRequests {
			refused++
		}
	}
	t.Logf("%d creates (%d requests) against a budget of 200 at 1/s: %s, %d answered 429", n, len(log.Requests), took.Round(time.Second), refused)
	if len(log.Requests) < n || refused != 0 {
		t.Errorf("%d requests, %d answered 429; want at least %d requests and no 429: the adapter must slow down first", len(log.Requests), refused, n)
	}
	pgs, err := f.client.PlacementGroup.All(context.Background())
	if err != nil || len(pgs) != n {
		t.Errorf("placement groups: %d (%v), want %d", len(pgs), err, n)
	}
}

// TestHetznerKillNine kills cdkx with SIGKILL while servers are being created; the next deploy finds the
// servers whose creates were interrupted (by name) and records them: the project ends with exactly one
// server per resource, no duplicate, and state knows all of them.
func TestHetznerKillNine(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const n = 12
	f := startFake(t, "--action-duration", "2s")
	resources := map[string]any{}
	for i := range n {
		resources[fmt.Sprintf("Server%02d", i)] = map[string]any{"type": "Hetzner::Compute::Server",
			"properties": map[string]any{"name": fmt.Sprintf("kill-%02d", i), "serverType": "cx22", "image": "ubuntu-24.04", "location": "fsn1"}}
	}
	app := writeAssembly(t, "Servers", resources)
	r := newRunner(t, f)
	cmd := exec.Command(filepath.Join(hetznerBins(t), "cdkx"), "deploy", "--app", app, "--concurrency", "6")
	cmd.Dir, cmd.Env = r.dir, r.env
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		servers, err := f.client.Server.All(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(servers) >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no server was created within 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killedAt, _ := f.client.Server.All(ctx)
	t.Logf("killed with %d servers created", len(killedAt))

	r.must(0, "deploy", "--app", app)
	servers, err := f.client.Server.All(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]int{}
	for _, s := range servers {
		names[s.Name]++
	}
	if len(servers) != n || len(names) != n {
		t.Errorf("after the kill and a second deploy: %d servers with %d names, want %d of each: %v", len(servers), len(names), n, names)
	}
	r.must(0, "diff", "--app", app, "--detailed-exitcode")
	r.must(0, "destroy", "--app", app, "--force")
	if got := f.inventory(t); got != (inventory{}) {
		t.Errorf("after destroy, the project holds %+v, want nothing", got)
	}
}

// TestHetznerFailedActionRollsBack: a deploy that updates the server's labels and adds a second server
// whose create action fails exits 4 and rolls back: the labels are restored, no second server exists,
// and state matches the first version again; with the fault gone, the same change deploys.
func TestHetznerFailedActionRollsBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := startFake(t, "--action-polls", "2")
	r := newRunner(t, f)
	v1 := copyAssembly(t, hetznerExample)
	r.must(0, "deploy", "--app", v1)
	before := serverNamed(t, f, "e2e-app-server")

	v2 := copyAssembly(t, v1)
	editTemplate(t, v2, "Compute.json", func(tmpl map[string]any) {
		propsOf(tmpl, "ComputeAppServer2809D264")["labels"] = map[string]any{"release": "v2"}
		tmpl["resources"].(map[string]any)["ComputeExtraServer"] = map[string]any{"type": "Hetzner::Compute::Server",
			"properties": map[string]any{"name": "e2e-extra-server", "serverType": "cax11", "image": "ubuntu-22.04", "location": "nbg1"},
			"dependsOn":  []any{"ComputeAppServer2809D264"}}
	})
	f.control(t, http.MethodPost, "/_fake/fail-actions", map[string]any{"command": "create_server", "count": 1}, nil)
	out := r.must(4, "deploy", "--app", v2)
	if !strings.Contains(out, "ROLLBACK") {
		t.Errorf("the failed deploy did not roll back:\n%s", out)
	}
	s := serverNamed(t, f, "e2e-app-server")
	if s.ID != before.ID || s.Labels["release"] != "" {
		t.Errorf("after the rollback: server %d labels %v, want server %d without release label", s.ID, s.Labels, before.ID)
	}
	if extra, _, err := f.client.Server.GetByName(ctx, "e2e-extra-server"); err != nil || extra != nil {
		t.Errorf("the failed server exists after the rollback: %+v (%v)", extra, err)
	}
	r.must(0, "diff", "--app", v1, "--detailed-exitcode")
	r.must(0, "deploy", "--app", v2)
	r.must(0, "destroy", "--app", v2, "--force")
	if got := f.inventory(t); got != (inventory{}) {
		t.Errorf("after destroy, the project holds %+v, want nothing", got)
	}
}

// TestHetznerSubnetReplace changes a subnet's range (create-only) in the network-topology assembly: the
// subnet is replaced — the new range is added before the old one is deleted, since they can coexist — and
// the network ends with exactly the template's subnets.
func TestHetznerSubnetReplace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := startFake(t, "--action-polls", "2")
	r := newRunner(t, f)
	app := copyAssembly(t, filepath.Join("testdata", "hetzner", "network-topology"))
	r.must(0, "deploy", "--app", app)
	editTemplate(t, app, "HetznerNetworkStack.json", func(tmpl map[string]any) {
		propsOf(tmpl, "HetznerNetworkStackSubnetApp27105C3D")["ipRange"] = "10.0.3.0/24"
	})
	out := r.must(2, "diff", "--app", app, "--detailed-exitcode")
	if !strings.Contains(out, "ipRange") {
		t.Errorf("diff does not name ipRange:\n%s", out)
	}
	r.must(0, "deploy", "--app", app, "--yes") // a replacement needs approval
	nets, err := f.client.Network.All(ctx)
	if err != nil || len(nets) != 1 {
		t.Fatalf("networks: %v (%v)", nets, err)
	}
	var ranges []string
	for _, s := range nets[0].Subnets {
		ranges = append(ranges, s.IPRange.String())
	}
	if strings.Join(ranges, ",") != "10.0.1.0/24,10.0.3.0/24" {
		t.Errorf("subnets after the replacement: %v, want 10.0.1.0/24 and 10.0.3.0/24", ranges)
	}
	r.must(0, "diff", "--app", app, "--detailed-exitcode")
	r.must(0, "destroy", "--app", app, "--force")
	if got := f.inventory(t); got != (inventory{}) {
		t.Errorf("after destroy, the project holds %+v, want nothing", got)
	}
}
