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

// floatingIPObj is a Floating IP object: name, description (JSON), server (JSON) and labels (JSON).
func floatingIPObj(id, name, description, server, labels string) string {
	return `{"id":` + id + `,"name":"` + name + `","description":` + description + `,"created":"2026-01-01T00:00:00Z","ip":"198.51.100.7","type":"ipv4",` +
		`"server":` + server + `,"dns_ptr":[],"home_location":{"id":2,"name":"nbg1","city":"Nuremberg"},"blocked":false,"protection":{"delete":false},"labels":` + labels + `}`
}

const pageMeta = `"meta":{"pagination":{"page":1,"per_page":25,"previous_page":null,"next_page":null,"last_page":1,"total_entries":1}}`

func TestFloatingIPRequests(t *testing.T) {
	t.Parallel()
	props := adaptertest.Props(t, `{"type":"ipv4","homeLocation":"nbg1","name":"e2e-floating-ip"}`)
	ipJSON := `{"floating_ip":` + floatingIPObj("9", "e2e-floating-ip", "null", "null", "{}") + `}`
	wantOut := adaptertest.Props(t, `{"floatingIpId":9,"type":"ipv4","name":"e2e-floating-ip","description":null,"homeLocation":"nbg1","labels":{}}`)
	t.Run("create", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, steps(
			scripted.Exchange{Method: "POST", Path: "/v1/floating_ips", Body: `{"type":"ipv4","home_location":"nbg1","name":"e2e-floating-ip","labels":{}}`, Status: 201,
				JSON: `{"floating_ip":` + floatingIPObj("9", "e2e-floating-ip", "null", "null", "{}") + `,"action":` + actionObj(61, "create_floating_ip", "running") + `}`},
			pollsOf(61, "create_floating_ip", "success"),
		)...)
		got, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeFloatingIP, Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(resource.CreateResult{PhysicalID: "9", Outputs: wantOut}, got); diff != "" {
			t.Errorf("create (-want +got):\n%s", diff)
		}
	})
	t.Run("create without action, serverId not sent", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "POST", Path: "/v1/floating_ips",
			Body:   `{"type":"ipv4","home_location":"nbg1","description":"web","labels":{"app":"web"}}`,
			Status: 201, JSON: `{"floating_ip":` + floatingIPObj("9", "9", `"web"`, "null", `{"app":"web"}`) + `,"action":null}`})
		got, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeFloatingIP,
			Properties: adaptertest.Props(t, `{"type":"ipv4","homeLocation":"nbg1","description":"web","labels":{"app":"web"},"serverId":42}`)})
		if err != nil {
			t.Fatal(err)
		}
		if got.Outputs["description"] != "web" {
			t.Errorf("create outputs = %v, want description web", got.Outputs)
		}
	})
	t.Run("create exists", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "POST", Path: "/v1/floating_ips", Body: `{"type":"ipv4","home_location":"nbg1","name":"e2e-floating-ip","labels":{}}`,
			Status: 409, JSON: `{"error":{"code":"uniqueness_error","message":"name is already used","details":{}}}`})
		_, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeFloatingIP, Properties: props})
		if !errors.Is(err, resource.ErrAlreadyExists) {
			t.Errorf("create = %v, want ErrAlreadyExists", err)
		}
	})
	t.Run("read", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/floating_ips/9", Status: 200,
			JSON: `{"floating_ip":` + floatingIPObj("9", "e2e-floating-ip", "null", "42", "{}") + `}`})
		got, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeFloatingIP, PhysicalID: "9", Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(resource.ReadResult{Properties: props, Outputs: wantOut}, got); diff != "" {
			t.Errorf("read (-want +got):\n%s", diff)
		}
	})
	t.Run("read gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/floating_ips/9", Status: 404, JSON: errNotFoundBody})
		if _, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeFloatingIP, PhysicalID: "9"}); !errors.Is(err, resource.ErrNotFound) {
			t.Errorf("read = %v, want ErrNotFound", err)
		}
	})
	t.Run("update", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "PUT", Path: "/v1/floating_ips/9", Body: `{"name":"ip2","description":null,"labels":{"a":"b"}}`,
			Status: 200, JSON: `{"floating_ip":` + floatingIPObj("9", "ip2", "null", "null", `{"a":"b"}`) + `}`})
		old := adaptertest.Props(t, `{"type":"ipv4","homeLocation":"nbg1","name":"e2e-floating-ip","description":"x"}`)
		got, err := p.Update(ctx(t), resource.UpdateRequest{Type: hcloud.TypeFloatingIP, PhysicalID: "9", Old: old,
			New: adaptertest.Props(t, `{"type":"ipv4","homeLocation":"nbg1","name":"ip2","labels":{"a":"b"}}`), Changed: []string{"description", "labels", "name"}})
		if err != nil {
			t.Fatal(err)
		}
		if got.Outputs["name"] != "ip2" {
			t.Errorf("update outputs = %v", got.Outputs)
		}
	})
	t.Run("delete unassigned", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "GET", Path: "/v1/floating_ips/9", Status: 200, JSON: ipJSON},
			scripted.Exchange{Method: "DELETE", Path: "/v1/floating_ips/9", Status: 204})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeFloatingIP, PhysicalID: "9"}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("delete assigned", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, steps(
			scripted.Exchange{Method: "GET", Path: "/v1/floating_ips/9", Status: 200, JSON: `{"floating_ip":` + floatingIPObj("9", "e2e-floating-ip", "null", "42", "{}") + `}`},
			scripted.Exchange{Method: "POST", Path: "/v1/floating_ips/9/actions/unassign", Status: 201, JSON: startedAction(62, "unassign_floating_ip")},
			pollsOf(62, "unassign_floating_ip", "success"),
			scripted.Exchange{Method: "DELETE", Path: "/v1/floating_ips/9", Status: 204},
		)...)
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeFloatingIP, PhysicalID: "9"}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("delete gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/floating_ips/9", Status: 404, JSON: errNotFoundBody})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeFloatingIP, PhysicalID: "9"}); err != nil {
			t.Errorf("delete = %v, want nil", err)
		}
	})
	t.Run("locate by name", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/floating_ips", Query: "name=e2e-floating-ip", Status: 200,
			JSON: `{"floating_ips":[` + floatingIPObj("9", "e2e-floating-ip", "null", "null", "{}") + `],` + pageMeta + `}`})
		id, err := p.Locate(ctx(t), resource.CreateRequest{Type: hcloud.TypeFloatingIP, Properties: props})
		if err != nil || id != "9" {
			t.Errorf("locate = %q, %v; want 9", id, err)
		}
	})
	unnamed := adaptertest.Props(t, `{"type":"ipv4","homeLocation":"nbg1","labels":{"stack":"s","app":"web"}}`)
	t.Run("locate by labels", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/floating_ips", Query: "label_selector=app%3Dweb%2Cstack%3Ds", Status: 200,
			JSON: `{"floating_ips":[` + floatingIPObj("9", "9", "null", "null", `{"stack":"s","app":"web"}`) + `,` +
				strings.Replace(floatingIPObj("10", "10", "null", "null", `{"stack":"s","app":"web"}`), `"ipv4"`, `"ipv6"`, 1) + `],` + pageMeta + `}`})
		id, err := p.Locate(ctx(t), resource.CreateRequest{Type: hcloud.TypeFloatingIP, Properties: unnamed})
		if err != nil || id != "9" {
			t.Errorf("locate = %q, %v; want 9", id, err)
		}
	})
	t.Run("locate by labels ambiguous", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/floating_ips", Query: "label_selector=app%3Dweb%2Cstack%3Ds", Status: 200,
			JSON: `{"floating_ips":[` + floatingIPObj("9", "9", "null", "null", `{}`) + `,` + floatingIPObj("10", "10", "null", "null", `{}`) + `],` + pageMeta + `}`})
		_, err := p.Locate(ctx(t), resource.CreateRequest{Type: hcloud.TypeFloatingIP, Properties: unnamed})
		if !errors.Is(err, resource.ErrCannotLocate) || !strings.Contains(err.Error(), "9, 10") {
			t.Errorf("locate = %v, want ErrCannotLocate naming both", err)
		}
	})
	t.Run("locate by labels none", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/floating_ips", Query: "label_selector=app%3Dweb%2Cstack%3Ds", Status: 200,
			JSON: `{"floating_ips":[],` + pageMeta + `}`})
		if _, err := p.Locate(ctx(t), resource.CreateRequest{Type: hcloud.TypeFloatingIP, Properties: unnamed}); !errors.Is(err, resource.ErrNotFound) {
			t.Errorf("locate = %v, want ErrNotFound", err)
		}
	})
	t.Run("locate unnamed unlabelled", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t)
		_, err := p.Locate(ctx(t), resource.CreateRequest{Type: hcloud.TypeFloatingIP, Properties: adaptertest.Props(t, `{"type":"ipv4","homeLocation":"nbg1"}`)})
		if !errors.Is(err, resource.ErrCannotLocate) || !strings.Contains(err.Error(), "Hetzner Console") {
			t.Errorf("locate = %v, want ErrCannotLocate with guidance", err)
		}
	})
}

func TestFloatingIPCheck(t *testing.T) {
	t.Parallel()
	validateCases(t, hcloud.TypeFloatingIP, []struct{ props, want string }{
		{`{"type":"ipv4","homeLocation":"nbg1","name":"e2e-floating-ip"}`, ""},
		{`{"type":"ipv6","homeLocation":"sin","description":null,"serverId":{"ref":"S","attr":"serverId"}}`, ""},
		{`{"type":"ipv5","homeLocation":"nbg9"}`, "homeLocation: must be one of fsn1, nbg1, hel1, ash, hil, sin, got \"nbg9\"\ntype: must be one of ipv4, ipv6, got \"ipv5\""},
		{`{"type":"ipv4","homeLocation":"nbg1","description":7}`, "description: must be a string or null, got 7"},
		{`{}`, "homeLocation: required property \"homeLocation\" is missing\ntype: required property \"type\" is missing"},
	})
}
