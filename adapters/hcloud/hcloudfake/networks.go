package hcloudfake

import (
	"net/http"
	"net/netip"
	"slices"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
)

// Networks: https://docs.hetzner.cloud/#networks

var privateRanges = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("172.16.0.0/12"), netip.MustParsePrefix("192.168.0.0/16")}

var hetznerGateway = netip.MustParseAddr("172.31.1.1")

// parseCIDR parses a canonical CIDR (no host bits set).
func parseCIDR(s, name string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil || p != p.Masked() {
		return netip.Prefix{}, invalid(field{name, "invalid CIDR: " + s})
	}
	return p, nil
}

func overlaps(a, b netip.Prefix) bool { return a.Overlaps(b) }

func within(inner, outer netip.Prefix) bool {
	return outer.Bits() <= inner.Bits() && outer.Contains(inner.Addr())
}

func (f *Fake) renderNetwork(n *network) schema.Network {
	out := n.Network
	out.Subnets = append([]schema.NetworkSubnet{}, n.Subnets...)
	out.Routes = append([]schema.NetworkRoute{}, n.Routes...)
	out.Labels = labelsOrEmpty(&n.Labels)
	out.Servers = []int64{}
	out.LoadBalancers = []int64{}
	for _, s := range f.st.servers {
		if s.privateNet(n.ID) != nil {
			out.Servers = append(out.Servers, s.ID)
		}
	}
	for _, l := range f.st.loadBalancers {
		if l.privateNet(n.ID) != nil {
			out.LoadBalancers = append(out.LoadBalancers, l.ID)
		}
	}
	slices.Sort(out.Servers)
	slices.Sort(out.LoadBalancers)
	return out
}

func (s *server) privateNet(networkID int64) *schema.ServerPrivateNet {
	for i := range s.PrivateNet {
		if s.PrivateNet[i].Network == networkID {
			return &s.PrivateNet[i]
		}
	}
	return nil
}

func (l *loadBalancer) privateNet(networkID int64) *schema.LoadBalancerPrivateNet {
	for i := range l.PrivateNet {
		if l.PrivateNet[i].Network == networkID {
			return &l.PrivateNet[i]
		}
	}
	return nil
}

func (f *Fake) network(r *http.Request) (*network, error) {
	return byPathID(r, "network", f.st.networks)
}

// gateway is the address Hetzner gives every subnet of a network: the network's first host address.
func gateway(ipRange string) string {
	p := netip.MustParsePrefix(ipRange)
	return p.Addr().Next().String()
}

// checkSubnet validates a new subnet of n and fills in its range (first free /24 when empty) and gateway.
func checkSubnet(n *network, sub *schema.NetworkSubnet) error {
	if !contains([]string{"cloud", "server", "vswitch"}, sub.Type) {
		return invalid(field{"type", "must be one of cloud, server, vswitch"})
	}
	if !contains(networkZones, sub.NetworkZone) {
		return invalid(field{"network_zone", "unknown network zone " + sub.NetworkZone})
	}
	if sub.Type == "vswitch" && sub.VSwitchID == 0 {
		return invalid(field{"vswitch_id", "required for vswitch subnets"})
	}
	nr := netip.MustParsePrefix(n.IPRange)
	taken := func(p netip.Prefix) bool {
		for _, s := range n.Subnets {
			if overlaps(netip.MustParsePrefix(s.IPRange), p) {
				return true
			}
		}
		return false
	}
	if sub.IPRange == "" {
		if nr.Bits() > 24 {
			return invalid(field{"ip_range", "no free /24 in the network"})
		}
		for p := netip.PrefixFrom(nr.Addr(), 24); nr.Contains(p.Addr()); {
			if !taken(p) {
				sub.IPRange = p.String()
				break
			}
			next := p.Addr().As4()
			if next[2] == 255 {
				next[1]++
				next[2] = 0
			} else {
				next[2]++
			}
			p = netip.PrefixFrom(netip.AddrFrom4(next), 24)
		}
		if sub.IPRange == "" {
			return invalid(field{"ip_range", "no free /24 in the network"})
		}
	} else {
		p, err := parseCIDR(sub.IPRange, "ip_range")
		if err != nil {
			return err
		}
		if !within(p, nr) {
			return invalid(field{"ip_range", "subnet " + p.String() + " is not inside the network range " + n.IPRange})
		}
		if p.Bits() > 30 {
			return invalid(field{"ip_range", "subnet too small"})
		}
		if taken(p) {
			return invalid(field{"ip_range", "subnet " + p.String() + " overlaps another subnet"})
		}
	}
	sub.Gateway = gateway(n.IPRange)
	return nil
}

func checkRoute(n *network, rt schema.NetworkRoute) error {
	dst, err := parseCIDR(rt.Destination, "destination")
	if err != nil {
		return err
	}
	_ = dst
	gw, err := netip.ParseAddr(rt.Gateway)
	if err != nil {
		return invalid(field{"gateway", "invalid IP address"})
	}
	nr := netip.MustParsePrefix(n.IPRange)
	switch {
	case !nr.Contains(gw):
		return invalid(field{"gateway", "gateway must be inside the network range " + n.IPRange})
	case gw == nr.Addr():
		// Hetzner's docs: "Cannot be the first IP of the networks ip_range". The fake reads that as the
		// network address, so that the TypeScript cdkx's own network-topology test, which routes
		// 0.0.0.0/0 via 10.0.0.1 in 10.0.0.0/8, deploys.
		return invalid(field{"gateway", "gateway must not be the first IP of the network's ip_range"})
	case gw == hetznerGateway:
		return invalid(field{"gateway", "gateway must not be 172.31.1.1"})
	}
	for _, r := range n.Routes {
		if r.Destination == rt.Destination {
			return invalid(field{"destination", "a route to " + rt.Destination + " already exists"})
		}
	}
	return nil
}

// usedIPs is every private address taken in network id.
func (f *Fake) usedIPs(id int64) map[string]bool {
	used := map[string]bool{}
	for _, s := range f.st.servers {
		if pn := s.privateNet(id); pn != nil {
			used[pn.IP] = true
			for _, a := range pn.AliasIPs {
				used[a] = true
			}
		}
	}
	for _, l := range f.st.loadBalancers {
		if pn := l.privateNet(id); pn != nil {
			used[pn.IP] = true
		}
	}
	return used
}

// allocIP picks a free private address in a cloud/server subnet of n in zone, or checks the wanted one.
// Subnets are tried in ascending order of their ranges, not in the order they were added, so that the
// address does not depend on which of two subnets created at once came first.
func (f *Fake) allocIP(n *network, zone, want string) (string, error) {
	used := f.usedIPs(n.ID)
	var inZone bool
	subnets := slices.Clone(n.Subnets)
	slices.SortFunc(subnets, func(a, b schema.NetworkSubnet) int {
		return netip.MustParsePrefix(a.IPRange).Addr().Compare(netip.MustParsePrefix(b.IPRange).Addr())
	})
	for _, s := range subnets {
		if s.NetworkZone != zone || s.Type == "vswitch" {
			continue
		}
		inZone = true
		p := netip.MustParsePrefix(s.IPRange)
		if want != "" {
			a, err := netip.ParseAddr(want)
			if err != nil {
				return "", invalid(field{"ip", "invalid IP address"})
			}
			if p.Contains(a) {
				if used[want] || want == s.Gateway || a == p.Addr() {
					return "", errCode("ip_not_available", "IP "+want+" is not available")
				}
				return want, nil
			}
			continue
		}
		for a := p.Addr().Next().Next(); p.Contains(a.Next()); a = a.Next() {
			if !used[a.String()] && a.String() != s.Gateway {
				return a.String(), nil
			}
		}
	}
	if !inZone {
		return "", errCode("no_subnet_available", "network has no subnet in network zone "+zone)
	}
	if want != "" {
		return "", errCode("ip_not_available", "IP "+want+" is in no subnet of network zone "+zone)
	}
	return "", errCode("ip_not_available", "no free IP in network zone "+zone)
}

func (f *Fake) networkRoutes() {
	f.handle("GET /v1/networks", func(r *http.Request) (int, any, error) {
		return list(r, "networks", values(f.st.networks), func(n *network) any { return f.renderNetwork(n) }, nil)
	})
	f.handle("GET /v1/networks/{id}", func(r *http.Request) (int, any, error) {
		n, err := f.network(r)
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, map[string]any{"network": f.renderNetwork(n)}, nil
	})
	f.handle("POST /v1/networks", func(r *http.Request) (int, any, error) {
		var req schema.NetworkCreateRequest
		if err := decode(r, &req, "name", "ip_range"); err != nil {
			return 0, nil, err
		}
		p, err := parseCIDR(req.IPRange, "ip_range")
		if err != nil {
			return 0, nil, err
		}
		private := false
		for _, pr := range privateRanges {
			private = private || within(p, pr)
		}
		if !private || p.Bits() > 24 {
			return 0, nil, invalid(field{"ip_range", "must be a private (RFC 1918) range of /24 or larger"})
		}
		if req.Name == "" {
			return 0, nil, invalid(field{"name", "must not be empty"})
		}
		if nameTaken(f.st.networks, req.Name, 0) {
			return 0, nil, errUnique("network", "name")
		}
		labels := labelsOrEmpty(req.Labels)
		if err := validLabels(labels); err != nil {
			return 0, nil, err
		}
		n := &network{schema.Network{ID: f.newID(), Name: req.Name, Created: f.created(), IPRange: p.String(), Labels: labels,
			ExposeRoutesToVSwitch: req.ExposeRoutesToVSwitch, Subnets: []schema.NetworkSubnet{}, Routes: []schema.NetworkRoute{}}}
		for _, s := range req.Subnets {
			if err := checkSubnet(n, &s); err != nil {
				return 0, nil, err
			}
			n.Subnets = append(n.Subnets, s)
		}
		for _, rt := range req.Routes {
			if err := checkRoute(n, rt); err != nil {
				return 0, nil, err
			}
			n.Routes = append(n.Routes, rt)
		}
		f.st.networks[n.ID] = n
		return http.StatusCreated, map[string]any{"network": f.renderNetwork(n)}, nil
	})
	f.handle("PUT /v1/networks/{id}", func(r *http.Request) (int, any, error) {
		n, err := f.network(r)
		if err != nil {
			return 0, nil, err
		}
		var req schema.NetworkUpdateRequest
		if err := decode(r, &req); err != nil {
			return 0, nil, err
		}
		if req.Name != "" {
			if nameTaken(f.st.networks, req.Name, n.ID) {
				return 0, nil, errUnique("network", "name")
			}
			n.Name = req.Name
		}
		if req.Labels != nil {
			if err := validLabels(*req.Labels); err != nil {
				return 0, nil, err
			}
			n.Labels = labelsOrEmpty(req.Labels)
		}
		if req.ExposeRoutesToVSwitch != nil {
			n.ExposeRoutesToVSwitch = *req.ExposeRoutesToVSwitch
		}
		return http.StatusOK, map[string]any{"network": f.renderNetwork(n)}, nil
	})
	f.handle("DELETE /v1/networks/{id}", func(r *http.Request) (int, any, error) {
		n, err := f.network(r)
		if err != nil {
			return 0, nil, err
		}
		if n.Protection.Delete {
			return 0, nil, errProtected("network", n.ID)
		}
		if err := f.checkLock("network", n.ID); err != nil {
			return 0, nil, err
		}
		for _, s := range f.st.servers {
			s.PrivateNet = slices.DeleteFunc(s.PrivateNet, func(p schema.ServerPrivateNet) bool { return p.Network == n.ID })
		}
		for _, l := range f.st.loadBalancers {
			l.PrivateNet = slices.DeleteFunc(l.PrivateNet, func(p schema.LoadBalancerPrivateNet) bool { return p.Network == n.ID })
		}
		delete(f.st.networks, n.ID)
		return http.StatusNoContent, nil, nil
	})

	netAction := func(name string, required []string, body func() any, apply func(n *network, req any) error) {
		f.handle("POST /v1/networks/{id}/actions/"+name, func(r *http.Request) (int, any, error) {
			n, err := f.network(r)
			if err != nil {
				return 0, nil, err
			}
			req := body()
			if err := decode(r, req, required...); err != nil {
				return 0, nil, err
			}
			if err := f.checkLock("network", n.ID); err != nil {
				return 0, nil, err
			}
			// Validate on a copy so a failing action leaves n untouched.
			cp := *n
			cp.Subnets = slices.Clone(n.Subnets)
			cp.Routes = slices.Clone(n.Routes)
			if err := apply(&cp, req); err != nil {
				return 0, nil, err
			}
			a := f.newAction(name, ref("network", n.ID))
			if !a.fail {
				*n = cp
			}
			return http.StatusCreated, map[string]any{"action": f.launch(a).Action}, nil
		})
	}
	// POST /networks/{id}/actions/add_subnet: https://docs.hetzner.cloud/#network-actions-add-a-subnet-to-a-network
	netAction("add_subnet", []string{"type", "network_zone"}, func() any { return &schema.NetworkActionAddSubnetRequest{} }, func(n *network, req any) error {
		sub := schema.NetworkSubnet{}
		q := req.(*schema.NetworkActionAddSubnetRequest)
		sub.Type, sub.IPRange, sub.NetworkZone, sub.VSwitchID = q.Type, q.IPRange, q.NetworkZone, q.VSwitchID
		if err := checkSubnet(n, &sub); err != nil {
			return err
		}
		n.Subnets = append(n.Subnets, sub)
		return nil
	})
	netAction("delete_subnet", []string{"ip_range"}, func() any { return &schema.NetworkActionDeleteSubnetRequest{} }, func(n *network, req any) error {
		q := req.(*schema.NetworkActionDeleteSubnetRequest)
		i := slices.IndexFunc(n.Subnets, func(s schema.NetworkSubnet) bool { return s.IPRange == q.IPRange })
		if i < 0 {
			return errNotFound("subnet " + q.IPRange)
		}
		p := netip.MustParsePrefix(q.IPRange)
		for ip := range f.usedIPs(n.ID) {
			if a, err := netip.ParseAddr(ip); err == nil && p.Contains(a) {
				return errCode("resource_in_use", "subnet "+q.IPRange+" still has attached servers or load balancers")
			}
		}
		n.Subnets = slices.Delete(n.Subnets, i, i+1)
		return nil
	})
	netAction("add_route", []string{"destination", "gateway"}, func() any { return &schema.NetworkActionAddRouteRequest{} }, func(n *network, req any) error {
		q := req.(*schema.NetworkActionAddRouteRequest)
		rt := schema.NetworkRoute{Destination: q.Destination, Gateway: q.Gateway}
		if err := checkRoute(n, rt); err != nil {
			return err
		}
		n.Routes = append(n.Routes, rt)
		return nil
	})
	netAction("delete_route", []string{"destination", "gateway"}, func() any { return &schema.NetworkActionDeleteRouteRequest{} }, func(n *network, req any) error {
		q := req.(*schema.NetworkActionDeleteRouteRequest)
		i := slices.IndexFunc(n.Routes, func(rt schema.NetworkRoute) bool { return rt.Destination == q.Destination && rt.Gateway == q.Gateway })
		if i < 0 {
			return errNotFound("route to " + q.Destination + " via " + q.Gateway)
		}
		n.Routes = slices.Delete(n.Routes, i, i+1)
		return nil
	})
	netAction("change_ip_range", []string{"ip_range"}, func() any { return &schema.NetworkActionChangeIPRangeRequest{} }, func(n *network, req any) error {
		q := req.(*schema.NetworkActionChangeIPRangeRequest)
		p, err := parseCIDR(q.IPRange, "ip_range")
		if err != nil {
			return err
		}
		if !within(netip.MustParsePrefix(n.IPRange), p) {
			return invalid(field{"ip_range", "the new range must contain the old range " + n.IPRange})
		}
		n.IPRange = p.String()
		for i := range n.Subnets {
			n.Subnets[i].Gateway = gateway(n.IPRange)
		}
		return nil
	})
	netAction("change_protection", nil, func() any { return &schema.NetworkActionChangeProtectionRequest{} }, func(n *network, req any) error {
		if q := req.(*schema.NetworkActionChangeProtectionRequest); q.Delete != nil {
			n.Protection.Delete = *q.Delete
		}
		return nil
	})
}
