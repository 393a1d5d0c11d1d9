package hcloud

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/cdkx-dev/cdkx/adapters/internal/kit"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TypeLoadBalancer is a load balancer (https://docs.hetzner.cloud/#load-balancers); its services and
// targets are TypeLoadBalancerService and TypeLoadBalancerTarget.
//
// Properties: name (required), loadBalancerType (required: lb11, lb21 or lb31), algorithm ({type:
// round_robin or least_connections}), labels, publicInterface (bool; Hetzner's default true) — all
// change in place — and, create-only: networkId (a network to attach to after create), networkZone,
// location (one of the two is required).
//
// Outputs: loadBalancerId (integer, also the physical ID), name, labels, loadBalancerType (the type's
// name), algorithm (flattened to its type, e.g. "round_robin"), publicInterface (bool). No IP outputs.
//
// Create POST /load_balancers {name, load_balancer_type, algorithm, labels, location or network_zone,
// public_interface} and wait for its action; with networkId, then POST
// /load_balancers/{id}/actions/attach_to_network {network} and wait. Read GET /load_balancers/{id}.
// Update PUT /load_balancers/{id} {name, labels}, then only what changed: actions change_algorithm {type},
// change_type {load_balancer_type}, enable_public_interface or disable_public_interface, each awaited.
// Delete DELETE /load_balancers/{id}. Locate GET /load_balancers?name=. Changes are serialized per load
// balancer (one action at a time) and, since the attach is a network change, per network; a load
// balancer comes after the subnets of its network in the same stack (Schema.After), which templates
// often leave out of its dependsOn.
const TypeLoadBalancer = "Hetzner::Compute::LoadBalancer"

// loadBalancerTypes are the load balancer types of the TypeScript schema.
var loadBalancerTypes = []string{"lb11", "lb21", "lb31"}

// networkZones are Hetzner's network zones (the TypeScript schema's NetworkZone enum).
var networkZones = []string{"eu-central", "us-east", "us-west", "ap-southeast"}

// lbAlgorithms are the load balancing algorithms; the first is Hetzner's default.
var lbAlgorithms = []string{"round_robin", "least_connections"}

// loadBalancerKind is Hetzner::Compute::LoadBalancer, for the provider's table (hcloud.go).
func loadBalancerKind() kit.Type[*Provider] {
	return hetzner(kit.Type[*Provider]{
		Schema: resource.Schema{
			Type:        TypeLoadBalancer,
			Description: "A load balancer (POST /load_balancers)",
			Properties: map[string]resource.PropertySchema{
				"name":             {Kind: resource.KindString, Required: true, Description: "Name, unique in the project"},
				"loadBalancerType": {Kind: resource.KindString, Required: true, Enum: loadBalancerTypes, Description: "Type: lb11, lb21 or lb31 (changes through change_type)"},
				"algorithm":        {Kind: resource.KindObject, Description: "Algorithm: {type: round_robin or least_connections} (default round_robin)"},
				"labels":           labelsSchema,
				"publicInterface":  {Kind: resource.KindBool, Description: "Whether the public interface is enabled (default true)"},
				"networkId":        idSchema("Network to attach the load balancer to after create", false, true),
				"networkZone":      {Kind: resource.KindString, CreateOnly: true, Enum: networkZones, Description: "Network zone, e.g. eu-central (give this or location)"},
				"location":         {Kind: resource.KindString, CreateOnly: true, Enum: locations, Description: "Location, e.g. nbg1 (give this or networkZone)"},
			},
			Outputs:             outputs("loadBalancerId", "name", "labels", "loadBalancerType", "algorithm", "publicInterface"),
			StableOutputs:       []string{"loadBalancerId"},
			ReplaceNote:         "it gets new public IPs, and serves nothing until the new one has its services and targets",
			DeleteBeforeReplace: true,
			Identity:            []string{"name"},
			// Not serialized per network: the attach may wait for subnets that the same deploy creates
			// (attachLoadBalancer), which holding the network's key would block; Hetzner's 409 conflict
			// and 423 locked on a concurrent network change are retried by the client.
			Serialize: []resource.SerialKey{{Group: "network", Property: "networkId"}, {Group: "load-balancer"}},
			// Attaching needs a subnet in the network zone; detaching comes before the subnets go.
			After: []resource.After{{Type: TypeSubnet, Property: "networkId", OtherProperty: "networkId"}},
			Check: checkLoadBalancer,
		},
		Create: (*Provider).createLoadBalancer,
		Read:   (*Provider).readLoadBalancer,
		Update: (*Provider).updateLoadBalancer,
		Delete: (*Provider).deleteLoadBalancer,
		Locate: func(p *Provider, ctx context.Context, req resource.CreateRequest) (string, error) {
			return p.locateByName(ctx, "load_balancers", req.Properties)
		},
	}, "networkId")
}

func checkLoadBalancer(props resource.Properties, unknown resource.IsUnknownFunc) []resource.FieldError {
	var errs []resource.FieldError
	if props["location"] == nil && props["networkZone"] == nil {
		errs = append(errs, resource.FieldError{Path: "location", Message: "give location or networkZone: Hetzner needs one to place the load balancer"})
	}
	if alg, ok := props["algorithm"].(map[string]any); ok && !kit.IsUnknown(props["algorithm"], unknown) {
		for k, v := range alg {
			switch {
			case k != "type":
				errs = append(errs, resource.FieldError{Path: "algorithm." + k, Message: "unknown key; algorithm is {type: round_robin or least_connections}"})
			case kit.IsUnknown(v, unknown):
			default:
				if s, _ := v.(string); !slices.Contains(lbAlgorithms, s) {
					errs = append(errs, resource.FieldError{Path: "algorithm.type", Message: fmt.Sprintf("must be round_robin or least_connections, got %v", v)})
				}
			}
		}
		if _, ok := alg["type"]; !ok {
			errs = append(errs, resource.FieldError{Path: "algorithm.type", Message: "is required: round_robin or least_connections"})
		}
	}
	return errs
}

// loadBalancer is the API's load balancer object (the fields the adapter reads).
type loadBalancer struct {
	ID               int64             `json:"id"`
	Name             string            `json:"name"`
	Labels           map[string]string `json:"labels"`
	LoadBalancerType struct {
		Name string `json:"name"`
	} `json:"load_balancer_type"`
	Algorithm struct {
		Type string `json:"type"`
	} `json:"algorithm"`
	PublicNet struct {
		Enabled bool `json:"enabled"`
	} `json:"public_net"`
	PrivateNet []struct {
		Network int64 `json:"network"`
	} `json:"private_net"`
	Location struct {
		Name        string `json:"name"`
		NetworkZone string `json:"network_zone"`
	} `json:"location"`
	Services []lbService `json:"services"`
	Targets  []lbTarget  `json:"targets"`
}

func (lb *loadBalancer) outputs() resource.Properties {
	return resource.Properties{"loadBalancerId": num(lb.ID), "name": lb.Name, "labels": labelsValue(lb.Labels),
		"loadBalancerType": lb.LoadBalancerType.Name, "algorithm": lb.Algorithm.Type, "publicInterface": lb.PublicNet.Enabled}
}

// algorithmOf is the algorithm type props ask for, Hetzner's default when none.
func algorithmOf(props resource.Properties) string {
	if alg, ok := props["algorithm"].(map[string]any); ok {
		if s, ok := alg["type"].(string); ok {
			return s
		}
	}
	return lbAlgorithms[0]
}

// publicInterfaceOf is whether props ask for the public interface (Hetzner's default: yes).
func publicInterfaceOf(props resource.Properties) bool {
	v, ok := boolean(props, "publicInterface")
	return v || !ok
}

func (p *Provider) createLoadBalancer(ctx context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
	props := req.Properties
	name := str(props, "name")
	body := map[string]any{"name": name, "load_balancer_type": str(props, "loadBalancerType"),
		"algorithm": map[string]string{"type": algorithmOf(props)}, "labels": labelsOf(props)}
	if v, ok := props["location"].(string); ok {
		body["location"] = v
	} else if v, ok := props["networkZone"].(string); ok {
		body["network_zone"] = v
	}
	if v, ok := boolean(props, "publicInterface"); ok {
		body["public_interface"] = v
	}
	network, attach, err := idOf(props["networkId"])
	if err != nil {
		return resource.CreateResult{}, fmt.Errorf("%s: property networkId %w", Name, err)
	}
	var out struct {
		LoadBalancer loadBalancer `json:"load_balancer"`
		Action       *action      `json:"action"`
	}
	if err := p.c.call(ctx, http.MethodPost, "/load_balancers", body, &out); err != nil {
		return resource.CreateResult{}, existsError(err, "load balancer", name)
	}
	lb := &out.LoadBalancer
	if err := p.c.wait(ctx, out.Action); err != nil {
		return p.unfinished(ctx, idPath("/load_balancers", lb.ID), lb.ID, fmt.Errorf("%s: load balancer %q (ID %d) was created but its create action failed: %w", Name, name, lb.ID, err))
	}
	if attach {
		if err := p.attachLoadBalancer(ctx, lb.ID, network); err != nil {
			return p.unfinished(ctx, idPath("/load_balancers", lb.ID), lb.ID, fmt.Errorf("%s: load balancer %q (ID %d) was created but not attached to network %d: %w", Name, name, lb.ID, network, err))
		}
	}
	return resource.CreateResult{PhysicalID: strconv.FormatInt(lb.ID, 10), Outputs: lb.outputs()}, nil
}

// attachLoadBalancer attaches load balancer lb to network: POST
// /load_balancers/{id}/actions/attach_to_network {network}, awaited.
func (p *Provider) attachLoadBalancer(ctx context.Context, lb, network int64) error {
	return p.runAction(ctx, "/load_balancers", lb, "attach_to_network", map[string]any{"network": network})
}

// getLoadBalancer reads GET /load_balancers/{id}.
func (p *Provider) getLoadBalancer(ctx context.Context, id int64) (*loadBalancer, error) {
	var out struct {
		LoadBalancer loadBalancer `json:"load_balancer"`
	}
	if err := p.c.call(ctx, http.MethodGet, idPath("/load_balancers", id), nil, &out); err != nil {
		return nil, err
	}
	return &out.LoadBalancer, nil
}

func (p *Provider) readLoadBalancer(ctx context.Context, req resource.ReadRequest) (resource.ReadResult, error) {
	id, err := physicalID(req.PhysicalID)
	if err != nil {
		return resource.ReadResult{}, err
	}
	lb, err := p.getLoadBalancer(ctx, id)
	if err != nil {
		return resource.ReadResult{}, err
	}
	in := req.Properties
	props := resource.Properties{"name": lb.Name, "loadBalancerType": lb.LoadBalancerType.Name}
	readLabels(props, in, lb.Labels)
	if _, ok := in["algorithm"]; ok || lb.Algorithm.Type != lbAlgorithms[0] {
		props["algorithm"] = map[string]any{"type": lb.Algorithm.Type}
	}
	if _, ok := in["publicInterface"]; ok || !lb.PublicNet.Enabled {
		props["publicInterface"] = lb.PublicNet.Enabled
	}
	if _, ok := in["location"]; ok {
		props["location"] = lb.Location.Name
	}
	if _, ok := in["networkZone"]; ok {
		props["networkZone"] = lb.Location.NetworkZone
	}
	if v, ok := in["networkId"]; ok {
		want, _, _ := idOf(v)
		var attached []int64
		for _, n := range lb.PrivateNet {
			attached = append(attached, n.Network)
		}
		switch {
		case slices.Contains(attached, want):
			props["networkId"] = v
		case len(attached) > 0:
			props["networkId"] = num(attached[0])
		}
	}
	return resource.ReadResult{Properties: props, Outputs: lb.outputs()}, nil
}

func (p *Provider) updateLoadBalancer(ctx context.Context, req resource.UpdateRequest) (resource.UpdateResult, error) {
	id, err := physicalID(req.PhysicalID)
	if err != nil {
		return resource.UpdateResult{}, err
	}
	name := str(req.New, "name")
	var out struct {
		LoadBalancer loadBalancer `json:"load_balancer"`
	}
	if err := p.c.call(ctx, http.MethodPut, idPath("/load_balancers", id), map[string]any{"name": name, "labels": labelsOf(req.New)}, &out); err != nil {
		return resource.UpdateResult{}, existsError(err, "load balancer", name)
	}
	lb := &out.LoadBalancer
	if alg := algorithmOf(req.New); alg != algorithmOf(req.Old) {
		if err := p.runAction(ctx, "/load_balancers", id, "change_algorithm", map[string]any{"type": alg}); err != nil {
			return resource.UpdateResult{}, err
		}
		lb.Algorithm.Type = alg
	}
	if t := str(req.New, "loadBalancerType"); t != str(req.Old, "loadBalancerType") {
		if err := p.runAction(ctx, "/load_balancers", id, "change_type", map[string]any{"load_balancer_type": t}); err != nil {
			return resource.UpdateResult{}, err
		}
		lb.LoadBalancerType.Name = t
	}
	if pub := publicInterfaceOf(req.New); pub != publicInterfaceOf(req.Old) {
		command := "disable_public_interface"
		if pub {
			command = "enable_public_interface"
		}
		if err := p.runAction(ctx, "/load_balancers", id, command, nil); err != nil {
			return resource.UpdateResult{}, err
		}
		lb.PublicNet.Enabled = pub
	}
	return resource.UpdateResult{Outputs: lb.outputs()}, nil
}

func (p *Provider) deleteLoadBalancer(ctx context.Context, req resource.DeleteRequest) error {
	id, err := physicalID(req.PhysicalID)
	if err != nil {
		return err
	}
	return p.c.call(ctx, http.MethodDelete, idPath("/load_balancers", id), nil, nil)
}
