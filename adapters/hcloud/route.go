package hcloud

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"

	"github.com/cdkx-dev/cdkx/adapters/internal/kit"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TypeRoute is a route of a private network (https://docs.hetzner.cloud/#network-actions-add-a-route-to-a-network).
//
// Properties (all required and create-only): networkId, destination (a CIDR), gateway (an IP inside the
// network, not its first IP nor 172.31.1.1; only Hetzner can tell whether it is inside). Outputs:
// physicalId, networkId (integer), destination, gateway. Physical ID: "<networkId>/<destination>", e.g.
// "7/10.100.0.0/24".
//
// Create POST /networks/{id}/actions/add_route {destination, gateway} → wait, then GET /networks/{id} to
// read the route back; read and locate GET /networks/{id} → routes[] by destination; delete POST
// /networks/{id}/actions/delete_route {destination, gateway} → wait. There is no update: every property is
// create-only. Changes run one at a time per network.
const TypeRoute = "Hetzner::Networking::Route"

// reservedGateway is the address Hetzner reserves for its own gateway; routes cannot point at it.
var reservedGateway = netip.MustParseAddr("172.31.1.1")

// routeKind is Hetzner::Networking::Route, for the provider's table (hcloud.go).
func routeKind() kit.Type[*Provider] {
	return hetzner(kit.Type[*Provider]{
		Schema: resource.Schema{
			Type:        TypeRoute,
			Description: "A route of a private network (POST /networks/{id}/actions/add_route)",
			Properties: map[string]resource.PropertySchema{
				"networkId":   idSchema("Network the route belongs to", true, true),
				"destination": {Kind: resource.KindString, Required: true, CreateOnly: true, Description: "Destination network or host, a CIDR such as 10.100.1.0/24"},
				"gateway": {Kind: resource.KindString, Required: true, CreateOnly: true,
					Description: "Gateway for the route: an IP address inside the network's range, not its first address nor 172.31.1.1"},
			},
			Outputs:             outputs("physicalId", "networkId", "destination", "gateway"),
			StableOutputs:       outputs("physicalId", "networkId", "destination", "gateway"),
			DeleteBeforeReplace: true,
			Identity:            []string{"networkId", "destination"},
			Serialize:           []resource.SerialKey{{Group: "network", Property: "networkId"}},
			Check:               checkRoute,
		},
		Create: (*Provider).createRoute,
		Read:   (*Provider).readRoute,
		Delete: (*Provider).deleteRoute,
		Locate: (*Provider).locateRoute,
	}, "networkId")
}

func checkRoute(props resource.Properties, unknown resource.IsUnknownFunc) []resource.FieldError {
	errs := checkCIDR(props, unknown, "destination", false)
	if s, ok := props["destination"].(string); ok && len(errs) == 0 && !kit.IsUnknown(props["destination"], unknown) {
		if pfx, err := netip.ParsePrefix(s); err == nil && !pfx.Addr().Is4() {
			errs = append(errs, resource.FieldError{Path: "destination", Message: fmt.Sprintf("%q is not an IPv4 range; Hetzner networks route IPv4 only", s)})
		}
	}
	if s, ok := props["gateway"].(string); ok && !kit.IsUnknown(props["gateway"], unknown) {
		addr, err := netip.ParseAddr(s)
		switch {
		case err != nil || !addr.Is4():
			errs = append(errs, resource.FieldError{Path: "gateway", Message: fmt.Sprintf("%q is not an IPv4 address such as 10.0.1.2", s)})
		case addr == reservedGateway:
			errs = append(errs, resource.FieldError{Path: "gateway", Message: "172.31.1.1 is Hetzner's own gateway and cannot be a route's gateway; give a server's private IP"})
		}
	}
	return errs
}

func routeOutputs(networkID int64, r route) resource.Properties {
	return resource.Properties{
		"physicalId":  strconv.FormatInt(networkID, 10) + "/" + r.Destination,
		"networkId":   num(networkID),
		"destination": r.Destination,
		"gateway":     r.Gateway,
	}
}

func (p *Provider) createRoute(ctx context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
	netID, err := propID(req.Properties, "networkId")
	if err != nil {
		return resource.CreateResult{}, err
	}
	dest, gw := str(req.Properties, "destination"), str(req.Properties, "gateway")
	if err := p.runAction(ctx, "/networks", netID, "add_route", map[string]any{"destination": dest, "gateway": gw}); err != nil {
		return resource.CreateResult{}, err
	}
	n, err := p.getNetwork(ctx, netID)
	if err != nil {
		return resource.CreateResult{}, err
	}
	r, ok := findRoute(n, dest)
	if !ok {
		return resource.CreateResult{}, fmt.Errorf("%s: network %d: the route to %s added is not among its routes", Name, netID, dest)
	}
	out := routeOutputs(netID, r)
	return resource.CreateResult{PhysicalID: out["physicalId"].(string), Outputs: out}, nil
}

// findRoute returns n's route to dest (compared as prefixes, however they are written).
func findRoute(n *network, dest string) (route, bool) {
	for _, r := range n.Routes {
		if samePrefix(r.Destination, dest) {
			return r, true
		}
	}
	return route{}, false
}

// samePrefix reports whether a and b are the same CIDR, however written (or equal strings).
func samePrefix(a, b string) bool {
	if a == b {
		return true
	}
	x, err1 := netip.ParsePrefix(a)
	y, err2 := netip.ParsePrefix(b)
	return err1 == nil && err2 == nil && x == y
}

func (p *Provider) readRoute(ctx context.Context, req resource.ReadRequest) (resource.ReadResult, error) {
	netID, dest, err := splitNetworkKey(req.PhysicalID)
	if err != nil {
		return resource.ReadResult{}, err
	}
	n, err := p.getNetwork(ctx, netID)
	if err != nil {
		return resource.ReadResult{}, err
	}
	r, ok := findRoute(n, dest)
	if !ok {
		return resource.ReadResult{}, fmt.Errorf("%s: network %d has no route to %s: %w", Name, netID, dest, resource.ErrNotFound)
	}
	props := resource.Properties{"networkId": req.Properties["networkId"], "destination": r.Destination, "gateway": r.Gateway}
	if props["networkId"] == nil {
		props["networkId"] = num(netID)
	}
	if d := str(req.Properties, "destination"); samePrefix(d, r.Destination) {
		props["destination"] = d
	}
	return resource.ReadResult{Properties: props, Outputs: routeOutputs(netID, r)}, nil
}

func (p *Provider) deleteRoute(ctx context.Context, req resource.DeleteRequest) error {
	netID, dest, err := splitNetworkKey(req.PhysicalID)
	if err != nil {
		return err
	}
	gw := str(req.Properties, "gateway")
	if gw == "" {
		gw = str(req.Outputs, "gateway")
	}
	if gw == "" {
		n, err := p.getNetwork(ctx, netID)
		if err != nil {
			return err
		}
		r, ok := findRoute(n, dest)
		if !ok {
			return nil
		}
		gw = r.Gateway
	}
	err = p.runAction(ctx, "/networks", netID, "delete_route", map[string]any{"destination": dest, "gateway": gw})
	if err != nil && !errors.Is(err, resource.ErrNotFound) && errorCode(err) != "" {
		// Hetzner refuses to delete a route the network does not have: check whether it is gone.
		if n, gerr := p.getNetwork(ctx, netID); gerr == nil && !slices.ContainsFunc(n.Routes, func(r route) bool { return samePrefix(r.Destination, dest) }) {
			return nil
		}
	}
	return err
}

// locateRoute finds the route of an interrupted create: the network's route to destination through
// gateway.
func (p *Provider) locateRoute(ctx context.Context, req resource.CreateRequest) (string, error) {
	netID, err := propID(req.Properties, "networkId")
	if err != nil {
		return "", err
	}
	n, err := p.getNetwork(ctx, netID)
	if err != nil {
		return "", err
	}
	dest, gw := str(req.Properties, "destination"), str(req.Properties, "gateway")
	r, ok := findRoute(n, dest)
	if !ok || r.Gateway != gw {
		return "", fmt.Errorf("%s: network %d has no route to %s via %s: %w", Name, netID, dest, gw, resource.ErrNotFound)
	}
	return strconv.FormatInt(netID, 10) + "/" + r.Destination, nil
}
