package hcloud

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"

	"github.com/cdkx-dev/cdkx/adapters/internal/kit"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TypeVolume is a block storage volume (https://docs.hetzner.cloud/#volumes); it is attached to a server
// by TypeVolumeAttachment.
//
// Properties: name (required; at most 64 letters, digits, ".", "_" or "-"), size (required, GB,
// 10–10240; it can only grow), labels — these change in place — and, create-only: location (required by
// Hetzner for a volume created without a server, which is how cdkx creates them) and format (xfs or ext4).
//
// Outputs: volumeId (integer, also the physical ID), name, size (integer), location (the location's
// name), format (when the volume has one), labels.
//
// Create POST /volumes {name, size, location, format, labels} and wait for its action and next_actions;
// read GET /volumes/{id}; update: a bigger size POST /volumes/{id}/actions/resize {size} and wait (a
// smaller one fails before any call: volumes only grow), then PUT /volumes/{id} {name, labels} when they
// changed; delete DELETE /volumes/{id} (the volume must be detached: its VolumeAttachment is deleted
// first); locate GET /volumes?name=. Changes are serialized per volume, with its attachment's.
const TypeVolume = "Hetzner::Storage::Volume"

// Volume sizes Hetzner accepts, in GB.
const (
	minVolumeSize = 10
	maxVolumeSize = 10240
)

// volumeName is what Hetzner accepts as a volume's name.
var volumeName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// volumeKind is Hetzner::Storage::Volume, for the provider's table (hcloud.go).
func volumeKind() kit.Type[*Provider] {
	return hetzner(kit.Type[*Provider]{
		Schema: resource.Schema{
			Type:        TypeVolume,
			Description: "A block storage volume (POST /volumes)",
			Properties: map[string]resource.PropertySchema{
				"name":     {Kind: resource.KindString, Required: true, Description: "Name, unique in the project: at most 64 letters, digits, '.', '_' or '-'"},
				"size":     {Kind: resource.KindInteger, Required: true, Description: "Size in GB, 10–10240; it can only grow (resize)"},
				"labels":   labelsSchema,
				"format":   {Kind: resource.KindString, CreateOnly: true, Enum: []string{"xfs", "ext4"}, Description: "Filesystem to format the volume with"},
				"location": {Kind: resource.KindString, CreateOnly: true, Description: "Location, e.g. nbg1 (the servers it attaches to must be there)"},
			},
			Outputs:             outputs("volumeId", "name", "size", "location", "format", "labels"),
			StableOutputs:       []string{"volumeId", "location", "format"},
			ReplaceNote:         "its data is lost",
			DeleteBeforeReplace: true,
			Identity:            []string{"name"},
			Serialize:           []resource.SerialKey{{Group: "volume"}},
			Check:               checkVolume,
			CheckChange:         checkVolumeChange,
		},
		Create: (*Provider).createVolume,
		Read:   (*Provider).readVolume,
		Update: (*Provider).updateVolume,
		Delete: (*Provider).deleteVolume,
		Locate: func(p *Provider, ctx context.Context, req resource.CreateRequest) (string, error) {
			return p.locateByName(ctx, "volumes", req.Properties)
		},
	})
}

// checkVolumeChange refuses, at plan time, an update that shrinks a volume: Hetzner only grows them, and
// the update would fail at deploy after the changes planned before it were made.
func checkVolumeChange(old, new resource.Properties, unknown resource.IsUnknownFunc) []resource.FieldError {
	before, ok1 := intProp(old["size"])
	after, ok2 := intProp(new["size"])
	if !ok1 || !ok2 || kit.IsUnknown(new["size"], unknown) || after >= before {
		return nil
	}
	return []resource.FieldError{{Path: "size", Message: fmt.Sprintf("is %d GB, but the volume has %d GB and Hetzner volumes cannot shrink: "+
		"set size to %d or more, or replace the volume (cdkx deploy --replace LOGICAL_ID), losing its data", after, before, before)}}
}

func checkVolume(props resource.Properties, unknown resource.IsUnknownFunc) []resource.FieldError {
	var errs []resource.FieldError
	if n, ok := intProp(props["size"]); ok && !kit.IsUnknown(props["size"], unknown) && (n < minVolumeSize || n > maxVolumeSize) {
		errs = append(errs, resource.FieldError{Path: "size", Message: fmt.Sprintf("is %d GB; Hetzner volumes have %d–%d GB", n, minVolumeSize, maxVolumeSize)})
	}
	if s, ok := props["name"].(string); ok && !kit.IsUnknown(props["name"], unknown) && !volumeName.MatchString(s) {
		errs = append(errs, resource.FieldError{Path: "name", Message: fmt.Sprintf("%q is not a volume name Hetzner accepts: at most 64 letters, digits, '.', '_' or '-'", s)})
	}
	if props["location"] == nil {
		errs = append(errs, resource.FieldError{Path: "location", Message: "is required: Hetzner needs a location for a volume created without a server (e.g. nbg1, where its servers are)"})
	} else if s, ok := props["location"].(string); ok && s == "" {
		errs = append(errs, resource.FieldError{Path: "location", Message: "is empty; give a location such as nbg1"})
	}
	return errs
}

// volume is the API's volume object (the fields the adapter reads).
type volume struct {
	ID       int64             `json:"id"`
	Name     string            `json:"name"`
	Size     int64             `json:"size"`
	Server   *int64            `json:"server"`
	Format   *string           `json:"format"`
	Labels   map[string]string `json:"labels"`
	Location struct {
		Name string `json:"name"`
	} `json:"location"`
}

func (v *volume) outputs() resource.Properties {
	out := resource.Properties{"volumeId": num(v.ID), "name": v.Name, "size": num(v.Size), "location": v.Location.Name,
		"labels": labelsValue(v.Labels)}
	if v.Format != nil && *v.Format != "" {
		out["format"] = *v.Format
	}
	return out
}

func (p *Provider) createVolume(ctx context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
	props := req.Properties
	name := str(props, "name")
	size, _ := intProp(props["size"])
	body := map[string]any{"name": name, "size": size, "location": str(props, "location"), "labels": labelsOf(props)}
	if f := str(props, "format"); f != "" {
		body["format"] = f
	}
	var out struct {
		Volume volume `json:"volume"`
		started
	}
	if err := p.c.call(ctx, http.MethodPost, "/volumes", body, &out); err != nil {
		return resource.CreateResult{}, existsError(err, "volume", name)
	}
	if err := p.c.wait(ctx, out.all()...); err != nil {
		return p.unfinished(ctx, idPath("/volumes", out.Volume.ID), out.Volume.ID, fmt.Errorf("%s: volume %q (ID %d) was created but its create action failed: %w", Name, name, out.Volume.ID, err))
	}
	return resource.CreateResult{PhysicalID: strconv.FormatInt(out.Volume.ID, 10), Outputs: out.Volume.outputs()}, nil
}

// getVolume reads GET /volumes/{id}.
func (p *Provider) getVolume(ctx context.Context, id int64) (*volume, error) {
	var out struct {
		Volume volume `json:"volume"`
	}
	if err := p.c.call(ctx, http.MethodGet, idPath("/volumes", id), nil, &out); err != nil {
		return nil, err
	}
	return &out.Volume, nil
}

func (p *Provider) readVolume(ctx context.Context, req resource.ReadRequest) (resource.ReadResult, error) {
	id, err := physicalID(req.PhysicalID)
	if err != nil {
		return resource.ReadResult{}, err
	}
	v, err := p.getVolume(ctx, id)
	if err != nil {
		return resource.ReadResult{}, err
	}
	props := resource.Properties{"name": v.Name, "size": num(v.Size), "location": v.Location.Name}
	readLabels(props, req.Properties, v.Labels)
	if v.Format != nil {
		props["format"] = *v.Format
	}
	return resource.ReadResult{Properties: props, Outputs: v.outputs()}, nil
}

func (p *Provider) updateVolume(ctx context.Context, req resource.UpdateRequest) (resource.UpdateResult, error) {
	id, err := physicalID(req.PhysicalID)
	if err != nil {
		return resource.UpdateResult{}, err
	}
	oldSize, _ := intProp(req.Old["size"])
	newSize, _ := intProp(req.New["size"])
	if newSize < oldSize {
		return resource.UpdateResult{}, fmt.Errorf("%s: volume %s cannot shrink from %d GB to %d GB: Hetzner volumes only grow; keep size %d or more (or replace the volume under another name, losing its data)",
			Name, req.PhysicalID, oldSize, newSize, oldSize)
	}
	if newSize > oldSize {
		if err := p.runAction(ctx, "/volumes", id, "resize", map[string]any{"size": newSize}); err != nil {
			return resource.UpdateResult{}, err
		}
	}
	var v *volume
	name := str(req.New, "name")
	if name != str(req.Old, "name") || !resource.Equal(labelsValue(labelsOf(req.New)), labelsValue(labelsOf(req.Old))) {
		var out struct {
			Volume volume `json:"volume"`
		}
		if err := p.c.call(ctx, http.MethodPut, idPath("/volumes", id), map[string]any{"name": name, "labels": labelsOf(req.New)}, &out); err != nil {
			return resource.UpdateResult{}, existsError(err, "volume", name)
		}
		v = &out.Volume
	} else if v, err = p.getVolume(ctx, id); err != nil {
		return resource.UpdateResult{}, err
	}
	if v.Size < newSize {
		v.Size = newSize // the PUT may answer before the resize shows
	}
	return resource.UpdateResult{Outputs: v.outputs()}, nil
}

func (p *Provider) deleteVolume(ctx context.Context, req resource.DeleteRequest) error {
	id, err := physicalID(req.PhysicalID)
	if err != nil {
		return err
	}
	err = p.c.call(ctx, http.MethodDelete, idPath("/volumes", id), nil, nil)
	if code := errorCode(err); code == "volume_attached" || code == "resource_in_use" {
		return fmt.Errorf("%s: volume %d is still attached to a server; detach it first (delete its VolumeAttachment, or detach it in the Hetzner console): %w", Name, id, err)
	}
	return err
}
