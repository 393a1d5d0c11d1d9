package multipass_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/adapters/internal/adaptertest"
	"github.com/cdkx-dev/cdkx/adapters/multipass"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

func schema(t *testing.T) resource.Schema {
	t.Helper()
	return (&multipass.Provider{}).Info().Schemas[0]
}

// TestParseSize: sizes as mp::in_bytes (src/utils/memory_size.cpp) reads them.
func TestParseSize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1024", 1024, true},
		{"1024B", 1024, true},
		{"1024b", 1024, true},
		{"512K", 512 << 10, true},
		{"512KB", 512 << 10, true},
		{"512KiB", 512 << 10, true},
		{"512M", 512 << 20, true},
		{"512m", 512 << 20, true},
		{"2G", 2 << 30, true},
		{"2GB", 2 << 30, true},
		{"2GiB", 2 << 30, true},
		{"1.5G", 3 << 29, true},
		{"0.5M", 1 << 19, true},
		{" 2G ", 2 << 30, true},
		{"1.5", 0, false},
		{"1.5B", 0, false},
		{"2 G", 0, false},
		{"2T", 0, false},
		{"2GiBs", 0, false},
		{"-1G", 0, false},
		{"G", 0, false},
		{"", 0, false},
		{"1e9", 0, false},
		{"99999999999999999999", 0, false},
		{"9999999999G", 0, false},
	} {
		got, ok := multipass.ParseSize(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseSize(%q) = %d, %t; want %d, %t", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// TestCheck: what multipass launch would refuse is refused at validation, at the property's path, with
// what to write instead.
func TestCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		props string
		want  map[string]string // path → a part of the message
	}{
		{"valid, every property", `{"name":"dev-1","image":"daily:noble","cpus":2,"memory":"1.5G","disk":"20GiB","bridged":true,"timeout":600,
			"networks":[{"name":"en0","mode":"manual","mac":"52:54:00:AB:cd:01"}],
			"mounts":[{"source":"/Users/me/code","target":"/home/ubuntu/code"},{"source":"C:\\Users\\me"}],
			"cloudInit":"assets/asset.bc66/cloud-init.yaml"}`, nil},
		{"the shared assembly", `{"name":"dev","image":"jammy","mounts":[{"source":"/Users/me/code","target":"/home/ubuntu/code"},{"source":"/Users/me/.ssh"}]}`, nil},
		{"image URL", `{"name":"a","image":"https://example.com/x:y:z.img"}`, nil},
		{"tokens are skipped", `{"name":{"ref":"X"},"memory":{"ref":"Y"},"networks":[{"name":{"ref":"Z"},"mac":{"ref":"M"}}],"mounts":[{"ref":"W"}]}`, nil},
		{"name with underscore", `{"name":"my_vm"}`, map[string]string{"name": `e.g. "my-vm"`}},
		{"name starting with a digit", `{"name":"1vm"}`, map[string]string{"name": "starting with a letter"}},
		{"name ending with a hyphen", `{"name":"vm-"}`, map[string]string{"name": `e.g. "vm"`}},
		{"empty image", `{"name":"a","image":""}`, map[string]string{"image": "leave image out"}},
		{"image like an option", `{"name":"a","image":"--help"}`, map[string]string{"image": "option"}},
		{"image with two colons", `{"name":"a","image":"a:b:c"}`, map[string]string{"image": "remote:alias"}},
		{"no cpus", `{"name":"a","cpus":0}`, map[string]string{"cpus": "at least 1"}},
		{"timeout zero", `{"name":"a","timeout":0}`, map[string]string{"timeout": "positive number of seconds"}},
		{"bad sizes", `{"name":"a","memory":"2 GB","disk":"lots"}`, map[string]string{"memory": `e.g. "512M", "2G"`, "disk": "not a size"}},
		{"small sizes", `{"name":"a","memory":"64M","disk":"100M"}`, map[string]string{"memory": "minimum memory of 128M", "disk": "minimum disk of 512M"}},
		{"network problems", `{"name":"a","networks":[{"mode":"bridge"},{"name":"en0,mode=manual","mac":"52-54-00-12-34-56"},"en1",{"name":"en2","speed":"fast"},{"name":""}]}`,
			map[string]string{"networks[0].name": "required", "networks[0].mode": `"auto" or "manual"`, "networks[1].name": "separators",
				"networks[1].mac": `e.g. "52:54:00:12:34:56"`, "networks[2]": "must be an object", "networks[3].speed": "unknown key",
				"networks[4].name": "must not be empty"}},
		{"network field kinds", `{"name":"a","networks":[{"name":5}]}`, map[string]string{"networks[0].name": "must be a string"}},
		{"mount problems", `{"name":"a","mounts":[{"target":"/x"},{"source":"/a:b"},{"source":"/a","target":"code"},{"source":"/a","target":"/home/ubuntu/"},{"source":"/a","target":"/proc/x"},{"source":""}]}`,
			map[string]string{"mounts[0].source": "required", "mounts[1].source": "colon", "mounts[2].target": "absolute path",
				"mounts[3].target": "refuses to mount", "mounts[4].target": "refuses to mount", "mounts[5].source": "must not be empty"}},
		{"mount below home is fine", `{"name":"a","mounts":[{"source":"/a","target":"/home/ubuntu/code"},{"source":"/b","target":"/home/other"}]}`, nil},
		{"empty cloudInit", `{"name":"a","cloudInit":"  "}`, map[string]string{"cloudInit": "must not be empty"}},
		{"kinds", `{"name":"a","cpus":"2","bridged":"yes","memory":2}`, map[string]string{"cpus": "an integer", "bridged": "true or false", "memory": "a string"}},
		{"unknown property", `{"name":"a","ram":"2G"}`, map[string]string{"ram": "unknown property"}},
		{"no name", `{}`, map[string]string{"name": "required"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			errs := schema(t).Validate(adaptertest.Props(t, tc.props), adaptertest.IsToken)
			got := map[string]string{}
			for _, e := range errs {
				if _, dup := got[e.Path]; dup {
					t.Errorf("two errors at %s", e.Path)
				}
				got[e.Path] = e.Message
			}
			if diff := cmp.Diff(keys(tc.want), keys(got)); diff != "" {
				t.Fatalf("error paths (-want +got):\n%s\nerrors: %v", diff, errs)
			}
			for path, part := range tc.want {
				if !strings.Contains(got[path], part) {
					t.Errorf("%s: %q, want it to say %q", path, got[path], part)
				}
			}
		})
	}
}

func keys(m map[string]string) []string {
	out := []string{}
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
