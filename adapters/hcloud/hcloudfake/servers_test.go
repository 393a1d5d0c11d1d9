package hcloudfake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hetznercloud/hcloud-go/v2/hcloud"
)

// TestChangeServerType resizes a server with hcloud-go, every request and answer checked against the spec:
// power off, change the type without upgrading the disk, change it back, power on; with upgrade_disk the
// disk grows and the smaller type is refused from then on.
func TestChangeServerType(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, c := newClient(t, Options{ActionPolls: 2})
	wait := func(a *hcloud.Action, _ *hcloud.Response, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Action.WaitFor(ctx, a); err != nil {
			t.Fatalf("WaitFor %s: %v", a.Command, err)
		}
	}
	res := must[hcloud.ServerCreateResult](t)(c.Server.Create(ctx, hcloud.ServerCreateOpts{
		Name: "web", ServerType: &hcloud.ServerType{Name: "cx22"}, Image: &hcloud.Image{Name: "ubuntu-24.04"}}))
	if err := c.Action.WaitFor(ctx, res.Action); err != nil {
		t.Fatal(err)
	}
	s := res.Server
	type view struct {
		Status hcloud.ServerStatus
		Type   string
		Disk   int
	}
	read := func() view {
		t.Helper()
		got := must[*hcloud.Server](t)(c.Server.GetByID(ctx, s.ID))
		return view{got.Status, got.ServerType.Name, got.PrimaryDiskSize}
	}
	changeType := func(name string, upgradeDisk bool) (*hcloud.Action, *hcloud.Response, error) {
		return c.Server.ChangeType(ctx, s, hcloud.ServerChangeTypeOpts{ServerType: &hcloud.ServerType{Name: name}, UpgradeDisk: upgradeDisk})
	}

	var got []view
	wait(c.Server.Poweroff(ctx, s))
	got = append(got, read())
	wait(changeType("cx32", false))
	got = append(got, read())
	wait(changeType("cx22", false)) // the disk kept its 40 GB: back down is possible
	got = append(got, read())
	wait(changeType("cx32", true))
	got = append(got, read())
	_, _, err := changeType("cx22", false) // 80 GB now: cx22's 40 GB disk cannot hold it
	if code := hcloudCode(err); code != "invalid_server_type" {
		t.Errorf("change to a type with a smaller disk: %v, want invalid_server_type", err)
	}
	wait(c.Server.Poweron(ctx, s))
	got = append(got, read())
	want := []view{{"off", "cx22", 40}, {"off", "cx32", 40}, {"off", "cx22", 40}, {"off", "cx32", 80}, {"running", "cx32", 80}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("server after each step (-want +got):\n%s", diff)
	}

	acts, err := c.Server.Action.All(ctx, hcloud.ActionListOpts{})
	if err != nil {
		t.Fatal(err)
	}
	var commands []string
	for _, a := range acts {
		commands = append(commands, a.Command)
	}
	if n := strings.Count(strings.Join(commands, " "), "change_server_type"); n != 3 {
		t.Errorf("the servers' actions %v hold %d change_server_type, want 3", commands, n)
	}
}

// hcloudCode is the error code of an hcloud-go error, "" for another error or nil.
func hcloudCode(err error) string {
	var he hcloud.Error
	if errors.As(err, &he) {
		return string(he.Code)
	}
	return ""
}

// TestChangeServerTypeRefused: change_type answers Hetzner's codes, before any change, for a server that
// is not off, an unknown type, another architecture, a smaller disk, and while another action holds the
// server; the server is left as it was.
func TestChangeServerTypeRefused(t *testing.T) {
	t.Parallel()
	_, a := newAPI(t, Options{}, true)
	srv := func(name, typ string, off bool) string {
		t.Helper()
		body := map[string]any{"name": name, "server_type": typ, "image": "ubuntu-24.04"}
		sid := id(a.ok("POST", "/v1/servers", body), "server")
		if off {
			a.ok("POST", "/v1/servers/"+sid+"/actions/poweroff", nil)
		}
		return sid
	}
	running := srv("running", "cx22", false)
	off := srv("off", "cx32", true)
	tests := []struct {
		name, server, typ string
		status            int
		code              string
	}{
		{"running server", running, "cx32", 422, "server_not_stopped"},
		{"unknown type", off, "cx99", 422, "invalid_input"},
		{"other architecture", off, "cax21", 422, "invalid_server_type"},
		{"smaller disk", off, "cx22", 422, "invalid_server_type"},
	}
	// Once every refusal has run: the servers are as they were.
	t.Cleanup(func() {
		for sid, want := range map[string]string{running: "cx22", off: "cx32"} {
			got := a.ok("GET", "/v1/servers/"+sid, nil)["server"].(map[string]any)["server_type"].(map[string]any)["name"]
			if got != want {
				t.Errorf("server %s has type %v after the refusals, want %s", sid, got, want)
			}
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // every case is refused, so none changes the shared fake
			a := &api{t: t, base: a.base, hc: a.hc}
			status, out, _ := a.call("POST", "/v1/servers/"+tt.server+"/actions/change_type", map[string]any{"server_type": tt.typ, "upgrade_disk": false})
			if status != tt.status || errCodeOf(out) != tt.code {
				t.Errorf("change_type to %s = %d %q, want %d %q (%v)", tt.typ, status, errCodeOf(out), tt.status, tt.code, out)
			}
		})
	}
}

// TestChangeServerTypeLocked: while a change_type action runs, the server is held (423 locked), and its
// status is off until it is powered on.
func TestChangeServerTypeLocked(t *testing.T) {
	t.Parallel()
	_, a := newAPI(t, Options{ActionPolls: 3}, true)
	sid := id(a.ok("POST", "/v1/servers", map[string]any{"name": "s", "server_type": "cx22", "image": "ubuntu-24.04", "start_after_create": false}), "server")
	for range 3 { // let the create action finish
		a.ok("GET", "/v1/servers/"+sid+"/actions", nil)
	}
	act := a.ok("POST", "/v1/servers/"+sid+"/actions/change_type", map[string]any{"server_type": "cx32", "upgrade_disk": false})["action"].(map[string]any)
	if act["command"] != "change_server_type" || act["status"] != "running" {
		t.Fatalf("change_type action = %v, want change_server_type running", act)
	}
	if status, out, _ := a.call("POST", "/v1/servers/"+sid+"/actions/poweron", nil); status != 423 || errCodeOf(out) != "locked" {
		t.Errorf("poweron while change_type runs = %d %v, want 423 locked", status, out)
	}
	actID := strconv.FormatFloat(act["id"].(float64), 'f', -1, 64)
	for range 3 { // the action ends at its third poll
		a.ok("GET", "/v1/actions/"+actID, nil)
	}
	got := a.ok("GET", "/v1/servers/"+sid, nil)["server"].(map[string]any)
	if got["status"] != "off" || got["server_type"].(map[string]any)["name"] != "cx32" {
		t.Errorf("after change_type: status %v, type %v; want off, cx32", got["status"], got["server_type"].(map[string]any)["name"])
	}
}

// recordingTB is a testing.TB that records Errorf instead of failing the test.
type recordingTB struct {
	testing.TB
	errs []string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// roundTripFunc is an http.RoundTripper from a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestSpecChecksServerActionAnswers proves that the spec check covers the server actions' answers: an
// answer to change_type, poweroff or poweron that is not the spec's ActionResponse is reported, and the
// fake's own answers are not.
func TestSpecChecksServerActionAnswers(t *testing.T) {
	t.Parallel()
	bad := `{"action":{"id":1,"command":"change_server_type","status":"done"}}` // no progress, started, …; bad status
	for _, path := range []string{"change_type", "poweroff", "poweron"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			rec := &recordingTB{TB: t}
			tr := &specTransport{t: rec, router: loadSpec(t), base: roundTripFunc(func(*http.Request) (*http.Response, error) {
				return &http.Response{StatusCode: http.StatusCreated, Header: http.Header{"Content-Type": {"application/json"}},
					Body: io.NopCloser(strings.NewReader(bad))}, nil
			})}
			var body io.Reader
			if path == "change_type" {
				body = bytes.NewReader([]byte(`{"server_type":"cx32","upgrade_disk":false}`))
			}
			req, _ := http.NewRequest(http.MethodPost, "http://fake/v1/servers/1/actions/"+path, body)
			req.Header.Set("Content-Type", "application/json")
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if len(rec.errs) != 1 || !strings.Contains(rec.errs[0], "spec: response 201") {
				t.Errorf("a malformed %s answer gave the spec check %q, want one response error", path, rec.errs)
			}
		})
	}
	// The fake's answers to the same requests pass.
	_, a := newAPI(t, Options{}, true)
	sid := id(a.ok("POST", "/v1/servers", map[string]any{"name": "s", "server_type": "cx22", "image": "ubuntu-24.04"}), "server")
	a.ok("POST", "/v1/servers/"+sid+"/actions/poweroff", nil)
	a.ok("POST", "/v1/servers/"+sid+"/actions/change_type", json.RawMessage(`{"server_type":"cx32","upgrade_disk":false}`))
	a.ok("POST", "/v1/servers/"+sid+"/actions/poweron", nil)
}
