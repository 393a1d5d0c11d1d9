package multipass_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/adapters/multipass"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TestPreflightMultipass: multipass must run and its daemon answer, checked once per Provider; a missing
// binary names MULTIPASS_BIN, a daemon that does not answer says to start it.
func TestPreflightMultipass(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		answer step
		check  func(error) bool
		inText string
	}{
		{"answers", versionOK, nil, ""},
		{"answers with an update", step{Args: "version --format json", Stdout: "@version-update.json"}, nil, ""},
		{"daemon down", step{Args: "version --format json", Stdout: "@version-daemon-down.json"},
			func(err error) bool { return errors.Is(err, multipass.ErrDaemonDown) }, "start Multipass"},
		{"missing binary", step{Args: "version --format json", Err: &fs.PathError{Op: "fork/exec", Path: "/opt/mp/multipass", Err: fs.ErrNotExist}},
			func(err error) bool { return errors.As(err, new(*multipass.MissingBinaryError)) }, "MULTIPASS_BIN"},
		{"not JSON", step{Args: "version --format json", Stdout: "multipass   1.14.0\nmultipassd  1.14.0\n"},
			func(err error) bool { return err != nil }, "not the JSON"},
		{"fails", step{Args: "version --format json", Code: 1, Stderr: "Invalid format type given.\n"},
			func(err error) bool { return errors.As(err, new(*multipass.CommandError)) }, "Invalid format type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, p := newScript(t, tc.answer)
			_, err := p.Preflight(t.Context(), resource.PreflightRequest{})
			if tc.check == nil {
				if err != nil {
					t.Fatalf("Preflight = %v", err)
				}
				// Checked once: a second Preflight runs nothing (the script has no more steps).
				if _, err := p.Preflight(t.Context(), resource.PreflightRequest{}); err != nil {
					t.Errorf("second Preflight = %v", err)
				}
				return
			}
			if !tc.check(err) || !strings.Contains(fmt.Sprint(err), tc.inText) {
				t.Errorf("Preflight = %v, want an error saying %q", err, tc.inText)
			}
		})
	}
}

// TestPreflightResources: mount sources, networks and cloud-init files that launch would refuse on this
// machine are problems at their property paths; unknown values, asset paths, inline user data and
// updates are skipped; networks are listed only when an instance names one, and only once.
func TestPreflightResources(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "cloud-init.yaml")
	if err := os.WriteFile(file, []byte("#cloud-config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	res := func(id string, creates bool, props resource.Properties) resource.PreflightResource {
		return resource.PreflightResource{Stack: "DevVMs", LogicalID: id, Type: multipass.TypeInstance, Properties: props, Creates: creates}
	}
	mounts := func(sources ...any) []any {
		var out []any
		for _, s := range sources {
			out = append(out, map[string]any{"source": s, "target": "/home/ubuntu/x"})
		}
		return out
	}
	nets := func(names ...any) []any {
		var out []any
		for _, n := range names {
			out = append(out, map[string]any{"name": n})
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		resources []resource.PreflightResource
		steps     []step // after version
		want      []resource.PreflightProblem
	}{
		{"all present", []resource.PreflightResource{
			res("A", true, resource.Properties{"name": "a", "mounts": mounts(dir), "cloudInit": file, "networks": nets("en0", "bridge0", "bridged")}),
		}, []step{{Args: "networks --format json", Stdout: "@networks.json"}}, nil},
		{"missing things", []resource.PreflightResource{
			res("A", true, resource.Properties{"name": "a", "mounts": mounts(dir, missing, file), "cloudInit": missing}),
			res("B", true, resource.Properties{"name": "b", "networks": nets("en0", "eth9"), "cloudInit": dir}),
			res("C", true, resource.Properties{"name": "c", "networks": nets("wlan0")}),
		}, []step{{Args: "networks --format json", Stdout: "@networks.json"}}, []resource.PreflightProblem{
			problem("A", "mounts[1].source", "does not exist on this machine"),
			problem("A", "mounts[2].source", "is not a folder"),
			problem("A", "cloudInit", "does not exist on this machine"),
			problem("B", "networks[1].name", `the host has no network "eth9"; `+"`multipass networks` lists \"bridge0\", \"en0\", \"en1\""),
			problem("B", "cloudInit", "is a folder"),
			problem("C", "networks[0].name", `no network "wlan0"`),
		}},
		{"no host networks", []resource.PreflightResource{
			res("A", true, resource.Properties{"name": "a", "networks": nets("en0")}),
		}, []step{{Args: "networks --format json", Stdout: "@networks-empty.json"}}, []resource.PreflightProblem{
			problem("A", "networks[0].name", "lists none"),
		}},
		{"networks not supported", []resource.PreflightResource{
			res("A", true, resource.Properties{"name": "a", "networks": nets("en0")}),
		}, []step{{Args: "networks --format json", Code: 2, Stderr: "networks failed: The networks feature is not implemented on this backend.\n"}},
			[]resource.PreflightProblem{problem("A", "networks[0].name", "not implemented on this backend")}},
		{"skipped", []resource.PreflightResource{
			res("A", true, resource.Properties{"name": "a", "mounts": append(mounts(resource.Unknown{}), "not an object"),
				"cloudInit": "assets/asset.bc6650386e3af37b0803a2d00fbf137a29d3a0e160cd789a2aa0dae1be89033a/cloud-init.yaml",
				"networks":  nets(resource.Unknown{})}),
			res("B", true, resource.Properties{"name": "b", "cloudInit": "#cloud-config\npackages: [git]\n", "mounts": resource.Unknown{}}),
			res("C", false, resource.Properties{"name": "c", "mounts": mounts(missing), "networks": nets("eth9")}),
			{Stack: "X", LogicalID: "D", Type: "Other::Type::Thing", Creates: true, Properties: resource.Properties{"mounts": mounts(missing)}},
		}, nil, nil},
		{"relative paths are checked", []resource.PreflightResource{
			res("A", true, resource.Properties{"name": "a", "cloudInit": "no/such/cloud-init.yaml", "mounts": mounts("assets/asset.x/dir")}),
		}, nil, []resource.PreflightProblem{
			problem("A", "mounts[0].source", "does not exist"),
			problem("A", "cloudInit", "does not exist"),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, p := newScript(t, append([]step{versionOK}, tc.steps...)...)
			got, err := p.Preflight(t.Context(), resource.PreflightRequest{Resources: tc.resources})
			if err != nil {
				t.Fatalf("Preflight = %v", err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("Preflight = %d problems, want %d:\n%v", len(got), len(tc.want), got)
			}
			for i, w := range tc.want {
				g := got[i]
				if diff := cmp.Diff([]string{w.Stack, w.LogicalID, w.Path}, []string{g.Stack, g.LogicalID, g.Path}); diff != "" || !strings.Contains(g.Message, w.Message) {
					t.Errorf("problem %d = %+v, want %+v (message containing it)", i, g, w)
				}
			}
		})
	}
}

func problem(id, path, part string) resource.PreflightProblem {
	return resource.PreflightProblem{Stack: "DevVMs", LogicalID: id, FieldError: resource.FieldError{Path: path, Message: part}}
}

// TestPreflightNetworksDaemonDown: a networks call that cannot reach the daemon is the run's error.
func TestPreflightNetworksDaemonDown(t *testing.T) {
	t.Parallel()
	_, p := newScript(t, versionOK, step{Args: "networks --format json", Code: 3, Stderr: "networks failed: cannot connect to the multipass socket\n"})
	_, err := p.Preflight(t.Context(), resource.PreflightRequest{Resources: []resource.PreflightResource{{
		Stack: "S", LogicalID: "A", Type: multipass.TypeInstance, Creates: true,
		Properties: resource.Properties{"name": "a", "networks": []any{map[string]any{"name": "en0"}}}}}})
	if !errors.Is(err, resource.ErrUnreachable) {
		t.Errorf("Preflight = %v, want resource.ErrUnreachable", err)
	}
}
