package hcloud

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/cdkx-dev/cdkx/adapters/internal/kit"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TypeCertificate is a TLS certificate for load balancer services (https://docs.hetzner.cloud/#certificates):
// uploaded (certificate and private key given) or managed (issued by Let's Encrypt for domains on
// Hetzner DNS).
//
// Properties: name (required), labels (both change in place) and, create-only: type (uploaded, the
// default, or managed), certificate (PEM chain) and privateKey (PEM) for uploaded, domainNames for
// managed. privateKey is write-only: sent to Hetzner and never stored, logged or shown.
//
// Outputs: certificateId (integer, also the physical ID), name, labels, type, certificate (the PEM
// chain from the API; empty until a managed certificate is issued), domainNames. The TypeScript runtime
// also echoed privateKey into its state and outputs; cdkx refuses to, so a getAtt of privateKey fails
// validation instead of leaking the key.
//
// Create POST /certificates {name, labels, type, certificate, private_key, domain_names} and, for a
// managed certificate, wait for its issuance action; read GET /certificates/{id}; update
// PUT /certificates/{id} {name, labels}; delete DELETE /certificates/{id}; locate GET /certificates?name=.
const TypeCertificate = "Hetzner::Security::Certificate"

// certificateKind is Hetzner::Security::Certificate, for the provider's table (hcloud.go).
func certificateKind() kit.Type[*Provider] {
	return hetzner(kit.Type[*Provider]{
		Schema: resource.Schema{
			Type:        TypeCertificate,
			Description: "A TLS certificate (POST /certificates)",
			Properties: map[string]resource.PropertySchema{
				"name":        {Kind: resource.KindString, Required: true, Description: "Name, unique in the project"},
				"labels":      labelsSchema,
				"type":        {Kind: resource.KindString, CreateOnly: true, Enum: []string{"uploaded", "managed"}, Description: "uploaded (default) or managed"},
				"certificate": {Kind: resource.KindString, CreateOnly: true, Description: "PEM certificate chain (uploaded)"},
				"privateKey":  {Kind: resource.KindString, CreateOnly: true, WriteOnly: true, Description: "PEM private key (uploaded); never stored or shown"},
				"domainNames": {Kind: resource.KindList, CreateOnly: true, Items: &resource.PropertySchema{Kind: resource.KindString}, Description: "Domain names (managed), on Hetzner DNS"},
			},
			Outputs:             outputs("certificateId", "name", "labels", "type", "certificate", "domainNames"),
			StableOutputs:       []string{"certificateId", "type", "domainNames"},
			DeleteBeforeReplace: true,
			Identity:            []string{"name"},
			Check:               checkCertificate,
		},
		Create: (*Provider).createCertificate,
		Read:   (*Provider).readCertificate,
		Update: (*Provider).updateCertificate,
		Delete: (*Provider).deleteCertificate,
		Locate: func(p *Provider, ctx context.Context, req resource.CreateRequest) (string, error) {
			return p.locateByName(ctx, "certificates", req.Properties)
		},
	})
}

func checkCertificate(props resource.Properties, unknown resource.IsUnknownFunc) []resource.FieldError {
	typ, _ := props["type"].(string)
	if kit.IsUnknown(props["type"], unknown) {
		return nil
	}
	var errs []resource.FieldError
	bad := func(path, msg string) { errs = append(errs, resource.FieldError{Path: path, Message: msg}) }
	has := func(k string) bool { return props[k] != nil }
	switch typ {
	case "", "uploaded":
		for _, k := range []string{"certificate", "privateKey"} {
			if !has(k) {
				bad(k, "is required for an uploaded certificate (a PEM block)")
			} else if s, ok := props[k].(string); ok && !kit.IsUnknown(props[k], unknown) && !strings.Contains(s, "-----BEGIN ") {
				bad(k, "is not PEM (-----BEGIN …-----); Hetzner rejects it")
			}
		}
		if has("domainNames") {
			bad("domainNames", "applies to managed certificates only (an uploaded certificate's domains come from the certificate)")
		}
	case "managed":
		if list, ok := props["domainNames"].([]any); !has("domainNames") || (ok && len(list) == 0) {
			bad("domainNames", "a managed certificate needs at least one domain name (on Hetzner DNS)")
		}
		for _, k := range []string{"certificate", "privateKey"} {
			if has(k) {
				bad(k, "applies to uploaded certificates only; Hetzner issues a managed one")
			}
		}
	}
	return errs
}

// certificate is the API's certificate object (the fields the adapter reads).
type certificate struct {
	ID          int64             `json:"id"`
	Name        string            `json:"name"`
	Labels      map[string]string `json:"labels"`
	Type        string            `json:"type"`
	Certificate *string           `json:"certificate"`
	DomainNames []string          `json:"domain_names"`
}

func (c *certificate) outputs() resource.Properties {
	domains := make([]any, 0, len(c.DomainNames))
	for _, d := range c.DomainNames {
		domains = append(domains, d)
	}
	pem := ""
	if c.Certificate != nil {
		pem = *c.Certificate
	}
	return resource.Properties{"certificateId": num(c.ID), "name": c.Name, "labels": labelsValue(c.Labels),
		"type": c.Type, "certificate": pem, "domainNames": domains}
}

func (p *Provider) createCertificate(ctx context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
	props := req.Properties
	name := str(props, "name")
	body := map[string]any{"name": name, "labels": labelsOf(props)}
	if t := str(props, "type"); t != "" {
		body["type"] = t
	}
	if c := str(props, "certificate"); c != "" {
		body["certificate"] = c
	}
	var secrets []string
	if k := str(props, "privateKey"); k != "" {
		body["private_key"] = k
		secrets = append(secrets, k)
	}
	if list, ok := props["domainNames"].([]any); ok {
		domains := make([]string, 0, len(list))
		for _, d := range list {
			s, _ := d.(string)
			domains = append(domains, s)
		}
		body["domain_names"] = domains
	}
	var out struct {
		Certificate certificate `json:"certificate"`
		Action      *action     `json:"action"`
	}
	if err := p.c.call(ctx, http.MethodPost, "/certificates", body, &out, secrets...); err != nil {
		return resource.CreateResult{}, existsError(err, "certificate", name)
	}
	c := &out.Certificate
	if out.Action != nil {
		if err := p.c.wait(ctx, out.Action); err != nil {
			return p.unfinished(ctx, idPath("/certificates", c.ID), c.ID, fmt.Errorf("%s: certificate %q (ID %d) was created but not issued; check that its domains are on Hetzner DNS: %w",
				Name, name, c.ID, err))
		}
		// Read it again: the issued certificate's PEM arrives with the action's success.
		got, err := p.getCertificate(ctx, c.ID)
		if err != nil {
			return resource.CreateResult{}, err
		}
		c = got
	}
	return resource.CreateResult{PhysicalID: strconv.FormatInt(c.ID, 10), Outputs: c.outputs()}, nil
}

// getCertificate reads GET /certificates/{id}.
func (p *Provider) getCertificate(ctx context.Context, id int64) (*certificate, error) {
	var out struct {
		Certificate certificate `json:"certificate"`
	}
	if err := p.c.call(ctx, http.MethodGet, idPath("/certificates", id), nil, &out); err != nil {
		return nil, err
	}
	return &out.Certificate, nil
}

func (p *Provider) readCertificate(ctx context.Context, req resource.ReadRequest) (resource.ReadResult, error) {
	id, err := physicalID(req.PhysicalID)
	if err != nil {
		return resource.ReadResult{}, err
	}
	c, err := p.getCertificate(ctx, id)
	if err != nil {
		return resource.ReadResult{}, err
	}
	out := c.outputs()
	props := resource.Properties{"name": c.Name, "type": c.Type, "domainNames": out["domainNames"]}
	readLabels(props, req.Properties, c.Labels)
	// The API may normalize the PEM's whitespace: only a different certificate is drift.
	if given := str(req.Properties, "certificate"); c.Certificate != nil && strings.TrimSpace(given) != strings.TrimSpace(*c.Certificate) {
		props["certificate"] = *c.Certificate
	}
	return resource.ReadResult{Properties: props, Outputs: out}, nil
}

func (p *Provider) updateCertificate(ctx context.Context, req resource.UpdateRequest) (resource.UpdateResult, error) {
	id, err := physicalID(req.PhysicalID)
	if err != nil {
		return resource.UpdateResult{}, err
	}
	var out struct {
		Certificate certificate `json:"certificate"`
	}
	body := map[string]any{"name": str(req.New, "name"), "labels": labelsOf(req.New)}
	if err := p.c.call(ctx, http.MethodPut, idPath("/certificates", id), body, &out); err != nil {
		return resource.UpdateResult{}, existsError(err, "certificate", str(req.New, "name"))
	}
	return resource.UpdateResult{Outputs: out.Certificate.outputs()}, nil
}

func (p *Provider) deleteCertificate(ctx context.Context, req resource.DeleteRequest) error {
	id, err := physicalID(req.PhysicalID)
	if err != nil {
		return err
	}
	return p.c.call(ctx, http.MethodDelete, idPath("/certificates", id), nil, nil)
}
