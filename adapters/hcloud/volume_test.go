package hcloud_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/adapters/hcloud"
	"github.com/cdkx-dev/cdkx/adapters/internal/adaptertest"
	"github.com/cdkx-dev/cdkx/adapters/internal/scripted"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// volumeJSON is a volume object of size GB attached to server ("null" when detached).
func volumeJSON(size, server string) string {
	return `{"id":51,"name":"e2e-app-volume","size":` + size + `,"server":` + server + `,"format":"ext4","labels":{},` +
		`"location":{"id":2,"name":"nbg1"},"linux_device":"/dev/disk/by-id/scsi-0HC_Volume_51","status":"available","protection":{"delete":false}}`
}

func TestVolumeRequests(t *testing.T) {
	t.Parallel()
	// The e2e assembly's volume.
	props := adaptertest.Props(t, `{"size":10,"name":"e2e-app-volume","format":"ext4","location":"nbg1"}`)
	wantOut := adaptertest.Props(t, `{"volumeId":51,"name":"e2e-app-volume","size":10,"location":"nbg1","format":"ext4","labels":{}}`)
	t.Run("create", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "POST", Path: "/v1/volumes", Body: `{"name":"e2e-app-volume","size":10,"location":"nbg1","format":"ext4","labels":{}}`,
				Status: 201, JSON: `{"volume":` + volumeJSON("10", "null") + `,"action":` + actJSON(1, "create_volume", "running") + `,"next_actions":[]}`},
			pollAction(1, "create_volume", "running"),
			pollAction(1, "create_volume", "success"))
		got, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeVolume, Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(resource.CreateResult{PhysicalID: "51", Outputs: wantOut}, got); diff != "" {
			t.Errorf("create (-want +got):\n%s", diff)
		}
	})
	t.Run("create waits for next actions", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "POST", Path: "/v1/volumes", Body: `{"name":"e2e-app-volume","size":10,"location":"nbg1","labels":{}}`,
				Status: 201, JSON: `{"volume":` + volumeJSON("10", "null") + `,"action":` + actJSON(1, "create_volume", "success") + `,"next_actions":[` + actJSON(2, "format_volume", "running") + `]}`},
			pollAction(2, "format_volume", "error"),
			scripted.Exchange{Method: "GET", Path: "/v1/volumes/51", Status: 200, JSON: `{"volume":` + volumeJSON("10", "null") + `}`})
		var ae *hcloud.ActionError
		if _, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeVolume,
			Properties: adaptertest.Props(t, `{"size":10,"name":"e2e-app-volume","location":"nbg1"}`)}); !errors.As(err, &ae) || !strings.Contains(err.Error(), "ID 51") {
			t.Errorf("create with a failed next action = %v, want *hcloud.ActionError naming the volume", err)
		}
	})
	t.Run("create exists", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "POST", Path: "/v1/volumes", Body: `{"name":"e2e-app-volume","size":10,"location":"nbg1","format":"ext4","labels":{}}`,
			Status: 409, JSON: `{"error":{"code":"uniqueness_error","message":"name is already used","details":{}}}`})
		if _, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeVolume, Properties: props}); !errors.Is(err, resource.ErrAlreadyExists) {
			t.Errorf("create of an existing volume = %v, want ErrAlreadyExists", err)
		}
	})
	t.Run("read", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/volumes/51", Status: 200, JSON: `{"volume":` + volumeJSON("10", "42") + `}`})
		got, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeVolume, PhysicalID: "51", Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(resource.ReadResult{Properties: props, Outputs: wantOut}, got); diff != "" {
			t.Errorf("read (-want +got):\n%s", diff)
		}
	})
	t.Run("read gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/volumes/51", Status: 404, JSON: notFoundJSON})
		if _, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeVolume, PhysicalID: "51"}); !errors.Is(err, resource.ErrNotFound) {
			t.Errorf("read of a gone volume = %v, want ErrNotFound", err)
		}
	})
	t.Run("update grows and renames", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "POST", Path: "/v1/volumes/51/actions/resize", Body: `{"size":20}`, Status: 201,
				JSON: `{"action":` + actJSON(3, "resize_volume", "running") + `}`},
			pollAction(3, "resize_volume", "success"),
			scripted.Exchange{Method: "PUT", Path: "/v1/volumes/51", Body: `{"name":"vol2","labels":{}}`, Status: 200,
				JSON: `{"volume":` + strings.Replace(volumeJSON("20", "null"), `"e2e-app-volume"`, `"vol2"`, 1) + `}`})
		got, err := p.Update(ctx(t), resource.UpdateRequest{Type: hcloud.TypeVolume, PhysicalID: "51", Old: props,
			New: adaptertest.Props(t, `{"size":20,"name":"vol2","format":"ext4","location":"nbg1"}`), Changed: []string{"name", "size"}})
		if err != nil {
			t.Fatal(err)
		}
		want := adaptertest.Props(t, `{"volumeId":51,"name":"vol2","size":20,"location":"nbg1","format":"ext4","labels":{}}`)
		if diff := cmp.Diff(want, got.Outputs); diff != "" {
			t.Errorf("update outputs (-want +got):\n%s", diff)
		}
	})
	t.Run("update grows only", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "POST", Path: "/v1/volumes/51/actions/resize", Body: `{"size":20}`, Status: 201,
				JSON: `{"action":` + actJSON(3, "resize_volume", "success") + `}`},
			scripted.Exchange{Method: "GET", Path: "/v1/volumes/51", Status: 200, JSON: `{"volume":` + volumeJSON("20", "null") + `}`})
		got, err := p.Update(ctx(t), resource.UpdateRequest{Type: hcloud.TypeVolume, PhysicalID: "51", Old: props,
			New: adaptertest.Props(t, `{"size":20,"name":"e2e-app-volume","format":"ext4","location":"nbg1"}`), Changed: []string{"size"}})
		if err != nil {
			t.Fatal(err)
		}
		if got.Outputs["size"] != adaptertest.Props(t, `{"n":20}`)["n"] {
			t.Errorf("update outputs = %v, want size 20", got.Outputs)
		}
	})
	t.Run("update shrinks", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t)
		_, err := p.Update(ctx(t), resource.UpdateRequest{Type: hcloud.TypeVolume, PhysicalID: "51",
			Old: adaptertest.Props(t, `{"size":50,"name":"e2e-app-volume","location":"nbg1"}`),
			New: adaptertest.Props(t, `{"size":20,"name":"e2e-app-volume","location":"nbg1"}`), Changed: []string{"size"}})
		if err == nil || !strings.Contains(err.Error(), "cannot shrink from 50 GB to 20 GB") {
			t.Errorf("update that shrinks = %v, want an error naming both sizes", err)
		}
	})
	t.Run("delete", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "DELETE", Path: "/v1/volumes/51", Status: 204})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeVolume, PhysicalID: "51"}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("delete attached", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "DELETE", Path: "/v1/volumes/51", Status: 422,
			JSON: `{"error":{"code":"volume_attached","message":"volume is attached to a server","details":{}}}`})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeVolume, PhysicalID: "51"}); err == nil || !strings.Contains(err.Error(), "detach it first") {
			t.Errorf("delete of an attached volume = %v, want advice to detach", err)
		}
	})
	t.Run("delete gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "DELETE", Path: "/v1/volumes/51", Status: 404, JSON: notFoundJSON})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeVolume, PhysicalID: "51"}); err != nil {
			t.Errorf("delete of a gone volume = %v, want nil", err)
		}
	})
	t.Run("locate", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/volumes", Query: "name=e2e-app-volume", Status: 200,
			JSON: listJSON("volumes", volumeJSON("10", "null"))})
		if id, err := p.Locate(ctx(t), resource.CreateRequest{Type: hcloud.TypeVolume, Properties: props}); err != nil || id != "51" {
			t.Errorf("locate = %q, %v; want 51", id, err)
		}
	})
}

func TestVolumeCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ props, want string }{
		{`{"size":10,"name":"e2e-app-volume","format":"ext4","location":"nbg1"}`, ""},
		{`{"size":10240,"name":"v.1_x","location":"hel1","labels":{"a":"b"}}`, ""},
		{`{"size":9,"name":"v","location":"nbg1"}`, "size: is 9 GB; Hetzner volumes have 10–10240 GB"},
		{`{"size":10241,"name":"v","location":"nbg1"}`, "size: is 10241 GB; Hetzner volumes have 10–10240 GB"},
		{`{"size":10,"name":"my volume","location":"nbg1"}`, "name: \"my volume\" is not a volume name Hetzner accepts: at most 64 letters, digits, '.', '_' or '-'"},
		{`{"size":10,"name":"` + strings.Repeat("v", 65) + `","location":"nbg1"}`, "name: \"" + strings.Repeat("v", 65) + "\" is not a volume name Hetzner accepts: at most 64 letters, digits, '.', '_' or '-'"},
		{`{"size":10,"name":"v"}`, "location: is required: Hetzner needs a location for a volume created without a server (e.g. nbg1, where its servers are)"},
		{`{"size":10,"name":"v","location":"nbg1","format":"btrfs"}`, "format: must be one of xfs, ext4, got \"btrfs\""},
		{`{"size":{"ref":"X","attr":"size"},"name":"v","location":"nbg1"}`, ""},
	} {
		if got := validation(t, hcloud.TypeVolume, tc.props); got != tc.want {
			t.Errorf("Validate(%s) = %q, want %q", tc.props, got, tc.want)
		}
	}
}

// TestVolumeCheckChange: an update that shrinks a volume is refused at plan time, naming both sizes and
// the fix; growing, keeping or not knowing the new size yet passes.
func TestVolumeCheckChange(t *testing.T) {
	t.Parallel()
	check := typeSchema(t, hcloud.TypeVolume).CheckChange
	if check == nil {
		t.Fatal("Volume declares no CheckChange")
	}
	for _, tc := range []struct{ old, new, want string }{
		{`{"size":20,"name":"v"}`, `{"size":30,"name":"v"}`, ""},
		{`{"size":20,"name":"v"}`, `{"size":20,"name":"w"}`, ""},
		{`{"size":20,"name":"v"}`, `{"size":{"ref":"X","attr":"size"},"name":"v"}`, ""},
		{`{"size":20,"name":"v"}`, `{"size":10,"name":"v"}`, "size: is 10 GB, but the volume has 20 GB and Hetzner volumes cannot shrink: " +
			"set size to 20 or more, or replace the volume (cdkx deploy --replace LOGICAL_ID), losing its data"},
	} {
		var got []string
		for _, e := range check(adaptertest.Props(t, tc.old), adaptertest.Props(t, tc.new), adaptertest.IsToken) {
			got = append(got, e.Path+": "+e.Message)
		}
		if g := strings.Join(got, "\n"); g != tc.want {
			t.Errorf("CheckChange(%s, %s) = %q, want %q", tc.old, tc.new, g, tc.want)
		}
	}
}
