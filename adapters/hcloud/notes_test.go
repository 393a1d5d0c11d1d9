package hcloud_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/adapters/hcloud"
)

// TestReplacementOrderAndHarm lists, for every Hetzner type, how a replacement runs (delete first, unless
// one of Identity changed) and the harm notes a plan shows: a replacement's (ReplaceNote) and an in-place
// change's, by property (UpdateNote). A type missing here has neither note and is replaced create-first.
func TestReplacementOrderAndHarm(t *testing.T) {
	t.Parallel()
	type decl struct {
		DeleteFirst bool
		Identity    []string
		ReplaceNote string
		UpdateNotes map[string]string
	}
	want := map[string]decl{
		hcloud.TypeServer: {true, []string{"name"}, "its disk and all data on it are lost; it gets new public IPs unless publicNet names Primary IPs",
			map[string]string{"serverType": "the server is powered off while it is resized"}},
		hcloud.TypeVolume:            {true, []string{"name"}, "its data is lost", nil},
		hcloud.TypeVolumeAttachment:  {false, nil, "", map[string]string{"serverId": "the volume is detached from its server while it moves"}},
		hcloud.TypePrimaryIP:         {true, []string{"name"}, "its address is lost (the new IP gets another); an assigned one's server is powered off while it is unassigned", nil},
		hcloud.TypeFloatingIP:        {true, []string{"name"}, "its address is lost (the new IP gets another)", nil},
		hcloud.TypeNetwork:           {true, []string{"name"}, "the servers and load balancers attached to it lose their private IPs in it", nil},
		hcloud.TypeLoadBalancer:      {true, []string{"name"}, "it gets new public IPs, and serves nothing until the new one has its services and targets", nil},
		hcloud.TypeFirewall:          {true, []string{"name"}, "the servers it protects are unfiltered until the new one is applied to them", nil},
		hcloud.TypeNetworkAttachment: {true, []string{"serverId", "networkId"}, "the server leaves the network for a moment", nil},
		hcloud.TypePrimaryIPAssignment: {true, []string{"assigneeId"}, "the server is powered off while its Primary IP changes",
			map[string]string{"assigneeId": "both servers are powered off while the IP moves"}},
		hcloud.TypeSubnet:              {true, []string{"networkId", "ipRange"}, "", nil},
		hcloud.TypeRoute:               {true, []string{"networkId", "destination"}, "", nil},
		hcloud.TypePlacementGroup:      {true, []string{"name"}, "", nil},
		hcloud.TypeSSHKey:              {true, nil, "", nil}, // name and fingerprint are both unique: always delete first
		hcloud.TypeCertificate:         {true, []string{"name"}, "", nil},
		hcloud.TypeFirewallAttachment:  {true, []string{"firewallId", "serverId", "labelSelector"}, "", nil},
		hcloud.TypeLoadBalancerService: {true, []string{"loadBalancerId", "listenPort"}, "", nil},
		hcloud.TypeLoadBalancerTarget:  {true, []string{"loadBalancerId", "type", "serverId", "labelSelector", "ip"}, "", nil},
	}
	got := map[string]decl{}
	for _, s := range (&hcloud.Provider{}).Info().Schemas {
		d := decl{s.DeleteBeforeReplace, s.Identity, s.ReplaceNote, nil}
		for name, p := range s.Properties {
			if p.UpdateNote != "" {
				if d.UpdateNotes == nil {
					d.UpdateNotes = map[string]string{}
				}
				d.UpdateNotes[name] = p.UpdateNote
			}
		}
		if d.DeleteFirst || d.ReplaceNote != "" || d.UpdateNotes != nil {
			got[s.Type] = d
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("replacement order and harm notes (-want +got):\n%s", diff)
	}
}
