package hcloudfake

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
)

// Primary IPs (https://docs.hetzner.cloud/#primary-ips) and Floating IPs (https://docs.hetzner.cloud/#floating-ips).

// primaryIPJSON adds the datacenter that hcloud-go's schema.PrimaryIP lacks.
type primaryIPJSON struct {
	schema.PrimaryIP
	Datacenter datacenter `json:"datacenter"`
}

func (f *Fake) newPrimaryIP(name, typ string, loc schema.Location, dc datacenter, autoDelete bool, labels map[string]string) *primaryIP {
	p := &primaryIP{PrimaryIP: schema.PrimaryIP{ID: f.newID(), Name: name, Type: typ, IP: f.publicIP(typ), Labels: labels, AssigneeType: "server",
		AutoDelete: autoDelete, Created: f.created(), Location: loc}, dc: dc}
	f.st.primaryIPs[p.ID] = p
	return p
}

func (f *Fake) renderPrimaryIP(p *primaryIP) primaryIPJSON {
	out := primaryIPJSON{PrimaryIP: p.PrimaryIP, Datacenter: p.dc}
	out.Labels = labelsOrEmpty(&p.Labels)
	out.DNSPtr = []schema.PrimaryIPDNSPTR{}
	if p.Type == "ipv4" {
		out.DNSPtr = append(out.DNSPtr, schema.PrimaryIPDNSPTR{IP: p.IP, DNSPtr: "static." + p.IP + ".clients.your-server.de"})
	}
	return out
}

func (f *Fake) primaryIP(r *http.Request) (*primaryIP, error) {
	return byPathID(r, "primary_ip", f.st.primaryIPs)
}

// serverHas reports whether server id already has a Primary IP of typ.
func (f *Fake) serverHas(id int64, typ string) bool {
	for _, p := range f.st.primaryIPs {
		if p.AssigneeID != nil && *p.AssigneeID == id && p.Type == typ {
			return true
		}
	}
	return false
}

// checkPrimaryAssign validates assigning p to server id: it must exist, be off, and lack an IP of p's type.
func (f *Fake) checkPrimaryAssign(p *primaryIP, id int64, fieldName string) (*server, error) {
	s, ok := f.st.servers[id]
	if !ok {
		return nil, invalid(field{fieldName, fmt.Sprintf("server %d not found", id)})
	}
	if s.Status != "off" {
		return nil, errCode("server_not_stopped", fmt.Sprintf("server %d must be off to change its primary IPs", id))
	}
	if f.serverHas(id, p.Type) {
		return nil, errCode("server_has_"+p.Type, fmt.Sprintf("server %d already has a primary %s", id, p.Type))
	}
	if p.Location.Name != s.Location.Name {
		return nil, errCode("primary_ip_datacenter_mismatch", fmt.Sprintf("primary IP is in %s, server %d in %s", p.Location.Name, id, s.Location.Name))
	}
	if err := f.checkLock("server", id); err != nil {
		return nil, err
	}
	return s, nil
}

func (f *Fake) primaryIPRoutes() {
	f.handle("GET /v1/primary_ips", func(r *http.Request) (int, any, error) {
		ip := r.URL.Query().Get("ip")
		return list(r, "primary_ips", values(f.st.primaryIPs), func(p *primaryIP) any { return f.renderPrimaryIP(p) }, func(p *primaryIP) bool {
			return ip == "" || p.IP == ip
		})
	})
	f.handle("GET /v1/primary_ips/{id}", func(r *http.Request) (int, any, error) {
		p, err := f.primaryIP(r)
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, map[string]any{"primary_ip": f.renderPrimaryIP(p)}, nil
	})
	f.handle("POST /v1/primary_ips", func(r *http.Request) (int, any, error) {
		var req struct {
			schema.PrimaryIPCreateRequest
			Datacenter string `json:"datacenter"`
		}
		if err := decode(r, &req, "name", "type", "assignee_type"); err != nil {
			return 0, nil, err
		}
		if req.Type != "ipv4" && req.Type != "ipv6" {
			return 0, nil, invalid(field{"type", "must be ipv4 or ipv6"})
		}
		if req.AssigneeType != "server" {
			return 0, nil, invalid(field{"assignee_type", "must be server"})
		}
		if nameTaken(f.st.primaryIPs, req.Name, 0) {
			return 0, nil, errUnique("primary_ip", "name")
		}
		labels := labelsOrEmpty(req.Labels)
		if err := validLabels(labels); err != nil {
			return 0, nil, err
		}
		var loc schema.Location
		var dc datacenter
		var srv *server
		var ok bool
		switch {
		case req.AssigneeID != nil:
			probe := &primaryIP{PrimaryIP: schema.PrimaryIP{Type: req.Type}}
			s, ok := f.st.servers[*req.AssigneeID]
			if !ok {
				return 0, nil, invalid(field{"assignee_id", fmt.Sprintf("server %d not found", *req.AssigneeID)})
			}
			probe.Location = s.Location
			if _, err := f.checkPrimaryAssign(probe, s.ID, "assignee_id"); err != nil {
				return 0, nil, err
			}
			srv, loc, dc = s, s.Location, s.dc
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
		default:
			return 0, nil, invalid(field{"location", "location is required when assignee_id is not given"})
		}
		autoDelete := req.AutoDelete != nil && *req.AutoDelete
		p := f.newPrimaryIP(req.Name, req.Type, loc, dc, autoDelete, labels)
		res := []schema.ActionResourceReference{ref("primary_ip", p.ID)}
		if srv != nil {
			res = append(res, ref("server", srv.ID))
		}
		a := f.newAction("create_primary_ip", res...)
		if srv != nil && !a.fail {
			p.AssigneeID = &srv.ID
		}
		a.onError = func() { delete(f.st.primaryIPs, p.ID) }
		f.launch(a)
		return http.StatusCreated, map[string]any{"primary_ip": f.renderPrimaryIP(p), "action": a.Action}, nil
	})
	f.handle("PUT /v1/primary_ips/{id}", func(r *http.Request) (int, any, error) {
		p, err := f.primaryIP(r)
		if err != nil {
			return 0, nil, err
		}
		var req schema.PrimaryIPUpdateRequest
		if err := decode(r, &req); err != nil {
			return 0, nil, err
		}
		if req.Name != "" {
			if nameTaken(f.st.primaryIPs, req.Name, p.ID) {
				return 0, nil, errUnique("primary_ip", "name")
			}
			p.Name = req.Name
		}
		if req.Labels != nil {
			if err := validLabels(*req.Labels); err != nil {
				return 0, nil, err
			}
			p.Labels = labelsOrEmpty(req.Labels)
		}
		if req.AutoDelete != nil {
			p.AutoDelete = *req.AutoDelete
		}
		return http.StatusOK, map[string]any{"primary_ip": f.renderPrimaryIP(p)}, nil
	})
	f.handle("DELETE /v1/primary_ips/{id}", func(r *http.Request) (int, any, error) {
		p, err := f.primaryIP(r)
		if err != nil {
			return 0, nil, err
		}
		if p.Protection.Delete {
			return 0, nil, errProtected("primary_ip", p.ID)
		}
		if err := f.checkLock("primary_ip", p.ID); err != nil {
			return 0, nil, err
		}
		if p.AssigneeID != nil {
			return 0, nil, errCode("must_be_unassigned", fmt.Sprintf("primary IP %d is assigned to server %d", p.ID, *p.AssigneeID))
		}
		delete(f.st.primaryIPs, p.ID)
		return http.StatusNoContent, nil, nil
	})
	pipAction := func(name, command string, required []string, body func() any, apply func(p *primaryIP, req any) ([]schema.ActionResourceReference, func(), error)) {
		actionRoute(f, "primary_ips", "primary_ip", name, command, f.primaryIP, func(p *primaryIP) int64 { return p.ID }, required, body, apply)
	}
	// POST /primary_ips/{id}/actions/assign: https://docs.hetzner.cloud/#primary-ip-actions-assign-a-primary-ip-to-a-resource
	pipAction("assign", "assign_primary_ip", []string{"assignee_id", "assignee_type"}, func() any { return &schema.PrimaryIPActionAssignRequest{} },
		func(p *primaryIP, req any) ([]schema.ActionResourceReference, func(), error) {
			q := req.(*schema.PrimaryIPActionAssignRequest)
			if q.AssigneeType != "server" {
				return nil, nil, invalid(field{"assignee_type", "must be server"})
			}
			if p.AssigneeID != nil {
				return nil, nil, errCode("primary_ip_already_assigned", fmt.Sprintf("primary IP %d is already assigned", p.ID))
			}
			s, err := f.checkPrimaryAssign(p, q.AssigneeID, "assignee_id")
			if err != nil {
				return nil, nil, err
			}
			return []schema.ActionResourceReference{ref("server", s.ID)}, func() { p.AssigneeID = &s.ID }, nil
		})
	pipAction("unassign", "unassign_primary_ip", nil, nil, func(p *primaryIP, _ any) ([]schema.ActionResourceReference, func(), error) {
		if p.AssigneeID == nil {
			return nil, func() {}, nil
		}
		s := f.st.servers[*p.AssigneeID]
		if s.Status != "off" {
			return nil, nil, errCode("server_not_stopped", fmt.Sprintf("server %d must be off to change its primary IPs", s.ID))
		}
		if err := f.checkLock("server", s.ID); err != nil {
			return nil, nil, err
		}
		for _, l := range f.st.loadBalancers {
			for _, t := range l.Targets {
				if t.Type == "server" && t.Server != nil && t.Server.ID == s.ID && !t.UsePrivateIP {
					return nil, nil, errCode("server_is_load_balancer_target", fmt.Sprintf("server %d is a public target of load balancer %d", s.ID, l.ID))
				}
			}
		}
		return []schema.ActionResourceReference{ref("server", s.ID)}, func() { p.AssigneeID = nil }, nil
	})
	pipAction("change_protection", "change_protection", nil, func() any { return &schema.PrimaryIPActionChangeProtectionRequest{} },
		func(p *primaryIP, req any) ([]schema.ActionResourceReference, func(), error) {
			return nil, func() { p.Protection.Delete = req.(*schema.PrimaryIPActionChangeProtectionRequest).Delete }, nil
		})
}

func (f *Fake) floatingIP(r *http.Request) (*floatingIP, error) {
	return byPathID(r, "floating_ip", f.st.floatingIPs)
}

func renderFloatingIP(p *floatingIP) schema.FloatingIP {
	out := p.FloatingIP
	out.Labels = labelsOrEmpty(&p.Labels)
	out.DNSPtr = []schema.FloatingIPDNSPtr{}
	if p.Type == "ipv4" {
		out.DNSPtr = append(out.DNSPtr, schema.FloatingIPDNSPtr{IP: p.IP, DNSPtr: "static." + p.IP + ".clients.your-server.de"})
	}
	return out
}

func (f *Fake) floatingIPRoutes() {
	f.handle("GET /v1/floating_ips", func(r *http.Request) (int, any, error) {
		return list(r, "floating_ips", values(f.st.floatingIPs), func(p *floatingIP) any { return renderFloatingIP(p) }, nil)
	})
	f.handle("GET /v1/floating_ips/{id}", func(r *http.Request) (int, any, error) {
		p, err := f.floatingIP(r)
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, map[string]any{"floating_ip": renderFloatingIP(p)}, nil
	})
	f.handle("POST /v1/floating_ips", func(r *http.Request) (int, any, error) {
		var req schema.FloatingIPCreateRequest
		if err := decode(r, &req, "type"); err != nil {
			return 0, nil, err
		}
		if req.Type != "ipv4" && req.Type != "ipv6" {
			return 0, nil, invalid(field{"type", "must be ipv4 or ipv6"})
		}
		name := ""
		if req.Name != nil {
			name = *req.Name
		}
		if name != "" && nameTaken(f.st.floatingIPs, name, 0) {
			return 0, nil, errUnique("floating_ip", "name")
		}
		labels := labelsOrEmpty(req.Labels)
		if err := validLabels(labels); err != nil {
			return 0, nil, err
		}
		var loc schema.Location
		var srv *server
		switch {
		case req.Server != nil:
			s, ok := f.st.servers[*req.Server]
			if !ok {
				return 0, nil, invalid(field{"server", fmt.Sprintf("server %d not found", *req.Server)})
			}
			if err := f.checkLock("server", s.ID); err != nil {
				return 0, nil, err
			}
			srv, loc = s, s.Location
		case req.HomeLocation != nil:
			l, ok := findLocation(*req.HomeLocation)
			if !ok {
				return 0, nil, invalid(field{"home_location", "location " + *req.HomeLocation + " not found"})
			}
			loc = l
		default:
			return 0, nil, invalid(field{"home_location", "home_location or server is required"})
		}
		ip := f.publicIP(req.Type)
		if req.Type == "ipv4" {
			ip = strings.Replace(ip, "49.13.", "78.46.", 1)
		}
		p := &floatingIP{schema.FloatingIP{ID: f.newID(), Name: name, Description: req.Description, Created: f.created(), IP: ip, Type: req.Type,
			HomeLocation: loc, Labels: labels}}
		if name == "" {
			p.Name = fmt.Sprintf("floating_ip-%d", p.ID)
		}
		f.st.floatingIPs[p.ID] = p
		res := []schema.ActionResourceReference{ref("floating_ip", p.ID)}
		if srv != nil {
			res = append(res, ref("server", srv.ID))
		}
		a := f.newAction("create_floating_ip", res...)
		if srv != nil && !a.fail {
			p.Server = &srv.ID
		}
		a.onError = func() { delete(f.st.floatingIPs, p.ID) }
		f.launch(a)
		return http.StatusCreated, map[string]any{"floating_ip": renderFloatingIP(p), "action": a.Action}, nil
	})
	f.handle("PUT /v1/floating_ips/{id}", func(r *http.Request) (int, any, error) {
		p, err := f.floatingIP(r)
		if err != nil {
			return 0, nil, err
		}
		var req struct {
			Name        *string            `json:"name"`
			Description *string            `json:"description"`
			Labels      *map[string]string `json:"labels"`
		}
		if err := decode(r, &req); err != nil {
			return 0, nil, err
		}
		if req.Name != nil && *req.Name != "" {
			if nameTaken(f.st.floatingIPs, *req.Name, p.ID) {
				return 0, nil, errUnique("floating_ip", "name")
			}
			p.Name = *req.Name
		}
		if req.Description != nil {
			p.Description = req.Description
		}
		if req.Labels != nil {
			if err := validLabels(*req.Labels); err != nil {
				return 0, nil, err
			}
			p.Labels = labelsOrEmpty(req.Labels)
		}
		return http.StatusOK, map[string]any{"floating_ip": renderFloatingIP(p)}, nil
	})
	f.handle("DELETE /v1/floating_ips/{id}", func(r *http.Request) (int, any, error) {
		p, err := f.floatingIP(r)
		if err != nil {
			return 0, nil, err
		}
		if p.Protection.Delete {
			return 0, nil, errProtected("floating_ip", p.ID)
		}
		if err := f.checkLock("floating_ip", p.ID); err != nil {
			return 0, nil, err
		}
		if p.Server != nil {
			return 0, nil, errCode("must_be_unassigned", fmt.Sprintf("floating IP %d is assigned to server %d", p.ID, *p.Server))
		}
		delete(f.st.floatingIPs, p.ID)
		return http.StatusNoContent, nil, nil
	})
	fipAction := func(name, command string, required []string, body func() any, apply func(p *floatingIP, req any) ([]schema.ActionResourceReference, func(), error)) {
		actionRoute(f, "floating_ips", "floating_ip", name, command, f.floatingIP, func(p *floatingIP) int64 { return p.ID }, required, body, apply)
	}
	// POST /floating_ips/{id}/actions/assign: https://docs.hetzner.cloud/#floating-ip-actions-assign-a-floating-ip-to-a-server
	fipAction("assign", "assign_floating_ip", []string{"server"}, func() any { return &schema.FloatingIPActionAssignRequest{} },
		func(p *floatingIP, req any) ([]schema.ActionResourceReference, func(), error) {
			q := req.(*schema.FloatingIPActionAssignRequest)
			s, ok := f.st.servers[q.Server]
			if !ok {
				return nil, nil, invalid(field{"server", fmt.Sprintf("server %d not found", q.Server)})
			}
			if p.Server != nil && *p.Server == s.ID {
				return nil, nil, errCode("floating_ip_assigned", fmt.Sprintf("floating IP %d is already assigned to server %d", p.ID, s.ID))
			}
			if err := f.checkLock("server", s.ID); err != nil {
				return nil, nil, err
			}
			return []schema.ActionResourceReference{ref("server", s.ID)}, func() { p.Server = &s.ID }, nil
		})
	fipAction("unassign", "unassign_floating_ip", nil, nil, func(p *floatingIP, _ any) ([]schema.ActionResourceReference, func(), error) {
		var res []schema.ActionResourceReference
		if p.Server != nil {
			res = append(res, ref("server", *p.Server))
		}
		return res, func() { p.Server = nil }, nil
	})
	fipAction("change_protection", "change_protection", nil, func() any { return &schema.FloatingIPActionChangeProtectionRequest{} },
		func(p *floatingIP, req any) ([]schema.ActionResourceReference, func(), error) {
			return nil, func() {
				if q := req.(*schema.FloatingIPActionChangeProtectionRequest); q.Delete != nil {
					p.Protection.Delete = *q.Delete
				}
			}, nil
		})
}
