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

const placementGroupJSON = `{"id":9,"name":"e2e-placement-group","type":"spread","labels":{},"servers":[42,43],"created":"2026-01-01T00:00:00Z"}`

func TestPlacementGroupRequests(t *testing.T) {
	t.Parallel()
	props := adaptertest.Props(t, `{"name":"e2e-placement-group","type":"spread"}`)
	wantOut := adaptertest.Props(t, `{"placementGroupId":9,"name":"e2e-placement-group","type":"spread","labels":{},"serverIds":[42,43]}`)
	t.Run("create", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "POST", Path: "/v1/placement_groups",
			Body: `{"name":"e2e-placement-group","type":"spread","labels":{}}`, Status: 201,
			JSON: `{"placement_group":` + placementGroupJSON + `,"action":null}`})
		got, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypePlacementGroup, Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(resource.CreateResult{PhysicalID: "9", Outputs: wantOut}, got); diff != "" {
			t.Errorf("create (-want +got):\n%s", diff)
		}
	})
	t.Run("create with an action", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "POST", Path: "/v1/placement_groups",
				Body: `{"name":"e2e-placement-group","type":"spread","labels":{}}`, Status: 201,
				JSON: `{"placement_group":` + placementGroupJSON + `,"action":` + actJSON(3, "create_placement_group", "running") + `}`},
			pollAction(3, "create_placement_group", "error"))
		var ae *hcloud.ActionError
		if _, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypePlacementGroup, Properties: props}); !errors.As(err, &ae) {
			t.Errorf("create with a failed action = %v, want *hcloud.ActionError", err)
		}
	})
	t.Run("create exists", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "POST", Path: "/v1/placement_groups",
			Body: `{"name":"e2e-placement-group","type":"spread","labels":{}}`, Status: 409,
			JSON: `{"error":{"code":"uniqueness_error","message":"name is already used","details":{}}}`})
		_, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypePlacementGroup, Properties: props})
		if !errors.Is(err, resource.ErrAlreadyExists) || !strings.Contains(err.Error(), "import it") {
			t.Errorf("create of an existing group = %v, want ErrAlreadyExists with advice", err)
		}
	})
	t.Run("read", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/placement_groups/9", Status: 200, JSON: `{"placement_group":` + placementGroupJSON + `}`})
		got, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypePlacementGroup, PhysicalID: "9", Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(resource.ReadResult{Properties: props, Outputs: wantOut}, got); diff != "" {
			t.Errorf("read (-want +got):\n%s", diff)
		}
	})
	t.Run("read gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/placement_groups/9", Status: 404, JSON: notFoundJSON})
		if _, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypePlacementGroup, PhysicalID: "9"}); !errors.Is(err, resource.ErrNotFound) {
			t.Errorf("read of a gone group = %v, want ErrNotFound", err)
		}
	})
	t.Run("update", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "PUT", Path: "/v1/placement_groups/9",
			Body: `{"name":"pg2","labels":{"a":"b"}}`, Status: 200, JSON: `{"placement_group":` + placementGroupJSON + `}`})
		if _, err := p.Update(ctx(t), resource.UpdateRequest{Type: hcloud.TypePlacementGroup, PhysicalID: "9", Old: props,
			New: adaptertest.Props(t, `{"name":"pg2","type":"spread","labels":{"a":"b"}}`), Changed: []string{"labels", "name"}}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("delete", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "DELETE", Path: "/v1/placement_groups/9", Status: 204})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypePlacementGroup, PhysicalID: "9"}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("delete gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "DELETE", Path: "/v1/placement_groups/9", Status: 404, JSON: notFoundJSON})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypePlacementGroup, PhysicalID: "9"}); err != nil {
			t.Errorf("delete of a gone group = %v, want nil", err)
		}
	})
	t.Run("locate", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/placement_groups", Query: "name=e2e-placement-group", Status: 200,
			JSON: listJSON("placement_groups", placementGroupJSON)})
		if id, err := p.Locate(ctx(t), resource.CreateRequest{Type: hcloud.TypePlacementGroup, Properties: props}); err != nil || id != "9" {
			t.Errorf("locate = %q, %v; want 9", id, err)
		}
	})
}

func TestPlacementGroupCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ props, want string }{
		{`{"name":"e2e-placement-group","type":"spread"}`, ""},
		{`{"name":"pg","type":"spread","placementGroupId":1,"serverIds":[1]}`, ""},
		{`{"name":"pg","type":"cluster"}`, `type: must be one of spread, got "cluster"`},
		{`{"name":"pg"}`, `type: required property "type" is missing`},
	} {
		if got := validation(t, hcloud.TypePlacementGroup, tc.props); got != tc.want {
			t.Errorf("Validate(%s) = %q, want %q", tc.props, got, tc.want)
		}
	}
}
