package fakemp

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fixture is the folder of one case: the state folder, a mount source folder, a plain file and a
// cloud-init file; "$SRC", "$FILE" and "$CLOUD" in a case's arguments stand for them.
type fixture struct {
	dir, src, file, cloud string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	root := t.TempDir()
	f := fixture{
		dir:   filepath.Join(root, "state"),
		src:   filepath.Join(root, "project"),
		file:  filepath.Join(root, "plain.txt"),
		cloud: filepath.Join(root, "cloud-init.yaml"),
	}
	if err := os.Mkdir(f.src, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{f.file, f.cloud} {
		if err := os.WriteFile(p, []byte("#cloud-config\npackages: [nginx]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func (f fixture) expand(s string) string {
	return strings.NewReplacer("$SRC", f.src, "$FILE", f.file, "$CLOUD", f.cloud).Replace(s)
}

func (f fixture) env() Env {
	return Env{Dir: f.dir, Networks: []string{"en0", "br0"}}
}

type result struct {
	code           int
	stdout, stderr string
}

func run(t *testing.T, env Env, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), env, args, strings.NewReader(stdin), &out, &errb)
	return result{code, out.String(), errb.String()}
}

func (f fixture) mustRun(t *testing.T, env Env, args ...string) {
	t.Helper()
	expanded := make([]string, len(args))
	for i, a := range args {
		expanded[i] = f.expand(a)
	}
	if r := run(t, env, "", expanded...); r.code != 0 {
		t.Fatalf("setup %q = %d, stderr %q", args, r.code, r.stderr)
	}
}

func (f fixture) state(t *testing.T) *store {
	t.Helper()
	s, err := readStore(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// jsonEqual compares JSON texts after parsing them.
func jsonDiff(t *testing.T, want, got string) string {
	t.Helper()
	var w, g any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want is not JSON: %v\n%s", err, want)
	}
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		return "stdout is not JSON: " + err.Error() + "\n" + got
	}
	return cmp.Diff(w, g)
}

// The address allocateIPv4 gives each name in an empty state (deterministic per name).
var ipOf = map[string]string{}

func init() {
	for _, n := range []string{"dev", "a", "b", "c"} {
		ipOf[n] = (&store{Instances: map[string]*Instance{}}).allocateIPv4(n)
	}
}

const invalidMemory = " is not a valid memory size - need a non-negative integer (in base 10) or a decimal followed by K, M, or G (e.g. 1234B, 42MiB, 0.5G)\n"

// TestRun runs every command of the fake on a fresh state folder, after the setup commands of the
// case: the success answers and each refusal, with the real CLI's stdout, stderr and exit code.
func TestRun(t *testing.T) {
	t.Parallel()
	devInfo := `{"errors": [], "info": {"dev": {
		"cpu_count": "2", "disks": {"sda1": {"total": "10401873920", "used": "1932735283"}},
		"image_hash": "c01acc56e50eeb02878fd9cc6a43e90ee996bb4b1bf06cc840825d8094066ae0",
		"image_release": "22.04 LTS", "ipv4": ["` + ipOf["dev"] + `"], "load": [0.08, 0.03, 0.01],
		"memory": {"total": 2013265920, "used": 402653184}, "mounts": {}, "release": "Ubuntu 22.04.5 LTS",
		"snapshot_count": "0", "state": "Running"}}}`
	launchDev := []string{"launch", "jammy", "--name", "dev", "--cpus", "2", "--memory", "2G", "--disk", "10G"}
	tests := []struct {
		name  string
		setup [][]string
		env   func(*Env)
		args  []string
		stdin string
		code  int
		// stdout is compared as JSON when wantJSON, else exactly; stderr exactly unless stderrRE.
		stdout   string
		wantJSON bool
		stderr   string
		stderrRE string
		check    func(t *testing.T, f fixture)
		seed     func(t *testing.T, f fixture)
	}{
		// General.
		{name: "no arguments prints the usage and exits 2", args: nil, code: 2, stdout: Usage()},
		{name: "--help prints the usage", args: []string{"--help"}, code: 0, stdout: Usage()},
		{name: "unknown command", args: []string{"frobnicate"}, code: 1,
			stdout: "Error: Unknown command or alias 'frobnicate' (try \"multipass help\" or \"multipass aliases\")\n"},
		{name: "command the fake does not implement", args: []string{"stop", "dev"}, code: 1,
			stderrRE: `^multipass-fake: the fake does not implement "multipass stop"; it answers delete, help, info, launch, list, networks, purge, version\n$`},
		{name: "unknown option", args: []string{"list", "--frob"}, code: 1, stderr: "Unknown option 'frob'.\n"},
		{name: "missing option value", args: []string{"launch", "--name"}, code: 1, stderr: "Missing value after '--name'.\n"},
		{name: "value to a flag", args: []string{"delete", "--purge=yes", "dev"}, code: 1, stderr: "Unexpected value after '--purge'.\n"},
		{name: "command help", args: []string{"launch", "--help"}, code: 0, stdout: commandHelp(findCommand("launch"))},
		{name: "help command", args: []string{"help", "list"}, code: 0, stdout: commandHelp(findCommand("list"))},

		// version.
		{name: "version table", args: []string{"version"}, stdout: "multipass   1.16.3\nmultipassd  1.16.3\n"},
		{name: "version json", args: []string{"version", "--format", "json"}, wantJSON: true,
			stdout: `{"multipass": "1.16.3", "multipassd": "1.16.3"}`},
		{name: "-V is version", args: []string{"-V"}, stdout: "multipass   1.16.3\nmultipassd  1.16.3\n"},
		{name: "version with the daemon down shows the client only", env: func(e *Env) { e.DaemonDown = true },
			args: []string{"version", "--format=json"}, wantJSON: true, stdout: `{"multipass": "1.16.3"}`},
		{name: "version table with the daemon down", env: func(e *Env) { e.DaemonDown = true },
			args: []string{"version"}, stdout: "multipass   1.16.3\n"},
		{name: "version takes no arguments", args: []string{"version", "x"}, code: 1, stderr: "This command takes no arguments\n"},
		{name: "invalid format", args: []string{"version", "--format", "xml"}, code: 1, stderr: "Invalid format type given.\n"},
		{name: "csv is not implemented", args: []string{"list", "--format", "csv"}, code: 1,
			stderr: "multipass-fake: --format csv is not implemented by the fake (table, json)\n"},

		// launch: success.
		{name: "launch", args: launchDev, stdout: launchOut("dev") + launchEnd,
			check: func(t *testing.T, f fixture) {
				r := run(t, f.env(), "", "info", "dev", "--format", "json")
				if d := jsonDiff(t, devInfo, r.stdout); r.code != 0 || d != "" {
					t.Errorf("info dev = %d %q, diff (-want +got):\n%s", r.code, r.stderr, d)
				}
			}},
		{name: "launch with defaults and a generated name", args: []string{"launch"},
			stdout: stdoutRE(`\x1b\[0ELaunched: [a-z]+-[a-z]+\n\x1b\[2K\x1b\[0A\x1b\[0E$`),
			check: func(t *testing.T, f fixture) {
				for _, in := range f.state(t).Instances {
					want := Instance{Name: in.Name, ImageRelease: "24.04 LTS", Release: "Ubuntu 24.04.3 LTS",
						ImageHash: in.ImageHash, CPUs: 1, MemoryBytes: 1 << 30, DiskBytes: 5 << 30, IPv4: in.IPv4,
						LaunchedAt: in.LaunchedAt, ReadyAt: in.ReadyAt}
					if d := cmp.Diff(want, *in); d != "" {
						t.Errorf("instance (-want +got):\n%s", d)
					}
				}
			}},
		{name: "launch with mounts, networks and cloud-init from stdin",
			args: []string{"launch", "--name", "dev", "--mount", "$SRC:/home/ubuntu/code", "--mount", "$SRC",
				"--network", "name=en0,mode=manual,mac=52:54:00:AA:BB:CC", "--network", "br0", "--bridged",
				"--cloud-init", "-"},
			stdin: "#cloud-config\nruncmd: [true]\n",
			stdout: launchOut("dev") + clearLine + clearLine + "Mounted '$SRC' into 'dev:/home/ubuntu/code'\n" +
				clearLine + clearLine + "Mounted '$SRC' into 'dev:'\n" + launchEnd,
			check: func(t *testing.T, f fixture) {
				in := f.state(t).Instances["dev"]
				want := []Network{{"en0", "auto", ""}, {"en0", "manual", "52:54:00:aa:bb:cc"}, {"br0", "auto", ""}}
				if d := cmp.Diff(want, in.Networks); d != "" {
					t.Errorf("networks (-want +got):\n%s", d)
				}
				wantMounts := []Mount{{f.src, "/home/ubuntu/code"}, {f.src, "/home/ubuntu/project"}}
				if d := cmp.Diff(wantMounts, in.Mounts); d != "" {
					t.Errorf("mounts (-want +got):\n%s", d)
				}
				if in.CloudInit != "#cloud-config\nruncmd: [true]\n" {
					t.Errorf("cloud-init = %q, want stdin's", in.CloudInit)
				}
				r := run(t, f.env(), "", "info", "dev", "--format", "json")
				var got struct {
					Info map[string]struct {
						Mounts map[string]struct {
							SourcePath  string   `json:"source_path"`
							UIDMappings []string `json:"uid_mappings"`
						} `json:"mounts"`
					} `json:"info"`
				}
				if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
					t.Fatal(err)
				}
				m := got.Info["dev"].Mounts["/home/ubuntu/code"]
				if m.SourcePath != f.src || len(m.UIDMappings) != 1 || !strings.HasSuffix(m.UIDMappings[0], ":default") {
					t.Errorf("info mounts = %+v, want source %s mapped to default", got.Info["dev"].Mounts, f.src)
				}
			}},
		{name: "launch with a cloud-init file", args: []string{"launch", "--name", "dev", "--cloud-init", "$CLOUD"},
			stdout: launchOut("dev") + launchEnd,
			check: func(t *testing.T, f fixture) {
				if got := f.state(t).Instances["dev"].CloudInit; got != "#cloud-config\npackages: [nginx]\n" {
					t.Errorf("cloud-init = %q, want the file's", got)
				}
			}},
		{name: "launch a blueprint warns", args: []string{"launch", "docker", "--name", "dev"},
			stdout: clearLine + launchOut("dev") + launchEnd, stderr: blueprintWarning},
		{name: "launch mounts at an invalid target after launching", args: []string{"launch", "--name", "dev", "--mount", "$SRC:/home/ubuntu"},
			code: 2, stdout: launchOut("dev") + clearLine + clearLine + launchEnd, stderr: "mount failed: The following errors occurred:\nunable to mount to \"/home/ubuntu\"\n",
			check: func(t *testing.T, f fixture) {
				if in := f.state(t).Instances["dev"]; in == nil || len(in.Mounts) != 0 {
					t.Errorf("instance = %+v, want dev without mounts", in)
				}
			}},

		// launch: client-side refusals (exit 1).
		{name: "launch too many arguments", args: []string{"launch", "jammy", "noble"}, code: 1, stderr: "Too many arguments supplied\n"},
		{name: "launch bad remote image", args: []string{"launch", "a:b:c"}, code: 1, stderr: "Invalid remote and source image name supplied\n"},
		{name: "launch cpus 0", args: []string{"launch", "--cpus", "0"}, code: 1,
			stderr: "Error: invalid CPU count '0', need a positive integer value.\n"},
		{name: "launch cpus not a number", args: []string{"launch", "-c", "two"}, code: 1,
			stderr: "Error: invalid CPU count 'two', need a positive integer value.\n"},
		{name: "launch malformed memory", args: []string{"launch", "--memory", "1CiG"}, code: 1,
			stderrRE: `^\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\] \[error\] \[client\] Caught an unhandled exception: 1CiG` + regexp.QuoteMeta(invalidMemory) + `$`},
		{name: "launch malformed disk", args: []string{"launch", "--disk", "6CiG"}, code: 1,
			stderrRE: `\] Caught an unhandled exception: 6CiG` + regexp.QuoteMeta(invalidMemory) + `$`},
		{name: "launch --memory and --mem", args: []string{"launch", "--memory", "1G", "--mem", "1G"}, code: 1,
			stderr: "Error: invalid option(s) used for memory allocation. Please use \"--memory\" to specify amount of memory to allocate.\n"},
		{name: "launch mount source missing", args: []string{"launch", "--mount", "/nonexistent/code:/home/ubuntu/code"}, code: 1,
			stderr: "Mount source path \"/nonexistent/code\" does not exist\n"},
		{name: "launch mount source not a folder", args: []string{"launch", "--mount", "$FILE"}, code: 1,
			stderr: "Mount source path \"$FILE\" is not a directory\n"},
		{name: "launch cloud-init missing", args: []string{"launch", "--cloud-init", "/nonexistent.yaml"}, code: 1,
			stderr: "Could not load cloud-init configuration: bad file: /nonexistent.yaml\nPlease ensure that Multipass can read it.\n"},
		{name: "launch cloud-init folder", args: []string{"launch", "--cloud-init", "$SRC"}, code: 1,
			stderr: "Could not load cloud-init configuration: bad file: $SRC\nPlease ensure that Multipass can read it.\n"},
		{name: "launch bad network mode", args: []string{"launch", "--network", "name=en0,mode=fast"}, code: 1,
			stderr: "error: Bad network mode 'fast', need 'auto' or 'manual'\n"},
		{name: "launch bad mac", args: []string{"launch", "--network", "name=en0,mac=52:54:00"}, code: 1,
			stderr: "error: Invalid MAC address: 52:54:00\n"},
		{name: "launch bad network field", args: []string{"launch", "--network", "name=en0,speed=1G"}, code: 1,
			stderr: "error: Bad network field: speed\n"},
		{name: "launch network without name", args: []string{"launch", "--network", "mode=auto"}, code: 1,
			stderr: "error: Bad network definition, need at least a 'name' field\n"},
		{name: "launch network field definition", args: []string{"launch", "--network", "en0,br0"}, code: 1,
			stderr: "error: Bad network field definition: en0\n"},
		{name: "launch bad timeout", args: []string{"launch", "--timeout", "0"}, code: 1,
			stderr: "error: --timeout value has to be a positive integer\n"},
		{name: "launch checks arguments before the daemon", env: func(e *Env) { e.DaemonDown = true },
			args: []string{"launch", "--mount", "/nonexistent"}, code: 1, stderr: "Mount source path \"/nonexistent\" does not exist\n"},

		// launch: the daemon's refusals (exit 2).
		{name: "launch with the daemon down", env: func(e *Env) { e.DaemonDown = true }, args: launchDev, code: 2, stdout: launchRefused,
			stderr: "launch failed: cannot connect to the multipass socket\n"},
		{name: "launch unknown image", args: []string{"launch", "wobbly"}, code: 2, stdout: launchRefused,
			stderr: "launch failed: Unable to find an image matching \"wobbly\" in remote \"\".\n"},
		{name: "launch unknown remote", args: []string{"launch", "mirror:jammy"}, code: 2, stdout: launchRefused,
			stderr: "launch failed: Remote \"mirror\" is unknown or unreachable. If image mirror is enabled, please confirm it is valid.\n"},
		{name: "launch memory too small", args: []string{"launch", "--memory", "64M"}, code: 2, stdout: launchRefused,
			stderr: "launch failed: Invalid arguments supplied\nInvalid memory size value supplied: 64M.\n"},
		{name: "launch disk too small", args: []string{"launch", "--disk", "100M"}, code: 2, stdout: launchRefused,
			stderr: "launch failed: Invalid arguments supplied\nInvalid disk size value supplied: 100M.\n"},
		{name: "launch unknown network", args: []string{"launch", "--network", "wlan9"}, code: 2, stdout: launchRefused,
			stderr: "launch failed: Invalid arguments supplied\nInvalid network options supplied\n"},
		{name: "launch bridged without networks", env: func(e *Env) { e.Networks = nil }, args: []string{"launch", "--bridged"}, code: 2, stdout: launchRefused,
			stderr: "launch failed: You have to `multipass set local.bridged-network=<name>` to use the \"bridged\" shortcut.\n"},
		{name: "launch name and network both wrong: the last error is shown", args: []string{"launch", "-n", "1dev", "--network", "wlan9"}, code: 2, stdout: launchRefused,
			stderr: "launch failed: Invalid arguments supplied\nInvalid network options supplied\n"},
		{name: "launch existing name", setup: [][]string{launchDev}, args: launchDev, code: 2, stdout: launchRefused,
			stderr: "launch failed: instance \"dev\" already exists\n"},
		{name: "launch name of a deleted instance", setup: [][]string{launchDev, {"delete", "dev"}}, args: launchDev, code: 2, stdout: launchRefused,
			stderr: "launch failed: instance \"dev\" already exists\n"},
		{name: "launch injected failure", env: func(e *Env) { e.FailLaunch = []string{"other", "dev"} }, args: launchDev, code: 2, stdout: launchRefused,
			stderr: "launch failed: failed to download from 'https://cloud-images.ubuntu.com/releases/jammy/release/ubuntu-22.04-server-cloudimg-amd64.img': Network timeout\n",
			check:  noInstances},
		{name: "launch injected failure for all", env: func(e *Env) { e.FailLaunch = []string{"*"} }, args: []string{"launch", "-n", "x"}, code: 2, stdout: launchRefused,
			stderrRE: `^launch failed: failed to download from .*noble.*\n$`, check: noInstances},

		// info.
		{name: "info missing instance", args: []string{"info", "dev", "--format", "json"}, code: 2,
			stderr: "info failed: The following errors occurred:\ninstance \"dev\" does not exist\n"},
		{name: "info missing instances", setup: [][]string{launchDev}, args: []string{"info", "a", "dev", "b"}, code: 2,
			stderr: "info failed: The following errors occurred:\ninstance \"a\" does not exist\ninstance \"b\" does not exist\n"},
		{name: "info snapshot", setup: [][]string{launchDev}, args: []string{"info", "dev.snap1"}, code: 2,
			stderr: "info failed: The following errors occurred:\nNo such snapshot: dev.snap1\n"},
		{name: "info all, deleted ones last", setup: [][]string{{"launch", "-n", "a"}, {"launch", "-n", "b"}, {"delete", "a"}},
			args: []string{"info", "--format", "json", "--no-runtime-information"}, wantJSON: true,
			stdout: `{"errors": [], "info": {
			"a": {"cpu_count": "", "disks": {"sda1": {}}, "image_hash": "` + nobleHash + `", "image_release": "24.04 LTS",
				"ipv4": [], "load": [], "memory": {}, "mounts": {}, "release": "", "snapshot_count": "0", "state": "Deleted"},
			"b": {"cpu_count": "", "disks": {"sda1": {}}, "image_hash": "` + nobleHash + `", "image_release": "24.04 LTS",
				"ipv4": [], "load": [], "memory": {}, "mounts": {}, "release": "", "snapshot_count": "0", "state": "Running"}}}`},
		{name: "info of a starting instance has no runtime fields", seed: seedStarting("c"), args: []string{"info", "c", "--format", "json"},
			wantJSON: true,
			stdout: `{"errors": [], "info": {"c": {"cpu_count": "", "disks": {"sda1": {}}, "image_hash": "` + nobleHash + `",
				"image_release": "24.04 LTS", "ipv4": [], "load": [], "memory": {}, "mounts": {}, "release": "",
				"snapshot_count": "0", "state": "Starting"}}}`},
		{name: "info --all with a name", args: []string{"info", "--all", "dev"}, code: 1, stderr: "Cannot specify name when --all option set\n"},
		{name: "info with the daemon down", env: func(e *Env) { e.DaemonDown = true }, args: []string{"info", "dev", "--format", "json"}, code: 2,
			stderr: "info failed: cannot connect to the multipass socket\n"},
		{name: "info table", setup: [][]string{launchDev}, args: []string{"info", "dev"},
			stdout: "Name:           dev\nState:          Running\nSnapshots:      0\nIPv4:           " + ipOf["dev"] + "\n" +
				"Release:        Ubuntu 22.04.5 LTS\nImage hash:     c01acc56e50e (Ubuntu 22.04 LTS)\nCPU(s):         2\n" +
				"Load:           0.08 0.03 0.01\nDisk usage:     1.8GiB out of 9.7GiB\nMemory usage:   384.0MiB out of 1.9GiB\nMounts:         --\n"},

		// list.
		{name: "list empty", args: []string{"list", "--format", "json"}, wantJSON: true, stdout: `{"list": []}`},
		{name: "list empty, as Qt writes it", args: []string{"list", "--format", "json"}, stdout: "{\n    \"list\": [\n    ]\n}\n"},
		{name: "version json, as Qt writes it", args: []string{"version", "--format", "json"},
			stdout: "{\n    \"multipass\": \"1.16.3\",\n    \"multipassd\": \"1.16.3\"\n}\n"},
		{name: "list empty table", args: []string{"list"}, stdout: "No instances found.\n"},
		{name: "list live then deleted", setup: [][]string{{"launch", "-n", "b"}, {"launch", "-n", "a", "22.04"}, {"launch", "-n", "c"}, {"delete", "b"}},
			args: []string{"list", "--format", "json"}, wantJSON: true,
			stdout: `{"list": [
				{"ipv4": ["` + ipOf["a"] + `"], "name": "a", "release": "Ubuntu 22.04 LTS", "state": "Running"},
				{"ipv4": ["` + ipOf["c"] + `"], "name": "c", "release": "Ubuntu 24.04 LTS", "state": "Running"},
				{"ipv4": [], "name": "b", "release": "Ubuntu 24.04 LTS", "state": "Deleted"}]}`},
		{name: "list --no-ipv4", setup: [][]string{{"launch", "-n", "a"}}, args: []string{"list", "--format", "json", "--no-ipv4"}, wantJSON: true,
			stdout: `{"list": [{"ipv4": [], "name": "a", "release": "Ubuntu 24.04 LTS", "state": "Running"}]}`},
		{name: "list table", setup: [][]string{{"launch", "-n", "a"}, {"launch", "-n", "b"}, {"delete", "b"}}, args: []string{"list"},
			stdout: "Name" + strings.Repeat(" ", 20) + "State             IPv4             Image\n" +
				"a" + strings.Repeat(" ", 23) + "Running           " + ipOf["a"] + strings.Repeat(" ", 17-len(ipOf["a"])) + "Ubuntu 24.04 LTS\n" +
				"b" + strings.Repeat(" ", 23) + "Deleted           --               Ubuntu 24.04 LTS\n"},
		{name: "list takes no arguments", args: []string{"list", "a"}, code: 1, stderr: "This command takes no arguments\n"},
		{name: "list with the daemon down", env: func(e *Env) { e.DaemonDown = true }, args: []string{"list", "--format", "json"}, code: 2,
			stderr: "list failed: cannot connect to the multipass socket\n"},

		// networks.
		{name: "networks", args: []string{"networks", "--format", "json"}, wantJSON: true,
			stdout: `{"list": [{"description": "Network bridge", "name": "br0", "type": "bridge"},
				{"description": "Ethernet device", "name": "en0", "type": "ethernet"}]}`},
		{name: "networks none", env: func(e *Env) { e.Networks = nil }, args: []string{"networks", "--format", "json"}, wantJSON: true,
			stdout: `{"list": []}`},
		{name: "networks table", args: []string{"networks"},
			stdout: "Name   Type       Description\nbr0    bridge     Network bridge\nen0    ethernet   Ethernet device\n"},
		{name: "networks with the daemon down", env: func(e *Env) { e.DaemonDown = true }, args: []string{"networks", "--format", "json"}, code: 2,
			stderr: "networks failed: cannot connect to the multipass socket\n"},

		// delete and purge.
		{name: "delete marks deleted", setup: [][]string{{"launch", "-n", "a"}}, args: []string{"delete", "a"},
			check: func(t *testing.T, f fixture) {
				if in := f.state(t).Instances["a"]; in == nil || !in.Deleted {
					t.Errorf("a = %+v, want deleted", in)
				}
			}},
		{name: "delete --purge removes", setup: [][]string{{"launch", "-n", "a"}, {"launch", "-n", "b"}}, args: []string{"delete", "--purge", "a"},
			check: wantNames("b")},
		{name: "delete -p a deleted one", setup: [][]string{{"launch", "-n", "a"}, {"delete", "a"}}, args: []string{"delete", "-p", "a"},
			check: wantNames()},
		{name: "delete --all", setup: [][]string{{"launch", "-n", "a"}, {"launch", "-n", "b"}}, args: []string{"delete", "--all", "--purge"},
			check: wantNames()},
		{name: "delete without names", args: []string{"delete"}, code: 1, stderr: "Name argument or --all is required\n"},
		{name: "delete names and --all", args: []string{"delete", "a", "b", "--all"}, code: 1, stderr: "Cannot specify names when --all option set\n"},
		{name: "delete a missing one deletes nothing", setup: [][]string{{"launch", "-n", "a"}}, args: []string{"delete", "--purge", "a", "b"}, code: 2,
			stderr: "delete failed: The following errors occurred:\ninstance \"b\" does not exist\n", check: wantNames("a")},
		{name: "delete a snapshot", setup: [][]string{{"launch", "-n", "a"}}, args: []string{"delete", "a.s1"}, code: 2,
			stderr: "delete failed: No such snapshot: a.s1\n"},
		{name: "delete with the daemon down", env: func(e *Env) { e.DaemonDown = true }, args: []string{"delete", "--purge", "a"}, code: 2,
			stderr: "delete failed: cannot connect to the multipass socket\n"},
		{name: "purge", setup: [][]string{{"launch", "-n", "a"}, {"launch", "-n", "b"}, {"delete", "a"}}, args: []string{"purge"},
			check: wantNames("b")},
		{name: "purge takes no arguments", args: []string{"purge", "a"}, code: 1, stderr: "This command takes no arguments\n"},
		{name: "purge with the daemon down", env: func(e *Env) { e.DaemonDown = true }, args: []string{"purge"}, code: 2,
			stderr: "purge failed: cannot connect to the multipass socket\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			env := f.env()
			for _, s := range tt.setup {
				f.mustRun(t, env, s...)
			}
			if tt.seed != nil {
				tt.seed(t, f)
			}
			if tt.env != nil {
				tt.env(&env)
			}
			args := make([]string, len(tt.args))
			for i, a := range tt.args {
				args[i] = f.expand(a)
			}
			got := run(t, env, tt.stdin, args...)
			if got.code != tt.code {
				t.Errorf("multipass %q exit = %d, want %d (stderr %q)", args, got.code, tt.code, got.stderr)
			}
			switch {
			case tt.wantJSON:
				if d := jsonDiff(t, tt.stdout, got.stdout); d != "" {
					t.Errorf("multipass %q stdout (-want +got):\n%s", args, d)
				}
			case strings.HasPrefix(tt.stdout, "RE:"):
				if !regexp.MustCompile(tt.stdout[3:]).MatchString(got.stdout) {
					t.Errorf("multipass %q stdout = %q, want match of %s", args, got.stdout, tt.stdout[3:])
				}
			default:
				if d := cmp.Diff(f.expand(tt.stdout), got.stdout); d != "" {
					t.Errorf("multipass %q stdout (-want +got):\n%s", args, d)
				}
			}
			if tt.stderrRE != "" {
				if !regexp.MustCompile(tt.stderrRE).MatchString(got.stderr) {
					t.Errorf("multipass %q stderr = %q, want match of %s", args, got.stderr, tt.stderrRE)
				}
			} else if d := cmp.Diff(f.expand(tt.stderr), got.stderr); d != "" {
				t.Errorf("multipass %q stderr (-want +got):\n%s", args, d)
			}
			if tt.check != nil {
				tt.check(t, f)
			}
		})
	}
}

// nobleHash is the image hash the fake reports for the 24.04 image.
const nobleHash = "a43b8adaf73a7a40fa2776f19445acbcb1619a7273b2e0bd44e0978f9ac578fa"

// spinnerOut is what launch writes to stdout while it waits for name (the real AnimatedSpinner's bytes,
// drawn once per message).
func spinnerOut(name string) string {
	var b strings.Builder
	for _, m := range []string{"Creating " + name, "Configuring " + name, "Starting " + name, "Waiting for initialization to complete"} {
		b.WriteString(clearLine + m + "  \b/\b " + clearLine)
	}
	return clearLine + b.String()
}

// launchOut is launch's stdout up to "Launched: NAME" when it succeeds; launchEnd follows it, after
// the mounts if any (the spinner's destructor clears the line once more).
func launchOut(name string) string { return spinnerOut(name) + "Launched: " + name + "\n" }

const launchEnd = clearLine

// launchRefused is launch's stdout when the daemon refuses: the spinner is stopped, then destroyed.
const launchRefused = clearLine + clearLine

// stdoutRE makes a stdout expectation that is a regular expression.
func stdoutRE(re string) string { return "RE:" + re }

func noInstances(t *testing.T, f fixture) {
	t.Helper()
	wantNames()(t, f)
}

func wantNames(names ...string) func(t *testing.T, f fixture) {
	return func(t *testing.T, f fixture) {
		t.Helper()
		got := f.state(t).sortedNames()
		if d := cmp.Diff(names, got, cmpEmpty); d != "" {
			t.Errorf("instances (-want +got):\n%s", d)
		}
	}
}

var cmpEmpty = cmp.Transformer("empty", func(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
})

// seedStarting records an instance launched just now whose ready time is an hour away.
func seedStarting(name string) func(t *testing.T, f fixture) {
	return func(t *testing.T, f fixture) {
		t.Helper()
		err := update(f.dir, func(s *store) (bool, error) {
			now := time.Now()
			s.Instances[name] = &Instance{Name: name, ImageRelease: "24.04 LTS", Release: "Ubuntu 24.04.3 LTS",
				ImageHash: nobleHash, CPUs: 1, MemoryBytes: 1 << 30, DiskBytes: 5 << 30, IPv4: s.allocateIPv4(name),
				LaunchedAt: now, ReadyAt: now.Add(time.Hour)}
			return true, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
