package hcloud_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/adapters/hcloud"
	"github.com/cdkx-dev/cdkx/adapters/internal/adaptertest"
	"github.com/cdkx-dev/cdkx/adapters/internal/scripted"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

const (
	certPEM = `-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n`
	keyPEM  = `-----BEGIN PRIVATE KEY-----\nS3CRETKEY\n-----END PRIVATE KEY-----\n`
)

func certificateJSON(typ, pem string) string {
	return `{"id":31,"name":"web-cert","labels":{},"type":"` + typ + `","certificate":` + pem + `,"domain_names":["example.com"],` +
		`"fingerprint":"03:c7","not_valid_before":null,"not_valid_after":null,"status":null,"used_by":[],"created":"2026-01-01T00:00:00Z"}`
}

func TestCertificateRequests(t *testing.T) {
	t.Parallel()
	props := adaptertest.Props(t, `{"name":"web-cert","certificate":"`+certPEM+`","privateKey":"`+keyPEM+`"}`)
	wantOut := adaptertest.Props(t, `{"certificateId":31,"name":"web-cert","labels":{},"type":"uploaded","certificate":"`+certPEM+`","domainNames":["example.com"]}`)
	t.Run("create uploaded", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "POST", Path: "/v1/certificates", Status: 201,
			Body: `{"name":"web-cert","labels":{},"certificate":"` + certPEM + `","private_key":"` + keyPEM + `"}`,
			JSON: `{"certificate":` + certificateJSON("uploaded", `"`+certPEM+`"`) + `,"action":null}`})
		got, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeCertificate, Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(resource.CreateResult{PhysicalID: "31", Outputs: wantOut}, got); diff != "" {
			t.Errorf("create (-want +got):\n%s", diff)
		}
	})
	t.Run("create managed", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "POST", Path: "/v1/certificates", Status: 201,
				Body: `{"name":"web-cert","labels":{},"type":"managed","domain_names":["example.com"]}`,
				JSON: `{"certificate":` + certificateJSON("managed", "null") + `,"action":` + actJSON(7, "create_certificate", "running") + `}`},
			pollAction(7, "create_certificate", "running"),
			pollAction(7, "create_certificate", "success"),
			scripted.Exchange{Method: "GET", Path: "/v1/certificates/31", Status: 200, JSON: `{"certificate":` + certificateJSON("managed", `"`+certPEM+`"`) + `}`})
		got, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeCertificate,
			Properties: adaptertest.Props(t, `{"name":"web-cert","type":"managed","domainNames":["example.com"]}`)})
		if err != nil {
			t.Fatal(err)
		}
		want := adaptertest.Props(t, `{"certificateId":31,"name":"web-cert","labels":{},"type":"managed","certificate":"`+certPEM+`","domainNames":["example.com"]}`)
		if diff := cmp.Diff(want, got.Outputs); diff != "" {
			t.Errorf("create outputs (-want +got):\n%s", diff)
		}
	})
	t.Run("create managed not issued", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "POST", Path: "/v1/certificates", Status: 201,
				Body: `{"name":"web-cert","labels":{},"type":"managed","domain_names":["example.com"]}`,
				JSON: `{"certificate":` + certificateJSON("managed", "null") + `,"action":` + actJSON(7, "create_certificate", "running") + `}`},
			pollAction(7, "create_certificate", "error"),
			scripted.Exchange{Method: "GET", Path: "/v1/certificates/31", Status: 200, JSON: `{}`})
		var ae *hcloud.ActionError
		if _, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeCertificate,
			Properties: adaptertest.Props(t, `{"name":"web-cert","type":"managed","domainNames":["example.com"]}`)}); !errors.As(err, &ae) || !strings.Contains(err.Error(), "Hetzner DNS") {
			t.Errorf("create of a certificate never issued = %v, want *hcloud.ActionError with advice", err)
		}
	})
	t.Run("create rejected keeps the key secret", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "POST", Path: "/v1/certificates", Status: 422,
			Body: `{"name":"web-cert","labels":{},"certificate":"` + certPEM + `","private_key":"` + keyPEM + `"}`,
			JSON: `{"error":{"code":"invalid_input","message":"private key ` + keyPEM + ` does not match","details":{}}}`})
		_, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeCertificate, Properties: props})
		if err == nil || strings.Contains(err.Error(), "S3CRETKEY") {
			t.Errorf("create error = %v, want an error without the private key", err)
		}
	})
	t.Run("read", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/certificates/31", Status: 200,
			JSON: `{"certificate":` + certificateJSON("uploaded", `"`+certPEM+`"`) + `}`})
		got, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeCertificate, PhysicalID: "31", Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		want := adaptertest.Props(t, `{"name":"web-cert","type":"uploaded","domainNames":["example.com"]}`)
		if diff := cmp.Diff(resource.ReadResult{Properties: want, Outputs: wantOut}, got); diff != "" {
			t.Errorf("read (-want +got):\n%s", diff)
		}
		if strings.Contains(string(resource.Canonical(got)), "S3CRETKEY") {
			t.Errorf("read result holds the private key: %v", got)
		}
	})
	t.Run("read gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/certificates/31", Status: 404, JSON: notFoundJSON})
		if _, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeCertificate, PhysicalID: "31"}); !errors.Is(err, resource.ErrNotFound) {
			t.Errorf("read of a gone certificate = %v, want ErrNotFound", err)
		}
	})
	t.Run("update", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "PUT", Path: "/v1/certificates/31", Body: `{"name":"web-cert2","labels":{"a":"b"}}`, Status: 200,
			JSON: `{"certificate":` + certificateJSON("uploaded", `"`+certPEM+`"`) + `}`})
		if _, err := p.Update(ctx(t), resource.UpdateRequest{Type: hcloud.TypeCertificate, PhysicalID: "31", Old: props,
			New: adaptertest.Props(t, `{"name":"web-cert2","labels":{"a":"b"},"certificate":"`+certPEM+`"}`), Changed: []string{"labels", "name"}}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("delete", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "DELETE", Path: "/v1/certificates/31", Status: 204})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeCertificate, PhysicalID: "31"}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("delete gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "DELETE", Path: "/v1/certificates/31", Status: 404, JSON: notFoundJSON})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeCertificate, PhysicalID: "31"}); err != nil {
			t.Errorf("delete of a gone certificate = %v, want nil", err)
		}
	})
	t.Run("locate", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/certificates", Query: "name=web-cert", Status: 200,
			JSON: listJSON("certificates", certificateJSON("uploaded", "null"))})
		if id, err := p.Locate(ctx(t), resource.CreateRequest{Type: hcloud.TypeCertificate, Properties: props}); err != nil || id != "31" {
			t.Errorf("locate = %q, %v; want 31", id, err)
		}
	})
}

func TestCertificateSchema(t *testing.T) {
	t.Parallel()
	s := typeSchema(t, hcloud.TypeCertificate)
	if !s.Properties["privateKey"].WriteOnly || s.HasOutput("privateKey") {
		t.Errorf("privateKey: WriteOnly %v, an output %v; want write-only and no output", s.Properties["privateKey"].WriteOnly, s.HasOutput("privateKey"))
	}
	if diff := cmp.Diff([]string{"certificate", "domainNames", "privateKey", "type"}, s.CreateOnly()); diff != "" {
		t.Errorf("create-only (-want +got):\n%s", diff)
	}
	for _, tc := range []struct{ props, want string }{
		{`{"name":"c","certificate":"` + certPEM + `","privateKey":"` + keyPEM + `"}`, ""},
		{`{"name":"c","type":"uploaded","certificate":{"ref":"X","attr":"pem"},"privateKey":{"ref":"X","attr":"key"}}`, ""},
		{`{"name":"c","type":"managed","domainNames":["example.com","www.example.com"]}`, ""},
		{`{"name":"c"}`, "certificate: is required for an uploaded certificate (a PEM block)\nprivateKey: is required for an uploaded certificate (a PEM block)"},
		{`{"name":"c","certificate":"abc","privateKey":"` + keyPEM + `","domainNames":["a.example"]}`,
			"certificate: is not PEM (-----BEGIN …-----); Hetzner rejects it\ndomainNames: applies to managed certificates only (an uploaded certificate's domains come from the certificate)"},
		{`{"name":"c","type":"managed","domainNames":[],"privateKey":"` + keyPEM + `"}`,
			"domainNames: a managed certificate needs at least one domain name (on Hetzner DNS)\nprivateKey: applies to uploaded certificates only; Hetzner issues a managed one"},
		{`{"name":"c","type":"acme"}`, `type: must be one of uploaded, managed, got "acme"`},
	} {
		if got := validation(t, hcloud.TypeCertificate, tc.props); got != tc.want {
			t.Errorf("Validate(%s) = %q, want %q", tc.props, got, tc.want)
		}
	}
}
