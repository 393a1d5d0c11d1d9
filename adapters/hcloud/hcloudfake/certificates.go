package hcloudfake

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
)

// Certificates: https://docs.hetzner.cloud/#certificates

// certificateJSON is a certificate as the API answers it; a managed certificate has null PEM, validity
// and fingerprint until it is issued. The private key is never returned.
type certificateJSON struct {
	schema.Certificate
	PEM            *string    `json:"certificate"`
	NotValidBefore *time.Time `json:"not_valid_before"`
	NotValidAfter  *time.Time `json:"not_valid_after"`
	Fingerprint    *string    `json:"fingerprint"`
}

func (f *Fake) certificate(r *http.Request) (*certificate, error) {
	return byPathID(r, "certificate", f.st.certificates)
}

func (f *Fake) renderCertificate(c *certificate) certificateJSON {
	out := certificateJSON{Certificate: c.Certificate}
	out.Labels = labelsOrEmpty(&c.Labels)
	out.DomainNames = append([]string{}, c.DomainNames...)
	if c.Certificate.Certificate != "" {
		pemText, nb, na, fp := c.Certificate.Certificate, c.NotValidBefore, c.NotValidAfter, c.Fingerprint
		out.PEM, out.NotValidBefore, out.NotValidAfter, out.Fingerprint = &pemText, &nb, &na, &fp
	}
	out.UsedBy = []schema.CertificateUsedByRef{}
	for _, l := range f.st.loadBalancers {
		for _, s := range l.Services {
			if s.HTTP != nil && slices.Contains(s.HTTP.Certificates, c.ID) {
				out.UsedBy = append(out.UsedBy, schema.CertificateUsedByRef{ID: l.ID, Type: "load_balancer"})
				break
			}
		}
	}
	slices.SortFunc(out.UsedBy, func(a, b schema.CertificateUsedByRef) int { return int(a.ID - b.ID) })
	return out
}

// parseCertificate reads the leaf of a PEM chain: validity, names and SHA-256 fingerprint.
func parseCertificate(chain string) (*x509.Certificate, string, error) {
	block, _ := pem.Decode([]byte(chain))
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, "", fmt.Errorf("not a PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, "", fmt.Errorf("invalid certificate: %w", err)
	}
	sum := sha256.Sum256(cert.Raw)
	parts := make([]string, len(sum))
	for i, b := range sum {
		parts[i] = fmt.Sprintf("%02x", b)
	}
	return cert, strings.Join(parts, ":"), nil
}

func (f *Fake) certificateRoutes() {
	f.handle("GET /v1/certificates", func(r *http.Request) (int, any, error) {
		typ := r.URL.Query()["type"]
		return list(r, "certificates", values(f.st.certificates), func(c *certificate) any { return f.renderCertificate(c) },
			func(c *certificate) bool { return len(typ) == 0 || contains(typ, c.Type) })
	})
	f.handle("GET /v1/certificates/{id}", func(r *http.Request) (int, any, error) {
		c, err := f.certificate(r)
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, map[string]any{"certificate": f.renderCertificate(c)}, nil
	})
	f.handle("POST /v1/certificates", func(r *http.Request) (int, any, error) {
		var req schema.CertificateCreateRequest
		if err := decode(r, &req, "name"); err != nil {
			return 0, nil, err
		}
		if req.Name == "" {
			return 0, nil, invalid(field{"name", "must not be empty"})
		}
		if req.Type == "" {
			req.Type = "uploaded"
		}
		if nameTaken(f.st.certificates, req.Name, 0) {
			return 0, nil, errUnique("certificate", "name")
		}
		labels := labelsOrEmpty(req.Labels)
		if err := validLabels(labels); err != nil {
			return 0, nil, err
		}
		c := &certificate{schema.Certificate{ID: f.newID(), Name: req.Name, Type: req.Type, Labels: labels, Created: f.created()}}
		switch req.Type {
		case "uploaded":
			var missing []field
			if req.Certificate == "" {
				missing = append(missing, field{"certificate", "required for uploaded certificates"})
			}
			if req.PrivateKey == "" {
				missing = append(missing, field{"private_key", "required for uploaded certificates"})
			}
			if len(missing) > 0 {
				return 0, nil, invalid(missing...)
			}
			if block, _ := pem.Decode([]byte(req.PrivateKey)); block == nil {
				return 0, nil, invalid(field{"private_key", "not a PEM private key"})
			}
			cert, fp, err := parseCertificate(req.Certificate)
			if err != nil {
				return 0, nil, invalid(field{"certificate", err.Error()})
			}
			c.Certificate.Certificate = req.Certificate
			c.Fingerprint = fp
			c.NotValidBefore, c.NotValidAfter = cert.NotBefore.UTC(), cert.NotAfter.UTC()
			c.DomainNames = append([]string{}, cert.DNSNames...)
			if len(c.DomainNames) == 0 && cert.Subject.CommonName != "" {
				c.DomainNames = []string{cert.Subject.CommonName}
			}
			f.st.certificates[c.ID] = c
			return http.StatusCreated, map[string]any{"certificate": f.renderCertificate(c), "action": nil}, nil
		case "managed":
			if len(req.DomainNames) == 0 {
				return 0, nil, invalid(field{"domain_names", "required for managed certificates"})
			}
			c.DomainNames = append([]string{}, req.DomainNames...)
			c.Status = &schema.CertificateStatusRef{Issuance: "pending", Renewal: "unavailable"}
			f.st.certificates[c.ID] = c
			a := f.newAction("create_certificate", ref("certificate", c.ID))
			a.onSuccess = func() {
				now := f.now().UTC().Truncate(time.Second)
				c.Status.Issuance = "completed"
				c.NotValidBefore, c.NotValidAfter = now, now.AddDate(0, 3, 0)
				c.Certificate.Certificate = "-----BEGIN CERTIFICATE-----\nZmFrZQ==\n-----END CERTIFICATE-----\n"
				c.Fingerprint = fmt.Sprintf("fa:ke:%02x", byte(c.ID))
			}
			a.onError = func() { c.Status.Issuance = "failed" }
			f.launch(a)
			return http.StatusCreated, map[string]any{"certificate": f.renderCertificate(c), "action": a.Action}, nil
		default:
			return 0, nil, invalid(field{"type", "must be uploaded or managed"})
		}
	})
	f.handle("PUT /v1/certificates/{id}", func(r *http.Request) (int, any, error) {
		c, err := f.certificate(r)
		if err != nil {
			return 0, nil, err
		}
		var req schema.CertificateUpdateRequest
		if err := decode(r, &req); err != nil {
			return 0, nil, err
		}
		if req.Name != nil && *req.Name != "" {
			if nameTaken(f.st.certificates, *req.Name, c.ID) {
				return 0, nil, errUnique("certificate", "name")
			}
			c.Name = *req.Name
		}
		if req.Labels != nil {
			if err := validLabels(*req.Labels); err != nil {
				return 0, nil, err
			}
			c.Labels = labelsOrEmpty(req.Labels)
		}
		return http.StatusOK, map[string]any{"certificate": f.renderCertificate(c)}, nil
	})
	f.handle("DELETE /v1/certificates/{id}", func(r *http.Request) (int, any, error) {
		c, err := f.certificate(r)
		if err != nil {
			return 0, nil, err
		}
		if err := f.checkLock("certificate", c.ID); err != nil {
			return 0, nil, err
		}
		if len(f.renderCertificate(c).UsedBy) > 0 {
			return 0, nil, errCode("resource_in_use", fmt.Sprintf("certificate %d is used by a load balancer service", c.ID))
		}
		delete(f.st.certificates, c.ID)
		return http.StatusNoContent, nil, nil
	})
}
