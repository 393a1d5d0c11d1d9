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

func TestVolumeAttachmentRequests(t *testing.T) {
	t.Parallel()
	props := adaptertest.Props(t, `{"volumeId":"51","serverId":42}`)
	wantOut := adaptertest.Props(t, `{"volumeId":51,"serverId":42}`)
	getVolume := func(server string) scripted.Exchange {
		return scripted.Exchange{Method: "GET", Path: "/v1/volumes/51", Status: 200, JSON: `{"volume":` + volumeJSON("10", server) + `}`}
	}
	t.Run("create", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, getVolume("null"),
			scripted.Exchange{Method: "POST", Path: "/v1/volumes/51/actions/attach", Body: `{"server":42,"automount":true}`, Status: 201,
				JSON: `{"action":` + actJSON(4, "attach_volume", "running") + `}`},
			pollAction(4, "attach_volume", "success"))
		got, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeVolumeAttachment,
			Properties: adaptertest.Props(t, `{"volumeId":51,"serverId":"42","automount":true}`)})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(resource.CreateResult{PhysicalID: "51", Outputs: wantOut}, got); diff != "" {
			t.Errorf("create (-want +got):\n%s", diff)
		}
	})
	t.Run("create attached already", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, getVolume("42"))
		if got, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeVolumeAttachment, Properties: props}); err != nil || got.PhysicalID != "51" {
			t.Errorf("create of an attachment that exists = %v, %v; want 51", got, err)
		}
	})
	t.Run("create attached elsewhere", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, getVolume("43"))
		_, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeVolumeAttachment, Properties: props})
		if err == nil || !strings.Contains(err.Error(), "is attached to server 43, not 42") {
			t.Errorf("create on a volume attached elsewhere = %v, want an error naming both servers", err)
		}
	})
	t.Run("create fails", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, getVolume("null"),
			scripted.Exchange{Method: "POST", Path: "/v1/volumes/51/actions/attach", Body: `{"server":42}`, Status: 201,
				JSON: `{"action":` + actJSON(4, "attach_volume", "running") + `}`},
			pollAction(4, "attach_volume", "error"))
		var ae *hcloud.ActionError
		if _, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeVolumeAttachment, Properties: props}); !errors.As(err, &ae) {
			t.Errorf("create with a failed action = %v, want *hcloud.ActionError", err)
		}
	})
	t.Run("read", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, getVolume("42"))
		got, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeVolumeAttachment, PhysicalID: "51", Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(resource.ReadResult{Properties: props, Outputs: wantOut}, got); diff != "" {
			t.Errorf("read (-want +got):\n%s", diff)
		}
	})
	t.Run("read moved", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, getVolume("43"))
		got, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeVolumeAttachment, PhysicalID: "51", Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(adaptertest.Props(t, `{"volumeId":"51","serverId":43}`), got.Properties); diff != "" {
			t.Errorf("read properties (-want +got):\n%s", diff)
		}
	})
	t.Run("read detached", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, getVolume("null"))
		if _, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeVolumeAttachment, PhysicalID: "51", Properties: props}); !errors.Is(err, resource.ErrNotFound) {
			t.Errorf("read of a detached volume = %v, want ErrNotFound", err)
		}
	})
	t.Run("read volume gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/volumes/51", Status: 404, JSON: notFoundJSON})
		if _, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeVolumeAttachment, PhysicalID: "51", Properties: props}); !errors.Is(err, resource.ErrNotFound) {
			t.Errorf("read of a gone volume = %v, want ErrNotFound", err)
		}
	})
	t.Run("update moves the volume", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, getVolume("42"),
			scripted.Exchange{Method: "POST", Path: "/v1/volumes/51/actions/detach", Status: 201, JSON: `{"action":` + actJSON(5, "detach_volume", "running") + `}`},
			pollAction(5, "detach_volume", "success"),
			scripted.Exchange{Method: "POST", Path: "/v1/volumes/51/actions/attach", Body: `{"server":43}`, Status: 201,
				JSON: `{"action":` + actJSON(6, "attach_volume", "running") + `}`},
			pollAction(6, "attach_volume", "success"))
		got, err := p.Update(ctx(t), resource.UpdateRequest{Type: hcloud.TypeVolumeAttachment, PhysicalID: "51", Old: props,
			New: adaptertest.Props(t, `{"volumeId":"51","serverId":43}`), Changed: []string{"serverId"}})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(adaptertest.Props(t, `{"volumeId":51,"serverId":43}`), got.Outputs); diff != "" {
			t.Errorf("update outputs (-want +got):\n%s", diff)
		}
	})
	t.Run("update after the old server went", func(t *testing.T) {
		t.Parallel()
		// A delete-before-replace of the server detached the volume: no detach, just the attach.
		p, _ := scriptedProvider(t, getVolume("null"),
			scripted.Exchange{Method: "POST", Path: "/v1/volumes/51/actions/attach", Body: `{"server":43}`, Status: 201,
				JSON: `{"action":` + actJSON(6, "attach_volume", "running") + `}`},
			pollAction(6, "attach_volume", "success"))
		if _, err := p.Update(ctx(t), resource.UpdateRequest{Type: hcloud.TypeVolumeAttachment, PhysicalID: "51", Old: props,
			New: adaptertest.Props(t, `{"volumeId":"51","serverId":43}`), Changed: []string{"serverId"}}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("update automount only", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t)
		if _, err := p.Update(ctx(t), resource.UpdateRequest{Type: hcloud.TypeVolumeAttachment, PhysicalID: "51", Old: props,
			New: adaptertest.Props(t, `{"volumeId":"51","serverId":42,"automount":true}`), Changed: []string{"automount"}}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("delete", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, getVolume("42"),
			scripted.Exchange{Method: "POST", Path: "/v1/volumes/51/actions/detach", Status: 201, JSON: `{"action":` + actJSON(5, "detach_volume", "running") + `}`},
			pollAction(5, "detach_volume", "success"))
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeVolumeAttachment, PhysicalID: "51", Properties: props, Outputs: wantOut}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("delete detached", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, getVolume("null"))
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeVolumeAttachment, PhysicalID: "51", Properties: props, Outputs: wantOut}); err != nil {
			t.Errorf("delete of a detached volume's attachment = %v, want nil", err)
		}
	})
	t.Run("delete attached elsewhere", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, getVolume("43"))
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeVolumeAttachment, PhysicalID: "51", Properties: props, Outputs: wantOut}); err != nil {
			t.Errorf("delete of an attachment whose volume moved = %v, want nil (and no detach)", err)
		}
	})
	t.Run("delete volume gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/volumes/51", Status: 404, JSON: notFoundJSON})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeVolumeAttachment, PhysicalID: "51"}); err != nil {
			t.Errorf("delete of a gone volume's attachment = %v, want nil", err)
		}
	})
	t.Run("locate", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, getVolume("42"))
		if id, err := p.Locate(ctx(t), resource.CreateRequest{Type: hcloud.TypeVolumeAttachment, Properties: props}); err != nil || id != "51" {
			t.Errorf("locate = %q, %v; want 51", id, err)
		}
	})
	t.Run("locate none", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, getVolume("null"))
		if _, err := p.Locate(ctx(t), resource.CreateRequest{Type: hcloud.TypeVolumeAttachment, Properties: props}); !errors.Is(err, resource.ErrNotFound) {
			t.Errorf("locate of a detached volume = %v, want ErrNotFound", err)
		}
	})
}

func TestVolumeAttachmentSchema(t *testing.T) {
	t.Parallel()
	s := typeSchema(t, hcloud.TypeVolumeAttachment)
	if diff := cmp.Diff([]string{"volumeId"}, s.CreateOnly()); diff != "" {
		t.Errorf("create-only (-want +got):\n%s", diff)
	}
	want := []resource.SerialKey{{Group: "volume", Property: "volumeId"}, {Group: "server", Property: "serverId"}}
	if diff := cmp.Diff(want, s.Serialize); diff != "" {
		t.Errorf("serialize (-want +got):\n%s", diff)
	}
	for _, tc := range []struct{ props, want string }{
		{`{"volumeId":{"ref":"V","attr":"volumeId"},"serverId":{"ref":"S","attr":"serverId"}}`, ""},
		{`{"volumeId":51,"serverId":"42","automount":true}`, ""},
		{`{"volumeId":51}`, `serverId: required property "serverId" is missing`},
		{`{"volumeId":51,"serverId":"web"}`, `serverId: must be a positive integer ID, got "web"`},
	} {
		if got := validation(t, hcloud.TypeVolumeAttachment, tc.props); got != tc.want {
			t.Errorf("Validate(%s) = %q, want %q", tc.props, got, tc.want)
		}
	}
}
