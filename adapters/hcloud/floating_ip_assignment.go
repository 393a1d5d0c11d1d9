package hcloud

import (
	"context"
	"fmt"
	"strconv"

	"github.com/cdkx-dev/cdkx/adapters/internal/kit"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TypeFloatingIPAssignment assigns a Floating IP to a server (https://docs.hetzner.cloud/#floating-ip-actions-assign-a-floating-ip-to-a-server);
// it works on running servers.
//
// Properties: floatingIpId (required; create-only, as it is the physical ID), serverId (required; a change
// moves the IP in place). Outputs: floatingIpId, serverId (integers). Physical ID: the Floating IP's ID.
//
// Create POST /floating_ips/{id}/actions/assign {server} → wait; read and locate GET /floating_ips/{id}
// (its server; assigned elsewhere, read reports that server, so the drift shows); update POST
// …/actions/unassign → wait (skipped when the IP is already unassigned, e.g. its server was replaced) →
// assign → wait; delete unassign → wait (already unassigned, or assigned to another server: done). Changes
// run one at a time per Floating IP and per server.
const TypeFloatingIPAssignment = "Hetzner::Networking::FloatingIpAssignment"

// floatingIPAssignmentKind is Hetzner::Networking::FloatingIpAssignment, for the provider's table (hcloud.go).
func floatingIPAssignmentKind() kit.Type[*Provider] {
	return hetzner(kit.Type[*Provider]{
		Schema: resource.Schema{
			Type:        TypeFloatingIPAssignment,
			Description: "Assigns a Floating IP to a server (POST /floating_ips/{id}/actions/assign)",
			Properties: map[string]resource.PropertySchema{
				"floatingIpId": idSchema("Floating IP to assign; a change replaces the assignment", true, true),
				"serverId":     idSchema("Server to assign it to; a change moves the IP", true, false),
			},
			Outputs:       outputs("floatingIpId", "serverId"),
			StableOutputs: []string{"floatingIpId"},
			Serialize:     []resource.SerialKey{{Group: "floating-ip", Property: "floatingIpId"}, {Group: "server", Property: "serverId"}},
		},
		Create: (*Provider).createFloatingIPAssignment,
		Read:   (*Provider).readFloatingIPAssignment,
		Update: (*Provider).updateFloatingIPAssignment,
		Delete: (*Provider).deleteFloatingIPAssignment,
		Locate: (*Provider).locateFloatingIPAssignment,
	}, "floatingIpId", "serverId")
}

func floatingIPAssignmentOutputs(ipID, serverID int64) resource.Properties {
	return resource.Properties{"floatingIpId": num(ipID), "serverId": num(serverID)}
}

func (p *Provider) assignFloatingIP(ctx context.Context, ipID, serverID int64) error {
	return p.runAction(ctx, "/floating_ips", ipID, "assign", map[string]any{"server": serverID})
}

func (p *Provider) createFloatingIPAssignment(ctx context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
	ipID, err := propID(req.Properties, "floatingIpId")
	if err != nil {
		return resource.CreateResult{}, err
	}
	serverID, err := propID(req.Properties, "serverId")
	if err != nil {
		return resource.CreateResult{}, err
	}
	if err := p.assignFloatingIP(ctx, ipID, serverID); err != nil {
		return resource.CreateResult{}, err
	}
	return resource.CreateResult{PhysicalID: strconv.FormatInt(ipID, 10), Outputs: floatingIPAssignmentOutputs(ipID, serverID)}, nil
}

func (p *Provider) readFloatingIPAssignment(ctx context.Context, req resource.ReadRequest) (resource.ReadResult, error) {
	ipID, err := physicalID(req.PhysicalID)
	if err != nil {
		return resource.ReadResult{}, err
	}
	f, err := p.getFloatingIP(ctx, ipID)
	if err != nil {
		return resource.ReadResult{}, err
	}
	if f.Server == nil {
		return resource.ReadResult{}, fmt.Errorf("%s: floating IP %d is not assigned: %w", Name, ipID, resource.ErrNotFound)
	}
	props := resource.Properties{"floatingIpId": req.Properties["floatingIpId"], "serverId": num(*f.Server)}
	if props["floatingIpId"] == nil {
		props["floatingIpId"] = num(ipID)
	}
	if id, ok, _ := idOf(req.Properties["serverId"]); ok && id == *f.Server {
		props["serverId"] = req.Properties["serverId"]
	}
	return resource.ReadResult{Properties: props, Outputs: floatingIPAssignmentOutputs(ipID, *f.Server)}, nil
}

func (p *Provider) updateFloatingIPAssignment(ctx context.Context, req resource.UpdateRequest) (resource.UpdateResult, error) {
	ipID, err := physicalID(req.PhysicalID)
	if err != nil {
		return resource.UpdateResult{}, err
	}
	serverID, err := propID(req.New, "serverId")
	if err != nil {
		return resource.UpdateResult{}, err
	}
	f, err := p.getFloatingIP(ctx, ipID)
	if err != nil {
		return resource.UpdateResult{}, err
	}
	if f.Server != nil && *f.Server == serverID {
		return resource.UpdateResult{Outputs: floatingIPAssignmentOutputs(ipID, serverID)}, nil
	}
	if f.Server != nil {
		if err := p.runAction(ctx, "/floating_ips", ipID, "unassign", nil); err != nil {
			return resource.UpdateResult{}, err
		}
	}
	if err := p.assignFloatingIP(ctx, ipID, serverID); err != nil {
		return resource.UpdateResult{}, err
	}
	return resource.UpdateResult{Outputs: floatingIPAssignmentOutputs(ipID, serverID)}, nil
}

func (p *Provider) deleteFloatingIPAssignment(ctx context.Context, req resource.DeleteRequest) error {
	ipID, err := physicalID(req.PhysicalID)
	if err != nil {
		return err
	}
	f, err := p.getFloatingIP(ctx, ipID)
	if err != nil {
		return err
	}
	if f.Server == nil {
		return nil
	}
	if want, ok, _ := idOf(req.Properties["serverId"]); ok && want != *f.Server {
		return nil // assigned to another server since: not this assignment's to undo
	}
	return p.runAction(ctx, "/floating_ips", ipID, "unassign", nil)
}

// locateFloatingIPAssignment finds the assignment of an interrupted create: the IP is assigned to the
// requested server.
func (p *Provider) locateFloatingIPAssignment(ctx context.Context, req resource.CreateRequest) (string, error) {
	ipID, err := propID(req.Properties, "floatingIpId")
	if err != nil {
		return "", err
	}
	serverID, err := propID(req.Properties, "serverId")
	if err != nil {
		return "", err
	}
	f, err := p.getFloatingIP(ctx, ipID)
	if err != nil {
		return "", err
	}
	if f.Server == nil || *f.Server != serverID {
		return "", fmt.Errorf("%s: floating IP %d is not assigned to server %d: %w", Name, ipID, serverID, resource.ErrNotFound)
	}
	return strconv.FormatInt(ipID, 10), nil
}
