package hcloud

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/cdkx-dev/cdkx/adapters/internal/kit"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TypeFirewallAttachment applies a firewall to one server or to the servers of a label selector
// (https://docs.hetzner.cloud/#firewall-actions-apply-to-resources).
//
// Properties (all create-only): firewallId (required), and exactly one of serverId and labelSelector.
// Outputs: physicalId, firewallId (integer), and serverId (integer) or labelSelector. Physical ID:
// "<firewallId>/server/<serverId>" or "<firewallId>/label_selector/<selector>".
//
// Create POST /firewalls/{id}/actions/apply_to_resources {apply_to: [entry]} → wait for every action;
// read and locate GET /firewalls/{id} → applied_to[]; delete POST
// /firewalls/{id}/actions/remove_from_resources {remove_from: [entry]} → wait (404
// firewall_resource_not_found: already removed). There is no update: every property is create-only.
// Changes run one at a time per firewall.
const TypeFirewallAttachment = "Hetzner::Security::FirewallAttachment"

// firewallAttachmentKind is Hetzner::Security::FirewallAttachment, for the provider's table (hcloud.go).
func firewallAttachmentKind() kit.Type[*Provider] {
	return hetzner(kit.Type[*Provider]{
		Schema: resource.Schema{
			Type:        TypeFirewallAttachment,
			Description: "Applies a firewall to a server or a label selector (POST /firewalls/{id}/actions/apply_to_resources)",
			Properties: map[string]resource.PropertySchema{
				"firewallId": idSchema("Firewall to apply", true, true),
				"serverId":   idSchema("Server to apply the firewall to (give this or labelSelector)", false, true),
				"labelSelector": {Kind: resource.KindString, CreateOnly: true,
					Description: "Label selector whose servers get the firewall, e.g. role=web (give this or serverId)"},
			},
			Outputs:             outputs("physicalId", "firewallId", "serverId", "labelSelector"),
			StableOutputs:       outputs("physicalId", "firewallId", "serverId", "labelSelector"),
			DeleteBeforeReplace: true,
			Identity:            []string{"firewallId", "serverId", "labelSelector"},
			Serialize:           []resource.SerialKey{{Group: "firewall", Property: "firewallId"}},
			Check:               checkFirewallAttachment,
		},
		Create: (*Provider).createFirewallAttachment,
		Read:   (*Provider).readFirewallAttachment,
		Delete: (*Provider).deleteFirewallAttachment,
		Locate: (*Provider).locateFirewallAttachment,
	}, "firewallId", "serverId")
}

func checkFirewallAttachment(props resource.Properties, unknown resource.IsUnknownFunc) []resource.FieldError {
	server, selector := props["serverId"] != nil, props["labelSelector"] != nil
	switch {
	case server && selector:
		return []resource.FieldError{{Path: "labelSelector", Message: "give serverId or labelSelector, not both: use one FirewallAttachment for each"}}
	case !server && !selector:
		return []resource.FieldError{{Path: "serverId", Message: "give serverId (one server) or labelSelector (the servers with matching labels)"}}
	}
	if s, ok := props["labelSelector"].(string); ok && !kit.IsUnknown(props["labelSelector"], unknown) && strings.TrimSpace(s) == "" {
		return []resource.FieldError{{Path: "labelSelector", Message: "is empty; give a label selector such as role=web"}}
	}
	return nil
}

// fwAttach is a FirewallAttachment's target: a server or a label selector.
type fwAttach struct {
	firewall int64
	server   int64
	selector string
}

func fwAttachOf(props resource.Properties) (fwAttach, error) {
	fw, err := propID(props, "firewallId")
	if err != nil {
		return fwAttach{}, err
	}
	a := fwAttach{firewall: fw, selector: str(props, "labelSelector")}
	if id, ok, err := idOf(props["serverId"]); err != nil {
		return fwAttach{}, fmt.Errorf("%s: property serverId %w", Name, err)
	} else if ok {
		a.server = id
	}
	if (a.server == 0) == (a.selector == "") {
		return fwAttach{}, fmt.Errorf("%s: give serverId or labelSelector, exactly one", Name)
	}
	return a, nil
}

// parseFwAttach parses "<firewallId>/server/<id>" or "<firewallId>/label_selector/<selector>".
func parseFwAttach(physical string) (fwAttach, error) {
	parts := strings.SplitN(physical, "/", 3)
	bad := fmt.Errorf("%s: physical ID %q is not <firewallId>/server/<serverId> or <firewallId>/label_selector/<selector>", Name, physical)
	if len(parts) != 3 || parts[2] == "" {
		return fwAttach{}, bad
	}
	fw, err := physicalID(parts[0])
	if err != nil {
		return fwAttach{}, bad
	}
	a := fwAttach{firewall: fw}
	switch parts[1] {
	case "server":
		if a.server, err = physicalID(parts[2]); err != nil {
			return fwAttach{}, bad
		}
	case "label_selector":
		a.selector = parts[2]
	default:
		return fwAttach{}, bad
	}
	return a, nil
}

func (a fwAttach) physicalID() string {
	if a.server != 0 {
		return fmt.Sprintf("%d/server/%d", a.firewall, a.server)
	}
	return fmt.Sprintf("%d/label_selector/%s", a.firewall, a.selector)
}

// target is a's entry of apply_to and remove_from.
func (a fwAttach) target() map[string]any {
	if a.server != 0 {
		return map[string]any{"type": "server", "server": map[string]any{"id": a.server}}
	}
	return map[string]any{"type": "label_selector", "label_selector": map[string]any{"selector": a.selector}}
}

// in reports whether the firewall's applied_to lists a.
func (a fwAttach) in(fw *firewall) bool {
	for _, t := range fw.AppliedTo {
		if (a.server != 0 && t.Type == "server" && t.Server != nil && t.Server.ID == a.server) ||
			(a.server == 0 && t.Type == "label_selector" && t.LabelSelector != nil && t.LabelSelector.Selector == a.selector) {
			return true
		}
	}
	return false
}

func (a fwAttach) outputs() resource.Properties {
	out := resource.Properties{"physicalId": a.physicalID(), "firewallId": num(a.firewall)}
	if a.server != 0 {
		out["serverId"] = num(a.server)
	} else {
		out["labelSelector"] = a.selector
	}
	return out
}

func (p *Provider) createFirewallAttachment(ctx context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
	a, err := fwAttachOf(req.Properties)
	if err != nil {
		return resource.CreateResult{}, err
	}
	err = p.runAction(ctx, "/firewalls", a.firewall, "apply_to_resources", map[string]any{"apply_to": []any{a.target()}})
	if errorCode(err) == "firewall_already_applied" {
		return resource.CreateResult{}, fmt.Errorf("%s: firewall %d is already applied to %s outside cdkx state: import the attachment (cdkx import) or remove it in the Hetzner Console: %w",
			Name, a.firewall, a.describe(), err)
	}
	if err != nil {
		return resource.CreateResult{}, err
	}
	return resource.CreateResult{PhysicalID: a.physicalID(), Outputs: a.outputs()}, nil
}

func (a fwAttach) describe() string {
	if a.server != 0 {
		return "server " + strconv.FormatInt(a.server, 10)
	}
	return "label selector " + strconv.Quote(a.selector)
}

func (p *Provider) readFirewallAttachment(ctx context.Context, req resource.ReadRequest) (resource.ReadResult, error) {
	a, err := parseFwAttach(req.PhysicalID)
	if err != nil {
		return resource.ReadResult{}, err
	}
	fw, err := p.getFirewall(ctx, a.firewall)
	if err != nil {
		return resource.ReadResult{}, err
	}
	if !a.in(fw) {
		return resource.ReadResult{}, fmt.Errorf("%s: firewall %d is not applied to %s: %w", Name, a.firewall, a.describe(), resource.ErrNotFound)
	}
	props := resource.Properties{"firewallId": req.Properties["firewallId"]}
	if props["firewallId"] == nil {
		props["firewallId"] = num(a.firewall)
	}
	if a.server != 0 {
		props["serverId"] = req.Properties["serverId"]
		if props["serverId"] == nil {
			props["serverId"] = num(a.server)
		}
	} else {
		props["labelSelector"] = a.selector
	}
	return resource.ReadResult{Properties: props, Outputs: a.outputs()}, nil
}

func (p *Provider) deleteFirewallAttachment(ctx context.Context, req resource.DeleteRequest) error {
	a, err := parseFwAttach(req.PhysicalID)
	if err != nil {
		return err
	}
	err = p.runAction(ctx, "/firewalls", a.firewall, "remove_from_resources", map[string]any{"remove_from": []any{a.target()}})
	if err != nil && !errors.Is(err, resource.ErrNotFound) && errorCode(err) != "" {
		// Hetzner may refuse to remove what is not applied: check whether it is gone.
		if fw, gerr := p.getFirewall(ctx, a.firewall); gerr == nil && !a.in(fw) {
			return nil
		}
	}
	return err
}

// locateFirewallAttachment finds the attachment of an interrupted create: the firewall's applied_to
// lists the requested server or selector.
func (p *Provider) locateFirewallAttachment(ctx context.Context, req resource.CreateRequest) (string, error) {
	a, err := fwAttachOf(req.Properties)
	if err != nil {
		return "", err
	}
	fw, err := p.getFirewall(ctx, a.firewall)
	if err != nil {
		return "", err
	}
	if !a.in(fw) {
		return "", fmt.Errorf("%s: firewall %d is not applied to %s: %w", Name, a.firewall, a.describe(), resource.ErrNotFound)
	}
	return a.physicalID(), nil
}
