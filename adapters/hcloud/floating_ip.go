package hcloud

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/cdkx-dev/cdkx/adapters/internal/kit"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TypeFloatingIP is a Floating IP (https://docs.hetzner.cloud/#floating-ips).
//
// Properties: type (ipv4 or ipv6, required, create-only), homeLocation (fsn1, nbg1, hel1, ash, hil or sin;
// required, create-only), name (unique in the project), description, labels, serverId (accepted and not
// sent: assign the IP with a FloatingIpAssignment). Outputs: floatingIpId (integer, also the physical ID),
// type, name, description (null when none), homeLocation, labels.
//
// Create POST /floating_ips {type, home_location, name, description, labels} → wait for its action, if
// any; read GET /floating_ips/{id}; update PUT /floating_ips/{id} {name, description, labels}; delete GET
// /floating_ips/{id}, and when it is assigned POST /floating_ips/{id}/actions/unassign → wait (Hetzner
// refuses to delete an assigned IP from 2026-05-01: 422 must_be_unassigned), then DELETE
// /floating_ips/{id}. Locate: by name (GET /floating_ips?name=); an unnamed IP by its labels (GET
// /floating_ips?label_selector=…, exactly one IP of that type and home location); an unnamed, unlabelled
// IP cannot be located.
const TypeFloatingIP = "Hetzner::Networking::FloatingIp"

// ipLocations are the locations of Floating and Primary IPs.
var ipLocations = []string{"fsn1", "nbg1", "hel1", "ash", "hil", "sin"}

// floatingIPKind is Hetzner::Networking::FloatingIp, for the provider's table (hcloud.go).
func floatingIPKind() kit.Type[*Provider] {
	return hetzner(kit.Type[*Provider]{
		Schema: resource.Schema{
			Type:        TypeFloatingIP,
			Description: "A Floating IP (POST /floating_ips); assign it with a FloatingIpAssignment",
			Properties: map[string]resource.PropertySchema{
				"type":         {Kind: resource.KindString, Required: true, CreateOnly: true, Enum: []string{"ipv4", "ipv6"}, Description: "IP version: ipv4 or ipv6"},
				"homeLocation": {Kind: resource.KindString, Required: true, CreateOnly: true, Enum: ipLocations, Description: "Home location: fsn1, nbg1, hel1, ash, hil or sin"},
				"name":         {Kind: resource.KindString, Description: "Name, unique in the project"},
				"description":  {Kind: resource.KindAny, Description: "Description (a string, or null for none)"},
				"labels":       labelsSchema,
				"serverId":     idSchema("Accepted for compatibility and not sent: assign the IP with a Hetzner::Networking::FloatingIpAssignment", false, false),
			},
			Outputs:             outputs("floatingIpId", "type", "name", "description", "homeLocation", "labels"),
			StableOutputs:       outputs("floatingIpId", "type", "homeLocation"),
			ReplaceNote:         "its address is lost (the new IP gets another)",
			DeleteBeforeReplace: true,
			Identity:            []string{"name"},
			Check:               checkFloatingIP,
		},
		Create: (*Provider).createFloatingIP,
		Read:   (*Provider).readFloatingIP,
		Update: (*Provider).updateFloatingIP,
		Delete: (*Provider).deleteFloatingIP,
		Locate: (*Provider).locateFloatingIP,
	}, "serverId")
}

func checkFloatingIP(props resource.Properties, unknown resource.IsUnknownFunc) []resource.FieldError {
	v := props["description"]
	if _, ok := v.(string); ok || v == nil || kit.IsUnknown(v, unknown) {
		return nil
	}
	return []resource.FieldError{{Path: "description", Message: fmt.Sprintf("must be a string or null, got %s", describeValue(v))}}
}

// floatingIP is the API's Floating IP object (the fields the adapter reads).
type floatingIP struct {
	ID           int64   `json:"id"`
	Name         string  `json:"name"`
	Description  *string `json:"description"`
	Type         string  `json:"type"`
	Server       *int64  `json:"server"`
	HomeLocation struct {
		Name string `json:"name"`
	} `json:"home_location"`
	Labels map[string]string `json:"labels"`
}

func (f *floatingIP) outputs() resource.Properties {
	out := resource.Properties{
		"floatingIpId": num(f.ID),
		"type":         f.Type,
		"name":         f.Name,
		"description":  nil,
		"homeLocation": f.HomeLocation.Name,
		"labels":       labelsValue(f.Labels),
	}
	if f.Description != nil {
		out["description"] = *f.Description
	}
	return out
}

// getFloatingIP reads GET /floating_ips/{id}.
func (p *Provider) getFloatingIP(ctx context.Context, id int64) (*floatingIP, error) {
	var out struct {
		FloatingIP floatingIP `json:"floating_ip"`
	}
	if err := p.c.call(ctx, http.MethodGet, idPath("/floating_ips", id), nil, &out); err != nil {
		return nil, err
	}
	return &out.FloatingIP, nil
}

func (p *Provider) createFloatingIP(ctx context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
	props := req.Properties
	body := map[string]any{"type": str(props, "type"), "home_location": str(props, "homeLocation"), "labels": labelsOf(props)}
	name := str(props, "name")
	if name != "" {
		body["name"] = name
	}
	if d, ok := props["description"].(string); ok {
		body["description"] = d
	}
	var out struct {
		FloatingIP floatingIP `json:"floating_ip"`
		Action     *action    `json:"action"`
	}
	if err := p.c.call(ctx, http.MethodPost, "/floating_ips", body, &out); err != nil {
		return resource.CreateResult{}, existsError(err, "floating IP", name)
	}
	if err := p.c.wait(ctx, out.Action); err != nil {
		return resource.CreateResult{}, fmt.Errorf("%s: floating IP %d created, but %w", Name, out.FloatingIP.ID, err)
	}
	return resource.CreateResult{PhysicalID: strconv.FormatInt(out.FloatingIP.ID, 10), Outputs: out.FloatingIP.outputs()}, nil
}

func (p *Provider) readFloatingIP(ctx context.Context, req resource.ReadRequest) (resource.ReadResult, error) {
	id, err := physicalID(req.PhysicalID)
	if err != nil {
		return resource.ReadResult{}, err
	}
	f, err := p.getFloatingIP(ctx, id)
	if err != nil {
		return resource.ReadResult{}, err
	}
	props := resource.Properties{"type": f.Type, "homeLocation": f.HomeLocation.Name, "name": f.Name}
	if f.Description != nil && (*f.Description != "" || req.Properties["description"] != nil) {
		props["description"] = *f.Description
	} else if _, ok := req.Properties["description"]; ok {
		props["description"] = nil
	}
	readLabels(props, req.Properties, f.Labels)
	if v, ok := req.Properties["serverId"]; ok {
		props["serverId"] = v // not sent, so not drift: a FloatingIpAssignment owns the assignment
	}
	return resource.ReadResult{Properties: props, Outputs: f.outputs()}, nil
}

func (p *Provider) updateFloatingIP(ctx context.Context, req resource.UpdateRequest) (resource.UpdateResult, error) {
	id, err := physicalID(req.PhysicalID)
	if err != nil {
		return resource.UpdateResult{}, err
	}
	body := map[string]any{"labels": labelsOf(req.New)}
	name := str(req.New, "name")
	if name != "" {
		body["name"] = name
	}
	if d, ok := req.New["description"].(string); ok {
		body["description"] = d
	} else if req.Old["description"] != nil {
		body["description"] = nil
	}
	var out struct {
		FloatingIP floatingIP `json:"floating_ip"`
	}
	if err := p.c.call(ctx, http.MethodPut, idPath("/floating_ips", id), body, &out); err != nil {
		return resource.UpdateResult{}, existsError(err, "floating IP", name)
	}
	return resource.UpdateResult{Outputs: out.FloatingIP.outputs()}, nil
}

func (p *Provider) deleteFloatingIP(ctx context.Context, req resource.DeleteRequest) error {
	id, err := physicalID(req.PhysicalID)
	if err != nil {
		return err
	}
	f, err := p.getFloatingIP(ctx, id)
	if err != nil {
		return err
	}
	if f.Server != nil {
		if err := p.runAction(ctx, "/floating_ips", id, "unassign", nil); err != nil {
			return fmt.Errorf("%s: floating IP %d: unassign from server %d before deleting: %w", Name, id, *f.Server, err)
		}
	}
	return p.c.call(ctx, http.MethodDelete, idPath("/floating_ips", id), nil, nil)
}

// locateFloatingIP finds the IP of an interrupted create: by name, or, unnamed, as the only IP of its
// type and home location that carries its labels.
func (p *Provider) locateFloatingIP(ctx context.Context, req resource.CreateRequest) (string, error) {
	if str(req.Properties, "name") != "" {
		return p.locateByName(ctx, "floating_ips", req.Properties)
	}
	labels := labelsOf(req.Properties)
	typ, home := str(req.Properties, "type"), str(req.Properties, "homeLocation")
	if len(labels) == 0 {
		return "", fmt.Errorf("%s: an unnamed floating IP without labels cannot be found again: check the Hetzner Console (Floating IPs) for a %s IP in %s created by the interrupted deploy, "+
			"import it (cdkx import) or delete it; give the IP a name or labels so that cdkx can find it: %w", Name, typ, home, resource.ErrCannotLocate)
	}
	sel := labelSelector(labels)
	var page map[string]json.RawMessage
	if err := p.c.call(ctx, http.MethodGet, "/floating_ips"+query("label_selector", sel), nil, &page); err != nil {
		return "", err
	}
	var all []floatingIP
	if err := json.Unmarshal(page["floating_ips"], &all); err != nil {
		return "", fmt.Errorf("%s: GET /floating_ips?label_selector=%s: decode: %w", Name, sel, err)
	}
	var ids []string
	for _, f := range all {
		if f.Type == typ && f.HomeLocation.Name == home {
			ids = append(ids, strconv.FormatInt(f.ID, 10))
		}
	}
	switch len(ids) {
	case 0:
		return "", fmt.Errorf("%s: no %s floating IP in %s with labels %s: %w", Name, typ, home, sel, resource.ErrNotFound)
	case 1:
		return ids[0], nil
	}
	return "", fmt.Errorf("%s: %d %s floating IPs in %s carry the labels %s (IDs %s): cdkx cannot tell which one the interrupted deploy created; import the right one (cdkx import) and delete the others in the Hetzner Console: %w",
		Name, len(ids), typ, home, sel, strings.Join(ids, ", "), resource.ErrCannotLocate)
}

// labelSelector is the selector that matches labels exactly: "k1=v1,k2=v2", keys sorted.
func labelSelector(labels map[string]string) string {
	parts := make([]string, 0, len(labels))
	for k, v := range labels {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}
