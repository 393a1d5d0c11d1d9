package hcloud

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/cdkx-dev/cdkx/adapters/internal/kit"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TypeFirewallRules is the whole rule list of a firewall (https://docs.hetzner.cloud/#firewall-actions-set-rules).
//
// Properties: firewallId (required, create-only), rules (a list, omitted = none, at most 50) of
// {direction (in or out, required), protocol (tcp, udp, icmp, esp or gre, required), sourceIps (CIDRs;
// required for in, only for in), destinationIps (CIDRs; required for out, only for out), port ("80" or
// "1024-2048", or "any"; only for tcp and udp, where it is sent as "any" when omitted: every port),
// description (optional)}. Outputs: firewallId (integer). Physical ID: the firewall's ID. A CIDR may also
// be a bare address, the single host: "10.0.1.5" is sent as 10.0.1.5/32 (an IPv6 address as /128), so
// that a rule can admit an address another resource outputs (a Multipass VM's ipAddress through a
// {stackRef}); the assembly format has no string concatenation to append "/32".
//
// Create and update POST /firewalls/{id}/actions/set_rules {rules} (the whole list) → wait for every
// action of actions[]; read GET /firewalls/{id} → rules, in the shape of the inputs; delete set_rules with
// [] → wait; locate GET /firewalls/{id} and compare its rules. Changes run one at a time per firewall.
const TypeFirewallRules = "Hetzner::Security::FirewallRules"

// Limits of a rule list (https://docs.hetzner.cloud/#firewall-actions-set-rules).
const (
	maxFirewallRules = 50
	maxRuleCIDRs     = 100
	maxRuleDesc      = 255
)

var (
	ruleDirections = []string{"in", "out"}
	ruleProtocols  = []string{"tcp", "udp", "icmp", "esp", "gre"}
	ruleKeys       = []string{"description", "destinationIps", "direction", "port", "protocol", "sourceIps"}
)

// firewallRulesKind is Hetzner::Security::FirewallRules, for the provider's table (hcloud.go).
func firewallRulesKind() kit.Type[*Provider] {
	return hetzner(kit.Type[*Provider]{
		Schema: resource.Schema{
			Type:        TypeFirewallRules,
			Description: "The rules of a firewall, the whole list (POST /firewalls/{id}/actions/set_rules)",
			Properties: map[string]resource.PropertySchema{
				"firewallId": idSchema("Firewall whose rules these are", true, true),
				"rules": {Kind: resource.KindList, Items: &resource.PropertySchema{Kind: resource.KindObject},
					Description: "Rules, at most 50: {direction: in|out, protocol: tcp|udp|icmp|esp|gre, sourceIps (in) or destinationIps (out): CIDRs, " +
						"port: \"80\", \"1024-2048\" or \"any\" (tcp and udp only; omitted: any), description}; omitted, the firewall has no rules"},
			},
			Outputs:       outputs("firewallId"),
			StableOutputs: []string{"firewallId"},
			Serialize:     []resource.SerialKey{{Group: "firewall", Property: "firewallId"}},
			Check:         checkFirewallRules,
		},
		Create: (*Provider).createFirewallRules,
		Read:   (*Provider).readFirewallRules,
		Update: (*Provider).updateFirewallRules,
		Delete: (*Provider).deleteFirewallRules,
		Locate: (*Provider).locateFirewallRules,
	}, "firewallId")
}

func checkFirewallRules(props resource.Properties, unknown resource.IsUnknownFunc) []resource.FieldError {
	rules, ok := props["rules"].([]any)
	if !ok || kit.IsUnknown(props["rules"], unknown) {
		return nil
	}
	var errs []resource.FieldError
	if len(rules) > maxFirewallRules {
		errs = append(errs, resource.FieldError{Path: "rules", Message: fmt.Sprintf("has %d rules; Hetzner allows at most %d per firewall: merge rules (a rule takes several CIDRs and a port range)", len(rules), maxFirewallRules)})
	}
	for i, r := range rules {
		rule, ok := r.(map[string]any)
		if !ok || kit.IsUnknown(r, unknown) {
			continue
		}
		errs = append(errs, checkRule(fmt.Sprintf("rules[%d]", i), rule, unknown)...)
	}
	return errs
}

// checkRule checks one rule at path (e.g. "rules[2]").
func checkRule(path string, rule map[string]any, unknown resource.IsUnknownFunc) []resource.FieldError {
	var errs []resource.FieldError
	bad := func(key, msg string) { errs = append(errs, resource.FieldError{Path: path + "." + key, Message: msg}) }
	known := func(key string) (any, bool) {
		v, ok := rule[key]
		return v, ok && v != nil && !kit.IsUnknown(v, unknown)
	}
	for k := range rule {
		if !slices.Contains(ruleKeys, k) {
			bad(k, fmt.Sprintf("unknown rule property %q; a rule has %s", k, strings.Join(ruleKeys, ", ")))
		}
	}
	enum := func(key string, values []string) string {
		v, ok := rule[key]
		if !ok || v == nil {
			bad(key, fmt.Sprintf("required: one of %s", strings.Join(values, ", ")))
			return ""
		}
		if kit.IsUnknown(v, unknown) {
			return ""
		}
		s, _ := v.(string)
		if !slices.Contains(values, s) {
			bad(key, fmt.Sprintf("must be one of %s, got %v", strings.Join(values, ", "), describeValue(v)))
			return ""
		}
		return s
	}
	direction := enum("direction", ruleDirections)
	protocol := enum("protocol", ruleProtocols)
	for _, key := range []string{"sourceIps", "destinationIps"} {
		v, ok := known(key)
		if !ok {
			continue
		}
		list, isList := v.([]any)
		if !isList {
			bad(key, "must be a list of CIDRs such as 0.0.0.0/0 and ::/0")
			continue
		}
		if len(list) > maxRuleCIDRs {
			bad(key, fmt.Sprintf("has %d CIDRs; Hetzner allows at most %d per rule: split the rule", len(list), maxRuleCIDRs))
		}
		for j, e := range list {
			if kit.IsUnknown(e, unknown) {
				continue
			}
			if msg := ruleCIDRProblem(e); msg != "" {
				errs = append(errs, resource.FieldError{Path: fmt.Sprintf("%s.%s[%d]", path, key, j), Message: msg})
			}
		}
	}
	want, other := "sourceIps", "destinationIps"
	if direction == "out" {
		want, other = other, want
	}
	if direction != "" {
		if _, ok := rule[other]; ok && rule[other] != nil {
			bad(other, fmt.Sprintf("not allowed on a rule of direction %s, which takes %s", direction, want))
		}
		if v, ok := rule[want]; !ok || v == nil {
			bad(want, fmt.Sprintf("required on a rule of direction %s: the CIDRs it allows (0.0.0.0/0 and ::/0 for any)", direction))
		} else if l, isList := v.([]any); isList && len(l) == 0 {
			bad(want, fmt.Sprintf("is empty: a rule of direction %s needs at least one CIDR (0.0.0.0/0 and ::/0 for any)", direction))
		}
	}
	if v, ok := known("port"); ok {
		s, isStr := v.(string)
		switch {
		case protocol != "" && protocol != "tcp" && protocol != "udp":
			bad("port", fmt.Sprintf("only tcp and udp rules take a port; remove it from this %s rule", protocol))
		case !isStr:
			bad("port", fmt.Sprintf("must be a string such as \"22\" or \"1024-2048\", got %s", describeValue(v)))
		default:
			if msg := rulePortProblem(s); msg != "" {
				bad("port", msg)
			}
		}
	}
	if v, ok := known("description"); ok {
		if s, isStr := v.(string); !isStr {
			bad("description", fmt.Sprintf("must be a string, got %s", describeValue(v)))
		} else if len([]rune(s)) > maxRuleDesc {
			bad("description", fmt.Sprintf("is %d characters long; Hetzner allows at most %d", len([]rune(s)), maxRuleDesc))
		}
	}
	return errs
}

// ruleCIDRProblem says what is wrong with a rule's CIDR, or "".
func ruleCIDRProblem(v any) string {
	s, ok := v.(string)
	if !ok {
		return fmt.Sprintf("must be a CIDR string such as 10.0.0.0/8, got %s", describeValue(v))
	}
	if addr, err := netip.ParseAddr(s); err == nil && addr.Zone() == "" {
		return "" // a single host, sent as addr/32 or addr/128 (hostCIDR)
	}
	pfx, err := netip.ParsePrefix(s)
	if err != nil {
		return fmt.Sprintf("%q is not a CIDR such as 10.0.1.0/24, 10.0.1.1/32 or ::/0, nor a single address such as 10.0.1.1", s)
	}
	if pfx.Masked() != pfx {
		return fmt.Sprintf("%q has host bits set; Hetzner wants a network (%s) or a single host (%s/%d)", s, pfx.Masked(), pfx.Addr(), pfx.Addr().BitLen())
	}
	return ""
}

// hostCIDR returns s as Hetzner takes it: a bare address (a single host) as its /32 or /128 prefix;
// anything else as it is.
func hostCIDR(s string) string {
	if addr, err := netip.ParseAddr(s); err == nil && addr.Zone() == "" {
		return netip.PrefixFrom(addr, addr.BitLen()).String()
	}
	return s
}

// hostCIDRs applies hostCIDR to each element of list.
func hostCIDRs(list []string) []string {
	for i, s := range list {
		list[i] = hostCIDR(s)
	}
	return list
}

// rulePortProblem says what is wrong with a rule's port ("22", "1024-2048" or "any"), or "".
func rulePortProblem(s string) string {
	if s == "any" {
		return ""
	}
	port := func(p string) (int, bool) {
		n, err := strconv.Atoi(p)
		return n, err == nil && n >= 1 && n <= 65535 && strconv.Itoa(n) == p
	}
	lo, hi, isRange := strings.Cut(s, "-")
	a, okA := port(lo)
	if !isRange {
		if okA {
			return ""
		}
		return fmt.Sprintf("%q is not a port (1-65535) or a range such as \"1024-2048\"", s)
	}
	b, okB := port(hi)
	if !okA || !okB {
		return fmt.Sprintf("%q is not a port range such as \"1024-2048\" (ports 1-65535)", s)
	}
	if a > b {
		return fmt.Sprintf("%q starts above its end; write \"%d-%d\"", s, b, a)
	}
	return ""
}

// describeValue renders a JSON value for a message.
func describeValue(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprint(v)
}

// apiRules converts the rules property to the API's rules (camelCase to snake_case; a bare address as its
// single-host prefix; port "any" for tcp and udp rules without one, none for the others; no description
// when it is absent).
func apiRules(props resource.Properties) []firewallRule {
	list, _ := props["rules"].([]any)
	out := make([]firewallRule, 0, len(list))
	for _, r := range list {
		m, _ := r.(map[string]any)
		rule := firewallRule{Direction: str(m, "direction"), Protocol: str(m, "protocol"),
			SourceIPs: hostCIDRs(stringList(m["sourceIps"])), DestinationIPs: hostCIDRs(stringList(m["destinationIps"]))}
		if d, ok := m["description"].(string); ok {
			rule.Description = &d
		}
		if rule.Protocol == "tcp" || rule.Protocol == "udp" {
			port := "any"
			if s, ok := m["port"].(string); ok && s != "" {
				port = s
			}
			rule.Port = &port
		}
		out = append(out, rule)
	}
	return out
}

// stringList returns a list of strings ([] for anything else).
func stringList(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, e := range list {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// liveRules converts the API's rules to the rules property, in the shape of the recorded inputs: a live
// value equal to the recorded one (CIDRs compared as prefixes, as Hetzner rewrites IPv6 CIDRs; port "any"
// for an omitted port) is given as recorded.
func liveRules(live []firewallRule, recorded resource.Properties) []any {
	rec, _ := recorded["rules"].([]any)
	out := make([]any, 0, len(live))
	for i, r := range live {
		var was map[string]any
		if i < len(rec) {
			was, _ = rec[i].(map[string]any)
		}
		m := map[string]any{"direction": r.Direction, "protocol": r.Protocol}
		if r.Description != nil && (*r.Description != "" || was["description"] != nil) {
			m["description"] = *r.Description
		}
		ips, key := r.SourceIPs, "sourceIps"
		if r.Direction == "out" {
			ips, key = r.DestinationIPs, "destinationIps"
		}
		m[key] = liveCIDRs(ips, was[key])
		if r.Port != nil {
			_, hadPort := was["port"]
			if *r.Port != "any" || hadPort || was == nil {
				m["port"] = *r.Port
			}
		}
		for k, v := range was {
			if _, set := m[k]; !set && v == nil {
				m[k] = nil // written as null: absent alike
			}
		}
		out = append(out, m)
	}
	return out
}

// liveCIDRs is ips as a property value; recorded when it holds the same prefixes in the same order (a
// recorded bare address is its single-host prefix).
func liveCIDRs(ips []string, recorded any) []any {
	rec, _ := recorded.([]any)
	same := len(rec) == len(ips)
	out := make([]any, len(ips))
	for i, ip := range ips {
		out[i] = ip
		if same {
			s, _ := rec[i].(string)
			same = samePrefix(hostCIDR(s), ip)
		}
	}
	if same {
		return rec
	}
	return out
}

func (p *Provider) setRules(ctx context.Context, id int64, rules []firewallRule) error {
	return p.runAction(ctx, "/firewalls", id, "set_rules", map[string]any{"rules": rules})
}

func (p *Provider) createFirewallRules(ctx context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
	id, err := propID(req.Properties, "firewallId")
	if err != nil {
		return resource.CreateResult{}, err
	}
	if err := p.setRules(ctx, id, apiRules(req.Properties)); err != nil {
		return resource.CreateResult{}, err
	}
	return resource.CreateResult{PhysicalID: strconv.FormatInt(id, 10), Outputs: firewallOutputs(id)}, nil
}

func (p *Provider) readFirewallRules(ctx context.Context, req resource.ReadRequest) (resource.ReadResult, error) {
	id, err := physicalID(req.PhysicalID)
	if err != nil {
		return resource.ReadResult{}, err
	}
	fw, err := p.getFirewall(ctx, id)
	if err != nil {
		return resource.ReadResult{}, err
	}
	props := resource.Properties{"firewallId": req.Properties["firewallId"], "rules": liveRules(fw.Rules, req.Properties)}
	if props["firewallId"] == nil {
		props["firewallId"] = num(id)
	}
	return resource.ReadResult{Properties: props, Outputs: firewallOutputs(id)}, nil
}

func (p *Provider) updateFirewallRules(ctx context.Context, req resource.UpdateRequest) (resource.UpdateResult, error) {
	id, err := physicalID(req.PhysicalID)
	if err != nil {
		return resource.UpdateResult{}, err
	}
	if err := p.setRules(ctx, id, apiRules(req.New)); err != nil {
		return resource.UpdateResult{}, err
	}
	return resource.UpdateResult{Outputs: firewallOutputs(id)}, nil
}

func (p *Provider) deleteFirewallRules(ctx context.Context, req resource.DeleteRequest) error {
	id, err := physicalID(req.PhysicalID)
	if err != nil {
		return err
	}
	return p.setRules(ctx, id, []firewallRule{})
}

// locateFirewallRules finds the rules of an interrupted create: the firewall's, when they are the
// requested ones (else the create did not happen: ErrNotFound).
func (p *Provider) locateFirewallRules(ctx context.Context, req resource.CreateRequest) (string, error) {
	id, err := propID(req.Properties, "firewallId")
	if err != nil {
		return "", err
	}
	fw, err := p.getFirewall(ctx, id)
	if err != nil {
		return "", err
	}
	want := req.Properties["rules"]
	if want == nil {
		want = []any{}
	}
	if !resource.Equal(liveRules(fw.Rules, req.Properties), want) {
		return "", fmt.Errorf("%s: firewall %d does not have the requested rules: %w", Name, id, resource.ErrNotFound)
	}
	return strconv.FormatInt(id, 10), nil
}
