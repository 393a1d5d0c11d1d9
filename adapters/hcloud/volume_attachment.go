package hcloud

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/cdkx-dev/cdkx/adapters/internal/kit"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TypeVolumeAttachment attaches a volume to a server
// (https://docs.hetzner.cloud/#volume-actions-attach-volume-to-a-server).
//
// Properties: volumeId (required, create-only: it is the physical ID), serverId (required; a change
// moves the volume: detach, then attach), automount (mount the volume on attach; a change alone calls
// nothing, as it matters only when the volume is attached). The server and the volume must be in the
// same location. Outputs: volumeId, serverId (integers). Physical ID: the volume's ID.
//
// Create GET /volumes/{id} (a volume already attached to this server is the attachment; attached to
// another one is an error), then POST /volumes/{id}/actions/attach {server, automount} → wait. Read
// GET /volumes/{id} (not attached: gone). Update …/actions/detach → wait → …/actions/attach → wait.
// Delete GET /volumes/{id}, and when it is still attached to the recorded server, …/actions/detach →
// wait. Locate GET /volumes/{id}: attached to the requested server. Changes are serialized per volume
// and per server.
const TypeVolumeAttachment = "Hetzner::Storage::VolumeAttachment"

// volumeAttachmentKind is Hetzner::Storage::VolumeAttachment, for the provider's table (hcloud.go).
func volumeAttachmentKind() kit.Type[*Provider] {
	return hetzner(kit.Type[*Provider]{
		Schema: resource.Schema{
			Type:        TypeVolumeAttachment,
			Description: "A volume attached to a server (POST /volumes/{id}/actions/attach)",
			Properties: map[string]resource.PropertySchema{
				"volumeId":  idSchema("Volume (the attachment's physical ID)", true, true),
				"serverId":  noted(idSchema("Server in the volume's location", true, false), "the volume is detached from its server while it moves"),
				"automount": {Kind: resource.KindBool, Description: "Mount the volume when it is attached"},
			},
			Outputs:       outputs("volumeId", "serverId"),
			StableOutputs: []string{"volumeId"},
			Serialize:     []resource.SerialKey{{Group: "volume", Property: "volumeId"}, {Group: "server", Property: "serverId"}},
		},
		Create: (*Provider).createVolumeAttachment,
		Read:   (*Provider).readVolumeAttachment,
		Update: (*Provider).updateVolumeAttachment,
		Delete: (*Provider).deleteVolumeAttachment,
		Locate: (*Provider).locateVolumeAttachment,
	}, "volumeId", "serverId")
}

func volumeAttachmentOutputs(vol, srv int64) resource.Properties {
	return resource.Properties{"volumeId": num(vol), "serverId": num(srv)}
}

// attachVolume attaches volume vol to server srv, with automount when props ask for it, and waits.
func (p *Provider) attachVolume(ctx context.Context, vol, srv int64, props resource.Properties) error {
	body := map[string]any{"server": srv}
	if v, ok := boolean(props, "automount"); ok {
		body["automount"] = v
	}
	return p.runAction(ctx, "/volumes", vol, "attach", body)
}

func (p *Provider) createVolumeAttachment(ctx context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
	vol, err := propID(req.Properties, "volumeId")
	if err != nil {
		return resource.CreateResult{}, err
	}
	srv, err := propID(req.Properties, "serverId")
	if err != nil {
		return resource.CreateResult{}, err
	}
	v, err := p.getVolume(ctx, vol)
	if err != nil {
		return resource.CreateResult{}, err
	}
	switch {
	case v.Server != nil && *v.Server == srv:
		// Attached already (an earlier run attached it, or Hetzner did at create): that is the attachment.
	case v.Server != nil:
		return resource.CreateResult{}, fmt.Errorf("%s: volume %q (%d) is attached to server %d, not %d: detach it first (delete the attachment that holds it, or in the Hetzner console)",
			Name, v.Name, vol, *v.Server, srv)
	default:
		if err := p.attachVolume(ctx, vol, srv, req.Properties); err != nil {
			return resource.CreateResult{}, err
		}
	}
	return resource.CreateResult{PhysicalID: strconv.FormatInt(vol, 10), Outputs: volumeAttachmentOutputs(vol, srv)}, nil
}

func (p *Provider) readVolumeAttachment(ctx context.Context, req resource.ReadRequest) (resource.ReadResult, error) {
	vol, err := physicalID(req.PhysicalID)
	if err != nil {
		return resource.ReadResult{}, err
	}
	v, err := p.getVolume(ctx, vol)
	if err != nil {
		return resource.ReadResult{}, err
	}
	if v.Server == nil {
		return resource.ReadResult{}, fmt.Errorf("%s: volume %d is not attached: %w", Name, vol, resource.ErrNotFound)
	}
	props := resource.Properties{}
	for k, val := range req.Properties {
		props[k] = val
	}
	if want, _, _ := idOf(req.Properties["serverId"]); want != *v.Server {
		props["serverId"] = num(*v.Server)
	}
	if props["volumeId"] == nil {
		props["volumeId"] = num(vol)
	}
	return resource.ReadResult{Properties: props, Outputs: volumeAttachmentOutputs(vol, *v.Server)}, nil
}

func (p *Provider) updateVolumeAttachment(ctx context.Context, req resource.UpdateRequest) (resource.UpdateResult, error) {
	vol, err := physicalID(req.PhysicalID)
	if err != nil {
		return resource.UpdateResult{}, err
	}
	srv, err := propID(req.New, "serverId")
	if err != nil {
		return resource.UpdateResult{}, err
	}
	if slices.Contains(req.Changed, "serverId") {
		// The old server may be gone (replaced, delete-before-replace), which detached the volume.
		v, err := p.getVolume(ctx, vol)
		if err != nil {
			return resource.UpdateResult{}, err
		}
		if v.Server != nil && *v.Server == srv {
			return resource.UpdateResult{Outputs: volumeAttachmentOutputs(vol, srv)}, nil
		}
		if v.Server != nil {
			if err := p.runAction(ctx, "/volumes", vol, "detach", nil); err != nil {
				return resource.UpdateResult{}, err
			}
		}
		if err := p.attachVolume(ctx, vol, srv, req.New); err != nil {
			return resource.UpdateResult{}, fmt.Errorf("%s: volume %d was detached but not attached to server %d: %w", Name, vol, srv, err)
		}
	}
	return resource.UpdateResult{Outputs: volumeAttachmentOutputs(vol, srv)}, nil
}

func (p *Provider) deleteVolumeAttachment(ctx context.Context, req resource.DeleteRequest) error {
	vol, err := physicalID(req.PhysicalID)
	if err != nil {
		return err
	}
	v, err := p.getVolume(ctx, vol)
	if err != nil {
		return err
	}
	if v.Server == nil {
		return nil
	}
	recorded, ok, _ := idOf(req.Outputs["serverId"])
	if !ok {
		recorded, ok, _ = idOf(req.Properties["serverId"])
	}
	if ok && recorded != *v.Server {
		return nil // attached since to another server, by something else: not this attachment
	}
	return p.runAction(ctx, "/volumes", vol, "detach", nil)
}

func (p *Provider) locateVolumeAttachment(ctx context.Context, req resource.CreateRequest) (string, error) {
	vol, err := propID(req.Properties, "volumeId")
	if err != nil {
		return "", err
	}
	srv, err := propID(req.Properties, "serverId")
	if err != nil {
		return "", err
	}
	v, err := p.getVolume(ctx, vol)
	if err != nil {
		return "", err
	}
	if v.Server == nil || *v.Server != srv {
		return "", fmt.Errorf("%s: volume %d is not attached to server %d: %w", Name, vol, srv, resource.ErrNotFound)
	}
	return strconv.FormatInt(vol, 10), nil
}
