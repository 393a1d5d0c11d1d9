package hcloudfake

import (
	"fmt"
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"sort"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
)

// Firewalls: https://docs.hetzner.cloud/#firewalls

var portRange = regexp.MustCompile(`^(any|\d{1,5}(-\d{1,5})?)$`)

func (f *Fake) firewall(r *http.Request) (*firewall, error) {
	return byPathID(r, "firewall", f.st.firewalls)
}

func (f *Fake) renderFirewall(w *firewall) schema.Firewall {
	out := w.Firewall
	out.Labels = labelsOrEmpty(&w.Labels)
	out.Rules = []schema.FirewallRule{}
	for _, r := range w.Rules {
		r.SourceIPs = append([]string{}, r.SourceIPs...)
		r.DestinationIPs = append([]string{}, r.DestinationIPs...)
		out.Rules = append(out.Rules, r)
	}
	out.AppliedTo = []schema.FirewallResource{}
	for _, a := range w.AppliedTo {
		if a.Type == "label_selector" {
			sel, _ := parseSelector(a.LabelSelector.Selector)
			a.AppliedToResources = []schema.FirewallResource{}
			for _, s := range f.sortedServers() {
				if sel.matches(s.Labels) {
					a.AppliedToResources = append(a.AppliedToResources, schema.FirewallResource{Type: "server", Server: &schema.FirewallResourceServer{ID: s.ID}})
				}
			}
		}
		out.AppliedTo = append(out.AppliedTo, a)
	}
	return out
}

func (f *Fake) sortedServers() []*server {
	out := values(f.st.servers)
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (f *Fake) firewallAppliedToServer(w *firewall, id int64) bool {
	return slices.ContainsFunc(w.AppliedTo, func(a schema.FirewallResource) bool {
		return a.Type == "server" && a.Server != nil && a.Server.ID == id
	})
}

// firewallsOf lists the firewalls applied to s directly or through a label selector.
func (f *Fake) firewallsOf(s *server) []int64 {
	var out []int64
	for _, w := range f.st.firewalls {
		for _, a := range w.AppliedTo {
			hit := a.Type == "server" && a.Server != nil && a.Server.ID == s.ID
			if a.Type == "label_selector" && a.LabelSelector != nil {
				sel, _ := parseSelector(a.LabelSelector.Selector)
				hit = sel.matches(s.Labels)
			}
			if hit {
				out = append(out, w.ID)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

func checkRules(in []schema.FirewallRuleRequest) ([]schema.FirewallRule, error) {
	if len(in) > 50 {
		return nil, invalid(field{"rules", "at most 50 rules"})
	}
	out := []schema.FirewallRule{}
	for i, r := range in {
		name := fmt.Sprintf("rules[%d]", i)
		if r.Direction != "in" && r.Direction != "out" {
			return nil, invalid(field{name + ".direction", "must be in or out"})
		}
		if !contains([]string{"tcp", "udp", "icmp", "esp", "gre"}, r.Protocol) {
			return nil, invalid(field{name + ".protocol", "must be one of tcp, udp, icmp, esp, gre"})
		}
		hasPort := r.Port != nil && *r.Port != ""
		if (r.Protocol == "tcp" || r.Protocol == "udp") != hasPort {
			return nil, invalid(field{name + ".port", "port is required for tcp and udp and not allowed otherwise"})
		}
		if hasPort && !portRange.MatchString(*r.Port) {
			return nil, invalid(field{name + ".port", "must be a port or a range like 1024-2048"})
		}
		ips := r.SourceIPs
		if r.Direction == "out" {
			ips = r.DestinationIPs
		}
		if len(ips) == 0 {
			return nil, invalid(field{name, "source_ips (in) or destination_ips (out) must not be empty"})
		}
		for _, c := range append(append([]string{}, r.SourceIPs...), r.DestinationIPs...) {
			if _, err := netip.ParsePrefix(c); err != nil {
				return nil, invalid(field{name, "invalid CIDR " + c})
			}
		}
		out = append(out, schema.FirewallRule{Direction: r.Direction, SourceIPs: append([]string{}, r.SourceIPs...),
			DestinationIPs: append([]string{}, r.DestinationIPs...), Protocol: r.Protocol, Port: r.Port, Description: r.Description})
	}
	return out, nil
}

// checkApply validates apply_to entries for w; it returns the entries to add and the servers involved.
func (f *Fake) checkApply(w *firewall, entries []schema.FirewallResource) ([]schema.FirewallResource, []schema.ActionResourceReference, error) {
	var add []schema.FirewallResource
	var res []schema.ActionResourceReference
	for _, e := range entries {
		switch e.Type {
		case "server":
			if e.Server == nil {
				return nil, nil, invalid(field{"apply_to.server", "required for type server"})
			}
			if _, ok := f.st.servers[e.Server.ID]; !ok {
				return nil, nil, &apiError{status: http.StatusNotFound, code: "firewall_resource_not_found", msg: fmt.Sprintf("server %d not found", e.Server.ID)}
			}
			if f.firewallAppliedToServer(w, e.Server.ID) {
				return nil, nil, errCode("firewall_already_applied", fmt.Sprintf("firewall %d is already applied to server %d", w.ID, e.Server.ID))
			}
			add = append(add, schema.FirewallResource{Type: "server", Server: &schema.FirewallResourceServer{ID: e.Server.ID}})
			res = append(res, ref("server", e.Server.ID))
		case "label_selector":
			if e.LabelSelector == nil {
				return nil, nil, invalid(field{"apply_to.label_selector", "required for type label_selector"})
			}
			if _, err := parseSelector(e.LabelSelector.Selector); err != nil {
				return nil, nil, invalid(field{"apply_to.label_selector.selector", err.Error()})
			}
			if slices.ContainsFunc(w.AppliedTo, func(a schema.FirewallResource) bool {
				return a.Type == "label_selector" && a.LabelSelector.Selector == e.LabelSelector.Selector
			}) {
				return nil, nil, errCode("firewall_already_applied", "firewall is already applied to label selector "+e.LabelSelector.Selector)
			}
			add = append(add, schema.FirewallResource{Type: "label_selector", LabelSelector: &schema.FirewallResourceLabelSelector{Selector: e.LabelSelector.Selector}})
		default:
			return nil, nil, invalid(field{"apply_to.type", "must be server or label_selector"})
		}
	}
	return add, res, nil
}

func (f *Fake) firewallRoutes() {
	f.handle("GET /v1/firewalls", func(r *http.Request) (int, any, error) {
		return list(r, "firewalls", values(f.st.firewalls), func(w *firewall) any { return f.renderFirewall(w) }, nil)
	})
	f.handle("GET /v1/firewalls/{id}", func(r *http.Request) (int, any, error) {
		w, err := f.firewall(r)
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, map[string]any{"firewall": f.renderFirewall(w)}, nil
	})
	f.handle("POST /v1/firewalls", func(r *http.Request) (int, any, error) {
		var req schema.FirewallCreateRequest
		if err := decode(r, &req, "name"); err != nil {
			return 0, nil, err
		}
		if req.Name == "" {
			return 0, nil, invalid(field{"name", "must not be empty"})
		}
		if nameTaken(f.st.firewalls, req.Name, 0) {
			return 0, nil, errUnique("firewall", "name")
		}
		labels := labelsOrEmpty(req.Labels)
		if err := validLabels(labels); err != nil {
			return 0, nil, err
		}
		rules, err := checkRules(req.Rules)
		if err != nil {
			return 0, nil, err
		}
		w := &firewall{schema.Firewall{ID: f.newID(), Name: req.Name, Labels: labels, Created: f.created(), Rules: []schema.FirewallRule{}, AppliedTo: []schema.FirewallResource{}}}
		add, res, err := f.checkApply(w, req.ApplyTo)
		if err != nil {
			return 0, nil, err
		}
		f.st.firewalls[w.ID] = w
		actions := []schema.Action{}
		if len(req.Rules) > 0 {
			a := f.newAction("set_firewall_rules", ref("firewall", w.ID))
			if !a.fail {
				w.Rules = rules
			}
			actions = append(actions, f.launch(a).Action)
		}
		if len(add) > 0 {
			a := f.newAction("apply_firewall", append([]schema.ActionResourceReference{ref("firewall", w.ID)}, res...)...)
			if !a.fail {
				w.AppliedTo = append(w.AppliedTo, add...)
			}
			actions = append(actions, f.launch(a).Action)
		}
		return http.StatusCreated, map[string]any{"firewall": f.renderFirewall(w), "actions": actions}, nil
	})
	f.handle("PUT /v1/firewalls/{id}", func(r *http.Request) (int, any, error) {
		w, err := f.firewall(r)
		if err != nil {
			return 0, nil, err
		}
		var req schema.FirewallUpdateRequest
		if err := decode(r, &req); err != nil {
			return 0, nil, err
		}
		if req.Name != nil && *req.Name != "" {
			if nameTaken(f.st.firewalls, *req.Name, w.ID) {
				return 0, nil, errUnique("firewall", "name")
			}
			w.Name = *req.Name
		}
		if req.Labels != nil {
			if err := validLabels(*req.Labels); err != nil {
				return 0, nil, err
			}
			w.Labels = labelsOrEmpty(req.Labels)
		}
		return http.StatusOK, map[string]any{"firewall": f.renderFirewall(w)}, nil
	})
	f.handle("DELETE /v1/firewalls/{id}", func(r *http.Request) (int, any, error) {
		w, err := f.firewall(r)
		if err != nil {
			return 0, nil, err
		}
		if err := f.checkLock("firewall", w.ID); err != nil {
			return 0, nil, err
		}
		if len(w.AppliedTo) > 0 {
			return 0, nil, errCode("resource_in_use", fmt.Sprintf("firewall %d is still applied to resources", w.ID))
		}
		delete(f.st.firewalls, w.ID)
		return http.StatusNoContent, nil, nil
	})
	fwAction := func(name string, required []string, body func() any, run func(w *firewall, req any) ([]schema.Action, error)) {
		f.handle("POST /v1/firewalls/{id}/actions/"+name, func(r *http.Request) (int, any, error) {
			w, err := f.firewall(r)
			if err != nil {
				return 0, nil, err
			}
			req := body()
			if err := decode(r, req, required...); err != nil {
				return 0, nil, err
			}
			if err := f.checkLock("firewall", w.ID); err != nil {
				return 0, nil, err
			}
			actions, err := run(w, req)
			if err != nil {
				return 0, nil, err
			}
			return http.StatusCreated, map[string]any{"actions": actions}, nil
		})
	}
	// POST /firewalls/{id}/actions/set_rules: https://docs.hetzner.cloud/#firewall-actions-set-rules
	fwAction("set_rules", []string{"rules"}, func() any { return &schema.FirewallActionSetRulesRequest{} }, func(w *firewall, req any) ([]schema.Action, error) {
		rules, err := checkRules(req.(*schema.FirewallActionSetRulesRequest).Rules)
		if err != nil {
			return nil, err
		}
		a := f.newAction("set_firewall_rules", ref("firewall", w.ID))
		if !a.fail {
			w.Rules = rules
		}
		out := []schema.Action{f.launch(a).Action}
		for _, id := range f.appliedServers(w) {
			b := f.newAction("apply_firewall", ref("firewall", w.ID), ref("server", id))
			out = append(out, f.launch(b).Action)
		}
		return out, nil
	})
	fwAction("apply_to_resources", []string{"apply_to"}, func() any { return &schema.FirewallActionApplyToResourcesRequest{} }, func(w *firewall, req any) ([]schema.Action, error) {
		add, res, err := f.checkApply(w, req.(*schema.FirewallActionApplyToResourcesRequest).ApplyTo)
		if err != nil {
			return nil, err
		}
		a := f.newAction("apply_firewall", append([]schema.ActionResourceReference{ref("firewall", w.ID)}, res...)...)
		if !a.fail {
			w.AppliedTo = append(w.AppliedTo, add...)
		}
		return []schema.Action{f.launch(a).Action}, nil
	})
	fwAction("remove_from_resources", []string{"remove_from"}, func() any { return &schema.FirewallActionRemoveFromResourcesRequest{} }, func(w *firewall, req any) ([]schema.Action, error) {
		keep := slices.Clone(w.AppliedTo)
		res := []schema.ActionResourceReference{ref("firewall", w.ID)}
		for _, e := range req.(*schema.FirewallActionRemoveFromResourcesRequest).RemoveFrom {
			i := slices.IndexFunc(keep, func(a schema.FirewallResource) bool {
				switch {
				case e.Type == "server" && e.Server != nil:
					return a.Type == "server" && a.Server.ID == e.Server.ID
				case e.Type == "label_selector" && e.LabelSelector != nil:
					return a.Type == "label_selector" && a.LabelSelector.Selector == e.LabelSelector.Selector
				}
				return false
			})
			if i < 0 {
				return nil, &apiError{status: http.StatusNotFound, code: "firewall_resource_not_found", msg: "the firewall is not applied to this resource"}
			}
			if e.Type == "server" {
				res = append(res, ref("server", e.Server.ID))
			}
			keep = slices.Delete(keep, i, i+1)
		}
		a := f.newAction("remove_firewall", res...)
		if !a.fail {
			w.AppliedTo = keep
		}
		return []schema.Action{f.launch(a).Action}, nil
	})
}

// appliedServers lists the servers w currently applies to.
func (f *Fake) appliedServers(w *firewall) []int64 {
	var out []int64
	for _, s := range f.sortedServers() {
		if slices.Contains(f.firewallsOf(s), w.ID) {
			out = append(out, s.ID)
		}
	}
	return out
}
