package powerdns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/cdkx-dev/cdkx/adapters/internal/kit"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TypeZone is a DNS zone: https://doc.powerdns.com/authoritative/http-api/zone.html.
//
// Properties:
//   - name (string, required, create-only): the zone's canonical name with its trailing dot, e.g.
//     "example.test.". PowerDNS lower-cases it.
//   - kind ("Native", "Master" or "Slave"; default "Native").
//   - nameservers (list of canonical names, create-only): PowerDNS makes the apex NS rrset from them at
//     create. It does not report them back, so Read returns the value last applied.
//   - soaEditApi (string, default "DEFAULT"): how the API bumps the SOA serial on changes, e.g. "DEFAULT",
//     "INCREASE", "EPOCH", "INCEPTION-INCREMENT" or "" (never). PowerDNS does not validate it.
//   - account (string, default ""): free-form owner label.
//
// Outputs: zoneId (the id PowerDNS assigned, the canonical name, e.g. "example.test."), name (as PowerDNS
// stores it) and serial (the SOA serial, a JSON number, as of the last create, update or read; record
// set changes bump it without cdkx knowing).
//
// The physical ID is zoneId. Create is POST /zones (without rrsets); 409 Conflict means the zone exists
// at PowerDNS but not in cdkx state, reported as resource.ErrAlreadyExists. Update is PUT /zones/{zoneId}
// with kind, soa_edit_api and account. Delete is DELETE /zones/{zoneId}, which also deletes its rrsets;
// 404 is success. Read is GET /zones/{zoneId}; 404 is resource.ErrNotFound. Two zones with the same
// name cannot coexist, so a replacement deletes the old zone first.
const TypeZone = "PowerDNS::DNS::Zone"

// Defaults PowerDNS applies to a zone created without them.
const (
	defaultKind       = "Native"
	defaultSOAEditAPI = "DEFAULT"
)

var zoneSchema = resource.Schema{
	Type:        TypeZone,
	Description: "A DNS zone in PowerDNS Authoritative (POST/GET/PUT/DELETE /api/v1/servers/{server}/zones).",
	Properties: map[string]resource.PropertySchema{
		"name": {Kind: resource.KindString, Required: true, CreateOnly: true,
			Description: `Canonical zone name with a trailing dot, e.g. "example.test."`},
		"kind": {Kind: resource.KindString, Enum: []string{"Native", "Master", "Slave"}, Default: defaultKind,
			Description: "Zone kind: Native (replicated by the backend), Master or Slave (AXFR)"},
		"nameservers": {Kind: resource.KindList, Items: &resource.PropertySchema{Kind: resource.KindString}, CreateOnly: true,
			Description: "Canonical names of the zone's name servers, for the apex NS rrset made at create"},
		"soaEditApi": {Kind: resource.KindString, Default: defaultSOAEditAPI,
			Description: `How API changes bump the SOA serial: DEFAULT, INCREASE, EPOCH, INCEPTION-INCREMENT or ""`},
		"account": {Kind: resource.KindString, Default: "",
			Description: "Free-form account (owner) label"},
	},
	Outputs:             []string{"zoneId", "name", "serial"},
	StableOutputs:       []string{"zoneId", "name"},
	DeleteBeforeReplace: true,
	Identity:            []string{"name"},
	Check:               checkZone,
}

func checkZone(props resource.Properties, unknown resource.IsUnknownFunc) []resource.FieldError {
	var errs []resource.FieldError
	if name, ok := kit.KnownString(props["name"], unknown); ok {
		errs = append(errs, checkCanonical("name", name)...)
	}
	if list, ok := kit.Known(props["nameservers"], unknown).([]any); ok {
		for i, e := range list {
			if ns, ok := kit.KnownString(e, unknown); ok {
				errs = append(errs, checkCanonical(fmt.Sprintf("nameservers[%d]", i), ns)...)
			}
		}
	}
	return errs
}

// zoneProps are a zone's properties as the template writes them.
type zoneProps struct {
	Name        string   `json:"name"`
	Kind        string   `json:"kind"`
	Nameservers []string `json:"nameservers"`
	SOAEditAPI  *string  `json:"soaEditApi"`
	Account     *string  `json:"account"`
}

// apiZone is a zone as the API sends and receives it (only the fields cdkx uses).
type apiZone struct {
	ID          string      `json:"id,omitempty"`
	Name        string      `json:"name,omitempty"`
	Kind        string      `json:"kind,omitempty"`
	Nameservers []string    `json:"nameservers,omitempty"`
	SOAEditAPI  *string     `json:"soa_edit_api,omitempty"`
	Account     *string     `json:"account,omitempty"`
	Serial      json.Number `json:"serial,omitempty"`
	RRSets      []apiRRSet  `json:"rrsets,omitempty"`
}

func decodeZone(props resource.Properties) (zoneProps, error) {
	var z zoneProps
	if err := resource.Decode(props, &z); err != nil {
		return z, fmt.Errorf("powerdns: %s properties: %w", TypeZone, err)
	}
	if z.Kind == "" {
		z.Kind = defaultKind
	}
	return z, nil
}

func (p *Provider) createZone(ctx context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
	z, err := decodeZone(req.Properties)
	if err != nil {
		return resource.CreateResult{}, err
	}
	in := apiZone{Name: z.Name, Kind: z.Kind, Nameservers: z.Nameservers, SOAEditAPI: z.SOAEditAPI, Account: z.Account}
	var out apiZone
	_, err = p.api.Call(ctx, http.MethodPost, p.base+"/zones", in, &out)
	var pe *resource.ProviderError
	if errors.As(err, &pe) && pe.Status == http.StatusConflict {
		pe.Message = fmt.Sprintf("zone %s already exists in PowerDNS but not in cdkx state; delete it in PowerDNS or import it into cdkx", z.Name)
		return resource.CreateResult{}, pe
	}
	if err != nil {
		return resource.CreateResult{}, err
	}
	if out.ID == "" {
		return resource.CreateResult{}, fmt.Errorf("powerdns: POST %s/zones: the created zone %s has no id", p.base, z.Name)
	}
	return resource.CreateResult{PhysicalID: out.ID, Outputs: zoneOutputs(out)}, nil
}

func (p *Provider) readZone(ctx context.Context, req resource.ReadRequest) (resource.ReadResult, error) {
	live, err := p.getZone(ctx, req.PhysicalID, "rrsets=false")
	if err != nil {
		return resource.ReadResult{}, err
	}
	props := resource.Properties{"name": live.Name, "kind": live.Kind}
	hint := req.Properties
	if name, ok := hint["name"].(string); ok && strings.EqualFold(name, live.Name) {
		props["name"] = name
	}
	if ns, ok := hint["nameservers"]; ok {
		// PowerDNS does not report the nameservers a zone was created with; they are the create-time
		// content of its apex NS rrset, which may have changed since without the zone being another one.
		props["nameservers"] = resource.Clone(ns)
	} else if ns, err := p.apexNameservers(ctx, live); err != nil {
		return resource.ReadResult{}, err
	} else if len(ns) > 0 {
		// No last applied value (an import): the apex NS rrset is what the nameservers made.
		props["nameservers"] = ns
	}
	// Leave out the values PowerDNS fills in by default unless the template sets them, so that a zone
	// created without them reads back the same.
	if live.SOAEditAPI != nil {
		if _, ok := hint["soaEditApi"]; ok || *live.SOAEditAPI != defaultSOAEditAPI {
			props["soaEditApi"] = *live.SOAEditAPI
		}
	}
	if live.Account != nil {
		if _, ok := hint["account"]; ok || *live.Account != "" {
			props["account"] = *live.Account
		}
	}
	return resource.ReadResult{Properties: props, Outputs: zoneOutputs(live)}, nil
}

// getZone is GET /zones/{zoneId}[?query]; a zone that does not exist is an error wrapping
// resource.ErrNotFound.
func (p *Provider) getZone(ctx context.Context, zoneID, query string) (apiZone, error) {
	u := p.zonePath(zoneID)
	if query != "" {
		u += "?" + query
	}
	var z apiZone
	_, err := p.api.Call(ctx, http.MethodGet, u, nil, &z)
	if errors.Is(err, resource.ErrNotFound) {
		if cerr := p.confirmNotFound(ctx); cerr != nil {
			return z, cerr
		}
	}
	return z, err
}

func (p *Provider) updateZone(ctx context.Context, req resource.UpdateRequest) (resource.UpdateResult, error) {
	z, err := decodeZone(req.New)
	if err != nil {
		return resource.UpdateResult{}, err
	}
	// Send every mutable field, so that one removed from the template goes back to its default.
	in := apiZone{Kind: z.Kind, SOAEditAPI: z.SOAEditAPI, Account: z.Account}
	if in.SOAEditAPI == nil {
		in.SOAEditAPI = ptr(defaultSOAEditAPI)
	}
	if in.Account == nil {
		in.Account = ptr("")
	}
	if _, err := p.api.Call(ctx, http.MethodPut, p.zonePath(req.PhysicalID), in, nil); err != nil {
		return resource.UpdateResult{}, err
	}
	live, err := p.getZone(ctx, req.PhysicalID, "rrsets=false")
	if err != nil {
		return resource.UpdateResult{}, err
	}
	return resource.UpdateResult{Outputs: zoneOutputs(live)}, nil
}

func (p *Provider) deleteZone(ctx context.Context, req resource.DeleteRequest) error {
	_, err := p.api.Call(ctx, http.MethodDelete, p.zonePath(req.PhysicalID), nil, nil)
	if errors.Is(err, resource.ErrNotFound) {
		return p.confirmNotFound(ctx)
	}
	return err
}

func zoneOutputs(z apiZone) resource.Properties {
	serial := z.Serial
	if serial == "" {
		serial = "0"
	}
	return resource.Properties{"zoneId": z.ID, "name": z.Name, "serial": serial}
}

func ptr[T any](v T) *T { return &v }

// apexNameservers returns the contents of the zone's apex NS rrset (GET /zones/{id}?rrset_name=&rrset_type=NS),
// sorted, or none.
func (p *Provider) apexNameservers(ctx context.Context, z apiZone) ([]any, error) {
	rr, err := p.findRRSet(ctx, z.ID, z.Name, "NS")
	if errors.Is(err, resource.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(rr.Records))
	for _, r := range rr.Records {
		names = append(names, r.Content)
	}
	sort.Strings(names)
	out := make([]any, len(names))
	for i, n := range names {
		out[i] = n
	}
	return out, nil
}
