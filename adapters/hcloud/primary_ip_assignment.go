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

// TypePrimaryIPAssignment assigns a Primary IP to a server (https://docs.hetzner.cloud/#primary-ip-actions-assign-a-primary-ip-to-a-resource).
//
// Hetzner assigns and unassigns Primary IPs only while the server is off (422 server_not_stopped), so
// this type briefly stops the server: it reads GET /servers/{id}, and when the server is not off, powers
// it off (POST /servers/{id}/actions/poweroff → wait, a hard stop), makes the change, and powers it on
// again (POST /servers/{id}/actions/poweron → wait). A server that was off stays off.
//
// Properties: primaryIpId (required; create-only, as it is the physical ID), assigneeId (required; a
// change moves the IP in place), assigneeType (server, required). Outputs: primaryIpId, assigneeId
// (integers), assigneeType. Physical ID: the Primary IP's ID.
//
// Create POST /primary_ips/{id}/actions/assign {assignee_id, assignee_type} → wait; read and locate GET
// /primary_ips/{id} (its assignee_id; assigned elsewhere, read reports that server, so the drift shows);
// update: unassign from the old server (skipped when the IP is unassigned or that server is gone) →
// assign to the new one, each with the server stopped; delete POST /primary_ips/{id}/actions/unassign →
// wait (already unassigned, assigned elsewhere or the server gone: done). Changes run one at a time per
// Primary IP and per server.
const TypePrimaryIPAssignment = "Hetzner::Networking::PrimaryIpAssignment"

// primaryIPAssignmentKind is Hetzner::Networking::PrimaryIpAssignment, for the provider's table (hcloud.go).
func primaryIPAssignmentKind() kit.Type[*Provider] {
	return hetzner(kit.Type[*Provider]{
		Schema: resource.Schema{
			Type:        TypePrimaryIPAssignment,
			Description: "Assigns a Primary IP to a server, stopping the server for the moment (POST /primary_ips/{id}/actions/assign)",
			Properties: map[string]resource.PropertySchema{
				"primaryIpId": idSchema("Primary IP to assign; a change replaces the assignment", true, true),
				"assigneeId": noted(idSchema("Server to assign it to (it is powered off for the change and on again); a change moves the IP", true, false),
					"both servers are powered off while the IP moves"),
				"assigneeType": {Kind: resource.KindString, Required: true, Enum: []string{"server"}, Description: "Kind of assignee: server"},
			},
			Outputs:       outputs("primaryIpId", "assigneeId", "assigneeType"),
			StableOutputs: []string{"primaryIpId"},
			ReplaceNote:   "the server is powered off while its Primary IP changes",
			// A server holds one Primary IP of each type: another IP for the same server is assigned only
			// after the old one is unassigned; for another server, the new assignment may come first.
			DeleteBeforeReplace: true,
			Identity:            []string{"assigneeId"},
			Serialize:           []resource.SerialKey{{Group: "primary-ip", Property: "primaryIpId"}, {Group: "server", Property: "assigneeId"}},
			CheckStack:          checkPrimaryIPAssignmentStack,
		},
		Create: (*Provider).createPrimaryIPAssignment,
		Read:   (*Provider).readPrimaryIPAssignment,
		Update: (*Provider).updatePrimaryIPAssignment,
		Delete: (*Provider).deletePrimaryIPAssignment,
		Locate: (*Provider).locatePrimaryIPAssignment,
	}, "primaryIpId", "assigneeId")
}

func primaryIPAssignmentOutputs(ipID, serverID int64) resource.Properties {
	return resource.Properties{"primaryIpId": num(ipID), "assigneeId": num(serverID), "assigneeType": "server"}
}

// serverPowerStatus reads a server's status (running, off, starting, …) through GET /servers/{id}.
func (p *Provider) serverPowerStatus(ctx context.Context, id int64) (string, error) {
	var out struct {
		Server struct {
			Status string `json:"status"`
		} `json:"server"`
	}
	if err := p.c.call(ctx, http.MethodGet, idPath("/servers", id), nil, &out); err != nil {
		return "", err
	}
	return out.Server.Status, nil
}

// withServerOff runs change while server id is off: a server that is not off is powered off first and on
// again afterwards (also when change fails). Errors wrapping resource.ErrNotFound mean the server is gone.
func (p *Provider) withServerOff(ctx context.Context, id int64, change func() error) error {
	status, err := p.serverPowerStatus(ctx, id)
	if err != nil {
		return err
	}
	if status == "off" {
		return change()
	}
	if err := p.runAction(ctx, "/servers", id, "poweroff", nil); err != nil {
		return fmt.Errorf("%s: power off server %d (a Primary IP changes only while its server is off): %w", Name, id, err)
	}
	cerr := change()
	if err := p.runAction(ctx, "/servers", id, "poweron", nil); err != nil {
		return errors.Join(cerr, fmt.Errorf("%s: server %d was powered off to change its Primary IP and did not power on again; start it in the Hetzner Console: %w", Name, id, err))
	}
	return cerr
}

// assignPrimaryIP assigns Primary IP ipID to server serverID, stopping the server for the moment.
func (p *Provider) assignPrimaryIP(ctx context.Context, ipID, serverID int64) error {
	return p.withServerOff(ctx, serverID, func() error {
		return p.runAction(ctx, "/primary_ips", ipID, "assign", map[string]any{"assignee_id": serverID, "assignee_type": "server"})
	})
}

// unassignPrimaryIP unassigns Primary IP ipID from server serverID, stopping the server for the moment;
// an error wrapping resource.ErrNotFound means the server or the IP is gone.
func (p *Provider) unassignPrimaryIP(ctx context.Context, ipID, serverID int64) error {
	return p.withServerOff(ctx, serverID, func() error {
		return p.runAction(ctx, "/primary_ips", ipID, "unassign", nil)
	})
}

func (p *Provider) createPrimaryIPAssignment(ctx context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
	ipID, err := propID(req.Properties, "primaryIpId")
	if err != nil {
		return resource.CreateResult{}, err
	}
	serverID, err := propID(req.Properties, "assigneeId")
	if err != nil {
		return resource.CreateResult{}, err
	}
	if err := p.assignPrimaryIP(ctx, ipID, serverID); err != nil {
		return resource.CreateResult{}, err
	}
	return resource.CreateResult{PhysicalID: strconv.FormatInt(ipID, 10), Outputs: primaryIPAssignmentOutputs(ipID, serverID)}, nil
}

func (p *Provider) readPrimaryIPAssignment(ctx context.Context, req resource.ReadRequest) (resource.ReadResult, error) {
	ipID, err := physicalID(req.PhysicalID)
	if err != nil {
		return resource.ReadResult{}, err
	}
	ip, err := p.getPrimaryIP(ctx, ipID)
	if err != nil {
		return resource.ReadResult{}, err
	}
	if ip.AssigneeID == nil {
		return resource.ReadResult{}, fmt.Errorf("%s: primary IP %d is not assigned: %w", Name, ipID, resource.ErrNotFound)
	}
	props := resource.Properties{"primaryIpId": req.Properties["primaryIpId"], "assigneeId": num(*ip.AssigneeID), "assigneeType": ip.AssigneeType}
	if props["primaryIpId"] == nil {
		props["primaryIpId"] = num(ipID)
	}
	if id, ok, _ := idOf(req.Properties["assigneeId"]); ok && id == *ip.AssigneeID {
		props["assigneeId"] = req.Properties["assigneeId"]
	}
	return resource.ReadResult{Properties: props, Outputs: primaryIPAssignmentOutputs(ipID, *ip.AssigneeID)}, nil
}

func (p *Provider) updatePrimaryIPAssignment(ctx context.Context, req resource.UpdateRequest) (resource.UpdateResult, error) {
	ipID, err := physicalID(req.PhysicalID)
	if err != nil {
		return resource.UpdateResult{}, err
	}
	serverID, err := propID(req.New, "assigneeId")
	if err != nil {
		return resource.UpdateResult{}, err
	}
	ip, err := p.getPrimaryIP(ctx, ipID)
	if err != nil {
		return resource.UpdateResult{}, err
	}
	if ip.AssigneeID != nil && *ip.AssigneeID == serverID {
		return resource.UpdateResult{Outputs: primaryIPAssignmentOutputs(ipID, serverID)}, nil
	}
	if ip.AssigneeID != nil {
		if err := p.unassignPrimaryIP(ctx, ipID, *ip.AssigneeID); err != nil && !errors.Is(err, resource.ErrNotFound) {
			return resource.UpdateResult{}, err
		}
	}
	if err := p.assignPrimaryIP(ctx, ipID, serverID); err != nil {
		return resource.UpdateResult{}, err
	}
	return resource.UpdateResult{Outputs: primaryIPAssignmentOutputs(ipID, serverID)}, nil
}

func (p *Provider) deletePrimaryIPAssignment(ctx context.Context, req resource.DeleteRequest) error {
	ipID, err := physicalID(req.PhysicalID)
	if err != nil {
		return err
	}
	ip, err := p.getPrimaryIP(ctx, ipID)
	if err != nil {
		return err
	}
	if ip.AssigneeID == nil {
		return nil
	}
	if want, ok, _ := idOf(req.Properties["assigneeId"]); ok && want != *ip.AssigneeID {
		return nil // assigned to another server since: not this assignment's to undo
	}
	return p.unassignPrimaryIP(ctx, ipID, *ip.AssigneeID)
}

// locatePrimaryIPAssignment finds the assignment of an interrupted create: the IP is assigned to the
// requested server.
func (p *Provider) locatePrimaryIPAssignment(ctx context.Context, req resource.CreateRequest) (string, error) {
	ipID, err := propID(req.Properties, "primaryIpId")
	if err != nil {
		return "", err
	}
	serverID, err := propID(req.Properties, "assigneeId")
	if err != nil {
		return "", err
	}
	ip, err := p.getPrimaryIP(ctx, ipID)
	if err != nil {
		return "", err
	}
	if ip.AssigneeID == nil || *ip.AssigneeID != serverID {
		return "", fmt.Errorf("%s: primary IP %d is not assigned to server %d: %w", Name, ipID, serverID, resource.ErrNotFound)
	}
	return strconv.FormatInt(ipID, 10), nil
}
