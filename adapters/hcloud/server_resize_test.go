package hcloud_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	hc "github.com/hetznercloud/hcloud-go/v2/hcloud"

	"github.com/cdkx-dev/cdkx/adapters/hcloud"
	"github.com/cdkx-dev/cdkx/adapters/hcloud/hcloudfake"
	"github.com/cdkx-dev/cdkx/adapters/internal/adaptertest"
	"github.com/cdkx-dev/cdkx/adapters/internal/scripted"
	"github.com/cdkx-dev/cdkx/adapters/transport"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// fakeProvider returns a provider pointed at a new hcloud-fake whose actions end at once, and an
// hcloud-go client of the same fake to read what the adapter did.
func fakeProvider(t *testing.T) (*hcloud.Provider, *hcloudfake.Fake, *hc.Client) {
	t.Helper()
	f, srv := hcloudfake.NewServer(t, hcloudfake.Options{Token: testToken})
	p, err := hcloud.New(hcloud.Config{Token: testToken, Endpoint: srv.URL + "/v1",
		Poll:  hcloud.PollOptions{Interval: time.Millisecond, Timeout: 5 * time.Second},
		Retry: transport.Retry{WaitMin: time.Millisecond, WaitMax: 2 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	return p, f, hc.NewClient(hc.WithToken(testToken), hc.WithEndpoint(srv.URL+"/v1"))
}

// TestServerResize changes the serverType of a server created through the adapter against hcloud-fake:
// the server is resized in place (the same ID) with the calls Hetzner needs, or refused before any
// change when the type cannot take it. hcloud-go reads the result back.
func TestServerResize(t *testing.T) {
	t.Parallel()
	type live struct {
		Status string
		Type   string
		Disk   int
	}
	for _, tc := range []struct {
		name      string
		props     string // create-time properties besides name and image
		from, to  string
		failType  bool   // the change_type action ends in error
		wantErr   string // "" for success
		want      live
		wantCalls []string // the fake's routes from the update on, action polls left out
	}{
		{name: "running up", props: `"serverType":"cx22"`, from: "cx22", to: "cx32", want: live{"running", "cx32", 40},
			wantCalls: []string{"GET /servers/{id}", "GET /server_types", "POST /servers/{id}/actions/poweroff", "GET /servers/{id}",
				"POST /servers/{id}/actions/change_type", "GET /servers/{id}", "POST /servers/{id}/actions/poweron", "PUT /servers/{id}"}},
		{name: "off stays off", props: `"serverType":"cax11","startAfterCreate":false`, from: "cax11", to: "cax31", want: live{"off", "cax31", 40},
			wantCalls: []string{"GET /servers/{id}", "GET /server_types", "POST /servers/{id}/actions/change_type", "PUT /servers/{id}"}},
		{name: "other architecture refused", props: `"serverType":"cx22"`, from: "cx22", to: "cax11", wantErr: "architecture (x86 → arm)",
			want: live{"running", "cx22", 40}, wantCalls: []string{"GET /servers/{id}", "GET /server_types"}},
		{name: "smaller disk refused", props: `"serverType":"cx32"`, from: "cx32", to: "cx22", wantErr: "smaller than the server's 80 GB disk",
			want: live{"running", "cx32", 80}, wantCalls: []string{"GET /servers/{id}", "GET /server_types"}},
		{name: "failed change powers on again", props: `"serverType":"cpx11"`, from: "cpx11", to: "cpx21", failType: true, wantErr: "action_failed",
			want: live{"running", "cpx11", 40},
			wantCalls: []string{"GET /servers/{id}", "GET /server_types", "POST /servers/{id}/actions/poweroff", "GET /servers/{id}",
				"POST /servers/{id}/actions/change_type", "GET /servers/{id}", "POST /servers/{id}/actions/poweron"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, f, c := fakeProvider(t)
			props := adaptertest.Props(t, `{"name":"web","image":"ubuntu-24.04",`+tc.props+`}`)
			created, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeServer, Properties: props})
			if err != nil {
				t.Fatal(err)
			}
			if tc.failType {
				f.FailActions("change_server_type", 1)
			}
			before := len(f.Requests())
			newProps := resource.Properties{}
			for k, v := range props {
				newProps[k] = v
			}
			newProps["serverType"] = tc.to
			got, err := p.Update(ctx(t), resource.UpdateRequest{Type: hcloud.TypeServer, PhysicalID: created.PhysicalID,
				Old: props, New: newProps, OldOutputs: created.Outputs, Changed: []string{"serverType"}})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("update %s → %s: %v", tc.from, tc.to, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("update %s → %s = %v, want an error with %q", tc.from, tc.to, err, tc.wantErr)
			case tc.wantErr == "" && (got.Outputs["serverType"] != tc.to || got.Outputs["serverId"] != created.Outputs["serverId"]):
				t.Errorf("update outputs = %v, want serverType %s and serverId %v", got.Outputs, tc.to, created.Outputs["serverId"])
			}
			var calls []string
			for _, r := range f.Requests()[before:] {
				if !strings.HasPrefix(r.Route, "/actions") {
					calls = append(calls, r.Method+" "+r.Route)
				}
			}
			if diff := cmp.Diff(tc.wantCalls, calls); diff != "" {
				t.Errorf("calls of the update (-want +got):\n%s", diff)
			}
			id, _ := strconv.ParseInt(created.PhysicalID, 10, 64)
			s, _, err := c.Server.GetByID(context.Background(), id)
			if err != nil || s == nil {
				t.Fatalf("server %d after the update: %v, %v", id, s, err)
			}
			if diff := cmp.Diff(tc.want, live{string(s.Status), s.ServerType.Name, s.PrimaryDiskSize}); diff != "" {
				t.Errorf("server %d after the update (-want +got):\n%s", id, diff)
			}
		})
	}
}

// TestServerResizeBackAndForth: a resize up and back down succeeds, since the disk keeps its size;
// state-wise it is the rollback of a failed deploy.
func TestServerResizeBackAndForth(t *testing.T) {
	t.Parallel()
	p, _, c := fakeProvider(t)
	props := adaptertest.Props(t, `{"name":"web","image":"ubuntu-24.04","serverType":"cx22"}`)
	created, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeServer, Properties: props})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	old := props
	for _, to := range []string{"cx42", "cx22"} {
		next := resource.Properties{"name": "web", "image": "ubuntu-24.04", "serverType": to}
		if _, err := p.Update(ctx(t), resource.UpdateRequest{Type: hcloud.TypeServer, PhysicalID: created.PhysicalID, Old: old, New: next,
			Changed: []string{"serverType"}}); err != nil {
			t.Fatalf("resize to %s: %v", to, err)
		}
		old = next
		id, _ := strconv.ParseInt(created.PhysicalID, 10, 64)
		s, _, err := c.Server.GetByID(context.Background(), id)
		if err != nil || s == nil {
			t.Fatal(err)
		}
		types = append(types, s.ServerType.Name+"/"+string(s.Status))
	}
	if diff := cmp.Diff([]string{"cx42/running", "cx22/running"}, types); diff != "" {
		t.Errorf("type/status after each resize (-want +got):\n%s", diff)
	}
}

// TestServerResizeWaitsUntilOff: Hetzner may still report a server running after its power-off action
// succeeded; the resize polls the server until it is off before it changes the type, and does not power
// on a server that Hetzner started again by itself.
func TestServerResizeWaitsUntilOff(t *testing.T) {
	t.Parallel()
	srv := func(status string) scripted.Exchange {
		return scripted.Exchange{Method: "GET", Path: "/v1/servers/42", Status: 200,
			JSON: `{"server":` + strings.Replace(serverJSON(status), `{"id":1,"name":"cax11"}`, `{"id":1,"name":"cax11","architecture":"arm","storage_type":"local","disk":40}`, 1) + `}`}
	}
	p, _ := scriptedProvider(t,
		srv("running"),
		scripted.Exchange{Method: "GET", Path: "/v1/server_types", Query: "name=cax21", Status: 200,
			JSON: listJSON("server_types", `{"id":2,"name":"cax21","architecture":"arm","storage_type":"local","disk":80}`)},
		scripted.Exchange{Method: "POST", Path: "/v1/servers/42/actions/poweroff", Status: 201, JSON: `{"action":` + actJSON(7, "stop_server", "success") + `}`},
		srv("running"), srv("stopping"), srv("off"),
		scripted.Exchange{Method: "POST", Path: "/v1/servers/42/actions/change_type", Body: `{"server_type":"cax21","upgrade_disk":false}`, Status: 201,
			JSON: `{"action":` + actJSON(8, "change_server_type", "success") + `}`},
		srv("running"), // Hetzner started it: no poweron
		scripted.Exchange{Method: "PUT", Path: "/v1/servers/42", Body: `{"name":"web","labels":{}}`, Status: 200,
			JSON: `{"server":` + strings.Replace(serverJSON("running"), `"cax11"`, `"cax21"`, 1) + `}`})
	props := adaptertest.Props(t, `{"name":"web","serverType":"cax11","image":"ubuntu-22.04"}`)
	got, err := p.Update(ctx(t), resource.UpdateRequest{Type: hcloud.TypeServer, PhysicalID: "42", Old: props,
		New: adaptertest.Props(t, `{"name":"web","serverType":"cax21","image":"ubuntu-22.04"}`), Changed: []string{"serverType"}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Outputs["serverType"] != "cax21" {
		t.Errorf("outputs = %v, want serverType cax21", got.Outputs)
	}
}

// TestServerResizePowerOnFails: a resize whose server does not power on again fails and says so.
func TestServerResizePowerOnFails(t *testing.T) {
	t.Parallel()
	srv := func(status string) scripted.Exchange {
		return scripted.Exchange{Method: "GET", Path: "/v1/servers/42", Status: 200, JSON: `{"server":` + serverJSON(status) + `}`}
	}
	p, _ := scriptedProvider(t,
		srv("running"),
		scripted.Exchange{Method: "GET", Path: "/v1/server_types", Query: "name=cax21", Status: 200,
			JSON: listJSON("server_types", `{"id":2,"name":"cax21","architecture":"arm","storage_type":"local","disk":80}`)},
		scripted.Exchange{Method: "POST", Path: "/v1/servers/42/actions/poweroff", Status: 201, JSON: `{"action":` + actJSON(7, "stop_server", "success") + `}`},
		srv("off"),
		scripted.Exchange{Method: "POST", Path: "/v1/servers/42/actions/change_type", Body: `{"server_type":"cax21","upgrade_disk":false}`, Status: 201,
			JSON: `{"action":` + actJSON(8, "change_server_type", "success") + `}`},
		srv("off"),
		scripted.Exchange{Method: "POST", Path: "/v1/servers/42/actions/poweron", Status: 201, JSON: `{"action":` + actJSON(9, "start_server", "error") + `}`})
	props := adaptertest.Props(t, `{"name":"web","serverType":"cax11","image":"ubuntu-22.04"}`)
	_, err := p.Update(ctx(t), resource.UpdateRequest{Type: hcloud.TypeServer, PhysicalID: "42", Old: props,
		New: adaptertest.Props(t, `{"name":"web","serverType":"cax21","image":"ubuntu-22.04"}`), Changed: []string{"serverType"}})
	var ae *hcloud.ActionError
	if !errors.As(err, &ae) || ae.Command != "start_server" || !strings.Contains(err.Error(), "did not power on again") {
		t.Errorf("resize whose power-on fails = %v, want the start_server failure and advice", err)
	}
}
