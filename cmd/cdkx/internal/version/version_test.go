package version

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/apptest"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
)

// TestNewCmdVersion checks what --json and CDKX_JSON make of the options versionRun receives.
func TestNewCmdVersion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		env     string // CDKX_JSON
		want    Options
		wantErr string
	}{
		{name: "text"},
		{name: "json", args: []string{"--json"}, want: Options{JSON: true}},
		{name: "json from the environment", env: "true", want: Options{JSON: true}},
		{name: "the flag wins", args: []string{"--json=false"}, env: "1"},
		{name: "not a boolean is false", env: "yes please"},
		{name: "no arguments", args: []string{"v2"}, wantErr: `unknown command "v2" for "cdkx version"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := apptest.FlagFactory()
			f.Getenv = func(k string) string {
				if k == "CDKX_JSON" {
					return tt.env
				}
				return ""
			}
			var got *Options
			err := apptest.Execute(NewCmdVersion(f, func(_ context.Context, o *Options) error { got = o; return nil }), tt.args...)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("version %q: error %v, want %q", tt.args, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("version %q: %v", tt.args, err)
			}
			if diff := cmp.Diff(&tt.want, got, cmpopts.IgnoreFields(Options{}, "F")); diff != "" {
				t.Errorf("version %q options (-want +got):\n%s", tt.args, diff)
			}
		})
	}
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
