package version

import (
	"bytes"
	"encoding/json"
	"regexp"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/apptest"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
)

// TestNewCmdVersion checks what --json and CDKX_JSON make of the options versionRun receives.
func TestNewCmdVersion(t *testing.T) {
	apptest.TestFlags(t, []apptest.FlagCase[Options]{
		{Name: "text", Want: &Options{}},
		{Name: "json", Args: []string{"--json"}, Want: &Options{JSON: true}},
		{Name: "json from the environment", Env: map[string]string{"CDKX_JSON": "true"}, Want: &Options{JSON: true}},
		{Name: "the flag wins", Args: []string{"--json=false"}, Env: map[string]string{"CDKX_JSON": "1"}, Want: &Options{}},
		{Name: "not a boolean is false", Env: map[string]string{"CDKX_JSON": "yes please"}, Want: &Options{}},
		{Name: "no arguments", Args: []string{"v2"}, WantErr: `unknown command "v2" for "cdkx version"`},
	}, NewCmdVersion)
}

func TestVersionRun(t *testing.T) {
	t.Parallel()
	platform := runtime.GOOS + "/" + runtime.GOARCH
	t.Run("text", func(t *testing.T) {
		t.Parallel()
		var out bytes.Buffer
		f := &cli.Factory{IO: &cli.IOStreams{Out: &out}, Version: "v1.2.3"}
		if err := versionRun(&Options{F: f}); err != nil {
			t.Fatal(err)
		}
		want := regexp.MustCompile(`^cdkx v1\.2\.3 \(revision (?:[0-9a-f]+|unknown), ` + regexp.QuoteMeta(runtime.Version()+", "+platform) + `\)\n$`)
		if !want.MatchString(out.String()) {
			t.Errorf("versionRun() printed %q, want it to match %s", out.String(), want)
		}
		if got := cli.VersionLine("v1.2.3") + "\n"; out.String() != got {
			t.Errorf("versionRun() printed %q, cdkx --version prints %q", out.String(), got)
		}
	})
	t.Run("JSON", func(t *testing.T) {
		t.Parallel()
		var out bytes.Buffer
		f := &cli.Factory{IO: &cli.IOStreams{Out: &out}, Version: "v1.2.3"}
		if err := versionRun(&Options{F: f, JSON: true}); err != nil {
			t.Fatal(err)
		}
		var got map[string]string
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatalf("versionRun() --json printed %q: %v", out.String(), err)
		}
		want := map[string]string{"version": "v1.2.3", "revision": cli.BuildOf("v1.2.3").Revision, "go": runtime.Version(), "platform": platform}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("versionRun() --json (-want +got):\n%s", diff)
		}
		if got["revision"] == "" {
			t.Error("revision is empty, want a commit or unknown")
		}
	})
}
