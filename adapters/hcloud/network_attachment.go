package hcloud

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/cdkx-dev/cdkx/adapters/internal/kit"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TypeNetworkAttachment attaches a server to a private network (https://docs.hetzner.cloud/#server-actions-attach-a-server-to-a-network).
// The TypeScript cdkx declares this type but has no handler for it; cdkx serves it.
//
// Properties (all create-only): serverId and networkId (required), ip (the server's private IP; omitted,
// Hetzner picks one), aliasIps (more private IPs), ipRange (a subnet range to pick the IP from). Outputs:
// physicalId, serverId, networkId (integers), ip (the server's real private IP), aliasIps, and ipRange
// when given. Physical ID: "<serverId>/<networkId>".
//
// Create POST /servers/{id}/actions/attach_to_network {network, ip, alias_ips, ip_range} → wait, then GET
// /servers/{id} for the IP; read and locate GET /servers/{id} → private_net[]; delete POST
// /servers/{id}/actions/detach_from_network {network} → wait. There is no update. Changes run one at a
// time per network and per server.
const TypeNetworkAttachment = "Hetzner::Compute::NetworkAttachment"

// networkAttachmentKind is Hetzner::Compute::NetworkAttachment, for the provider's table (hcloud.go).
func networkAttachmentKind() kit.Type[*Provider] {
	return hetzner(kit.Type[*Provider]{
		Schema: resource.Schema{
			Type:        TypeNetworkAttachment,
			Description: "Attaches a server to a private network (POST /servers/{id}/actions/attach_to_network)",
			Properties: map[string]resource.PropertySchema{
				"serverId":  idSchema("Server to attach", true, true),
				"networkId": idSchema("Network to attach it to", true, true),
				"ip":        {Kind: resource.KindString, CreateOnly: true, Description: "The server's IP in the network, e.g. 10.0.1.5; omitted, Hetzner picks one"},
				"aliasIps": {Kind: resource.KindList, CreateOnly: true, Items: &resource.PropertySchema{Kind: resource.KindString},
					Description: "More IPs of the server in the network (configure them on the server yourself)"},
				"ipRange": {Kind: resource.KindString, CreateOnly: true, Description: "Subnet range to pick the IP from, a CIDR such as 10.0.1.0/24"},
			},
			Outputs:             outputs("physicalId", "serverId", "networkId", "ip", "aliasIps", "ipRange"),
			StableOutputs:       outputs("physicalId", "serverId", "networkId", "ip", "aliasIps", "ipRange"),
			ReplaceNote:         "the server leaves the network for a moment",
			DeleteBeforeReplace: true,
			Identity:            []string{"serverId", "networkId"},
			Serialize:           []resource.SerialKey{{Group: "network", Property: "networkId"}, {Group: "server", Property: "serverId"}},
			// Attaching needs a subnet in the server's zone; detaching comes before the subnets go.
			After:      []resource.After{{Type: TypeSubnet, Property: "networkId", OtherProperty: "networkId"}},
			Check:      checkNetworkAttachment,
			CheckStack: checkNetworkAttachmentStack,
		},
		Create: (*Provider).createNetworkAttachment,
		Read:   (*Provider).readNetworkAttachment,
		Delete: (*Provider).deleteNetworkAttachment,
		Locate: (*Provider).locateNetworkAttachment,
	}, "serverId", "networkId")
}

func checkNetworkAttachment(props resource.Properties, unknown resource.IsUnknownFunc) []resource.FieldError {
	errs := checkCIDR(props, unknown, "ipRange", false)
	badIP := func(path string, v any) {
		if kit.IsUnknown(v, unknown) {
			return
		}
		s, _ := v.(string)
		if a, err := netip.ParseAddr(s); err != nil || !a.Is4() {
			errs = append(errs, resource.FieldError{Path: path, Message: fmt.Sprintf("%s is not an IPv4 address such as 10.0.1.5", describeValue(v))})
		}
	}
	if v, ok := props["ip"]; ok && v != nil {
		badIP("ip", v)
	}
	if list, ok := props["aliasIps"].([]any); ok && !kit.IsUnknown(props["aliasIps"], unknown) {
		for i, v := range list {
			badIP(fmt.Sprintf("aliasIps[%d]", i), v)
		}
	}
	return errs
}

// privateNet is one entry of a server's private_net.
type privateNet struct {
	Network  int64    `json:"network"`
	IP       string   `json:"ip"`
	AliasIPs []string `json:"alias_ips"`
}

// serverPrivateNet returns server serverID's attachment to network networkID, or an error wrapping
// resource.ErrNotFound (server gone or not attached).
func (p *Provider) serverPrivateNet(ctx context.Context, serverID, networkID int64) (*privateNet, error) {
	var out struct {
		Server struct {
			PrivateNet []privateNet `json:"private_net"`
		} `json:"server"`
	}
	if err := p.c.call(ctx, http.MethodGet, idPath("/servers", serverID), nil, &out); err != nil {
		return nil, err
	}
	for i := range out.Server.PrivateNet {
		if n := &out.Server.PrivateNet[i]; n.Network == networkID {
			return n, nil
		}
	}
	return nil, fmt.Errorf("%s: server %d is not attached to network %d: %w", Name, serverID, networkID, resource.ErrNotFound)
}

// networkAttachmentOutputs are the outputs of the attachment of serverID to net (ipRange as given).
func networkAttachmentOutputs(serverID int64, net *privateNet, ipRange string) resource.Properties {
	aliases := make([]any, 0, len(net.AliasIPs))
	for _, a := range net.AliasIPs {
		aliases = append(aliases, a)
	}
	out := resource.Properties{
		"physicalId": fmt.Sprintf("%d/%d", serverID, net.Network),
		"serverId":   num(serverID),
		"networkId":  num(net.Network),
		"ip":         net.IP,
		"aliasIps":   aliases,
	}
	if ipRange != "" {
		out["ipRange"] = ipRange
	}
	return out
}

// parseNetworkAttachment parses "<serverId>/<networkId>".
func parseNetworkAttachment(physical string) (serverID, networkID int64, err error) {
	s, n, ok := strings.Cut(physical, "/")
	serverID, err1 := strconv.ParseInt(s, 10, 64)
	networkID, err2 := strconv.ParseInt(n, 10, 64)
	if !ok || err1 != nil || err2 != nil || serverID <= 0 || networkID <= 0 {
		return 0, 0, fmt.Errorf("%s: physical ID %q is not <serverId>/<networkId>", Name, physical)
	}
	return serverID, networkID, nil
}

func (p *Provider) createNetworkAttachment(ctx context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
	serverID, err := propID(req.Properties, "serverId")
	if err != nil {
		return resource.CreateResult{}, err
	}
	networkID, err := propID(req.Properties, "networkId")
	if err != nil {
		return resource.CreateResult{}, err
	}
	body := map[string]any{"network": networkID}
	if ip := str(req.Properties, "ip"); ip != "" {
		body["ip"] = ip
	}
	if list, ok := req.Properties["aliasIps"].([]any); ok {
		body["alias_ips"] = stringList(list)
	}
	ipRange := str(req.Properties, "ipRange")
	if ipRange != "" {
		body["ip_range"] = ipRange
	}
	if err := p.runAction(ctx, "/servers", serverID, "attach_to_network", body); err != nil {
		return resource.CreateResult{}, err
	}
	net, err := p.serverPrivateNet(ctx, serverID, networkID)
	if err != nil {
		return resource.CreateResult{}, err
	}
	out := networkAttachmentOutputs(serverID, net, ipRange)
	return resource.CreateResult{PhysicalID: out["physicalId"].(string), Outputs: out}, nil
}

func (p *Provider) readNetworkAttachment(ctx context.Context, req resource.ReadRequest) (resource.ReadResult, error) {
	serverID, networkID, err := parseNetworkAttachment(req.PhysicalID)
	if err != nil {
		return resource.ReadResult{}, err
	}
	net, err := p.serverPrivateNet(ctx, serverID, networkID)
	if err != nil {
		return resource.ReadResult{}, err
	}
	out := networkAttachmentOutputs(serverID, net, str(req.Properties, "ipRange"))
	props := resource.Properties{"serverId": req.Properties["serverId"], "networkId": req.Properties["networkId"], "ip": net.IP, "aliasIps": out["aliasIps"]}
	if props["serverId"] == nil {
		props["serverId"] = num(serverID)
	}
	if props["networkId"] == nil {
		props["networkId"] = num(networkID)
	}
	if v, ok := req.Properties["ipRange"]; ok {
		props["ipRange"] = v // not shown by the API
	}
	return resource.ReadResult{Properties: props, Outputs: out}, nil
}

func (p *Provider) deleteNetworkAttachment(ctx context.Context, req resource.DeleteRequest) error {
	serverID, networkID, err := parseNetworkAttachment(req.PhysicalID)
	if err != nil {
		return err
	}
	err = p.runAction(ctx, "/servers", serverID, "detach_from_network", map[string]any{"network": networkID})
	if err != nil && !errors.Is(err, resource.ErrNotFound) && errorCode(err) != "" {
		// Hetzner refuses to detach a server that is not attached: check whether it is.
		if _, gerr := p.serverPrivateNet(ctx, serverID, networkID); errors.Is(gerr, resource.ErrNotFound) {
			return nil
		}
	}
	return err
}

// locateNetworkAttachment finds the attachment of an interrupted create: the server is attached to the
// network (with the requested IP, when one was given).
func (p *Provider) locateNetworkAttachment(ctx context.Context, req resource.CreateRequest) (string, error) {
	serverID, err := propID(req.Properties, "serverId")
	if err != nil {
		return "", err
	}
	networkID, err := propID(req.Properties, "networkId")
	if err != nil {
		return "", err
	}
	net, err := p.serverPrivateNet(ctx, serverID, networkID)
	if err != nil {
		return "", err
	}
	if ip := str(req.Properties, "ip"); ip != "" && ip != net.IP {
		return "", fmt.Errorf("%s: server %d is attached to network %d with IP %s, not %s: %w", Name, serverID, networkID, net.IP, ip, resource.ErrNotFound)
	}
	return fmt.Sprintf("%d/%d", serverID, networkID), nil
}
