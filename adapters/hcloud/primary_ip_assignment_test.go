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

// primaryIPJSON is a Primary IP answer with the given assignee_id (JSON).
func primaryIPJSON(assignee string) string {
	return `{"primary_ip":{"id":3,"name":"e2e-primary-ip","ip":"198.51.100.3","type":"ipv4","labels":{},"protection":{"delete":false},"dns_ptr":[],` +
		`"assignee_id":` + assignee + `,"assignee_type":"server","auto_delete":false,"blocked":false,"created":"2026-01-01T00:00:00Z",` +
		`"location":{"id":2,"name":"nbg1"},"datacenter":null}}`
}

func serverStatusJSON(id, status string) string {
	return `{"server":{"id":` + id + `,"name":"web","status":"` + status + `"}}`
}

// whileOff is the script of a change made while server id, in status, is powered off and on again.
func whileOff(id, status string, change ...scripted.Exchange) []scripted.Exchange {
	out := []scripted.Exchange{{Method: "GET", Path: "/v1/servers/" + id, Status: 200, JSON: serverStatusJSON(id, status)}}
	if status != "off" {
		out = append(out, scripted.Exchange{Method: "POST", Path: "/v1/servers/" + id + "/actions/poweroff", Status: 201, JSON: startedAction(81, "stop_server")})
		out = append(out, pollsOf(81, "stop_server", "success")...)
	}
	out = append(out, change...)
	if status != "off" {
		out = append(out, scripted.Exchange{Method: "POST", Path: "/v1/servers/" + id + "/actions/poweron", Status: 201, JSON: startedAction(82, "start_server")})
		out = append(out, pollsOf(82, "start_server", "success")...)
	}
	return out
}

func assignPrimary(server string) []scripted.Exchange {
	return steps(
		scripted.Exchange{Method: "POST", Path: "/v1/primary_ips/3/actions/assign", Body: `{"assignee_id":` + server + `,"assignee_type":"server"}`,
			Status: 201, JSON: startedAction(83, "assign_primary_ip")},
		pollsOf(83, "assign_primary_ip", "success"))
}

func unassignPrimary() []scripted.Exchange {
	return steps(
		scripted.Exchange{Method: "POST", Path: "/v1/primary_ips/3/actions/unassign", Status: 201, JSON: startedAction(84, "unassign_primary_ip")},
		pollsOf(84, "unassign_primary_ip", "success"))
}

func TestPrimaryIPAssignmentRequests(t *testing.T) {
	t.Parallel()
	props := adaptertest.Props(t, `{"primaryIpId":3,"assigneeId":42,"assigneeType":"server"}`)
	wantOut := adaptertest.Props(t, `{"primaryIpId":3,"assigneeId":42,"assigneeType":"server"}`)
	t.Run("create on a running server", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, whileOff("42", "running", assignPrimary("42")...)...)
		got, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypePrimaryIPAssignment, Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(resource.CreateResult{PhysicalID: "3", Outputs: wantOut}, got); diff != "" {
			t.Errorf("create (-want +got):\n%s", diff)
		}
	})
	t.Run("create on a stopped server", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, whileOff("42", "off", assignPrimary("42")...)...)
		if _, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypePrimaryIPAssignment, Properties: props}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("create fails, server started again", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, whileOff("42", "running",
			scripted.Exchange{Method: "POST", Path: "/v1/primary_ips/3/actions/assign", Body: `{"assignee_id":42,"assignee_type":"server"}`,
				Status: 422, JSON: `{"error":{"code":"server_has_ipv4","message":"server already has an IPv4 address","details":{}}}`})...)
		_, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypePrimaryIPAssignment, Properties: props})
		if err == nil || !strings.Contains(err.Error(), "server_has_ipv4") {
			t.Errorf("create = %v, want server_has_ipv4", err)
		}
	})
	t.Run("read", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/primary_ips/3", Status: 200, JSON: primaryIPJSON("42")})
		got, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypePrimaryIPAssignment, PhysicalID: "3", Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(resource.ReadResult{Properties: props, Outputs: wantOut}, got); diff != "" {
			t.Errorf("read (-want +got):\n%s", diff)
		}
	})
	t.Run("read assigned elsewhere", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/primary_ips/3", Status: 200, JSON: primaryIPJSON("43")})
		got, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypePrimaryIPAssignment, PhysicalID: "3", Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		if got.Properties["assigneeId"] != adaptertest.Props(t, `{"x":43}`)["x"] {
			t.Errorf("read properties = %v, want assigneeId 43", got.Properties)
		}
	})
	t.Run("read unassigned", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/primary_ips/3", Status: 200, JSON: primaryIPJSON("null")})
		if _, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypePrimaryIPAssignment, PhysicalID: "3", Properties: props}); !errors.Is(err, resource.ErrNotFound) {
			t.Errorf("read = %v, want ErrNotFound", err)
		}
	})
	t.Run("update", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, steps(
			scripted.Exchange{Method: "GET", Path: "/v1/primary_ips/3", Status: 200, JSON: primaryIPJSON("42")},
			whileOff("42", "running", unassignPrimary()...),
			whileOff("43", "off", assignPrimary("43")...),
		)...)
		got, err := p.Update(ctx(t), resource.UpdateRequest{Type: hcloud.TypePrimaryIPAssignment, PhysicalID: "3", Old: props,
			New: adaptertest.Props(t, `{"primaryIpId":3,"assigneeId":43,"assigneeType":"server"}`), Changed: []string{"assigneeId"}})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(adaptertest.Props(t, `{"primaryIpId":3,"assigneeId":43,"assigneeType":"server"}`), got.Outputs); diff != "" {
			t.Errorf("update outputs (-want +got):\n%s", diff)
		}
	})
	t.Run("update, old server gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, steps(
			scripted.Exchange{Method: "GET", Path: "/v1/primary_ips/3", Status: 200, JSON: primaryIPJSON("42")},
			scripted.Exchange{Method: "GET", Path: "/v1/servers/42", Status: 404, JSON: errNotFoundBody},
			whileOff("43", "running", assignPrimary("43")...),
		)...)
		if _, err := p.Update(ctx(t), resource.UpdateRequest{Type: hcloud.TypePrimaryIPAssignment, PhysicalID: "3", Old: props,
			New: adaptertest.Props(t, `{"primaryIpId":3,"assigneeId":43,"assigneeType":"server"}`), Changed: []string{"assigneeId"}}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("delete", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, steps(
			scripted.Exchange{Method: "GET", Path: "/v1/primary_ips/3", Status: 200, JSON: primaryIPJSON("42")},
			whileOff("42", "running", unassignPrimary()...),
		)...)
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypePrimaryIPAssignment, PhysicalID: "3", Properties: props}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("delete, server gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "GET", Path: "/v1/primary_ips/3", Status: 200, JSON: primaryIPJSON("42")},
			scripted.Exchange{Method: "GET", Path: "/v1/servers/42", Status: 404, JSON: errNotFoundBody})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypePrimaryIPAssignment, PhysicalID: "3", Properties: props}); err != nil {
			t.Errorf("delete = %v, want nil", err)
		}
	})
	t.Run("delete, already unassigned", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/primary_ips/3", Status: 200, JSON: primaryIPJSON("null")})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypePrimaryIPAssignment, PhysicalID: "3", Properties: props}); err != nil {
			t.Errorf("delete = %v, want nil", err)
		}
	})
	t.Run("delete, IP gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/primary_ips/3", Status: 404, JSON: errNotFoundBody})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypePrimaryIPAssignment, PhysicalID: "3", Properties: props}); err != nil {
			t.Errorf("delete = %v, want nil", err)
		}
	})
	t.Run("locate", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/primary_ips/3", Status: 200, JSON: primaryIPJSON("42")})
		id, err := p.Locate(ctx(t), resource.CreateRequest{Type: hcloud.TypePrimaryIPAssignment, Properties: props})
		if err != nil || id != "3" {
			t.Errorf("locate = %q, %v; want 3", id, err)
		}
	})
	t.Run("locate not assigned", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/primary_ips/3", Status: 200, JSON: primaryIPJSON("null")})
		if _, err := p.Locate(ctx(t), resource.CreateRequest{Type: hcloud.TypePrimaryIPAssignment, Properties: props}); !errors.Is(err, resource.ErrNotFound) {
			t.Errorf("locate = %v, want ErrNotFound", err)
		}
	})
}

func TestPrimaryIPAssignmentCheck(t *testing.T) {
	t.Parallel()
	validateCases(t, hcloud.TypePrimaryIPAssignment, []struct{ props, want string }{
		{`{"primaryIpId":3,"assigneeId":"42","assigneeType":"server"}`, ""},
		{`{"primaryIpId":3,"assigneeId":42,"assigneeType":"load_balancer"}`, "assigneeType: must be one of server, got \"load_balancer\""},
		{`{"primaryIpId":3}`, "assigneeId: required property \"assigneeId\" is missing\nassigneeType: required property \"assigneeType\" is missing"},
	})
}
