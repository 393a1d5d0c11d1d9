//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The Multipass tests run the real cdkx binary against cmd/multipass-fake, installed as `multipass` in a
// folder put first on PATH, as a developer's machine has the real one. Each test has its own fake (its
// MULTIPASS_FAKE_DIR) and reads what cdkx ran from the fake's log (MULTIPASS_FAKE_LOG: one JSON line per
// invocation with its arguments and what it read on stdin). They need nothing outside this repository
// but ../shared for the TypeScript cdkx's own assemblies (skipped without it).

var (
	mpBinOnce          sync.Once
	mpBinDir, mpBinErr = "", error(nil)
)

// multipassBin builds cmd/multipass-fake once per test binary, as a file named multipass alone in its
// folder, and returns that folder.
func multipassBin(t *testing.T) string {
	t.Helper()
	mpBinOnce.Do(func() {
		mpBinDir, mpBinErr = os.MkdirTemp("", "cdkx-e2e-multipass-")
		if mpBinErr != nil {
			return
		}
		build := exec.Command("go", "build", "-o", filepath.Join(mpBinDir, "multipass"), "./cmd/multipass-fake")
		build.Dir = ".."
		if out, err := build.CombinedOutput(); err != nil {
			mpBinErr = fmt.Errorf("go build ./cmd/multipass-fake: %v\n%s", err, out)
		}
	})
	if mpBinErr != nil {
		t.Fatal(mpBinErr)
	}
	return mpBinDir
}

// mpRunner runs cdkx (state .cdkx/state.db in its own folder) with the multipass fake first on PATH.
type mpRunner struct {
	*runner
	fakeDir string // MULTIPASS_FAKE_DIR
	log     string // MULTIPASS_FAKE_LOG
}

// newMPRunner returns a runner whose environment has the fake first on PATH, its own fake state and log,
// launches of 0.3 s, and extraEnv last (so that it wins). Variables of the test's own environment that
// would change the fake, the adapter or cdkx (MULTIPASS_*, CDKX_*: a concurrency, a state URL) are left out.
func newMPRunner(t *testing.T, extraEnv ...string) *mpRunner {
	t.Helper()
	hetznerBins(t) // cdkx
	bin := multipassBin(t)
	dir := t.TempDir()
	m := &mpRunner{fakeDir: filepath.Join(dir, "fake"), log: filepath.Join(dir, "fake.log")}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MULTIPASS_") && !strings.HasPrefix(kv, "CDKX_") && !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	env = append(env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "CI=true", "NO_COLOR=1",
		"MULTIPASS_FAKE_DIR="+m.fakeDir, "MULTIPASS_FAKE_LOG="+m.log, "MULTIPASS_FAKE_LAUNCH_SECONDS=0.3")
	m.runner = &runner{t: t, dir: filepath.Join(dir, "work"), env: append(env, extraEnv...)}
	if err := os.Mkdir(m.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return m
}

// fakeCall is one invocation of the fake, as its log has it.
type fakeCall struct {
	Args  []string `json:"args"`
	Stdin *string  `json:"stdin"`
}

// calls returns the fake's log so far (none when it has no log yet).
func (m *mpRunner) calls() []fakeCall {
	m.t.Helper()
	b, err := os.ReadFile(m.log)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		m.t.Fatal(err)
	}
	var out []fakeCall
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var c fakeCall
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			m.t.Fatalf("fake log line %q: %v", sc.Text(), err)
		}
		out = append(out, c)
	}
	return out
}

// commands returns the fake's calls whose first argument is one of names, in order.
func (m *mpRunner) commands(names ...string) []fakeCall {
	var out []fakeCall
	for _, c := range m.calls() {
		if len(c.Args) > 0 && slices.Contains(names, c.Args[0]) {
			out = append(out, c)
		}
	}
	return out
}

// multipass runs the fake directly, with the runner's environment, and returns its exit code and stdout.
func (m *mpRunner) multipass(args ...string) (int, string) {
	m.t.Helper()
	cmd := exec.Command(filepath.Join(multipassBin(m.t), "multipass"), args...)
	cmd.Dir, cmd.Env = m.dir, m.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), stdout.String() + stderr.String()
	} else if err != nil {
		m.t.Fatal(err)
	}
	return 0, stdout.String()
}

// instances returns the names `multipass list --format json` lists.
func (m *mpRunner) instances() []string {
	m.t.Helper()
	code, out := m.multipass("list", "--format", "json")
	if code != 0 {
		m.t.Fatalf("multipass list: exit %d\n%s", code, out)
	}
	var reply struct {
		List []struct {
			Name string `json:"name"`
		} `json:"list"`
	}
	if err := json.Unmarshal([]byte(out), &reply); err != nil {
		m.t.Fatalf("multipass list: %v\n%s", err, out)
	}
	names := []string{}
	for _, i := range reply.List {
		names = append(names, i.Name)
	}
	return names
}

// exported is one resource of `cdkx state export`.
type exported struct {
	Stack      string
	LogicalID  string         `json:"logicalId"`
	Type       string         `json:"type"`
	PhysicalID string         `json:"physicalId"`
	Status     string         `json:"status"`
	Outputs    map[string]any `json:"outputs"`
}

// state returns every resource state records, from `cdkx state export` (stdout only).
func (m *mpRunner) state() []exported {
	m.t.Helper()
	cmd := exec.Command(filepath.Join(hetznerBins(m.t), "cdkx"), "state", "export")
	cmd.Dir, cmd.Env = m.dir, m.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		m.t.Fatalf("cdkx state export: %v\n%s", err, stderr.String())
	}
	var doc struct {
		Stacks []struct {
			Name      string     `json:"name"`
			Resources []exported `json:"resources"`
		} `json:"stacks"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		m.t.Fatalf("cdkx state export: %v\n%s", err, out)
	}
	var res []exported
	for _, s := range doc.Stacks {
		for _, r := range s.Resources {
			r.Stack = s.Name
			res = append(res, r)
		}
	}
	return res
}

// sharedAssembly copies ../shared/assemblies/NAME/cdkx.out, an assembly the TypeScript cdkx wrote, into a
// new folder, or skips the test when ../shared is absent.
func sharedAssembly(t *testing.T, name string) string {
	t.Helper()
	src := filepath.Join("..", "..", "shared", "assemblies", name, "cdkx.out")
	if _, err := os.Stat(src); err != nil {
		t.Skipf("the shared assembly %s is absent (%v): this test needs ../shared next to the repository", name, err)
	}
	return copyAssembly(t, src)
}

// mountAssembly copies synth-multipass-mount and points its two mount sources at new folders. The
// template names /Users/me/code and /Users/me/.ssh, folders of the machine that ran synth: multipass
// (and the fake, and cdkx's preflight) refuses a mount source that does not exist here. It returns the
// assembly and the two folders.
func mountAssembly(t *testing.T) (app, code, ssh string) {
	t.Helper()
	app = sharedAssembly(t, "synth-multipass-mount")
	home := t.TempDir()
	code, ssh = filepath.Join(home, "code"), filepath.Join(home, ".ssh")
	for _, d := range []string{code, ssh} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	editTemplate(t, app, "DevVMs.json", func(tmpl map[string]any) {
		mounts := propsOf(tmpl, "DevVMsDevFEFE6AA1")["mounts"].([]any)
		for _, m := range mounts {
			m := m.(map[string]any)
			switch m["source"] {
			case "/Users/me/code":
				m["source"] = code
			case "/Users/me/.ssh":
				m["source"] = ssh
			default:
				t.Fatalf("synth-multipass-mount has an unexpected mount %v", m)
			}
		}
	})
	return app, code, ssh
}

// checkOutputs checks the recorded outputs of the instance named name.
func checkOutputs(t *testing.T, r exported, name string) {
	t.Helper()
	ip, _ := r.Outputs["ipAddress"].(string)
	if !strings.HasPrefix(ip, "10.") {
		t.Errorf("ipAddress output %q, want an address of 10.0.0.0/8 (the fake's)", ip)
	}
	want := map[string]any{"name": name, "ipAddress": ip, "sshUser": "ubuntu",
		"crn": "crn:cdkx:multipass:compute:instance/" + name}
	if diff := cmp.Diff(want, r.Outputs); diff != "" || r.PhysicalID != name {
		t.Errorf("instance %s (physical ID %q) outputs (-want +got):\n%s", r.LogicalID, r.PhysicalID, diff)
	}
}

// TestMultipassMountAssembly deploys the TypeScript cdkx's synth-multipass-mount assembly (one instance,
// two mounts, one without a target) unchanged but for its mount sources: one launch with the
// template's name, mounts and image; diff right after finds nothing; state records the outputs; destroy
// leaves multipass list empty.
func TestMultipassMountAssembly(t *testing.T) {
	t.Parallel()
	m := newMPRunner(t)
	app, code, ssh := mountAssembly(t)
	m.must(0, "deploy", "--app", app)
	m.must(0, "diff", "--app", app, "--detailed-exitcode")

	launches := m.commands("launch")
	want := []string{"launch", "--name", "dev", "--mount", code + ":/home/ubuntu/code", "--mount", ssh, "jammy"}
	if len(launches) != 1 {
		t.Fatalf("%d launches, want 1: %v", len(launches), launches)
	}
	if diff := cmp.Diff(want, launches[0].Args); diff != "" {
		t.Errorf("launch command line (-want +got):\n%s", diff)
	}
	res := m.state()
	if len(res) != 1 {
		t.Fatalf("state records %d resources, want 1: %+v", len(res), res)
	}
	checkOutputs(t, res[0], "dev")
	if got := m.instances(); !slices.Equal(got, []string{"dev"}) {
		t.Errorf("multipass list: %v, want [dev]", got)
	}

	m.must(0, "destroy", "--app", app, "--force")
	if got := m.instances(); len(got) != 0 {
		t.Errorf("after destroy, multipass list has %v, want nothing", got)
	}
	if res := m.state(); len(res) != 0 {
		t.Errorf("after destroy, state records %+v", res)
	}
}

// instanceAssembly writes a one-stack assembly (stack Dev) of one instance, logical ID Vm, with props.
func instanceAssembly(t *testing.T, props map[string]any) string {
	t.Helper()
	return writeAssembly(t, "Dev", map[string]any{"Vm": map[string]any{
		"type": "Multipass::Compute::Instance", "provider": "multipass", "properties": props}})
}

// TestMultipassEveryProperty launches an instance with every property and checks the launch command line
// carries each one, the inline user data on stdin; a changed memory then replaces the instance, deleting
// it before the new launch (names are unique); destroy empties multipass list.
func TestMultipassEveryProperty(t *testing.T) {
	t.Parallel()
	// The fake's host has two networks; --bridged uses the first (local.bridged-network), the instance's
	// networks entry names the second.
	m := newMPRunner(t, "MULTIPASS_FAKE_NETWORKS=en0,en1")
	src := t.TempDir()
	const userData = "#cloud-config\npackages:\n  - git\nruncmd:\n  - echo hello > /tmp/hello\n"
	props := func(memory string) map[string]any {
		return map[string]any{"name": "full", "image": "noble", "cpus": 2, "memory": memory, "disk": "10G",
			"bridged": true, "timeout": 120,
			"networks":  []any{map[string]any{"name": "en1", "mode": "manual", "mac": "52:54:00:4b:ab:cd"}},
			"mounts":    []any{map[string]any{"source": src, "target": "/home/ubuntu/src"}},
			"cloudInit": userData}
	}
	app := instanceAssembly(t, props("2G"))
	m.must(0, "deploy", "--app", app)
	m.must(0, "diff", "--app", app, "--detailed-exitcode")

	launches := m.commands("launch")
	if len(launches) != 1 {
		t.Fatalf("%d launches, want 1: %v", len(launches), launches)
	}
	want := []string{"launch", "--name", "full", "--cpus", "2", "--memory", "2G", "--disk", "10G", "--bridged",
		"--timeout", "120", "--cloud-init", "-", "--network", "name=en1,mode=manual,mac=52:54:00:4b:ab:cd",
		"--mount", src + ":/home/ubuntu/src", "noble"}
	if diff := cmp.Diff(want, launches[0].Args); diff != "" {
		t.Errorf("launch command line (-want +got):\n%s", diff)
	}
	if got := launches[0].Stdin; got == nil || *got != userData {
		t.Errorf("launch read %v on stdin, want the user data %q", got, userData)
	}
	res := m.state()
	if len(res) != 1 {
		t.Fatalf("state records %d resources, want 1: %+v", len(res), res)
	}
	checkOutputs(t, res[0], "full")

	// A changed memory replaces the instance: delete first, since the name stays.
	app = instanceAssembly(t, props("4G"))
	out := m.must(2, "diff", "--app", app, "--detailed-exitcode")
	if !strings.Contains(out, "-/+ Multipass::Compute::Instance Vm (replace, delete first:") || !strings.Contains(out, "memory") {
		t.Errorf("diff of a memory change does not show the instance's delete-first replacement naming memory:\n%s", out)
	}
	before := len(m.calls())
	m.must(0, "deploy", "--app", app, "--yes") // a replacement needs approval
	var order []string
	for _, c := range m.calls()[before:] {
		switch c.Args[0] {
		case "launch", "delete":
			order = append(order, strings.Join(c.Args[:min(len(c.Args), 5)], " "))
		}
	}
	if diff := cmp.Diff([]string{"delete --purge full", "launch --name full --cpus 2"}, order); diff != "" {
		t.Errorf("the replacement's commands (-want +got):\n%s", diff)
	}
	if l := m.commands("launch"); len(l) != 2 || !slices.Contains(l[1].Args, "4G") {
		t.Errorf("the new launch has no --memory 4G: %v", l)
	}
	m.must(0, "diff", "--app", app, "--detailed-exitcode")

	m.must(0, "destroy", "--app", app, "--force")
	if got := m.instances(); len(got) != 0 {
		t.Errorf("after destroy, multipass list has %v, want nothing", got)
	}
}

// TestMultipassInterrupted interrupts cdkx while multipass launches the instance (a 3 s launch, which the
// fake's daemon finishes without its client): kill -9 of cdkx alone, or SIGINT (Ctrl-C: cdkx stops the
// launching client, exits 130 and leaves the create pending). The next deploy finds the instance by its
// name and records it without a second launch.
func TestMultipassInterrupted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		signal os.Signal
		code   int // cdkx's exit code; -1: killed
	}{
		{"kill -9", os.Kill, -1},
		{"SIGINT", os.Interrupt, 130},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newMPRunner(t, "MULTIPASS_FAKE_LAUNCH_SECONDS=3")
			app, _, _ := mountAssembly(t)
			cmd := exec.Command(filepath.Join(hetznerBins(t), "cdkx"), "deploy", "--app", app)
			cmd.Dir, cmd.Env = m.dir, m.env
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(30 * time.Second); len(m.commands("launch")) == 0; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					_ = cmd.Process.Kill()
					_ = cmd.Wait()
					t.Fatalf("no launch within 30 s\n%s", out.String())
				}
			}
			if err := cmd.Process.Signal(tc.signal); err != nil { // cdkx only, by its PID
				t.Fatal(err)
			}
			_ = cmd.Wait()
			if code := cmd.ProcessState.ExitCode(); code != tc.code {
				t.Errorf("the interrupted deploy exited %d, want %d\n%s", code, tc.code, out.String())
			}

			second := m.must(0, "deploy", "--app", app)
			if n := len(m.commands("launch")); n != 1 {
				t.Errorf("%d launches of dev, want 1: the second deploy must find the instance\n%s", n, second)
			}
			res := m.state()
			if len(res) != 1 || res[0].Status != "CREATE_COMPLETE" {
				t.Fatalf("state after the second deploy: %+v, want the instance, complete\n%s", res, second)
			}
			checkOutputs(t, res[0], "dev")
			m.must(0, "diff", "--app", app, "--detailed-exitcode")
			if got := m.instances(); !slices.Equal(got, []string{"dev"}) {
				t.Errorf("multipass list: %v, want [dev]", got)
			}
		})
	}
}

// TestMultipassRefused: what cdkx stops before any launch — a mount source that does not exist, no
// multipass at all, a daemon that does not answer — exits 1, names the cause, launches nothing and
// records nothing.
func TestMultipassRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  []string
		// edit changes the assembly's properties.
		edit func(props map[string]any)
		want []string // in the output
	}{
		{name: "missing mount source",
			edit: func(props map[string]any) {
				props["mounts"].([]any)[0].(map[string]any)["source"] = "/nonexistent/cdkx-e2e/code"
			},
			want: []string{"mounts[0].source", "/nonexistent/cdkx-e2e/code"}},
		{name: "no multipass", env: []string{"PATH=" + noMultipassPath()}, want: []string{"MULTIPASS_BIN"}},
		{name: "daemon down", env: []string{"MULTIPASS_FAKE_DAEMON_DOWN=1"}, want: []string{"multipassd"}},
		{name: "unknown network", env: []string{"MULTIPASS_FAKE_NETWORKS=en0"},
			edit: func(props map[string]any) { props["networks"] = []any{map[string]any{"name": "eth9"}} },
			want: []string{"networks[0].name", "eth9", `"en0"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newMPRunner(t, tc.env...)
			app, _, _ := mountAssembly(t)
			if tc.edit != nil {
				editTemplate(t, app, "DevVMs.json", func(tmpl map[string]any) { tc.edit(propsOf(tmpl, "DevVMsDevFEFE6AA1")) })
			}
			out := m.must(1, "deploy", "--app", app)
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("the output does not name %q:\n%s", w, out)
				}
			}
			if l := m.commands("launch"); len(l) != 0 {
				t.Errorf("multipass launch ran: %v", l)
			}
			if res := m.state(); len(res) != 0 {
				t.Errorf("state records %+v, want nothing", res)
			}
		})
	}
}

// noMultipassPath is PATH without any folder that holds a multipass (the tests' own fake is never on
// the test's PATH; a real one may be).
func noMultipassPath() string {
	var keep []string
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if _, err := os.Stat(filepath.Join(d, "multipass")); err != nil {
			keep = append(keep, d)
		}
	}
	return strings.Join(keep, string(os.PathListSeparator))
}

// TestMultipassFailedLaunch: a launch that fails (the fake fails it as the real CLI does) fails the
// deploy (exit 4) and leaves no instance, in state or in multipass list.
func TestMultipassFailedLaunch(t *testing.T) {
	t.Parallel()
	m := newMPRunner(t, "MULTIPASS_FAKE_FAIL_LAUNCH=dev")
	app, _, _ := mountAssembly(t)
	out := m.must(4, "deploy", "--app", app)
	if len(m.commands("launch")) != 1 {
		t.Errorf("launches: %v, want one", m.commands("launch"))
	}
	if !strings.Contains(out, "dev") {
		t.Errorf("the failure does not name the instance:\n%s", out)
	}
	if res := m.state(); len(res) != 0 {
		t.Errorf("state records %+v, want nothing", res)
	}
	if got := m.instances(); len(got) != 0 {
		t.Errorf("multipass list has %v, want nothing", got)
	}
}

// TestMultipassAssetAssembly deploys the TypeScript cdkx's synth-docs-concepts-asset assembly unchanged:
// its cloudInit is the synth machine's absolute path of a file asset (/home/dev/…/cdkx.out/assets/…),
// which cdkx hands to multipass as this assembly's own copy, verified; state records the
// machine-independent form; diff right after finds nothing. A copy whose asset bytes changed after synth
// is refused before any launch.
func TestMultipassAssetAssembly(t *testing.T) {
	t.Parallel()
	const asset = "assets/asset.bc6650386e3af37b0803a2d00fbf137a29d3a0e160cd789a2aa0dae1be89033a/cloud-init.yaml"
	m := newMPRunner(t)
	app := sharedAssembly(t, "synth-docs-concepts-asset")
	want, err := os.ReadFile(filepath.Join(app, asset))
	if err != nil {
		t.Fatal(err)
	}
	m.must(0, "deploy", "--app", app)
	m.must(0, "diff", "--app", app, "--detailed-exitcode")

	launches := m.commands("launch")
	if len(launches) != 1 {
		t.Fatalf("%d launches, want 1: %v", len(launches), launches)
	}
	args := launches[0].Args
	i := slices.Index(args, "--cloud-init")
	if i < 0 || i+1 >= len(args) {
		t.Fatalf("the launch has no --cloud-init: %v", args)
	}
	path := args[i+1]
	if rel, err := filepath.Rel(app, path); err != nil || !filepath.IsAbs(path) || strings.HasPrefix(rel, "..") {
		t.Errorf("--cloud-init %s is not inside the assembly %s (the synth machine's path was /home/dev/…)", path, app)
	} else if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, want) {
		t.Errorf("--cloud-init %s holds %q (%v), want the asset's bytes %q", path, got, err, want)
	}
	// What multipass read at the launch is the asset (the fake keeps the user data in its state file).
	b, err := os.ReadFile(filepath.Join(m.fakeDir, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fake struct {
		Instances map[string]struct {
			CloudInit string `json:"cloudInit"`
		} `json:"instances"`
	}
	if err := json.Unmarshal(b, &fake); err != nil {
		t.Fatal(err)
	}
	if got := fake.Instances["my-vm"].CloudInit; got != string(want) {
		t.Errorf("multipass read the user data %q, want the asset's %q", got, want)
	}
	res := m.state()
	if len(res) != 1 {
		t.Fatalf("state records %d resources, want 1: %+v", len(res), res)
	}
	checkOutputs(t, res[0], "my-vm")
	out := m.must(0, "state", "export")
	if !strings.Contains(out, `"cloudInit": "`+asset+`"`) {
		t.Errorf("state does not record cloudInit in the machine-independent form %s:\n%s", asset, out)
	}

	// Asset bytes changed after synth: refused before any launch.
	m2 := newMPRunner(t)
	tampered := copyAssembly(t, app)
	if err := os.WriteFile(filepath.Join(tampered, asset), append(want, "  - curl\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	out = m2.must(1, "deploy", "--app", tampered)
	if !strings.Contains(out, "does not match its hash") {
		t.Errorf("a tampered asset is refused without naming the hash mismatch:\n%s", out)
	}
	if l := m2.commands("launch"); len(l) != 0 {
		t.Errorf("multipass launch ran with a tampered asset: %v", l)
	}
}

// TestMultipassMixedApp deploys one app on both providers: stack Dev launches a Multipass VM and
// outputs its address; stack Edge, on Hetzner (hcloud-fake), has a server and a firewall applied to it
// whose SSH rule admits that address, read through a {stackRef}. The firewall, read from the fake with
// hcloud-go, admits the VM's address as a single host; destroy empties both.
func TestMultipassMixedApp(t *testing.T) {
	t.Parallel()
	f := startFake(t, "--action-polls", "2")
	m := newMPRunner(t, "HCLOUD_TOKEN="+hcloudToken, "HCLOUD_ENDPOINT="+f.url, "HCLOUD_POLL_INTERVAL=20ms")
	dir := filepath.Join(t.TempDir(), "cdkx.out")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]any{
		"manifest.json": map[string]any{"version": "1.0.0", "artifacts": map[string]any{
			"Dev":  map[string]any{"type": "cdkx:stack", "properties": map[string]any{"templateFile": "Dev.json"}},
			"Edge": map[string]any{"type": "cdkx:stack", "properties": map[string]any{"templateFile": "Edge.json"}},
		}},
		"Dev.json": map[string]any{
			"resources": map[string]any{"Vm": map[string]any{"type": "Multipass::Compute::Instance", "provider": "multipass",
				"properties": map[string]any{"name": "dev", "image": "jammy"}}},
			"outputs": map[string]any{"VmIp": map[string]any{"value": map[string]any{"ref": "Vm", "attr": "ipAddress"}}},
		},
		"Edge.json": map[string]any{"resources": map[string]any{
			"Bastion": map[string]any{"type": "Hetzner::Compute::Server", "provider": "hetzner",
				"properties": map[string]any{"name": "bastion", "serverType": "cx22", "image": "ubuntu-24.04", "location": "fsn1"}},
			"Fw": map[string]any{"type": "Hetzner::Security::Firewall", "provider": "hetzner",
				"properties": map[string]any{"name": "bastion-fw"}},
			"FwRules": map[string]any{"type": "Hetzner::Security::FirewallRules", "provider": "hetzner",
				"properties": map[string]any{"firewallId": map[string]any{"ref": "Fw", "attr": "firewallId"},
					"rules": []any{map[string]any{"direction": "in", "protocol": "tcp", "port": "22",
						// A bare address is the single host: the assembly format cannot append "/32".
						"sourceIps":   []any{map[string]any{"stackRef": "Dev", "outputKey": "VmIp"}},
						"description": "SSH from the dev VM"}}}},
			"FwOnBastion": map[string]any{"type": "Hetzner::Security::FirewallAttachment", "provider": "hetzner",
				"properties": map[string]any{"firewallId": map[string]any{"ref": "Fw", "attr": "firewallId"},
					"serverId": map[string]any{"ref": "Bastion", "attr": "serverId"}}},
		}},
	}
	for name, v := range files {
		b, _ := json.MarshalIndent(v, "", "  ")
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m.must(0, "deploy", "--app", dir)
	m.must(0, "diff", "--app", dir, "--detailed-exitcode")

	var vmIP string
	for _, r := range m.state() {
		if r.Stack == "Dev" && r.LogicalID == "Vm" {
			vmIP, _ = r.Outputs["ipAddress"].(string)
		}
	}
	if !strings.HasPrefix(vmIP, "10.") {
		t.Fatalf("the VM's recorded ipAddress is %q, want a 10.x address", vmIP)
	}
	fw, _, err := f.client.Firewall.GetByName(t.Context(), "bastion-fw")
	if err != nil || fw == nil {
		t.Fatalf("firewall bastion-fw: %v, %v", fw, err)
	}
	var admitted []string
	for _, rule := range fw.Rules {
		for _, n := range rule.SourceIPs {
			admitted = append(admitted, n.String())
		}
	}
	if diff := cmp.Diff([]string{vmIP + "/32"}, admitted); diff != "" {
		t.Errorf("the firewall admits (-want +got):\n%s", diff)
	}
	bastion := serverNamed(t, f, "bastion")
	if len(fw.AppliedTo) != 1 || fw.AppliedTo[0].Server == nil || fw.AppliedTo[0].Server.ID != bastion.ID {
		t.Errorf("the firewall applies to %+v, want server %d (bastion)", fw.AppliedTo, bastion.ID)
	}

	m.must(0, "destroy", "--app", dir, "--force")
	if got := f.inventory(t); got != (inventory{}) {
		t.Errorf("after destroy, the Hetzner project holds %+v, want nothing", got)
	}
	if got := m.instances(); len(got) != 0 {
		t.Errorf("after destroy, multipass list has %v, want nothing", got)
	}
}

// TestMultipassConcurrency: four instances, each launch taking 1 s, launch two at a time (the provider's
// default concurrency, whatever --concurrency allows in all), as the fake's launch times show.
func TestMultipassConcurrency(t *testing.T) {
	t.Parallel()
	m := newMPRunner(t, "MULTIPASS_FAKE_LAUNCH_SECONDS=1")
	resources := map[string]any{}
	for i := range 4 {
		resources[fmt.Sprintf("Vm%d", i)] = map[string]any{"type": "Multipass::Compute::Instance", "provider": "multipass",
			"properties": map[string]any{"name": fmt.Sprintf("vm-%d", i)}}
	}
	app := writeAssembly(t, "Dev", resources)
	m.must(0, "deploy", "--app", app, "--concurrency", "10")
	b, err := os.ReadFile(filepath.Join(m.fakeDir, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fake struct {
		Instances map[string]struct {
			LaunchedAt time.Time `json:"launchedAt"`
			ReadyAt    time.Time `json:"readyAt"`
		} `json:"instances"`
	}
	if err := json.Unmarshal(b, &fake); err != nil {
		t.Fatal(err)
	}
	if len(fake.Instances) != 4 {
		t.Fatalf("the fake holds %d instances, want 4", len(fake.Instances))
	}
	most := 0
	for _, a := range fake.Instances {
		n := 0
		for _, b := range fake.Instances {
			if !b.LaunchedAt.After(a.LaunchedAt) && b.ReadyAt.After(a.LaunchedAt) {
				n++
			}
		}
		most = max(most, n)
	}
	if most != 2 {
		t.Errorf("at most %d launches ran at once, want 2 (the provider's default concurrency): %+v", most, fake.Instances)
	}
}
