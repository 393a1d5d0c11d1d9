package hcloud

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/cdkx-dev/cdkx/adapters/internal/kit"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TypeLoadBalancerTarget is a target of a load balancer: a server, the servers a label selector matches,
// or an IP (https://docs.hetzner.cloud/#load-balancer-actions-add-target).
//
// Properties, all required or optional and all create-only (a change replaces the target; Hetzner has no
// call to change one): loadBalancerId (required), type (required: server, label_selector or ip), and
// the one field type names — serverId, labelSelector or ip — plus usePrivateIp (server and
// label_selector only; the load balancer must be attached to the targets' network).
//
// Outputs: physicalId, loadBalancerId (integer), type, and the one of serverId (integer), labelSelector
// and ip that was given. Physical ID: "<loadBalancerId>/<type>/<serverId|labelSelector|ip>".
//
// Create POST /load_balancers/{id}/actions/add_target {type, server {id} | label_selector {selector} |
// ip {ip}, use_private_ip} → wait; read GET /load_balancers/{id} → targets[]; delete
// …/actions/remove_target {type, server | label_selector | ip} → wait; locate: read the load balancer
// and find the target. Changes are serialized per load balancer.
const TypeLoadBalancerTarget = "Hetzner::Compute::LoadBalancerTarget"

// lbTargetKeys maps a target type to the property that holds its key.
var lbTargetKeys = map[string]string{"server": "serverId", "label_selector": "labelSelector", "ip": "ip"}

// loadBalancerTargetKind is Hetzner::Compute::LoadBalancerTarget, for the provider's table (hcloud.go).
func loadBalancerTargetKind() kit.Type[*Provider] {
	return hetzner(kit.Type[*Provider]{
		Schema: resource.Schema{
			Type:        TypeLoadBalancerTarget,
			Description: "A load balancer target (POST /load_balancers/{id}/actions/add_target)",
			Properties: map[string]resource.PropertySchema{
				"loadBalancerId": idSchema("Load balancer", true, true),
				"type":           {Kind: resource.KindString, Required: true, CreateOnly: true, Enum: []string{"server", "label_selector", "ip"}, Description: "Target type"},
				"serverId":       idSchema("Server (type server)", false, true),
				"labelSelector":  {Kind: resource.KindString, CreateOnly: true, Description: "Label selector, e.g. role=web (type label_selector)"},
				"ip":             {Kind: resource.KindString, CreateOnly: true, Description: "IP address (type ip)"},
				"usePrivateIp":   {Kind: resource.KindBool, CreateOnly: true, Description: "Reach the targets over the private network (server and label_selector)"},
			},
			Outputs:             outputs("physicalId", "loadBalancerId", "type", "serverId", "labelSelector", "ip"),
			StableOutputs:       []string{"physicalId", "loadBalancerId", "type", "serverId", "labelSelector", "ip"},
			DeleteBeforeReplace: true,
			Identity:            []string{"loadBalancerId", "type", "serverId", "labelSelector", "ip"},
			Serialize:           []resource.SerialKey{{Group: "load-balancer", Property: "loadBalancerId"}},
			Check:               checkLBTarget,
		},
		Create: (*Provider).createLBTarget,
		Read:   (*Provider).readLBTarget,
		Delete: (*Provider).deleteLBTarget,
		Locate: func(p *Provider, ctx context.Context, req resource.CreateRequest) (string, error) {
			t, err := lbTargetOf(req.Properties)
			if err != nil {
				return "", err
			}
			if _, err := p.findLBTarget(ctx, t); err != nil {
				return "", err
			}
			return t.physicalID(), nil
		},
	}, "loadBalancerId", "serverId")
}

func checkLBTarget(props resource.Properties, unknown resource.IsUnknownFunc) []resource.FieldError {
	typ, ok := props["type"].(string)
	if !ok || kit.IsUnknown(props["type"], unknown) {
		return nil
	}
	want, known := lbTargetKeys[typ]
	if !known {
		return nil // the schema's enum reports it
	}
	var errs []resource.FieldError
	for _, k := range []string{"serverId", "labelSelector", "ip"} {
		_, has := props[k]
		has = has && props[k] != nil
		switch {
		case k == want && !has:
			errs = append(errs, resource.FieldError{Path: k, Message: fmt.Sprintf("is required for a target of type %s", typ)})
		case k != want && has:
			errs = append(errs, resource.FieldError{Path: k, Message: fmt.Sprintf("does not apply to a target of type %s (it takes %s)", typ, want)})
		}
	}
	if _, has := props["usePrivateIp"]; has && typ == "ip" {
		errs = append(errs, resource.FieldError{Path: "usePrivateIp", Message: "applies to server and label_selector targets only"})
	}
	if s, ok := props["ip"].(string); ok && typ == "ip" && !kit.IsUnknown(props["ip"], unknown) {
		if _, err := netip.ParseAddr(s); err != nil {
			errs = append(errs, resource.FieldError{Path: "ip", Message: fmt.Sprintf("%q is not an IP address", s)})
		}
	}
	if s, ok := props["labelSelector"].(string); ok && typ == "label_selector" && strings.TrimSpace(s) == "" {
		errs = append(errs, resource.FieldError{Path: "labelSelector", Message: "is empty; give a label selector such as role=web"})
	}
	return errs
}

// lbTarget is a load balancer's target, as the API returns it and as the adapter keys it.
type lbTarget struct {
	Type   string `json:"type"`
	Server *struct {
		ID int64 `json:"id"`
	} `json:"server,omitempty"`
	LabelSelector *struct {
		Selector string `json:"selector"`
	} `json:"label_selector,omitempty"`
	IP *struct {
		IP string `json:"ip"`
	} `json:"ip,omitempty"`
	UsePrivateIP *bool `json:"use_private_ip,omitempty"`

	lb int64 // the load balancer (not in the API's object)
}

// lbTargetOf reads a target's properties.
func lbTargetOf(props resource.Properties) (*lbTarget, error) {
	lb, err := propID(props, "loadBalancerId")
	if err != nil {
		return nil, err
	}
	t := &lbTarget{Type: str(props, "type"), lb: lb}
	switch t.Type {
	case "server":
		id, err := propID(props, "serverId")
		if err != nil {
			return nil, err
		}
		t.Server = &struct {
			ID int64 `json:"id"`
		}{id}
	case "label_selector":
		t.LabelSelector = &struct {
			Selector string `json:"selector"`
		}{str(props, "labelSelector")}
	case "ip":
		t.IP = &struct {
			IP string `json:"ip"`
		}{str(props, "ip")}
	default:
		return nil, fmt.Errorf("%s: target type %q is not server, label_selector or ip", Name, t.Type)
	}
	if v, ok := boolean(props, "usePrivateIp"); ok {
		t.UsePrivateIP = &v
	}
	return t, nil
}

// key is the target's key: its server ID, label selector or IP.
func (t *lbTarget) key() string {
	switch {
	case t.Server != nil:
		return strconv.FormatInt(t.Server.ID, 10)
	case t.LabelSelector != nil:
		return t.LabelSelector.Selector
	case t.IP != nil:
		return t.IP.IP
	}
	return ""
}

func (t *lbTarget) physicalID() string {
	return fmt.Sprintf("%d/%s/%s", t.lb, t.Type, t.key())
}

// ref is the target without use_private_ip: remove_target's body.
func (t *lbTarget) ref() *lbTarget {
	r := *t
	r.UsePrivateIP = nil
	return &r
}

func (t *lbTarget) outputs() resource.Properties {
	out := resource.Properties{"physicalId": t.physicalID(), "loadBalancerId": num(t.lb), "type": t.Type}
	switch {
	case t.Server != nil:
		out["serverId"] = num(t.Server.ID)
	case t.LabelSelector != nil:
		out["labelSelector"] = t.LabelSelector.Selector
	case t.IP != nil:
		out["ip"] = t.IP.IP
	}
	return out
}

// lbTargetFromID parses a "<loadBalancerId>/<type>/<key>" physical ID.
func lbTargetFromID(physicalID string) (*lbTarget, error) {
	lb, rest, err := lbKey(physicalID)
	typ, key, ok := strings.Cut(rest, "/")
	if err != nil || !ok || key == "" {
		return nil, fmt.Errorf("%s: physical ID %q is not <loadBalancerId>/<type>/<serverId|labelSelector|ip>", Name, physicalID)
	}
	props := resource.Properties{"loadBalancerId": num(lb), "type": typ, lbTargetKeys[typ]: key}
	if _, known := lbTargetKeys[typ]; !known {
		return nil, fmt.Errorf("%s: physical ID %q names target type %q, not server, label_selector or ip", Name, physicalID, typ)
	}
	return lbTargetOf(props)
}

func (p *Provider) createLBTarget(ctx context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
	t, err := lbTargetOf(req.Properties)
	if err != nil {
		return resource.CreateResult{}, err
	}
	if err := p.runAction(ctx, "/load_balancers", t.lb, "add_target", t); err != nil {
		return resource.CreateResult{}, err
	}
	return resource.CreateResult{PhysicalID: t.physicalID(), Outputs: t.outputs()}, nil
}

// findLBTarget returns the live target of t's load balancer with t's type and key, or an error wrapping
// resource.ErrNotFound.
func (p *Provider) findLBTarget(ctx context.Context, t *lbTarget) (*lbTarget, error) {
	l, err := p.getLoadBalancer(ctx, t.lb)
	if err != nil {
		return nil, err
	}
	for i := range l.Targets {
		live := &l.Targets[i]
		live.lb = t.lb
		if live.Type == t.Type && live.key() == t.key() {
			return live, nil
		}
	}
	return nil, fmt.Errorf("%s: load balancer %d has no %s target %s: %w", Name, t.lb, t.Type, t.key(), resource.ErrNotFound)
}

func (p *Provider) readLBTarget(ctx context.Context, req resource.ReadRequest) (resource.ReadResult, error) {
	t, err := lbTargetFromID(req.PhysicalID)
	if err != nil {
		return resource.ReadResult{}, err
	}
	live, err := p.findLBTarget(ctx, t)
	if err != nil {
		return resource.ReadResult{}, err
	}
	props := resource.Properties{}
	for k, v := range req.Properties {
		props[k] = v
	}
	if len(props) == 0 {
		for k, v := range live.outputs() {
			if k != "physicalId" {
				props[k] = v
			}
		}
	}
	if _, ok := req.Properties["usePrivateIp"]; (ok || (live.UsePrivateIP != nil && *live.UsePrivateIP)) && live.UsePrivateIP != nil {
		props["usePrivateIp"] = *live.UsePrivateIP
	}
	return resource.ReadResult{Properties: props, Outputs: live.outputs()}, nil
}

func (p *Provider) deleteLBTarget(ctx context.Context, req resource.DeleteRequest) error {
	t, err := lbTargetFromID(req.PhysicalID)
	if err != nil {
		return err
	}
	err = p.runAction(ctx, "/load_balancers", t.lb, "remove_target", t.ref())
	if err == nil || errors.Is(err, resource.ErrNotFound) {
		return err
	}
	// A target already gone is success: Hetzner answers an error that is not a 404, so look.
	if _, ferr := p.findLBTarget(ctx, t); errors.Is(ferr, resource.ErrNotFound) {
		return nil
	}
	return err
}
