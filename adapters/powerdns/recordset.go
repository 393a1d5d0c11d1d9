package powerdns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/cdkx-dev/cdkx/adapters/internal/kit"
	"github.com/cdkx-dev/cdkx/adapters/transport"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TypeRecordSet is one rrset of a zone, all records of one name and type:
// https://doc.powerdns.com/authoritative/http-api/zone.html#patch--servers-server_id-zones-zone_id.
//
// Properties:
//   - zoneId (string, required, create-only): the zone's id, usually {ref: Zone, attr: zoneId}.
//   - name (string, required, create-only): canonical owner name with its trailing dot, inside the zone,
//     e.g. "www.example.test.". PowerDNS lower-cases it.
//   - type (required, create-only): A, AAAA, CNAME, TXT, MX, SRV, NS, CAA or PTR.
//   - ttl (integer seconds, 0..2147483647; default 3600).
//   - records (list of strings, required, at least one): record contents in zone-file syntax, as
//     PowerDNS wants them: names canonical with a trailing dot ("10 mail.example.test." for MX), TXT and
//     CAA values in double quotes ("\"v=spf1 -all\"", "0 issue \"letsencrypt.org\"").
//
// Outputs: zoneId, name, type and fqdn (the owner name, canonical with its trailing dot, so that it can be
// a CNAME's content as it is).
//
// The physical ID is "<zoneId>/<name>/<type>", e.g. "example.test./www.example.test./A" (zone ids never
// hold a "/"; PowerDNS escapes it as "=2F"). An rrset has no id of its own in PowerDNS.
//
// Create reads the zone (GET /zones/{zoneId}?rrset_name=…&rrset_type=…) and fails with
// resource.ErrAlreadyExists if the rrset exists, then sends PATCH /zones/{zoneId} with changetype
// REPLACE; the check and the PATCH are not atomic. Update is PATCH REPLACE with the new ttl and records.
// Delete is PATCH with changetype DELETE; a missing rrset or zone is success. Read finds the rrset in the
// zone; a missing rrset or zone is resource.ErrNotFound. A replacement deletes the old rrset first,
// since an rrset replaced with the same key (zone, name, type) cannot coexist with itself.
const TypeRecordSet = "PowerDNS::DNS::RecordSet"

// defaultTTL is the ttl of a record set that does not set one, in seconds.
const defaultTTL = 3600

// maxTTL is the largest TTL RFC 2181 allows; PowerDNS wraps negative TTLs to huge ones without a word.
const maxTTL = 1<<31 - 1

// recordTypes are the rrset types cdkx supports.
var recordTypes = []string{"A", "AAAA", "CNAME", "TXT", "MX", "SRV", "NS", "CAA", "PTR"}

var recordSetSchema = resource.Schema{
	Type:        TypeRecordSet,
	Description: "One rrset (all records of a name and type) of a PowerDNS zone (PATCH /api/v1/servers/{server}/zones/{zoneId}).",
	Properties: map[string]resource.PropertySchema{
		"zoneId": {Kind: resource.KindString, Required: true, CreateOnly: true,
			Description: "Id of the zone, usually the zoneId output of a PowerDNS::DNS::Zone"},
		"name": {Kind: resource.KindString, Required: true, CreateOnly: true,
			Description: `Canonical owner name with a trailing dot, inside the zone, e.g. "www.example.test."`},
		"type": {Kind: resource.KindString, Required: true, CreateOnly: true, Enum: recordTypes,
			Description: "Record type"},
		"ttl": {Kind: resource.KindInteger, Default: json.Number(strconv.Itoa(defaultTTL)),
			Description: "Time to live in seconds (default 3600)"},
		"records": {Kind: resource.KindList, Required: true, Items: &resource.PropertySchema{Kind: resource.KindString},
			Description: `Record contents in zone-file syntax, e.g. "192.0.2.1", "10 mail.example.test.", "\"some text\""`},
	},
	Outputs:             []string{"zoneId", "name", "type", "fqdn"},
	StableOutputs:       []string{"zoneId", "name", "type", "fqdn"},
	DeleteBeforeReplace: true,
	Identity:            []string{"zoneId", "name", "type"},
	Check:               checkRecordSet,
}

func checkRecordSet(props resource.Properties, unknown resource.IsUnknownFunc) []resource.FieldError {
	var errs []resource.FieldError
	name, nameOK := kit.KnownString(props["name"], unknown)
	if nameOK {
		bad := checkCanonical("name", name)
		errs = append(errs, bad...)
		nameOK = len(bad) == 0
	}
	if zone, ok := kit.KnownString(props["zoneId"], unknown); ok && nameOK && strings.HasSuffix(zone, ".") && !inZone(name, zone) {
		errs = append(errs, resource.FieldError{Path: "name",
			Message: fmt.Sprintf("%q is not inside zone %q; the name must be the zone or end with %q", name, zone, "."+zone)})
	}
	if n, ok := kit.Known(props["ttl"], unknown).(json.Number); ok {
		if v, err := n.Int64(); err == nil && (v < 0 || v > maxTTL) {
			errs = append(errs, resource.FieldError{Path: "ttl", Message: fmt.Sprintf("must be between 0 and %d seconds, got %d", maxTTL, v)})
		}
	}
	rtype, _ := kit.KnownString(props["type"], unknown)
	list, ok := kit.Known(props["records"], unknown).([]any)
	if !ok {
		return errs
	}
	if len(list) == 0 {
		errs = append(errs, resource.FieldError{Path: "records", Message: "must hold at least one record; delete the record set to remove it"})
	}
	if rtype == "CNAME" && len(list) > 1 {
		errs = append(errs, resource.FieldError{Path: "records", Message: fmt.Sprintf("a CNAME record set holds exactly one record, got %d", len(list))})
	}
	seen := map[string]int{}
	for i, e := range list {
		content, ok := kit.KnownString(e, unknown)
		if !ok {
			continue
		}
		path := fmt.Sprintf("records[%d]", i)
		if j, dup := seen[content]; dup {
			errs = append(errs, resource.FieldError{Path: path, Message: fmt.Sprintf("duplicates records[%d] %q", j, content)})
			continue
		}
		seen[content] = i
		if msg := checkContent(rtype, content); msg != "" {
			errs = append(errs, resource.FieldError{Path: path, Message: msg})
		}
	}
	return errs
}

// checkContent catches the content errors PowerDNS would answer with a 422, before deploy.
// It returns "" when content looks right for rtype (or rtype is not known yet).
func checkContent(rtype, content string) string {
	fields := strings.Fields(content)
	switch rtype {
	case "A":
		if a, err := netip.ParseAddr(content); err != nil || !a.Is4() {
			return fmt.Sprintf("must be an IPv4 address, got %q", content)
		}
	case "AAAA":
		if a, err := netip.ParseAddr(content); err != nil || !a.Is6() || a.Zone() != "" {
			return fmt.Sprintf("must be an IPv6 address, got %q", content)
		}
	case "CNAME", "NS", "PTR":
		if len(fields) != 1 || !strings.HasSuffix(content, ".") {
			return fmt.Sprintf("must be one canonical name with a trailing dot, e.g. %q, got %q", "target.example.test.", content)
		}
	case "MX":
		if len(fields) != 2 || !isUint16(fields[0]) || !strings.HasSuffix(fields[1], ".") {
			return fmt.Sprintf("must be \"<preference> <mail server.>\", e.g. %q, got %q", "10 mail.example.test.", content)
		}
	case "SRV":
		if len(fields) != 4 || !isUint16(fields[0]) || !isUint16(fields[1]) || !isUint16(fields[2]) || !strings.HasSuffix(fields[3], ".") {
			return fmt.Sprintf("must be \"<priority> <weight> <port> <target.>\", e.g. %q, got %q", "10 5 5060 sip.example.test.", content)
		}
	case "TXT":
		if !strings.HasPrefix(content, `"`) || !strings.HasSuffix(content, `"`) || len(content) < 2 {
			return fmt.Sprintf("must be quoted, e.g. %q, got %q", `"v=spf1 -all"`, content)
		}
	case "CAA":
		if len(fields) < 3 || !strings.HasPrefix(fields[2], `"`) || !strings.HasSuffix(content, `"`) {
			return fmt.Sprintf("must be \"<flags> <tag> \\\"<value>\\\"\", e.g. %q, got %q", `0 issue "letsencrypt.org"`, content)
		}
	}
	return ""
}

func isUint16(s string) bool {
	_, err := strconv.ParseUint(s, 10, 16)
	return err == nil
}

// recordSetProps are a record set's properties as the template writes them.
type recordSetProps struct {
	ZoneID  string   `json:"zoneId"`
	Name    string   `json:"name"`
	Type    string   `json:"type"`
	TTL     *int64   `json:"ttl"`
	Records []string `json:"records"`
}

func (r recordSetProps) ttl() int64 {
	if r.TTL == nil {
		return defaultTTL
	}
	return *r.TTL
}

// apiRRSet is an rrset as the API sends and receives it.
type apiRRSet struct {
	Name       string      `json:"name"`
	Type       string      `json:"type"`
	TTL        *int64      `json:"ttl,omitempty"`
	ChangeType string      `json:"changetype,omitempty"`
	Records    []apiRecord `json:"records"`
}

type apiRecord struct {
	Content  string `json:"content"`
	Disabled bool   `json:"disabled"`
}

type rrsetPatch struct {
	RRSets []apiRRSet `json:"rrsets"`
}

// recordSetID is the physical ID of an rrset: "<zoneId>/<name>/<type>".
func recordSetID(zoneID, name, rtype string) string { return zoneID + "/" + name + "/" + rtype }

// parseRecordSetID splits a physical ID made by recordSetID. The zone id and the type hold no "/"; the
// name may (RFC 2317 reverse zones).
func parseRecordSetID(id string) (zoneID, name, rtype string, err error) {
	i, j := strings.Index(id, "/"), strings.LastIndex(id, "/")
	if i <= 0 || j <= i+1 || j == len(id)-1 {
		return "", "", "", fmt.Errorf("powerdns: record set id %q is not <zoneId>/<name>/<type>", id)
	}
	return id[:i], id[i+1 : j], id[j+1:], nil
}

func decodeRecordSet(props resource.Properties) (recordSetProps, error) {
	var r recordSetProps
	if err := resource.Decode(props, &r); err != nil {
		return r, fmt.Errorf("powerdns: %s properties: %w", TypeRecordSet, err)
	}
	return r, nil
}

func (p *Provider) createRecordSet(ctx context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
	r, err := decodeRecordSet(req.Properties)
	if err != nil {
		return resource.CreateResult{}, err
	}
	existing, err := p.findRRSet(ctx, r.ZoneID, r.Name, r.Type)
	var pe *resource.ProviderError
	switch {
	case existing != nil:
		return resource.CreateResult{}, fmt.Errorf("powerdns: record set %s %s already exists in zone %s but not in cdkx state; delete it in PowerDNS or import it into cdkx: %w",
			r.Name, r.Type, r.ZoneID, resource.ErrAlreadyExists)
	case errors.Is(err, resource.ErrNotFound) && errors.As(err, &pe):
		// The zone is missing: for a create that is a failure, not "the object is gone".
		pe.Kind = nil
		pe.Message = fmt.Sprintf("zone %s does not exist", r.ZoneID)
		return resource.CreateResult{}, pe
	case err != nil && !errors.Is(err, resource.ErrNotFound):
		return resource.CreateResult{}, err
	}
	if err := p.replaceRRSet(ctx, r); err != nil {
		return resource.CreateResult{}, err
	}
	return resource.CreateResult{PhysicalID: recordSetID(r.ZoneID, r.Name, r.Type), Outputs: recordSetOutputs(r.ZoneID, r.Name, r.Type)}, nil
}

func (p *Provider) readRecordSet(ctx context.Context, req resource.ReadRequest) (resource.ReadResult, error) {
	zoneID, name, rtype, err := parseRecordSetID(req.PhysicalID)
	if err != nil {
		return resource.ReadResult{}, err
	}
	live, err := p.findRRSet(ctx, zoneID, name, rtype)
	if err != nil {
		return resource.ReadResult{}, err
	}
	var hint recordSetProps
	_ = resource.Decode(req.Properties, &hint) // only a hint: a mismatch just means no reordering
	if strings.EqualFold(hint.Name, live.Name) {
		live.Name = hint.Name
	}
	contents := make([]string, len(live.Records))
	for i, rec := range live.Records {
		contents[i] = rec.Content
	}
	records := make([]any, 0, len(contents))
	if sameRecords(rtype, hint.Records, contents) {
		contents = hint.Records
	}
	for _, c := range contents {
		records = append(records, c)
	}
	var ttl int64
	if live.TTL != nil {
		ttl = *live.TTL
	}
	props := resource.Properties{
		"zoneId":  zoneID,
		"name":    live.Name,
		"type":    rtype,
		"ttl":     json.Number(strconv.FormatInt(ttl, 10)),
		"records": records,
	}
	return resource.ReadResult{Properties: props, Outputs: recordSetOutputs(zoneID, name, rtype)}, nil
}

func (p *Provider) updateRecordSet(ctx context.Context, req resource.UpdateRequest) (resource.UpdateResult, error) {
	zoneID, name, rtype, err := parseRecordSetID(req.PhysicalID)
	if err != nil {
		return resource.UpdateResult{}, err
	}
	r, err := decodeRecordSet(req.New)
	if err != nil {
		return resource.UpdateResult{}, err
	}
	r.ZoneID, r.Name, r.Type = zoneID, name, rtype
	if err := p.replaceRRSet(ctx, r); err != nil {
		return resource.UpdateResult{}, err
	}
	return resource.UpdateResult{Outputs: recordSetOutputs(zoneID, name, rtype)}, nil
}

func (p *Provider) deleteRecordSet(ctx context.Context, req resource.DeleteRequest) error {
	zoneID, name, rtype, err := parseRecordSetID(req.PhysicalID)
	if err != nil {
		return err
	}
	patch := rrsetPatch{RRSets: []apiRRSet{{Name: name, Type: rtype, ChangeType: "DELETE", Records: []apiRecord{}}}}
	// A DELETE changetype removes the rrset whether or not it is there: safe to send again.
	_, err = p.api.Call(transport.Idempotent(ctx), http.MethodPatch, p.zonePath(zoneID), patch, nil)
	if errors.Is(err, resource.ErrNotFound) {
		return p.confirmNotFound(ctx)
	}
	return err
}

// replaceRRSet sends PATCH /zones/{zoneId} with changetype REPLACE: the rrset becomes exactly r.
func (p *Provider) replaceRRSet(ctx context.Context, r recordSetProps) error {
	records := make([]apiRecord, len(r.Records))
	for i, c := range r.Records {
		records[i] = apiRecord{Content: c}
	}
	patch := rrsetPatch{RRSets: []apiRRSet{{Name: r.Name, Type: r.Type, TTL: ptr(r.ttl()), ChangeType: "REPLACE", Records: records}}}
	// REPLACE makes the rrset exactly r however often it is sent: safe to send again.
	_, err := p.api.Call(transport.Idempotent(ctx), http.MethodPatch, p.zonePath(r.ZoneID), patch, nil)
	return err
}

// findRRSet returns the rrset (name, type) of a zone. A missing zone is an error wrapping
// resource.ErrNotFound (a *resource.ProviderError); a missing rrset is resource.ErrNotFound with a nil
// rrset. PowerDNS 4.7+ filters by rrset_name and rrset_type; older servers send every rrset.
func (p *Provider) findRRSet(ctx context.Context, zoneID, name, rtype string) (*apiRRSet, error) {
	q := url.Values{"rrset_name": {name}, "rrset_type": {rtype}}
	z, err := p.getZone(ctx, zoneID, q.Encode())
	if err != nil {
		return nil, err
	}
	for i, rr := range z.RRSets {
		if rr.Type == rtype && strings.EqualFold(rr.Name, name) {
			return &z.RRSets[i], nil
		}
	}
	return nil, fmt.Errorf("powerdns: record set %s %s in zone %s: %w", name, rtype, zoneID, resource.ErrNotFound)
}

// sameRecords reports whether want and got hold the same records in any order, comparing addresses of
// A and AAAA records by value (PowerDNS stores "2001:DB8:0::1" as "2001:db8::1").
func sameRecords(rtype string, want, got []string) bool {
	if len(want) != len(got) {
		return false
	}
	norm := func(list []string) []string {
		out := make([]string, len(list))
		for i, c := range list {
			out[i] = c
			if rtype == "A" || rtype == "AAAA" {
				if a, err := netip.ParseAddr(c); err == nil {
					out[i] = a.String()
				}
			}
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(norm(want), norm(got))
}

func recordSetOutputs(zoneID, name, rtype string) resource.Properties {
	return resource.Properties{"zoneId": zoneID, "name": name, "type": rtype, "fqdn": name}
}
