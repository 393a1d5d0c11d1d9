package hcloud

import (
	"context"
	"net/http"
	"strconv"

	"github.com/cdkx-dev/cdkx/adapters/internal/kit"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TypeNetwork is a private network (https://docs.hetzner.cloud/#networks).
//
// Properties: name (required), ipRange (required, create-only: an RFC 1918 CIDR of /24 or larger),
// labels, exposeRoutesToVswitch. Outputs: networkId (integer, also the physical ID), name, ipRange,
// labels (always an object), exposeRoutesToVswitch (bool).
//
// Create POST /networks (no action); read GET /networks/{id}; update PUT /networks/{id} {name, labels,
// expose_routes_to_vswitch}; delete DELETE /networks/{id}; locate GET /networks?name=.
const TypeNetwork = "Hetzner::Networking::Network"

// networkKind is Hetzner::Networking::Network, for the provider's table (hcloud.go).
func networkKind() kit.Type[*Provider] {
	return hetzner(kit.Type[*Provider]{
		Schema: resource.Schema{
			Type:        TypeNetwork,
			Description: "A private network (POST /networks)",
			Properties: map[string]resource.PropertySchema{
				"name":                  {Kind: resource.KindString, Required: true, Description: "Name, unique in the project"},
				"ipRange":               {Kind: resource.KindString, Required: true, CreateOnly: true, Description: "IP range, an RFC 1918 CIDR of /24 or larger, e.g. 10.0.0.0/16"},
				"labels":                labelsSchema,
				"exposeRoutesToVswitch": {Kind: resource.KindBool, Description: "Expose the routes to a connected vSwitch"},
			},
			Outputs:             outputs("networkId", "name", "ipRange", "labels", "exposeRoutesToVswitch"),
			StableOutputs:       []string{"networkId", "ipRange"},
			ReplaceNote:         "the servers and load balancers attached to it lose their private IPs in it",
			DeleteBeforeReplace: true,
			Identity:            []string{"name"},
			Check:               checkNetwork,
		},
		Create: (*Provider).createNetwork,
		Read:   (*Provider).readNetwork,
		Update: (*Provider).updateNetwork,
		Delete: (*Provider).deleteNetwork,
		Locate: func(p *Provider, ctx context.Context, req resource.CreateRequest) (string, error) {
			return p.locateByName(ctx, "networks", req.Properties)
		},
	})
}

func checkNetwork(props resource.Properties, unknown resource.IsUnknownFunc) []resource.FieldError {
	return checkCIDR(props, unknown, "ipRange", true)
}

// network is the API's network object (the fields the adapter reads).
type network struct {
	ID                    int64             `json:"id"`
	Name                  string            `json:"name"`
	IPRange               string            `json:"ip_range"`
	Labels                map[string]string `json:"labels"`
	ExposeRoutesToVswitch bool              `json:"expose_routes_to_vswitch"`
	Subnets               []subnet          `json:"subnets"`
	Routes                []route           `json:"routes"`
}

type subnet struct {
	Type        string `json:"type"`
	IPRange     string `json:"ip_range"`
	NetworkZone string `json:"network_zone"`
	Gateway     string `json:"gateway"`
	VSwitchID   *int64 `json:"vswitch_id,omitempty"`
}

type route struct {
	Destination string `json:"destination"`
	Gateway     string `json:"gateway"`
}

func (n *network) outputs() resource.Properties {
	return resource.Properties{
		"networkId":             num(n.ID),
		"name":                  n.Name,
		"ipRange":               n.IPRange,
		"labels":                labelsValue(n.Labels),
		"exposeRoutesToVswitch": n.ExposeRoutesToVswitch,
	}
}

func (p *Provider) createNetwork(ctx context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
	body := map[string]any{"name": str(req.Properties, "name"), "ip_range": str(req.Properties, "ipRange"),
		"labels": labelsOf(req.Properties)}
	if v, ok := boolean(req.Properties, "exposeRoutesToVswitch"); ok {
		body["expose_routes_to_vswitch"] = v
	}
	var out struct {
		Network network `json:"network"`
	}
	if err := p.c.call(ctx, http.MethodPost, "/networks", body, &out); err != nil {
		return resource.CreateResult{}, existsError(err, "network", str(req.Properties, "name"))
	}
	return resource.CreateResult{PhysicalID: strconv.FormatInt(out.Network.ID, 10), Outputs: out.Network.outputs()}, nil
}

// getNetwork reads GET /networks/{id}.
func (p *Provider) getNetwork(ctx context.Context, id int64) (*network, error) {
	var out struct {
		Network network `json:"network"`
	}
	if err := p.c.call(ctx, http.MethodGet, idPath("/networks", id), nil, &out); err != nil {
		return nil, err
	}
	return &out.Network, nil
}

func (p *Provider) readNetwork(ctx context.Context, req resource.ReadRequest) (resource.ReadResult, error) {
	id, err := physicalID(req.PhysicalID)
	if err != nil {
		return resource.ReadResult{}, err
	}
	n, err := p.getNetwork(ctx, id)
	if err != nil {
		return resource.ReadResult{}, err
	}
	props := resource.Properties{"name": n.Name, "ipRange": n.IPRange}
	readLabels(props, req.Properties, n.Labels)
	if _, ok := req.Properties["exposeRoutesToVswitch"]; ok || n.ExposeRoutesToVswitch {
		props["exposeRoutesToVswitch"] = n.ExposeRoutesToVswitch
	}
	return resource.ReadResult{Properties: props, Outputs: n.outputs()}, nil
}

func (p *Provider) updateNetwork(ctx context.Context, req resource.UpdateRequest) (resource.UpdateResult, error) {
	id, err := physicalID(req.PhysicalID)
	if err != nil {
		return resource.UpdateResult{}, err
	}
	body := map[string]any{"name": str(req.New, "name"), "labels": labelsOf(req.New)}
	if v, ok := boolean(req.New, "exposeRoutesToVswitch"); ok {
		body["expose_routes_to_vswitch"] = v
	} else if _, was := req.Old["exposeRoutesToVswitch"]; was {
		body["expose_routes_to_vswitch"] = false
	}
	var out struct {
		Network network `json:"network"`
	}
	if err := p.c.call(ctx, http.MethodPut, idPath("/networks", id), body, &out); err != nil {
		return resource.UpdateResult{}, existsError(err, "network", str(req.New, "name"))
	}
	return resource.UpdateResult{Outputs: out.Network.outputs()}, nil
}

func (p *Provider) deleteNetwork(ctx context.Context, req resource.DeleteRequest) error {
	id, err := physicalID(req.PhysicalID)
	if err != nil {
		return err
	}
	return p.c.call(ctx, http.MethodDelete, idPath("/networks", id), nil, nil)
}
