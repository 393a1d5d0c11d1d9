package hcloud

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/cdkx-dev/cdkx/adapters/internal/kit"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TypePrimaryIP is a Primary IP (https://docs.hetzner.cloud/#primary-ips), created unassigned; give it to
// a new server through the server's publicNet, or to a stopped one with a PrimaryIpAssignment.
//
// Properties: name (required, unique in the project), type (ipv4 or ipv6, required, create-only),
// assigneeType (server, required, create-only), location (fsn1, nbg1, hel1, ash, hil or sin; create-only;
// needed, as the IP is created unassigned — the API's datacenter is removed after 2026-07-01), autoDelete
// (delete the IP with its server), labels, assigneeId (accepted and not sent), primaryIpId (read-only,
// ignored). Outputs: primaryIpId (integer, also the physical ID), name, type, assigneeType, assigneeId
// (integer, null when unassigned), autoDelete, labels.
//
// Create POST /primary_ips {name, type, assignee_type, location, auto_delete, labels} → wait for its
// action, if any; read GET /primary_ips/{id}; update PUT /primary_ips/{id} {name, labels, auto_delete};
// delete GET /primary_ips/{id}, and when it is assigned unassign it first as TypePrimaryIPAssignment does
// (stopping the server for the moment), then DELETE /primary_ips/{id} (404, e.g. auto-deleted with its
// server: done); locate GET /primary_ips?name=.
const TypePrimaryIP = "Hetzner::Networking::PrimaryIp"

// primaryIPKind is Hetzner::Networking::PrimaryIp, for the provider's table (hcloud.go).
func primaryIPKind() kit.Type[*Provider] {
	return hetzner(kit.Type[*Provider]{
		Schema: resource.Schema{
			Type:        TypePrimaryIP,
			Description: "A Primary IP, created unassigned (POST /primary_ips)",
			Properties: map[string]resource.PropertySchema{
				"name":         {Kind: resource.KindString, Required: true, Description: "Name, unique in the project"},
				"type":         {Kind: resource.KindString, Required: true, CreateOnly: true, Enum: []string{"ipv4", "ipv6"}, Description: "IP version: ipv4 or ipv6"},
				"assigneeType": {Kind: resource.KindString, Required: true, CreateOnly: true, Enum: []string{"server"}, Description: "Kind of resource it can be assigned to: server"},
				"location": {Kind: resource.KindString, CreateOnly: true, Enum: ipLocations,
					Description: "Location: fsn1, nbg1, hel1, ash, hil or sin; needed, as cdkx creates the IP unassigned"},
				"autoDelete":  {Kind: resource.KindBool, Description: "Delete the IP when the server it is assigned to is deleted"},
				"labels":      labelsSchema,
				"assigneeId":  idSchema("Accepted for compatibility and not sent: assign the IP with a Hetzner::Networking::PrimaryIpAssignment or a server's publicNet", false, false),
				"primaryIpId": {Kind: resource.KindAny, Description: "Read-only in the TypeScript schema; ignored"},
			},
			Outputs:             outputs("primaryIpId", "name", "type", "assigneeType", "assigneeId", "autoDelete", "labels"),
			StableOutputs:       outputs("primaryIpId", "type", "assigneeType"),
			ReplaceNote:         "its address is lost (the new IP gets another); an assigned one's server is powered off while it is unassigned",
			DeleteBeforeReplace: true,
			Identity:            []string{"name"},
			Check:               checkPrimaryIP,
		},
		Create: (*Provider).createPrimaryIP,
		Read:   (*Provider).readPrimaryIP,
		Update: (*Provider).updatePrimaryIP,
		Delete: (*Provider).deletePrimaryIP,
		Locate: func(p *Provider, ctx context.Context, req resource.CreateRequest) (string, error) {
			return p.locateByName(ctx, "primary_ips", req.Properties)
		},
	}, "assigneeId")
}

func checkPrimaryIP(props resource.Properties, _ resource.IsUnknownFunc) []resource.FieldError {
	if props["location"] == nil {
		return []resource.FieldError{{Path: "location", Message: "required: cdkx creates the Primary IP unassigned, and Hetzner then needs its location (fsn1, nbg1, hel1, ash, hil or sin)"}}
	}
	return nil
}

// primaryIP is the API's Primary IP object (the fields the adapter reads).
type primaryIP struct {
	ID           int64             `json:"id"`
	Name         string            `json:"name"`
	Type         string            `json:"type"`
	AssigneeID   *int64            `json:"assignee_id"`
	AssigneeType string            `json:"assignee_type"`
	AutoDelete   bool              `json:"auto_delete"`
	Labels       map[string]string `json:"labels"`
}

func (ip *primaryIP) outputs() resource.Properties {
	out := resource.Properties{
		"primaryIpId":  num(ip.ID),
		"name":         ip.Name,
		"type":         ip.Type,
		"assigneeType": ip.AssigneeType,
		"assigneeId":   nil,
		"autoDelete":   ip.AutoDelete,
		"labels":       labelsValue(ip.Labels),
	}
	if ip.AssigneeID != nil {
		out["assigneeId"] = num(*ip.AssigneeID)
	}
	return out
}

// getPrimaryIP reads GET /primary_ips/{id}.
func (p *Provider) getPrimaryIP(ctx context.Context, id int64) (*primaryIP, error) {
	var out struct {
		PrimaryIP primaryIP `json:"primary_ip"`
	}
	if err := p.c.call(ctx, http.MethodGet, idPath("/primary_ips", id), nil, &out); err != nil {
		return nil, err
	}
	return &out.PrimaryIP, nil
}

func (p *Provider) createPrimaryIP(ctx context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
	props := req.Properties
	name := str(props, "name")
	body := map[string]any{"name": name, "type": str(props, "type"), "assignee_type": str(props, "assigneeType"),
		"location": str(props, "location"), "labels": labelsOf(props)}
	if v, ok := boolean(props, "autoDelete"); ok {
		body["auto_delete"] = v
	}
	var out struct {
		PrimaryIP primaryIP `json:"primary_ip"`
		Action    *action   `json:"action"`
	}
	if err := p.c.call(ctx, http.MethodPost, "/primary_ips", body, &out); err != nil {
		return resource.CreateResult{}, existsError(err, "primary IP", name)
	}
	if err := p.c.wait(ctx, out.Action); err != nil {
		return resource.CreateResult{}, fmt.Errorf("%s: primary IP %d created, but %w", Name, out.PrimaryIP.ID, err)
	}
	return resource.CreateResult{PhysicalID: strconv.FormatInt(out.PrimaryIP.ID, 10), Outputs: out.PrimaryIP.outputs()}, nil
}

func (p *Provider) readPrimaryIP(ctx context.Context, req resource.ReadRequest) (resource.ReadResult, error) {
	id, err := physicalID(req.PhysicalID)
	if err != nil {
		return resource.ReadResult{}, err
	}
	ip, err := p.getPrimaryIP(ctx, id)
	if err != nil {
		return resource.ReadResult{}, err
	}
	props := resource.Properties{"name": ip.Name, "type": ip.Type, "assigneeType": ip.AssigneeType}
	readLabels(props, req.Properties, ip.Labels)
	if _, ok := req.Properties["autoDelete"]; ok || ip.AutoDelete {
		props["autoDelete"] = ip.AutoDelete
	}
	if v, ok := req.Properties["assigneeId"]; ok {
		props["assigneeId"] = v // not sent, so not drift: a PrimaryIpAssignment or a server owns the assignment
	}
	return resource.ReadResult{Properties: props, Outputs: ip.outputs()}, nil
}

func (p *Provider) updatePrimaryIP(ctx context.Context, req resource.UpdateRequest) (resource.UpdateResult, error) {
	id, err := physicalID(req.PhysicalID)
	if err != nil {
		return resource.UpdateResult{}, err
	}
	name := str(req.New, "name")
	body := map[string]any{"name": name, "labels": labelsOf(req.New)}
	if v, ok := boolean(req.New, "autoDelete"); ok {
		body["auto_delete"] = v
	} else if _, was := req.Old["autoDelete"]; was {
		body["auto_delete"] = false
	}
	var out struct {
		PrimaryIP primaryIP `json:"primary_ip"`
	}
	if err := p.c.call(ctx, http.MethodPut, idPath("/primary_ips", id), body, &out); err != nil {
		return resource.UpdateResult{}, existsError(err, "primary IP", name)
	}
	return resource.UpdateResult{Outputs: out.PrimaryIP.outputs()}, nil
}

func (p *Provider) deletePrimaryIP(ctx context.Context, req resource.DeleteRequest) error {
	id, err := physicalID(req.PhysicalID)
	if err != nil {
		return err
	}
	ip, err := p.getPrimaryIP(ctx, id)
	if err != nil {
		return err
	}
	if ip.AssigneeID != nil {
		if err := p.unassignPrimaryIP(ctx, id, *ip.AssigneeID); err != nil && !errors.Is(err, resource.ErrNotFound) {
			return fmt.Errorf("%s: primary IP %d: unassign from server %d before deleting: %w", Name, id, *ip.AssigneeID, err)
		}
	}
	return p.c.call(ctx, http.MethodDelete, idPath("/primary_ips", id), nil, nil)
}
