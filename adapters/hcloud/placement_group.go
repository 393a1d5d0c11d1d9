package hcloud

import (
	"context"
	"net/http"
	"strconv"

	"github.com/cdkx-dev/cdkx/adapters/internal/kit"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TypePlacementGroup is a placement group that spreads its servers over hosts
// (https://docs.hetzner.cloud/#placement-groups).
//
// Properties: name (required), labels (both change in place), type (required, create-only: spread).
// placementGroupId and serverIds are read-only attributes that the TypeScript schema lists among the
// properties; they are accepted and ignored. Outputs: placementGroupId (integer, also the physical ID),
// name, type, labels, serverIds (the IDs of its servers, integers).
//
// Create POST /placement_groups (and wait for its action, when there is one); read
// GET /placement_groups/{id}; update PUT /placement_groups/{id} {name, labels}; delete
// DELETE /placement_groups/{id}; locate GET /placement_groups?name=.
const TypePlacementGroup = "Hetzner::Compute::PlacementGroup"

// placementGroupKind is Hetzner::Compute::PlacementGroup, for the provider's table (hcloud.go).
func placementGroupKind() kit.Type[*Provider] {
	return hetzner(kit.Type[*Provider]{
		Schema: resource.Schema{
			Type:        TypePlacementGroup,
			Description: "A placement group (POST /placement_groups)",
			Properties: map[string]resource.PropertySchema{
				"name":             {Kind: resource.KindString, Required: true, Description: "Name, unique in the project"},
				"labels":           labelsSchema,
				"type":             {Kind: resource.KindString, Required: true, CreateOnly: true, Enum: []string{"spread"}, Description: "Placement type: spread"},
				"placementGroupId": {Kind: resource.KindAny, Description: "Read-only attribute (ignored as input)"},
				"serverIds":        {Kind: resource.KindAny, Description: "Read-only attribute (ignored as input)"},
			},
			Outputs:             outputs("placementGroupId", "name", "type", "labels", "serverIds"),
			StableOutputs:       []string{"placementGroupId", "type"},
			DeleteBeforeReplace: true,
			Identity:            []string{"name"},
		},
		Create: (*Provider).createPlacementGroup,
		Read:   (*Provider).readPlacementGroup,
		Update: (*Provider).updatePlacementGroup,
		Delete: (*Provider).deletePlacementGroup,
		Locate: func(p *Provider, ctx context.Context, req resource.CreateRequest) (string, error) {
			return p.locateByName(ctx, "placement_groups", req.Properties)
		},
	})
}

// placementGroup is the API's placement group object.
type placementGroup struct {
	ID      int64             `json:"id"`
	Name    string            `json:"name"`
	Type    string            `json:"type"`
	Labels  map[string]string `json:"labels"`
	Servers []int64           `json:"servers"`
}

func (g *placementGroup) outputs() resource.Properties {
	servers := make([]any, 0, len(g.Servers))
	for _, s := range g.Servers {
		servers = append(servers, num(s))
	}
	return resource.Properties{"placementGroupId": num(g.ID), "name": g.Name, "type": g.Type,
		"labels": labelsValue(g.Labels), "serverIds": servers}
}

func (p *Provider) createPlacementGroup(ctx context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
	name := str(req.Properties, "name")
	body := map[string]any{"name": name, "type": str(req.Properties, "type"), "labels": labelsOf(req.Properties)}
	var out struct {
		PlacementGroup placementGroup `json:"placement_group"`
		Action         *action        `json:"action"`
	}
	if err := p.c.call(ctx, http.MethodPost, "/placement_groups", body, &out); err != nil {
		return resource.CreateResult{}, existsError(err, "placement group", name)
	}
	if err := p.c.wait(ctx, out.Action); err != nil {
		return resource.CreateResult{}, err
	}
	return resource.CreateResult{PhysicalID: strconv.FormatInt(out.PlacementGroup.ID, 10), Outputs: out.PlacementGroup.outputs()}, nil
}

func (p *Provider) readPlacementGroup(ctx context.Context, req resource.ReadRequest) (resource.ReadResult, error) {
	id, err := physicalID(req.PhysicalID)
	if err != nil {
		return resource.ReadResult{}, err
	}
	var out struct {
		PlacementGroup placementGroup `json:"placement_group"`
	}
	if err := p.c.call(ctx, http.MethodGet, idPath("/placement_groups", id), nil, &out); err != nil {
		return resource.ReadResult{}, err
	}
	g := out.PlacementGroup
	props := resource.Properties{"name": g.Name, "type": g.Type}
	readLabels(props, req.Properties, g.Labels)
	for _, k := range []string{"placementGroupId", "serverIds"} {
		if v, ok := req.Properties[k]; ok {
			props[k] = v
		}
	}
	return resource.ReadResult{Properties: props, Outputs: g.outputs()}, nil
}

func (p *Provider) updatePlacementGroup(ctx context.Context, req resource.UpdateRequest) (resource.UpdateResult, error) {
	id, err := physicalID(req.PhysicalID)
	if err != nil {
		return resource.UpdateResult{}, err
	}
	body := map[string]any{"name": str(req.New, "name"), "labels": labelsOf(req.New)}
	var out struct {
		PlacementGroup placementGroup `json:"placement_group"`
	}
	if err := p.c.call(ctx, http.MethodPut, idPath("/placement_groups", id), body, &out); err != nil {
		return resource.UpdateResult{}, existsError(err, "placement group", str(req.New, "name"))
	}
	return resource.UpdateResult{Outputs: out.PlacementGroup.outputs()}, nil
}

func (p *Provider) deletePlacementGroup(ctx context.Context, req resource.DeleteRequest) error {
	id, err := physicalID(req.PhysicalID)
	if err != nil {
		return err
	}
	return p.c.call(ctx, http.MethodDelete, idPath("/placement_groups", id), nil, nil)
}
