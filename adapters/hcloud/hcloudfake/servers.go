package hcloudfake

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
)

// Servers: https://docs.hetzner.cloud/#servers

var hostname = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$`)

// serverJSON is a server as the API answers it: hcloud-go's schema.Server plus the fields it lacks or
// types differently (datacenter; null public IPs).
type serverJSON struct {
	schema.Server
	Datacenter datacenter      `json:"datacenter"`
	PublicNet  serverPublicNet `json:"public_net"`
}

type serverPublicNet struct {
	IPv4        *schema.ServerPublicNetIPv4 `json:"ipv4"`
	IPv6        *schema.ServerPublicNetIPv6 `json:"ipv6"`
	FloatingIPs []int64                     `json:"floating_ips"`
	Firewalls   []schema.ServerFirewall     `json:"firewalls"`
}

// serverCreateRequest is POST /servers' body; ssh_keys and image may be names or IDs.
type serverCreateRequest struct {
	Name             string                         `json:"name"`
	ServerType       schema.IDOrName                `json:"server_type"`
	Image            schema.IDOrName                `json:"image"`
	Location         string                         `json:"location"`
	Datacenter       string                         `json:"datacenter"`
	StartAfterCreate *bool                          `json:"start_after_create"`
	PlacementGroup   int64                          `json:"placement_group"`
	SSHKeys          []schema.IDOrName              `json:"ssh_keys"`
	Volumes          []int64                        `json:"volumes"`
	Networks         []int64                        `json:"networks"`
	Firewalls        []schema.ServerCreateFirewalls `json:"firewalls"`
	UserData         string                         `json:"user_data"`
	Labels           *map[string]string             `json:"labels"`
	Automount        *bool                          `json:"automount"`
	PublicNet        *struct {
		EnableIPv4 *bool  `json:"enable_ipv4"`
		EnableIPv6 *bool  `json:"enable_ipv6"`
		IPv4       *int64 `json:"ipv4"`
		IPv6       *int64 `json:"ipv6"`
	} `json:"public_net"`
}

func idOrName(v schema.IDOrName) string {
	if v.ID != 0 {
		return strconv.FormatInt(v.ID, 10)
	}
	return v.Name
}

func (f *Fake) server(r *http.Request) (*server, error) {
	return byPathID(r, "server", f.st.servers)
}

func (f *Fake) renderServer(s *server) serverJSON {
	out := serverJSON{Server: s.Server, Datacenter: s.dc}
	out.Labels = labelsOrEmpty(&s.Labels)
	out.PrivateNet = []schema.ServerPrivateNet{}
	for _, pn := range s.PrivateNet {
		pn.AliasIPs = append([]string{}, pn.AliasIPs...)
		out.PrivateNet = append(out.PrivateNet, pn)
	}
	out.PublicNet = serverPublicNet{FloatingIPs: []int64{}, Firewalls: []schema.ServerFirewall{}}
	for _, p := range f.st.primaryIPs {
		if p.AssigneeID == nil || *p.AssigneeID != s.ID {
			continue
		}
		if p.Type == "ipv4" {
			out.PublicNet.IPv4 = &schema.ServerPublicNetIPv4{ID: p.ID, IP: p.IP, DNSPtr: "static." + p.IP + ".clients.your-server.de"}
		} else {
			out.PublicNet.IPv6 = &schema.ServerPublicNetIPv6{ID: p.ID, IP: p.IP, DNSPtr: []schema.ServerPublicNetIPv6DNSPtr{}}
		}
	}
	for _, fip := range f.st.floatingIPs {
		if fip.Server != nil && *fip.Server == s.ID {
			out.PublicNet.FloatingIPs = append(out.PublicNet.FloatingIPs, fip.ID)
		}
	}
	slices.Sort(out.PublicNet.FloatingIPs)
	for _, fw := range f.firewallsOf(s) {
		out.PublicNet.Firewalls = append(out.PublicNet.Firewalls, schema.ServerFirewall{ID: fw, Status: "applied"})
	}
	out.Volumes = []int64{}
	for _, v := range f.st.volumes {
		if v.Server != nil && *v.Server == s.ID {
			out.Volumes = append(out.Volumes, v.ID)
		}
	}
	slices.Sort(out.Volumes)
	out.LoadBalancers = []int64{}
	for _, l := range f.st.loadBalancers {
		if f.lbTargetsServer(l, s) {
			out.LoadBalancers = append(out.LoadBalancers, l.ID)
		}
	}
	slices.Sort(out.LoadBalancers)
	out.PlacementGroup = nil
	if pg, ok := f.st.placementGrps[s.placementGroup]; ok {
		r := f.renderPlacementGroup(pg)
		out.PlacementGroup = &r
	}
	return out
}

// removeServer detaches s from everything and deletes it: Primary IPs with auto_delete go with it, the
// others are unassigned; Floating IPs are unassigned, Volumes detached, LB targets and firewall
// applications removed.
func (f *Fake) removeServer(s *server) {
	for id, p := range f.st.primaryIPs {
		if p.AssigneeID != nil && *p.AssigneeID == s.ID {
			if p.AutoDelete {
				delete(f.st.primaryIPs, id)
			} else {
				p.AssigneeID = nil
			}
		}
	}
	for _, fip := range f.st.floatingIPs {
		if fip.Server != nil && *fip.Server == s.ID {
			fip.Server = nil
		}
	}
	for _, v := range f.st.volumes {
		if v.Server != nil && *v.Server == s.ID {
			v.Server = nil
		}
	}
	for _, l := range f.st.loadBalancers {
		l.Targets = slices.DeleteFunc(l.Targets, func(t schema.LoadBalancerTarget) bool {
			return t.Type == "server" && t.Server != nil && t.Server.ID == s.ID
		})
	}
	for _, fw := range f.st.firewalls {
		fw.AppliedTo = slices.DeleteFunc(fw.AppliedTo, func(a schema.FirewallResource) bool {
			return a.Type == "server" && a.Server != nil && a.Server.ID == s.ID
		})
	}
	delete(f.st.servers, s.ID)
}

func (f *Fake) createServer(r *http.Request) (int, any, error) {
	var req serverCreateRequest
	if err := decode(r, &req, "name", "server_type", "image"); err != nil {
		return 0, nil, err
	}
	if !hostname.MatchString(req.Name) {
		return 0, nil, invalid(field{"name", "must be a valid hostname (RFC 1123)"})
	}
	if nameTaken(f.st.servers, req.Name, 0) {
		return 0, nil, errUnique("server", "name")
	}
	st, ok := findServerType(idOrName(req.ServerType))
	if !ok {
		return 0, nil, invalid(field{"server_type", "server type " + idOrName(req.ServerType) + " not found"})
	}
	labels := labelsOrEmpty(req.Labels)
	if err := validLabels(labels); err != nil {
		return 0, nil, err
	}
	if len(req.UserData) > 32*1024 {
		return 0, nil, invalid(field{"user_data", "must be at most 32 KiB"})
	}
	// Public networking: the given Primary IPs, or new ones unless disabled.
	enable4, enable6 := true, true
	var want4, want6 *primaryIP
	if pn := req.PublicNet; pn != nil {
		if pn.EnableIPv4 != nil {
			enable4 = *pn.EnableIPv4
		}
		if pn.EnableIPv6 != nil {
			enable6 = *pn.EnableIPv6
		}
		for _, c := range []struct {
			id   *int64
			typ  string
			dst  **primaryIP
			name string
		}{{pn.IPv4, "ipv4", &want4, "public_net.ipv4"}, {pn.IPv6, "ipv6", &want6, "public_net.ipv6"}} {
			if c.id == nil {
				continue
			}
			p, ok := f.st.primaryIPs[*c.id]
			if !ok {
				return 0, nil, invalid(field{c.name, fmt.Sprintf("primary IP %d not found", *c.id)})
			}
			if p.Type != c.typ {
				return 0, nil, &apiError{status: http.StatusPreconditionFailed, code: "primary_ip_version_mismatch", msg: fmt.Sprintf("primary IP %d is not %s", p.ID, c.typ)}
			}
			if p.AssigneeID != nil {
				return 0, nil, errCode("primary_ip_assigned", fmt.Sprintf("primary IP %d is already assigned", p.ID))
			}
			if err := f.checkLock("primary_ip", p.ID); err != nil {
				return 0, nil, err
			}
			*c.dst = p
		}
	}
	// Location: location, datacenter, the given Primary IP's location, or fsn1.
	var loc schema.Location
	var dc datacenter
	switch {
	case req.Location != "":
		if loc, ok = findLocation(req.Location); !ok {
			return 0, nil, invalid(field{"location", "location " + req.Location + " not found"})
		}
		dc = datacenterOf(loc.Name)
	case req.Datacenter != "":
		if dc, ok = findDatacenter(req.Datacenter); !ok {
			return 0, nil, invalid(field{"datacenter", "datacenter " + req.Datacenter + " not found"})
		}
		loc = dc.Location
	case want4 != nil:
		loc, dc = want4.Location, want4.dc
	case want6 != nil:
		loc, dc = want6.Location, want6.dc
	default:
		loc, _ = findLocation("fsn1")
		dc = datacenterOf("fsn1")
	}
	for _, p := range []*primaryIP{want4, want6} {
		if p != nil && p.Location.Name != loc.Name {
			return 0, nil, errCode("primary_ip_datacenter_mismatch", fmt.Sprintf("primary IP %d is in %s, not %s", p.ID, p.Location.Name, loc.Name))
		}
	}
	img, ok := findImage(idOrName(req.Image), st.Architecture)
	if !ok {
		return 0, nil, invalid(field{"image", "image " + idOrName(req.Image) + " not found"})
	}
	for _, k := range req.SSHKeys {
		if f.findSSHKey(idOrName(k)) == nil {
			return 0, nil, invalid(field{"ssh_keys", "SSH key " + idOrName(k) + " not found"})
		}
	}
	if req.PlacementGroup != 0 {
		if _, ok := f.st.placementGrps[req.PlacementGroup]; !ok {
			return 0, nil, invalid(field{"placement_group", fmt.Sprintf("placement group %d not found", req.PlacementGroup)})
		}
	}
	for _, id := range req.Volumes {
		v, ok := f.st.volumes[id]
		if !ok {
			return 0, nil, invalid(field{"volumes", fmt.Sprintf("volume %d not found", id)})
		}
		if v.Server != nil {
			return 0, nil, invalid(field{"volumes", fmt.Sprintf("volume %d is already attached", id)})
		}
		if v.Location.Name != loc.Name {
			return 0, nil, invalid(field{"volumes", fmt.Sprintf("volume %d is in %s, not %s", id, v.Location.Name, loc.Name)})
		}
		if err := f.checkLock("volume", id); err != nil {
			return 0, nil, err
		}
	}
	for _, fw := range req.Firewalls {
		if _, ok := f.st.firewalls[fw.Firewall]; !ok {
			return 0, nil, invalid(field{"firewalls", fmt.Sprintf("firewall %d not found", fw.Firewall)})
		}
	}
	s := &server{Server: schema.Server{
		ID: f.newID(), Name: req.Name, Status: "initializing", Created: f.created(), ServerType: st, Location: loc, Image: &img,
		Labels: labels, PrimaryDiskSize: st.Disk, IncludedTraffic: 21990232555520, PrivateNet: []schema.ServerPrivateNet{},
	}, dc: dc, placementGroup: req.PlacementGroup}
	zero := uint64(0)
	s.OutgoingTraffic, s.IngoingTraffic = &zero, &zero
	for i, id := range req.Networks {
		n, ok := f.st.networks[id]
		if !ok {
			delete(f.st.servers, s.ID)
			return 0, nil, invalid(field{"networks", fmt.Sprintf("network %d not found", id)})
		}
		if err := f.checkLock("network", id); err != nil {
			delete(f.st.servers, s.ID)
			return 0, nil, err
		}
		ip, err := f.allocIP(n, loc.NetworkZone, "")
		if err != nil {
			delete(f.st.servers, s.ID) // registered by an earlier network of this request
			return 0, nil, err
		}
		s.PrivateNet = append(s.PrivateNet, schema.ServerPrivateNet{Network: id, IP: ip, AliasIPs: []string{},
			MACAddress: fmt.Sprintf("86:00:00:%02x:%02x:%02x", byte(s.ID>>8), byte(s.ID), byte(i))})
		f.st.servers[s.ID] = s // make the IP count as used for the next network
	}
	f.st.servers[s.ID] = s
	for _, c := range []struct {
		enable bool
		want   *primaryIP
		typ    string
	}{{enable4 || want4 != nil, want4, "ipv4"}, {enable6 || want6 != nil, want6, "ipv6"}} {
		switch {
		case c.want != nil:
			c.want.AssigneeID = &s.ID
		case c.enable:
			p := f.newPrimaryIP("", c.typ, loc, dc, true, map[string]string{})
			p.Name = fmt.Sprintf("primary_ip-%d", p.ID)
			p.AssigneeID = &s.ID
		}
	}
	for _, id := range req.Volumes {
		f.st.volumes[id].Server = &s.ID
	}
	for _, fw := range req.Firewalls {
		w := f.st.firewalls[fw.Firewall]
		if !f.firewallAppliedToServer(w, s.ID) {
			w.AppliedTo = append(w.AppliedTo, schema.FirewallResource{Type: "server", Server: &schema.FirewallResourceServer{ID: s.ID}})
		}
	}
	status := "running"
	if req.StartAfterCreate != nil && !*req.StartAfterCreate {
		status = "off"
	}
	a := f.newAction("create_server", ref("server", s.ID))
	a.onSuccess = func() { s.Status = status }
	a.onError = func() { f.removeServer(s) }
	f.launch(a)
	var password *string
	if len(req.SSHKeys) == 0 {
		p := fmt.Sprintf("fake-root-password-%d", s.ID)
		password = &p
	}
	body := map[string]any{"action": a.Action, "next_actions": []schema.Action{}, "root_password": password}
	if _, ok := f.st.servers[s.ID]; ok {
		body["server"] = f.renderServer(s)
	} else {
		// The create already failed (no delay configured): show the server as it was created.
		body["server"] = serverJSON{Server: s.Server, Datacenter: s.dc, PublicNet: serverPublicNet{FloatingIPs: []int64{}, Firewalls: []schema.ServerFirewall{}}}
	}
	return http.StatusCreated, body, nil
}

func (f *Fake) serverRoutes() {
	f.handle("GET /v1/servers", func(r *http.Request) (int, any, error) {
		st := r.URL.Query()["status"]
		return list(r, "servers", values(f.st.servers), func(s *server) any { return f.renderServer(s) }, func(s *server) bool {
			return len(st) == 0 || contains(st, s.Status)
		})
	})
	f.handle("GET /v1/servers/{id}", func(r *http.Request) (int, any, error) {
		s, err := f.server(r)
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, map[string]any{"server": f.renderServer(s)}, nil
	})
	f.handle("POST /v1/servers", f.createServer)
	f.handle("PUT /v1/servers/{id}", func(r *http.Request) (int, any, error) {
		s, err := f.server(r)
		if err != nil {
			return 0, nil, err
		}
		var req schema.ServerUpdateRequest
		if err := decode(r, &req); err != nil {
			return 0, nil, err
		}
		if req.Name != "" {
			if !hostname.MatchString(req.Name) {
				return 0, nil, invalid(field{"name", "must be a valid hostname (RFC 1123)"})
			}
			if nameTaken(f.st.servers, req.Name, s.ID) {
				return 0, nil, errUnique("server", "name")
			}
			s.Name = req.Name
		}
		if req.Labels != nil {
			if err := validLabels(*req.Labels); err != nil {
				return 0, nil, err
			}
			s.Labels = labelsOrEmpty(req.Labels)
		}
		return http.StatusOK, map[string]any{"server": f.renderServer(s)}, nil
	})
	f.handle("DELETE /v1/servers/{id}", func(r *http.Request) (int, any, error) {
		s, err := f.server(r)
		if err != nil {
			return 0, nil, err
		}
		if s.Protection.Delete {
			return 0, nil, errProtected("server", s.ID)
		}
		if err := f.checkLock("server", s.ID); err != nil {
			return 0, nil, err
		}
		a := f.newAction("delete_server", ref("server", s.ID))
		if !a.fail {
			f.removeServer(s)
		}
		return http.StatusOK, map[string]any{"action": f.launch(a).Action}, nil
	})

	serverAction := func(name, command string, required []string, body func() any, apply func(s *server, req any) ([]schema.ActionResourceReference, func(), error)) {
		actionRoute(f, "servers", "server", name, command, f.server, func(s *server) int64 { return s.ID }, required, body, apply)
	}
	power := func(name, command, status string) {
		serverAction(name, command, nil, nil, func(s *server, _ any) ([]schema.ActionResourceReference, func(), error) {
			return nil, func() { s.Status = status }, nil
		})
	}
	power("poweron", "start_server", "running")
	power("poweroff", "stop_server", "off")
	power("shutdown", "shutdown_server", "off")
	power("reboot", "reboot_server", "running")
	power("reset", "reset_server", "running")
	// POST /servers/{id}/actions/change_type: https://docs.hetzner.cloud/#server-actions-change-the-type-of-a-server
	serverAction("change_type", "change_server_type", []string{"upgrade_disk", "server_type"}, func() any { return &schema.ServerActionChangeTypeRequest{} },
		func(s *server, req any) ([]schema.ActionResourceReference, func(), error) {
			return changeServerType(s, req.(*schema.ServerActionChangeTypeRequest))
		})
	// POST /servers/{id}/actions/attach_to_network: https://docs.hetzner.cloud/#server-actions-attach-a-server-to-a-network
	serverAction("attach_to_network", "attach_to_network", []string{"network"}, func() any { return &schema.ServerActionAttachToNetworkRequest{} },
		func(s *server, req any) ([]schema.ActionResourceReference, func(), error) {
			q := req.(*schema.ServerActionAttachToNetworkRequest)
			n, ok := f.st.networks[q.Network]
			if !ok {
				return nil, nil, invalid(field{"network", fmt.Sprintf("network %d not found", q.Network)})
			}
			if err := f.checkLock("network", n.ID); err != nil {
				return nil, nil, err
			}
			if s.privateNet(n.ID) != nil {
				return nil, nil, errCode("server_already_attached", fmt.Sprintf("server %d is already attached to network %d", s.ID, n.ID))
			}
			want := ""
			if q.IP != nil {
				want = *q.IP
			}
			ip, err := f.allocIP(n, s.Location.NetworkZone, want)
			if err != nil {
				return nil, nil, err
			}
			aliases := []string{}
			for _, a := range q.AliasIPs {
				if a == nil {
					continue
				}
				got, err := f.allocIP(n, s.Location.NetworkZone, *a)
				if err != nil {
					return nil, nil, err
				}
				aliases = append(aliases, got)
			}
			return []schema.ActionResourceReference{ref("network", n.ID)}, func() {
				s.PrivateNet = append(s.PrivateNet, schema.ServerPrivateNet{Network: n.ID, IP: ip, AliasIPs: aliases,
					MACAddress: fmt.Sprintf("86:00:00:%02x:%02x:%02x", byte(s.ID>>8), byte(s.ID), byte(n.ID))})
			}, nil
		})
	serverAction("detach_from_network", "detach_from_network", []string{"network"}, func() any { return &schema.ServerActionDetachFromNetworkRequest{} },
		func(s *server, req any) ([]schema.ActionResourceReference, func(), error) {
			q := req.(*schema.ServerActionDetachFromNetworkRequest)
			if _, ok := f.st.networks[q.Network]; !ok {
				return nil, nil, invalid(field{"network", fmt.Sprintf("network %d not found", q.Network)})
			}
			if err := f.checkLock("network", q.Network); err != nil {
				return nil, nil, err
			}
			if s.privateNet(q.Network) == nil {
				return nil, nil, invalid(field{"network", fmt.Sprintf("server %d is not attached to network %d", s.ID, q.Network)})
			}
			return []schema.ActionResourceReference{ref("network", q.Network)}, func() {
				s.PrivateNet = slices.DeleteFunc(s.PrivateNet, func(p schema.ServerPrivateNet) bool { return p.Network == q.Network })
			}, nil
		})
	serverAction("add_to_placement_group", "add_to_placement_group", []string{"placement_group"}, func() any { return &schema.ServerActionAddToPlacementGroupRequest{} },
		func(s *server, req any) ([]schema.ActionResourceReference, func(), error) {
			q := req.(*schema.ServerActionAddToPlacementGroupRequest)
			if _, ok := f.st.placementGrps[q.PlacementGroup]; !ok {
				return nil, nil, invalid(field{"placement_group", fmt.Sprintf("placement group %d not found", q.PlacementGroup)})
			}
			if s.placementGroup != 0 {
				return nil, nil, errCode("already_in_placement_group", fmt.Sprintf("server %d is already in a placement group", s.ID))
			}
			if s.Status != "off" {
				return nil, nil, errCode("server_not_stopped", fmt.Sprintf("server %d must be off", s.ID))
			}
			return nil, func() { s.placementGroup = q.PlacementGroup }, nil
		})
	serverAction("remove_from_placement_group", "remove_from_placement_group", nil, nil,
		func(s *server, _ any) ([]schema.ActionResourceReference, func(), error) {
			if s.placementGroup == 0 {
				return nil, nil, errCode("server_not_in_placement_group", fmt.Sprintf("server %d is in no placement group", s.ID))
			}
			return nil, func() { s.placementGroup = 0 }, nil
		})
	serverAction("change_protection", "change_protection", nil, func() any { return &schema.ServerActionChangeProtectionRequest{} },
		func(s *server, req any) ([]schema.ActionResourceReference, func(), error) {
			q := req.(*schema.ServerActionChangeProtectionRequest)
			return nil, func() {
				if q.Delete != nil {
					s.Protection.Delete = *q.Delete
				}
				if q.Rebuild != nil {
					s.Protection.Rebuild = *q.Rebuild
				}
			}, nil
		})
}

// changeServerType checks POST /servers/{id}/actions/change_type as Hetzner does and returns its effect:
// the server must be off (422 server_not_stopped); the type must exist (422 invalid_input on
// server_type) and fit the server (422 invalid_server_type: the same architecture and storage type, and a
// disk at least as big as the server's, since a disk never shrinks). With upgrade_disk the server's disk
// grows to the new type's; without it the disk keeps its size, so the type can be changed back. The server
// stays off: starting it again is the caller's move (POST …/actions/poweron).
func changeServerType(s *server, q *schema.ServerActionChangeTypeRequest) ([]schema.ActionResourceReference, func(), error) {
	if s.Status != "off" {
		return nil, nil, errCode("server_not_stopped", "server must be stopped before changing type")
	}
	st, ok := findServerType(idOrName(q.ServerType))
	if !ok {
		return nil, nil, invalid(field{"server_type", "server type " + idOrName(q.ServerType) + " not found"})
	}
	switch cur := s.ServerType; {
	case st.Architecture != cur.Architecture:
		return nil, nil, errCode("invalid_server_type", fmt.Sprintf("server type %s (%s) does not fit server %d (%s): the architecture cannot change", st.Name, st.Architecture, s.ID, cur.Architecture))
	case st.StorageType != cur.StorageType:
		return nil, nil, errCode("invalid_server_type", fmt.Sprintf("server type %s (%s storage) does not fit server %d (%s storage)", st.Name, st.StorageType, s.ID, cur.StorageType))
	case st.Disk < s.PrimaryDiskSize:
		return nil, nil, errCode("invalid_server_type", fmt.Sprintf("server type %s has a %d GB disk, smaller than server %d's %d GB disk: disks cannot shrink", st.Name, st.Disk, s.ID, s.PrimaryDiskSize))
	}
	return nil, func() {
		s.ServerType = st
		if q.UpgradeDisk {
			s.PrimaryDiskSize = st.Disk
		}
	}, nil
}
