package hcloud

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/cdkx-dev/cdkx/adapters/internal/kit"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TypeFirewall is a firewall (https://docs.hetzner.cloud/#firewalls), without its rules and targets: those
// are TypeFirewallRules and TypeFirewallAttachment.
//
// Properties: name (required, unique in the project), labels. Outputs: firewallId (integer, also the
// physical ID).
//
// Create POST /firewalls {name, labels} → wait for every action of actions[]; read GET /firewalls/{id};
// update PUT /firewalls/{id} {name, labels}; delete DELETE /firewalls/{id} (422 resource_in_use while it is
// still applied: its attachments, which depend on it, are deleted first); locate GET /firewalls?name=.
const TypeFirewall = "Hetzner::Security::Firewall"

// firewallKind is Hetzner::Security::Firewall, for the provider's table (hcloud.go).
func firewallKind() kit.Type[*Provider] {
	return hetzner(kit.Type[*Provider]{
		Schema: resource.Schema{
			Type:        TypeFirewall,
			Description: "A firewall; its rules and targets are FirewallRules and FirewallAttachment (POST /firewalls)",
			Properties: map[string]resource.PropertySchema{
				"name":   {Kind: resource.KindString, Required: true, Description: "Name, unique in the project"},
				"labels": labelsSchema,
				// The shapes before 2026-03-31 held the rules and targets; say where they went.
				"rules":   {Kind: resource.KindAny, Description: "Removed: the rules are a Hetzner::Security::FirewallRules resource"},
				"applyTo": {Kind: resource.KindAny, Description: "Removed: the targets are Hetzner::Security::FirewallAttachment resources"},
			},
			Outputs:             outputs("firewallId"),
			StableOutputs:       []string{"firewallId"},
			ReplaceNote:         "the servers it protects are unfiltered until the new one is applied to them",
			DeleteBeforeReplace: true,
			Identity:            []string{"name"},
			Check:               checkFirewall,
		},
		Create: (*Provider).createFirewall,
		Read:   (*Provider).readFirewall,
		Update: (*Provider).updateFirewall,
		Delete: (*Provider).deleteFirewall,
		Locate: func(p *Provider, ctx context.Context, req resource.CreateRequest) (string, error) {
			return p.locateByName(ctx, "firewalls", req.Properties)
		},
	})
}

// checkFirewall rejects the rules and applyTo of the older shape, naming the types that replace them.
func checkFirewall(props resource.Properties, _ resource.IsUnknownFunc) []resource.FieldError {
	var errs []resource.FieldError
	if _, ok := props["rules"]; ok {
		errs = append(errs, resource.FieldError{Path: "rules", Message: "a firewall's rules are no longer a property of " + TypeFirewall +
			": declare a " + TypeFirewallRules + " with firewallId and rules (the TypeScript cdkx 0.2.0 and later write that shape)"})
	}
	if _, ok := props["applyTo"]; ok {
		errs = append(errs, resource.FieldError{Path: "applyTo", Message: "a firewall's targets are no longer a property of " + TypeFirewall +
			": declare one " + TypeFirewallAttachment + " per server or label selector (the TypeScript cdkx 0.2.0 and later write that shape)"})
	}
	return errs
}

// firewall is the API's firewall object (the fields the adapter reads).
type firewall struct {
	ID        int64             `json:"id"`
	Name      string            `json:"name"`
	Labels    map[string]string `json:"labels"`
	Rules     []firewallRule    `json:"rules"`
	AppliedTo []firewallTarget  `json:"applied_to"`
}

// firewallRule is a rule as the API shows and takes it.
type firewallRule struct {
	Description    *string  `json:"description,omitempty"`
	Direction      string   `json:"direction"`
	SourceIPs      []string `json:"source_ips,omitempty"`
	DestinationIPs []string `json:"destination_ips,omitempty"`
	Protocol       string   `json:"protocol"`
	Port           *string  `json:"port,omitempty"`
}

// firewallTarget is one entry of applied_to, apply_to and remove_from.
type firewallTarget struct {
	Type   string `json:"type"`
	Server *struct {
		ID int64 `json:"id"`
	} `json:"server,omitempty"`
	LabelSelector *struct {
		Selector string `json:"selector"`
	} `json:"label_selector,omitempty"`
}

func firewallOutputs(id int64) resource.Properties {
	return resource.Properties{"firewallId": num(id)}
}

// getFirewall reads GET /firewalls/{id}.
func (p *Provider) getFirewall(ctx context.Context, id int64) (*firewall, error) {
	var out struct {
		Firewall firewall `json:"firewall"`
	}
	if err := p.c.call(ctx, http.MethodGet, idPath("/firewalls", id), nil, &out); err != nil {
		return nil, err
	}
	return &out.Firewall, nil
}

func (p *Provider) createFirewall(ctx context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
	name := str(req.Properties, "name")
	var out struct {
		Firewall firewall  `json:"firewall"`
		Actions  []*action `json:"actions"`
	}
	if err := p.c.call(ctx, http.MethodPost, "/firewalls", map[string]any{"name": name, "labels": labelsOf(req.Properties)}, &out); err != nil {
		return resource.CreateResult{}, existsError(err, "firewall", name)
	}
	id := out.Firewall.ID
	if err := p.c.wait(ctx, out.Actions...); err != nil {
		return resource.CreateResult{}, fmt.Errorf("%s: firewall %d created, but %w", Name, id, err)
	}
	return resource.CreateResult{PhysicalID: strconv.FormatInt(id, 10), Outputs: firewallOutputs(id)}, nil
}

func (p *Provider) readFirewall(ctx context.Context, req resource.ReadRequest) (resource.ReadResult, error) {
	id, err := physicalID(req.PhysicalID)
	if err != nil {
		return resource.ReadResult{}, err
	}
	fw, err := p.getFirewall(ctx, id)
	if err != nil {
		return resource.ReadResult{}, err
	}
	props := resource.Properties{"name": fw.Name}
	readLabels(props, req.Properties, fw.Labels)
	return resource.ReadResult{Properties: props, Outputs: firewallOutputs(fw.ID)}, nil
}

func (p *Provider) updateFirewall(ctx context.Context, req resource.UpdateRequest) (resource.UpdateResult, error) {
	id, err := physicalID(req.PhysicalID)
	if err != nil {
		return resource.UpdateResult{}, err
	}
	name := str(req.New, "name")
	if err := p.c.call(ctx, http.MethodPut, idPath("/firewalls", id), map[string]any{"name": name, "labels": labelsOf(req.New)}, nil); err != nil {
		return resource.UpdateResult{}, existsError(err, "firewall", name)
	}
	return resource.UpdateResult{Outputs: firewallOutputs(id)}, nil
}

func (p *Provider) deleteFirewall(ctx context.Context, req resource.DeleteRequest) error {
	id, err := physicalID(req.PhysicalID)
	if err != nil {
		return err
	}
	err = p.c.call(ctx, http.MethodDelete, idPath("/firewalls", id), nil, nil)
	if errorCode(err) == "resource_in_use" {
		return fmt.Errorf("%s: firewall %d is still applied to servers or label selectors; remove it from them (in cdkx: its FirewallAttachments; in the Hetzner Console: Firewalls → %d → Resources) and delete again: %w",
			Name, id, id, err)
	}
	return err
}
