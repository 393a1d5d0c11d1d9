package hcloudfake

import (
	"fmt"
	"net/http"
	"regexp"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
)

// Volumes: https://docs.hetzner.cloud/#volumes

var volumeName = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,64}$`)

func (f *Fake) volume(r *http.Request) (*volume, error) {
	return byPathID(r, "volume", f.st.volumes)
}

func renderVolume(v *volume) schema.Volume {
	out := v.Volume
	out.Labels = labelsOrEmpty(&v.Labels)
	return out
}

// checkVolumeAttach validates attaching v to server id: same location, v detached.
func (f *Fake) checkVolumeAttach(v *volume, id int64) (*server, error) {
	s, ok := f.st.servers[id]
	if !ok {
		return nil, invalid(field{"server", fmt.Sprintf("server %d not found", id)})
	}
	if v.Server != nil {
		return nil, invalid(field{"server", fmt.Sprintf("volume %d is already attached to server %d", v.ID, *v.Server)})
	}
	if s.Location.Name != v.Location.Name {
		return nil, invalid(field{"server", fmt.Sprintf("volume %d is in %s, server %d in %s", v.ID, v.Location.Name, s.ID, s.Location.Name)})
	}
	if err := f.checkLock("server", s.ID); err != nil {
		return nil, err
	}
	return s, nil
}

func (f *Fake) volumeRoutes() {
	f.handle("GET /v1/volumes", func(r *http.Request) (int, any, error) {
		st := r.URL.Query()["status"]
		return list(r, "volumes", values(f.st.volumes), func(v *volume) any { return renderVolume(v) }, func(v *volume) bool {
			return len(st) == 0 || contains(st, v.Status)
		})
	})
	f.handle("GET /v1/volumes/{id}", func(r *http.Request) (int, any, error) {
		v, err := f.volume(r)
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, map[string]any{"volume": renderVolume(v)}, nil
	})
	f.handle("POST /v1/volumes", func(r *http.Request) (int, any, error) {
		var req schema.VolumeCreateRequest
		if err := decode(r, &req, "size", "name"); err != nil {
			return 0, nil, err
		}
		if !volumeName.MatchString(req.Name) {
			return 0, nil, invalid(field{"name", "must be 1–64 characters of letters, digits, . _ -"})
		}
		if req.Size < 10 || req.Size > 10240 {
			return 0, nil, invalid(field{"size", "must be between 10 and 10240 GB"})
		}
		if req.Format != nil && *req.Format != "xfs" && *req.Format != "ext4" {
			return 0, nil, invalid(field{"format", "must be xfs or ext4"})
		}
		if nameTaken(f.st.volumes, req.Name, 0) {
			return 0, nil, errUnique("volume", "name")
		}
		labels := labelsOrEmpty(req.Labels)
		if err := validLabels(labels); err != nil {
			return 0, nil, err
		}
		var loc schema.Location
		switch {
		case req.Server != nil:
			s, ok := f.st.servers[*req.Server]
			if !ok {
				return 0, nil, invalid(field{"server", fmt.Sprintf("server %d not found", *req.Server)})
			}
			loc = s.Location
		case req.Location != nil:
			l, ok := findLocation(idOrName(*req.Location))
			if !ok {
				return 0, nil, invalid(field{"location", "location " + idOrName(*req.Location) + " not found"})
			}
			loc = l
		default:
			return 0, nil, invalid(field{"location", "location or server is required"})
		}
		v := &volume{schema.Volume{ID: f.newID(), Name: req.Name, Status: "available", Location: loc, Size: req.Size, Format: req.Format,
			Labels: labels, Created: f.created()}}
		v.LinuxDevice = fmt.Sprintf("/dev/disk/by-id/scsi-0HC_Volume_%d", v.ID)
		var srv *server
		if req.Server != nil {
			s, err := f.checkVolumeAttach(v, *req.Server)
			if err != nil {
				return 0, nil, err
			}
			srv = s
		}
		f.st.volumes[v.ID] = v
		a := f.newAction("create_volume", ref("volume", v.ID))
		a.onError = func() { delete(f.st.volumes, v.ID) }
		next := []schema.Action{}
		if srv != nil {
			b := f.newAction("attach_volume", ref("volume", v.ID), ref("server", srv.ID))
			if !b.fail && !a.fail {
				v.Server = &srv.ID
			}
			next = append(next, f.launch(b).Action)
		}
		f.launch(a)
		return http.StatusCreated, map[string]any{"volume": renderVolume(v), "action": a.Action, "next_actions": next}, nil
	})
	f.handle("PUT /v1/volumes/{id}", func(r *http.Request) (int, any, error) {
		v, err := f.volume(r)
		if err != nil {
			return 0, nil, err
		}
		var req schema.VolumeUpdateRequest
		if err := decode(r, &req); err != nil {
			return 0, nil, err
		}
		if req.Name != "" {
			if !volumeName.MatchString(req.Name) {
				return 0, nil, invalid(field{"name", "must be 1–64 characters of letters, digits, . _ -"})
			}
			if nameTaken(f.st.volumes, req.Name, v.ID) {
				return 0, nil, errUnique("volume", "name")
			}
			v.Name = req.Name
		}
		if req.Labels != nil {
			if err := validLabels(*req.Labels); err != nil {
				return 0, nil, err
			}
			v.Labels = labelsOrEmpty(req.Labels)
		}
		return http.StatusOK, map[string]any{"volume": renderVolume(v)}, nil
	})
	f.handle("DELETE /v1/volumes/{id}", func(r *http.Request) (int, any, error) {
		v, err := f.volume(r)
		if err != nil {
			return 0, nil, err
		}
		if v.Protection.Delete {
			return 0, nil, errProtected("volume", v.ID)
		}
		if err := f.checkLock("volume", v.ID); err != nil {
			return 0, nil, err
		}
		if v.Server != nil {
			return 0, nil, errCode("resource_in_use", fmt.Sprintf("volume %d is attached to server %d; detach it first", v.ID, *v.Server))
		}
		delete(f.st.volumes, v.ID)
		return http.StatusNoContent, nil, nil
	})
	get, idOf := f.volume, func(v *volume) int64 { return v.ID }
	// POST /volumes/{id}/actions/attach: https://docs.hetzner.cloud/#volume-actions-attach-volume-to-a-server
	actionRoute(f, "volumes", "volume", "attach", "attach_volume", get, idOf, []string{"server"}, func() any { return &schema.VolumeActionAttachVolumeRequest{} },
		func(v *volume, req any) ([]schema.ActionResourceReference, func(), error) {
			s, err := f.checkVolumeAttach(v, req.(*schema.VolumeActionAttachVolumeRequest).Server)
			if err != nil {
				return nil, nil, err
			}
			return []schema.ActionResourceReference{ref("server", s.ID)}, func() { v.Server = &s.ID }, nil
		})
	actionRoute(f, "volumes", "volume", "detach", "detach_volume", get, idOf, nil, nil,
		func(v *volume, _ any) ([]schema.ActionResourceReference, func(), error) {
			if v.Server == nil {
				return nil, nil, errCode("volume_not_attached", fmt.Sprintf("volume %d is not attached", v.ID))
			}
			if err := f.checkLock("server", *v.Server); err != nil {
				return nil, nil, err
			}
			return []schema.ActionResourceReference{ref("server", *v.Server)}, func() { v.Server = nil }, nil
		})
	actionRoute(f, "volumes", "volume", "resize", "resize_volume", get, idOf, []string{"size"}, func() any { return &schema.VolumeActionResizeVolumeRequest{} },
		func(v *volume, req any) ([]schema.ActionResourceReference, func(), error) {
			size := req.(*schema.VolumeActionResizeVolumeRequest).Size
			if size <= v.Size || size > 10240 {
				return nil, nil, invalid(field{"size", fmt.Sprintf("must be larger than the current size %d GB and at most 10240", v.Size)})
			}
			return nil, func() { v.Size = size }, nil
		})
	actionRoute(f, "volumes", "volume", "change_protection", "change_protection", get, idOf, nil, func() any { return &schema.VolumeActionChangeProtectionRequest{} },
		func(v *volume, req any) ([]schema.ActionResourceReference, func(), error) {
			return nil, func() {
				if q := req.(*schema.VolumeActionChangeProtectionRequest); q.Delete != nil {
					v.Protection.Delete = *q.Delete
				}
			}, nil
		})
}
