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

func TestPrimaryIPRequests(t *testing.T) {
	t.Parallel()
	props := adaptertest.Props(t, `{"name":"e2e-primary-ip","type":"ipv4","location":"nbg1","assigneeType":"server"}`)
	wantOut := adaptertest.Props(t, `{"primaryIpId":3,"name":"e2e-primary-ip","type":"ipv4","assigneeType":"server","assigneeId":null,"autoDelete":false,"labels":{}}`)
	const body = `{"name":"e2e-primary-ip","type":"ipv4","assignee_type":"server","location":"nbg1","labels":{}}`
	t.Run("create", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, steps(
			scripted.Exchange{Method: "POST", Path: "/v1/primary_ips", Body: body, Status: 201,
				JSON: strings.TrimSuffix(primaryIPJSON("null"), "}") + `,"action":` + actionObj(91, "create_primary_ip", "running") + `}`},
			pollsOf(91, "create_primary_ip", "success"),
		)...)
		got, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypePrimaryIP, Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(resource.CreateResult{PhysicalID: "3", Outputs: wantOut}, got); diff != "" {
			t.Errorf("create (-want +got):\n%s", diff)
		}
	})
	t.Run("create with autoDelete, no action", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "POST", Path: "/v1/primary_ips",
			Body:   `{"name":"e2e-primary-ip","type":"ipv4","assignee_type":"server","location":"nbg1","labels":{},"auto_delete":true}`,
			Status: 201, JSON: strings.TrimSuffix(primaryIPJSON("null"), "}") + `,"action":null}`})
		in := adaptertest.Props(t, `{"name":"e2e-primary-ip","type":"ipv4","location":"nbg1","assigneeType":"server","autoDelete":true,"assigneeId":42}`)
		if _, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypePrimaryIP, Properties: in}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("create exists", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "POST", Path: "/v1/primary_ips", Body: body, Status: 409,
			JSON: `{"error":{"code":"uniqueness_error","message":"name is already used","details":{}}}`})
		if _, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypePrimaryIP, Properties: props}); !errors.Is(err, resource.ErrAlreadyExists) {
			t.Errorf("create = %v, want ErrAlreadyExists", err)
		}
	})
	t.Run("read", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/primary_ips/3", Status: 200, JSON: primaryIPJSON("42")})
		got, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypePrimaryIP, PhysicalID: "3", Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		want := resource.ReadResult{
			Properties: adaptertest.Props(t, `{"name":"e2e-primary-ip","type":"ipv4","assigneeType":"server"}`),
			Outputs:    adaptertest.Props(t, `{"primaryIpId":3,"name":"e2e-primary-ip","type":"ipv4","assigneeType":"server","assigneeId":42,"autoDelete":false,"labels":{}}`),
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("read (-want +got):\n%s", diff)
		}
	})
	t.Run("read gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/primary_ips/3", Status: 404, JSON: errNotFoundBody})
		if _, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypePrimaryIP, PhysicalID: "3"}); !errors.Is(err, resource.ErrNotFound) {
			t.Errorf("read = %v, want ErrNotFound", err)
		}
	})
	t.Run("update", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "PUT", Path: "/v1/primary_ips/3", Body: `{"name":"ip2","labels":{"a":"b"},"auto_delete":true}`,
			Status: 200, JSON: primaryIPJSON("null")})
		if _, err := p.Update(ctx(t), resource.UpdateRequest{Type: hcloud.TypePrimaryIP, PhysicalID: "3", Old: props,
			New:     adaptertest.Props(t, `{"name":"ip2","type":"ipv4","location":"nbg1","assigneeType":"server","autoDelete":true,"labels":{"a":"b"}}`),
			Changed: []string{"autoDelete", "labels", "name"}}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("delete unassigned", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "GET", Path: "/v1/primary_ips/3", Status: 200, JSON: primaryIPJSON("null")},
			scripted.Exchange{Method: "DELETE", Path: "/v1/primary_ips/3", Status: 204})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypePrimaryIP, PhysicalID: "3"}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("delete assigned", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, steps(
			scripted.Exchange{Method: "GET", Path: "/v1/primary_ips/3", Status: 200, JSON: primaryIPJSON("42")},
			whileOff("42", "running", unassignPrimary()...),
			scripted.Exchange{Method: "DELETE", Path: "/v1/primary_ips/3", Status: 204},
		)...)
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypePrimaryIP, PhysicalID: "3"}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("delete auto-deleted", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/primary_ips/3", Status: 404, JSON: errNotFoundBody})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypePrimaryIP, PhysicalID: "3"}); err != nil {
			t.Errorf("delete = %v, want nil", err)
		}
	})
	t.Run("locate", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/primary_ips", Query: "name=e2e-primary-ip", Status: 200,
			JSON: `{"primary_ips":[{"id":3,"name":"e2e-primary-ip"}],` + pageMeta + `}`})
		id, err := p.Locate(ctx(t), resource.CreateRequest{Type: hcloud.TypePrimaryIP, Properties: props})
		if err != nil || id != "3" {
			t.Errorf("locate = %q, %v; want 3", id, err)
		}
	})
}

func TestPrimaryIPCheck(t *testing.T) {
	t.Parallel()
	validateCases(t, hcloud.TypePrimaryIP, []struct{ props, want string }{
		{`{"name":"e2e-primary-ip","type":"ipv4","location":"nbg1","assigneeType":"server"}`, ""},
		{`{"name":"ip","type":"ipv6","location":"hel1","assigneeType":"server","assigneeId":{"ref":"S","attr":"serverId"},"autoDelete":true}`, ""},
		{`{"name":"ip","type":"ipv4","assigneeType":"server"}`,
			"location: required: cdkx creates the Primary IP unassigned, and Hetzner then needs its location (fsn1, nbg1, hel1, ash, hil or sin)"},
		{`{"name":"ip","type":"ipv4","location":"fsn1-dc14","assigneeType":"server"}`, "location: must be one of fsn1, nbg1, hel1, ash, hil, sin, got \"fsn1-dc14\""},
	})
}
