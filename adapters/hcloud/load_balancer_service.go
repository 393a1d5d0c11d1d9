package hcloud

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cdkx-dev/cdkx/adapters/internal/kit"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TypeLoadBalancerService is a service of a load balancer: a port it listens on and where it forwards
// (https://docs.hetzner.cloud/#load-balancer-actions-add-service).
//
// Properties: loadBalancerId and listenPort (required, create-only: the service's key), protocol (tcp,
// http or https), destinationPort, proxyprotocol, healthCheck {protocol (tcp or http), port, interval,
// timeout, retries, http {domain, path, response, statusCodes, tls}}, http {cookieName, cookieLifetime,
// certificates (IDs), redirectHttp, stickySessions}; all but the key change in place.
//
// Hetzner requires protocol, destination_port, proxyprotocol and health_check, which templates may leave
// out (the TypeScript runtime sent no health check at all). cdkx fills Hetzner's own defaults: protocol
// tcp, destinationPort = listenPort, proxyprotocol false, and healthCheck {protocol tcp (http for http and
// https services, with path "/"), port = destinationPort, interval 15, timeout 10, retries 3}; a partial
// healthCheck is completed the same way. healthCheck.http.domain may be absent: it is sent as null (any
// host).
//
// Outputs: physicalId, loadBalancerId (integer), listenPort (integer). Physical ID:
// "<loadBalancerId>/<listenPort>".
//
// Create POST /load_balancers/{id}/actions/add_service {every mapped field} → wait; read
// GET /load_balancers/{id} → services[] by listen_port; update …/actions/update_service {every mapped
// field} → wait; delete …/actions/delete_service {listen_port} → wait; locate: read the load balancer
// and find the listen port. Changes are serialized per load balancer.
const TypeLoadBalancerService = "Hetzner::Compute::LoadBalancerService"

// Defaults cdkx fills into a service's health check when the template leaves them out (Hetzner's
// console defaults).
const (
	defaultHealthInterval = 15
	defaultHealthTimeout  = 10
	defaultHealthRetries  = 3
)

// loadBalancerServiceKind is Hetzner::Compute::LoadBalancerService, for the provider's table (hcloud.go).
func loadBalancerServiceKind() kit.Type[*Provider] {
	return hetzner(kit.Type[*Provider]{
		Schema: resource.Schema{
			Type:        TypeLoadBalancerService,
			Description: "A load balancer service (POST /load_balancers/{id}/actions/add_service)",
			Properties: map[string]resource.PropertySchema{
				"loadBalancerId":  idSchema("Load balancer", true, true),
				"listenPort":      {Kind: resource.KindInteger, Required: true, CreateOnly: true, Description: "Port the load balancer listens on, 1–65535"},
				"protocol":        {Kind: resource.KindString, Enum: []string{"tcp", "http", "https"}, Description: "Protocol (default tcp)"},
				"destinationPort": {Kind: resource.KindInteger, Description: "Port of the targets (default listenPort)"},
				"proxyprotocol":   {Kind: resource.KindBool, Description: "Use the PROXY protocol (default false)"},
				"healthCheck": {Kind: resource.KindObject,
					Description: "Health check {protocol, port, interval, timeout, retries, http {domain, path, response, statusCodes, tls}} (defaults: tcp or http, destinationPort, 15, 10, 3)"},
				"http": {Kind: resource.KindObject, Description: "HTTP options {cookieName, cookieLifetime, certificates, redirectHttp, stickySessions} (http and https only)"},
			},
			Outputs:             outputs("physicalId", "loadBalancerId", "listenPort"),
			StableOutputs:       []string{"physicalId", "loadBalancerId", "listenPort"},
			DeleteBeforeReplace: true,
			Identity:            []string{"loadBalancerId", "listenPort"},
			Serialize:           []resource.SerialKey{{Group: "load-balancer", Property: "loadBalancerId"}},
			Check:               checkLBService,
		},
		Create: (*Provider).createLBService,
		Read:   (*Provider).readLBService,
		Update: (*Provider).updateLBService,
		Delete: (*Provider).deleteLBService,
		Locate: (*Provider).locateLBService,
	}, "loadBalancerId")
}

// lbService is a load balancer's service as the API returns it.
type lbService struct {
	Protocol        string `json:"protocol"`
	ListenPort      int64  `json:"listen_port"`
	DestinationPort int64  `json:"destination_port"`
	Proxyprotocol   bool   `json:"proxyprotocol"`
	HealthCheck     *struct {
		Protocol string `json:"protocol"`
		Port     int64  `json:"port"`
		Interval int64  `json:"interval"`
		Timeout  int64  `json:"timeout"`
		Retries  int64  `json:"retries"`
		HTTP     *struct {
			Domain      *string  `json:"domain"`
			Path        string   `json:"path"`
			Response    string   `json:"response"`
			StatusCodes []string `json:"status_codes"`
			TLS         bool     `json:"tls"`
		} `json:"http"`
	} `json:"health_check"`
	HTTP *struct {
		CookieName     string  `json:"cookie_name"`
		CookieLifetime int64   `json:"cookie_lifetime"`
		Certificates   []int64 `json:"certificates"`
		RedirectHTTP   bool    `json:"redirect_http"`
		StickySessions bool    `json:"sticky_sessions"`
	} `json:"http"`
}

// props renders the service in the shape of the properties, every field given.
func (s *lbService) props() resource.Properties {
	out := resource.Properties{"protocol": s.Protocol, "listenPort": num(s.ListenPort),
		"destinationPort": num(s.DestinationPort), "proxyprotocol": s.Proxyprotocol}
	if hc := s.HealthCheck; hc != nil {
		h := map[string]any{"protocol": hc.Protocol, "port": num(hc.Port), "interval": num(hc.Interval),
			"timeout": num(hc.Timeout), "retries": num(hc.Retries)}
		if hh := hc.HTTP; hh != nil {
			codes := make([]any, 0, len(hh.StatusCodes))
			for _, c := range hh.StatusCodes {
				codes = append(codes, c)
			}
			var domain any
			if hh.Domain != nil {
				domain = *hh.Domain
			}
			h["http"] = map[string]any{"domain": domain, "path": hh.Path, "response": hh.Response, "statusCodes": codes, "tls": hh.TLS}
		}
		out["healthCheck"] = h
	}
	if ht := s.HTTP; ht != nil {
		certs := make([]any, 0, len(ht.Certificates))
		for _, c := range ht.Certificates {
			certs = append(certs, num(c))
		}
		out["http"] = map[string]any{"cookieName": ht.CookieName, "cookieLifetime": num(ht.CookieLifetime),
			"certificates": certs, "redirectHttp": ht.RedirectHTTP, "stickySessions": ht.StickySessions}
	}
	return out
}

// intProp reads an integer property value (json.Number, a Go integer or an integer string); ok is false
// when it is absent or not an integer.
func intProp(v any) (int64, bool) {
	switch v := v.(type) {
	case json.Number:
		n, err := v.Int64()
		return n, err == nil
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		return n, err == nil
	case int:
		return int64(v), true
	case int64:
		return v, true
	}
	return 0, false
}

// lbServiceBody maps the properties to add_service's and update_service's body, Hetzner's defaults
// filled in for what Hetzner requires.
func lbServiceBody(props resource.Properties) (map[string]any, error) {
	listen, _ := intProp(props["listenPort"])
	protocol := str(props, "protocol")
	if protocol == "" {
		protocol = "tcp"
	}
	dest, ok := intProp(props["destinationPort"])
	if !ok {
		dest = listen
	}
	proxy, _ := boolean(props, "proxyprotocol")
	body := map[string]any{"protocol": protocol, "listen_port": listen, "destination_port": dest, "proxyprotocol": proxy}

	hcIn, _ := props["healthCheck"].(map[string]any)
	hc := map[string]any{}
	hc["protocol"], _ = hcIn["protocol"].(string)
	if hc["protocol"] == "" {
		hc["protocol"] = "tcp"
		if protocol != "tcp" {
			hc["protocol"] = "http"
		}
	}
	for _, d := range []struct {
		key string
		def int64
	}{{"port", dest}, {"interval", defaultHealthInterval}, {"timeout", defaultHealthTimeout}, {"retries", defaultHealthRetries}} {
		v, ok := intProp(hcIn[d.key])
		if !ok {
			v = d.def
		}
		hc[d.key] = v
	}
	if hh, ok := hcIn["http"].(map[string]any); ok {
		h := map[string]any{"domain": hh["domain"], "path": str(hh, "path")}
		if v, ok := hh["response"].(string); ok {
			h["response"] = v
		}
		if v, ok := hh["statusCodes"].([]any); ok {
			h["status_codes"] = v
		}
		if v, ok := boolean(hh, "tls"); ok {
			h["tls"] = v
		}
		hc["http"] = h
	} else if hc["protocol"] == "http" {
		hc["http"] = map[string]any{"domain": nil, "path": "/"}
	}
	body["health_check"] = hc

	if ht, ok := props["http"].(map[string]any); ok {
		h := map[string]any{}
		if v, ok := ht["cookieName"].(string); ok {
			h["cookie_name"] = v
		}
		if v, ok := intProp(ht["cookieLifetime"]); ok {
			h["cookie_lifetime"] = v
		}
		if list, ok := ht["certificates"].([]any); ok {
			ids, err := idList(list, "http.certificates")
			if err != nil {
				return nil, err
			}
			h["certificates"] = ids
		}
		if v, ok := boolean(ht, "redirectHttp"); ok {
			h["redirect_http"] = v
		}
		if v, ok := boolean(ht, "stickySessions"); ok {
			h["sticky_sessions"] = v
		}
		body["http"] = h
	}
	return body, nil
}

func checkLBService(props resource.Properties, unknown resource.IsUnknownFunc) []resource.FieldError {
	var errs []resource.FieldError
	bad := func(path, format string, args ...any) {
		errs = append(errs, resource.FieldError{Path: path, Message: fmt.Sprintf(format, args...)})
	}
	port := func(path string, v any) {
		if v == nil || kit.IsUnknown(v, unknown) {
			return
		}
		if n, ok := intProp(v); !ok || n < 1 || n > 65535 {
			bad(path, "must be a port, 1–65535, got %v", v)
		}
	}
	// keys reports the keys of m that are not in known.
	keys := func(path string, m map[string]any, known ...string) {
		for k := range m {
			if !slices.Contains(known, k) {
				bad(path+"."+k, "unknown key; %s has %s", path, strings.Join(known, ", "))
			}
		}
	}
	port("listenPort", props["listenPort"])
	port("destinationPort", props["destinationPort"])
	protocol, _ := props["protocol"].(string)
	if kit.IsUnknown(props["protocol"], unknown) {
		protocol = ""
	}
	if hc, ok := props["healthCheck"].(map[string]any); ok && !kit.IsUnknown(props["healthCheck"], unknown) {
		keys("healthCheck", hc, "protocol", "port", "interval", "timeout", "retries", "http")
		port("healthCheck.port", hc["port"])
		if v, ok := hc["protocol"]; ok && !kit.IsUnknown(v, unknown) && v != "tcp" && v != "http" {
			bad("healthCheck.protocol", "must be tcp or http, got %v", v)
		}
		for _, k := range []string{"interval", "timeout", "retries"} {
			if v, ok := hc[k]; ok && !kit.IsUnknown(v, unknown) {
				if n, ok := intProp(v); !ok || n < 0 {
					bad("healthCheck."+k, "must be a non-negative integer, got %v", v)
				}
			}
		}
		if hh, ok := hc["http"].(map[string]any); ok && !kit.IsUnknown(hc["http"], unknown) {
			keys("healthCheck.http", hh, "domain", "path", "response", "statusCodes", "tls")
			if _, ok := hh["path"]; !ok {
				bad("healthCheck.http.path", "is required: the path the health check requests, e.g. /")
			}
		}
	}
	if ht, ok := props["http"].(map[string]any); ok && !kit.IsUnknown(props["http"], unknown) {
		keys("http", ht, "cookieName", "cookieLifetime", "certificates", "redirectHttp", "stickySessions")
		if protocol == "tcp" || (protocol == "" && props["protocol"] == nil) {
			bad("http", "applies to http and https services only; Hetzner rejects it for tcp")
		}
		if certs, ok := ht["certificates"].([]any); ok {
			for i, c := range certs {
				if kit.IsUnknown(c, unknown) {
					continue
				}
				if _, _, err := idOf(c); err != nil {
					bad(fmt.Sprintf("http.certificates[%d]", i), "%s", err)
				}
			}
		}
	}
	if protocol == "https" {
		ht, _ := props["http"].(map[string]any)
		if certs, ok := ht["certificates"].([]any); !kit.IsUnknown(props["http"], unknown) && !kit.IsUnknown(ht["certificates"], unknown) && (!ok || len(certs) == 0) {
			bad("http.certificates", "an https service needs at least one certificate (a Certificate's certificateId)")
		}
	}
	return errs
}

// lbKey parses a "<loadBalancerId>/<rest>" physical ID.
func lbKey(physicalID string) (int64, string, error) {
	lb, rest, ok := strings.Cut(physicalID, "/")
	id, err := strconv.ParseInt(lb, 10, 64)
	if !ok || err != nil || id <= 0 || rest == "" {
		return 0, "", fmt.Errorf("%s: physical ID %q is not <loadBalancerId>/<key>", Name, physicalID)
	}
	return id, rest, nil
}

// lbServiceID parses a "<loadBalancerId>/<listenPort>" physical ID.
func lbServiceID(physicalID string) (lb, port int64, err error) {
	lb, rest, err := lbKey(physicalID)
	if err == nil {
		port, err = strconv.ParseInt(rest, 10, 64)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("%s: physical ID %q is not <loadBalancerId>/<listenPort>", Name, physicalID)
	}
	return lb, port, nil
}

func lbServiceOutputs(lb, port int64) resource.Properties {
	return resource.Properties{"physicalId": fmt.Sprintf("%d/%d", lb, port), "loadBalancerId": num(lb), "listenPort": num(port)}
}

func (p *Provider) createLBService(ctx context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
	lb, err := propID(req.Properties, "loadBalancerId")
	if err != nil {
		return resource.CreateResult{}, err
	}
	body, err := lbServiceBody(req.Properties)
	if err != nil {
		return resource.CreateResult{}, err
	}
	port := body["listen_port"].(int64)
	if err := p.runAction(ctx, "/load_balancers", lb, "add_service", body); err != nil {
		return resource.CreateResult{}, err
	}
	out := lbServiceOutputs(lb, port)
	return resource.CreateResult{PhysicalID: out["physicalId"].(string), Outputs: out}, nil
}

// findLBService returns the service of load balancer lb that listens on port, or an error wrapping
// resource.ErrNotFound.
func (p *Provider) findLBService(ctx context.Context, lb, port int64) (*lbService, error) {
	l, err := p.getLoadBalancer(ctx, lb)
	if err != nil {
		return nil, err
	}
	for i := range l.Services {
		if l.Services[i].ListenPort == port {
			return &l.Services[i], nil
		}
	}
	return nil, fmt.Errorf("%s: load balancer %d has no service on port %d: %w", Name, lb, port, resource.ErrNotFound)
}

func (p *Provider) readLBService(ctx context.Context, req resource.ReadRequest) (resource.ReadResult, error) {
	lb, port, err := lbServiceID(req.PhysicalID)
	if err != nil {
		return resource.ReadResult{}, err
	}
	s, err := p.findLBService(ctx, lb, port)
	if err != nil {
		return resource.ReadResult{}, err
	}
	live := s.props()
	in := req.Properties
	props := resource.Properties{"loadBalancerId": in["loadBalancerId"], "listenPort": in["listenPort"]}
	if props["loadBalancerId"] == nil {
		props["loadBalancerId"] = num(lb)
	}
	if props["listenPort"] == nil {
		props["listenPort"] = num(port)
	}
	// What the template left out (and cdkx filled with defaults) is shown only when it drifted from them.
	defaults, _ := lbServiceBody(resource.Properties{"listenPort": num(port)})
	for _, d := range []struct {
		key string
		def any
	}{{"protocol", defaults["protocol"]}, {"destinationPort", num(port)}, {"proxyprotocol", false}} {
		if _, ok := in[d.key]; ok || !resource.Equal(live[d.key], d.def) {
			props[d.key] = live[d.key]
		}
	}
	for _, k := range []string{"healthCheck", "http"} {
		if v, ok := in[k]; ok && live[k] != nil {
			props[k] = projectOnto(live[k], v)
		}
	}
	return resource.ReadResult{Properties: props, Outputs: lbServiceOutputs(lb, port)}, nil
}

// projectOnto keeps of the live value only the object keys that the input has (recursively), so that
// what Hetzner fills in by itself does not show as drift.
func projectOnto(live, input any) any {
	lm, ok1 := live.(map[string]any)
	im, ok2 := input.(map[string]any)
	if !ok1 || !ok2 {
		return live
	}
	out := map[string]any{}
	for k, v := range im {
		out[k] = projectOnto(lm[k], v)
	}
	return out
}

func (p *Provider) updateLBService(ctx context.Context, req resource.UpdateRequest) (resource.UpdateResult, error) {
	lb, port, err := lbServiceID(req.PhysicalID)
	if err != nil {
		return resource.UpdateResult{}, err
	}
	body, err := lbServiceBody(req.New)
	if err != nil {
		return resource.UpdateResult{}, err
	}
	body["listen_port"] = port
	if err := p.runAction(ctx, "/load_balancers", lb, "update_service", body); err != nil {
		return resource.UpdateResult{}, err
	}
	return resource.UpdateResult{Outputs: lbServiceOutputs(lb, port)}, nil
}

func (p *Provider) deleteLBService(ctx context.Context, req resource.DeleteRequest) error {
	lb, port, err := lbServiceID(req.PhysicalID)
	if err != nil {
		return err
	}
	err = p.runAction(ctx, "/load_balancers", lb, "delete_service", map[string]any{"listen_port": port})
	if err == nil || errors.Is(err, resource.ErrNotFound) {
		return err
	}
	// A service already gone is success: Hetzner answers an error that is not a 404, so look.
	if _, ferr := p.findLBService(ctx, lb, port); errors.Is(ferr, resource.ErrNotFound) {
		return nil
	}
	return err
}

func (p *Provider) locateLBService(ctx context.Context, req resource.CreateRequest) (string, error) {
	lb, err := propID(req.Properties, "loadBalancerId")
	if err != nil {
		return "", err
	}
	port, _ := intProp(req.Properties["listenPort"])
	if _, err := p.findLBService(ctx, lb, port); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d/%d", lb, port), nil
}
