package hcloud

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/cdkx-dev/cdkx/adapters/internal/kit"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TypeSubnet is a subnet of a private network (https://docs.hetzner.cloud/#network-actions-add-a-subnet-to-a-network).
//
// Properties (all create-only): networkId (required), type (cloud, server or vswitch; default cloud),
// networkZone (eu-central, us-east, us-west or ap-southeast; default eu-central), ipRange (a CIDR inside
// the network's range; omitted, Hetzner picks the first free /24), vswitchId (required for type vswitch).
// Outputs: physicalId, networkId (integer), type, networkZone, ipRange (the real range), vswitchId (when
// set), gateway. Physical ID: "<networkId>/<ipRange>", e.g. "7/10.0.1.0/24".
//
// Create POST /networks/{id}/actions/add_subnet {type, network_zone, ip_range, vswitch_id} → wait, then
// GET /networks/{id} to find the subnet (by ip_range; when ipRange is omitted, the one of that type and
// zone that was not there before, read by a GET /networks/{id} ahead of the add); read and locate
// GET /networks/{id} → subnets[]; delete POST /networks/{id}/actions/delete_subnet {ip_range} → wait.
// There is no update: every property is create-only. Changes run one at a time per network.
const TypeSubnet = "Hetzner::Networking::Subnet"

// Subnet defaults, applied when the template omits them (the TypeScript cdkx's legacy assemblies do).
const (
	defaultSubnetType  = "cloud"
	defaultNetworkZone = "eu-central"
)

// subnetZones are Hetzner's network zones.
var subnetZones = []string{"eu-central", "us-east", "us-west", "ap-southeast"}

// subnetKind is Hetzner::Networking::Subnet, for the provider's table (hcloud.go).
func subnetKind() kit.Type[*Provider] {
	return hetzner(kit.Type[*Provider]{
		Schema: resource.Schema{
			Type:        TypeSubnet,
			Description: "A subnet of a private network (POST /networks/{id}/actions/add_subnet)",
			Properties: map[string]resource.PropertySchema{
				"networkId": idSchema("Network the subnet belongs to", true, true),
				"type": {Kind: resource.KindString, CreateOnly: true, Enum: []string{"cloud", "server", "vswitch"}, Default: defaultSubnetType,
					Description: "Subnet type: cloud, server or vswitch; default cloud"},
				"networkZone": {Kind: resource.KindString, CreateOnly: true, Enum: subnetZones, Default: defaultNetworkZone,
					Description: "Network zone: eu-central, us-east, us-west or ap-southeast; default eu-central"},
				"ipRange": {Kind: resource.KindString, CreateOnly: true,
					Description: "IP range, a CIDR inside the network's range, e.g. 10.0.1.0/24; omitted, Hetzner picks the first free /24"},
				"vswitchId": idSchema("Robot vSwitch to connect; required for type vswitch", false, true),
			},
			Outputs:             outputs("physicalId", "networkId", "type", "networkZone", "ipRange", "vswitchId", "gateway"),
			StableOutputs:       outputs("physicalId", "networkId", "type", "networkZone", "ipRange", "vswitchId", "gateway"),
			DeleteBeforeReplace: true,
			Identity:            []string{"networkId", "ipRange"},
			Serialize:           []resource.SerialKey{{Group: "network", Property: "networkId"}},
			Check:               checkSubnet,
		},
		Create: (*Provider).createSubnet,
		Read:   (*Provider).readSubnet,
		Delete: (*Provider).deleteSubnet,
		Locate: (*Provider).locateSubnet,
	}, "networkId", "vswitchId")
}

func checkSubnet(props resource.Properties, unknown resource.IsUnknownFunc) []resource.FieldError {
	errs := checkCIDR(props, unknown, "ipRange", false)
	if s, ok := props["ipRange"].(string); ok && len(errs) == 0 && !kit.IsUnknown(props["ipRange"], unknown) {
		if pfx, err := netip.ParsePrefix(s); err == nil && !pfx.Addr().Is4() {
			errs = append(errs, resource.FieldError{Path: "ipRange", Message: fmt.Sprintf("%q is not an IPv4 range; Hetzner networks are IPv4 only", s)})
		}
	}
	typ, known := props["type"].(string)
	if known && !kit.IsUnknown(props["type"], unknown) && typ == "vswitch" && props["vswitchId"] == nil {
		errs = append(errs, resource.FieldError{Path: "vswitchId", Message: "required for a subnet of type vswitch: give the ID of the Robot vSwitch to connect"})
	}
	return errs
}

// splitNetworkKey parses a physical ID "<networkId>/<key>" (a subnet's ip range, a route's destination).
func splitNetworkKey(physical string) (int64, string, error) {
	id, key, ok := strings.Cut(physical, "/")
	n, err := strconv.ParseInt(id, 10, 64)
	if !ok || err != nil || n <= 0 || key == "" {
		return 0, "", fmt.Errorf("%s: physical ID %q is not <networkId>/<CIDR>", Name, physical)
	}
	return n, key, nil
}

// subnetOutputs are a subnet's outputs.
func subnetOutputs(networkID int64, s *subnet) resource.Properties {
	out := resource.Properties{
		"physicalId":  strconv.FormatInt(networkID, 10) + "/" + s.IPRange,
		"networkId":   num(networkID),
		"type":        s.Type,
		"networkZone": s.NetworkZone,
		"ipRange":     s.IPRange,
		"gateway":     s.Gateway,
	}
	if s.VSwitchID != nil {
		out["vswitchId"] = num(*s.VSwitchID)
	}
	return out
}

// subnetType and subnetZone are props' type and networkZone with their defaults.
func subnetType(props resource.Properties) string {
	if s := str(props, "type"); s != "" {
		return s
	}
	return defaultSubnetType
}

func subnetZone(props resource.Properties) string {
	if s := str(props, "networkZone"); s != "" {
		return s
	}
	return defaultNetworkZone
}

func (p *Provider) createSubnet(ctx context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
	netID, err := propID(req.Properties, "networkId")
	if err != nil {
		return resource.CreateResult{}, err
	}
	typ, zone, ipRange := subnetType(req.Properties), subnetZone(req.Properties), str(req.Properties, "ipRange")
	body := map[string]any{"type": typ, "network_zone": zone}
	if ipRange != "" {
		body["ip_range"] = ipRange
	}
	if id, ok, err := idOf(req.Properties["vswitchId"]); err != nil {
		return resource.CreateResult{}, fmt.Errorf("%s: property vswitchId %w", Name, err)
	} else if ok {
		body["vswitch_id"] = id
	}
	before := map[string]bool{}
	if ipRange == "" {
		n, err := p.getNetwork(ctx, netID)
		if err != nil {
			return resource.CreateResult{}, err
		}
		for _, s := range n.Subnets {
			before[s.IPRange] = true
		}
	}
	if err := p.runAction(ctx, "/networks", netID, "add_subnet", body); err != nil {
		return resource.CreateResult{}, err
	}
	n, err := p.getNetwork(ctx, netID)
	if err != nil {
		return resource.CreateResult{}, err
	}
	for i := range n.Subnets {
		s := &n.Subnets[i]
		if (ipRange != "" && s.IPRange == ipRange) || (ipRange == "" && !before[s.IPRange] && s.Type == typ && s.NetworkZone == zone) {
			out := subnetOutputs(netID, s)
			return resource.CreateResult{PhysicalID: out["physicalId"].(string), Outputs: out}, nil
		}
	}
	return resource.CreateResult{}, fmt.Errorf("%s: network %d: the subnet added (type %s, zone %s, range %q) is not among its subnets", Name, netID, typ, zone, ipRange)
}

func (p *Provider) readSubnet(ctx context.Context, req resource.ReadRequest) (resource.ReadResult, error) {
	netID, ipRange, err := splitNetworkKey(req.PhysicalID)
	if err != nil {
		return resource.ReadResult{}, err
	}
	n, err := p.getNetwork(ctx, netID)
	if err != nil {
		return resource.ReadResult{}, err
	}
	for i := range n.Subnets {
		s := &n.Subnets[i]
		if s.IPRange != ipRange {
			continue
		}
		props := resource.Properties{"networkId": req.Properties["networkId"], "type": s.Type, "networkZone": s.NetworkZone, "ipRange": s.IPRange}
		if props["networkId"] == nil {
			props["networkId"] = num(netID)
		}
		if s.VSwitchID != nil {
			props["vswitchId"] = num(*s.VSwitchID)
			if v, ok, _ := idOf(req.Properties["vswitchId"]); ok && v == *s.VSwitchID {
				props["vswitchId"] = req.Properties["vswitchId"]
			}
		}
		return resource.ReadResult{Properties: props, Outputs: subnetOutputs(netID, s)}, nil
	}
	return resource.ReadResult{}, fmt.Errorf("%s: network %d has no subnet %s: %w", Name, netID, ipRange, resource.ErrNotFound)
}

func (p *Provider) deleteSubnet(ctx context.Context, req resource.DeleteRequest) error {
	netID, ipRange, err := splitNetworkKey(req.PhysicalID)
	if err != nil {
		return err
	}
	err = p.runAction(ctx, "/networks", netID, "delete_subnet", map[string]any{"ip_range": ipRange})
	if err != nil && !errors.Is(err, resource.ErrNotFound) && errorCode(err) != "" {
		// Hetzner refuses to delete a subnet the network does not have: check whether it is gone.
		if n, gerr := p.getNetwork(ctx, netID); gerr == nil && !slices.ContainsFunc(n.Subnets, func(s subnet) bool { return s.IPRange == ipRange }) {
			return nil
		}
	}
	return err
}

// locateSubnet finds the subnet of an interrupted create in its network: by ipRange, or, when ipRange is
// omitted, the only subnet of that type and zone (several: it cannot tell which one it made).
func (p *Provider) locateSubnet(ctx context.Context, req resource.CreateRequest) (string, error) {
	netID, err := propID(req.Properties, "networkId")
	if err != nil {
		return "", err
	}
	n, err := p.getNetwork(ctx, netID)
	if err != nil {
		return "", err
	}
	ipRange, typ, zone := str(req.Properties, "ipRange"), subnetType(req.Properties), subnetZone(req.Properties)
	var found []string
	for _, s := range n.Subnets {
		if (ipRange != "" && s.IPRange == ipRange) || (ipRange == "" && s.Type == typ && s.NetworkZone == zone) {
			found = append(found, s.IPRange)
		}
	}
	switch {
	case len(found) == 1:
		return strconv.FormatInt(netID, 10) + "/" + found[0], nil
	case len(found) > 1:
		return "", fmt.Errorf("%s: network %d has %d subnets of type %s in %s (%s); give ipRange so that cdkx can tell which one it created: %w",
			Name, netID, len(found), typ, zone, strings.Join(found, ", "), resource.ErrCannotLocate)
	}
	return "", fmt.Errorf("%s: network %d has no subnet %s: %w", Name, netID, ipRange, resource.ErrNotFound)
}
