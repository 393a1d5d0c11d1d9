package hcloudfake

import (
	"net/http"
	"slices"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
)

// Placement groups: https://docs.hetzner.cloud/#placement-groups

func (f *Fake) renderPlacementGroup(p *placementGroup) schema.PlacementGroup {
	out := p.PlacementGroup
	out.Labels = labelsOrEmpty(&p.Labels)
	out.Servers = []int64{}
	for _, s := range f.st.servers {
		if s.placementGroup == p.ID {
			out.Servers = append(out.Servers, s.ID)
		}
	}
	slices.Sort(out.Servers)
	return out
}

func (f *Fake) placementGroup(r *http.Request) (*placementGroup, error) {
	return byPathID(r, "placement_group", f.st.placementGrps)
}

func (f *Fake) placementGroupRoutes() {
	f.handle("GET /v1/placement_groups", func(r *http.Request) (int, any, error) {
		typ := r.URL.Query()["type"]
		return list(r, "placement_groups", values(f.st.placementGrps), func(p *placementGroup) any { return f.renderPlacementGroup(p) },
			func(p *placementGroup) bool { return len(typ) == 0 || contains(typ, p.Type) })
	})
	f.handle("GET /v1/placement_groups/{id}", func(r *http.Request) (int, any, error) {
		p, err := f.placementGroup(r)
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, map[string]any{"placement_group": f.renderPlacementGroup(p)}, nil
	})
	f.handle("POST /v1/placement_groups", func(r *http.Request) (int, any, error) {
		var req schema.PlacementGroupCreateRequest
		if err := decode(r, &req, "name", "type"); err != nil {
			return 0, nil, err
		}
		if req.Type != "spread" {
			return 0, nil, invalid(field{"type", "must be spread"})
		}
		if req.Name == "" {
			return 0, nil, invalid(field{"name", "must not be empty"})
		}
		if nameTaken(f.st.placementGrps, req.Name, 0) {
			return 0, nil, errUnique("placement_group", "name")
		}
		labels := labelsOrEmpty(req.Labels)
		if err := validLabels(labels); err != nil {
			return 0, nil, err
		}
		p := &placementGroup{schema.PlacementGroup{ID: f.newID(), Name: req.Name, Type: req.Type, Labels: labels, Created: f.created()}}
		f.st.placementGrps[p.ID] = p
		return http.StatusCreated, map[string]any{"placement_group": f.renderPlacementGroup(p), "action": nil}, nil
	})
	f.handle("PUT /v1/placement_groups/{id}", func(r *http.Request) (int, any, error) {
		p, err := f.placementGroup(r)
		if err != nil {
			return 0, nil, err
		}
		var req schema.PlacementGroupUpdateRequest
		if err := decode(r, &req); err != nil {
			return 0, nil, err
		}
		if req.Name != nil && *req.Name != "" {
			if nameTaken(f.st.placementGrps, *req.Name, p.ID) {
				return 0, nil, errUnique("placement_group", "name")
			}
			p.Name = *req.Name
		}
		if req.Labels != nil {
			if err := validLabels(*req.Labels); err != nil {
				return 0, nil, err
			}
			p.Labels = labelsOrEmpty(req.Labels)
		}
		return http.StatusOK, map[string]any{"placement_group": f.renderPlacementGroup(p)}, nil
	})
	f.handle("DELETE /v1/placement_groups/{id}", func(r *http.Request) (int, any, error) {
		p, err := f.placementGroup(r)
		if err != nil {
			return 0, nil, err
		}
		for _, s := range f.st.servers {
			if s.placementGroup == p.ID {
				s.placementGroup = 0
			}
		}
		delete(f.st.placementGrps, p.ID)
		return http.StatusNoContent, nil, nil
	})
}
