package hcloudfake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// api sends raw requests to a fake; responses are checked against the spec, requests only when strict.
type api struct {
	t    *testing.T
	base string
	hc   *http.Client
}

func newAPI(t *testing.T, opts Options, strict bool) (*Fake, *api) {
	t.Helper()
	if opts.Token == "" {
		opts.Token = testToken
	}
	f, url, _ := newSpecServer(t, opts)
	return f, &api{t: t, base: url, hc: &http.Client{Transport: &specTransport{t: t, seen: suiteCoverage, router: loadSpec(t), base: http.DefaultTransport, noRequestCheck: !strict}}}
}

// call sends body as JSON with the test token and returns the status, the decoded JSON answer and headers.
func (a *api) call(method, path string, body any) (int, map[string]any, http.Header) {
	a.t.Helper()
	return a.callToken(testToken, method, path, body)
}

func (a *api) callToken(token, method, path string, body any) (int, map[string]any, http.Header) {
	a.t.Helper()
	var rd io.Reader
	if raw, ok := body.(json.RawMessage); ok {
		rd = bytes.NewReader(raw)
	} else if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			a.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, a.base+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.hc.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	raw, _ := io.ReadAll(resp.Body)
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			a.t.Fatalf("%s %s: answer is not JSON: %s", method, path, raw)
		}
	}
	return resp.StatusCode, out, resp.Header
}

// ok calls and fails the test unless the status is 2xx.
func (a *api) ok(method, path string, body any) map[string]any {
	a.t.Helper()
	status, out, _ := a.call(method, path, body)
	if status/100 != 2 {
		a.t.Fatalf("%s %s = %d %v, want 2xx", method, path, status, out)
	}
	return out
}

func id(m map[string]any, key string) string {
	return strconv.FormatFloat(m[key].(map[string]any)["id"].(float64), 'f', -1, 64)
}

func errCodeOf(out map[string]any) string {
	e, _ := out["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func TestErrorCodes(t *testing.T) {
	t.Parallel()
	_, a := newAPI(t, Options{}, false)
	netID := id(a.ok("POST", "/v1/networks", map[string]any{"name": "net", "ip_range": "10.0.0.0/16"}), "network")
	a.ok("POST", "/v1/networks/"+netID+"/actions/add_subnet", map[string]any{"type": "cloud", "network_zone": "eu-central", "ip_range": "10.0.1.0/24"})
	key := sshPublicKey(t)
	a.ok("POST", "/v1/ssh_keys", map[string]any{"name": "k1", "public_key": key})
	srvID := id(a.ok("POST", "/v1/servers", map[string]any{"name": "s1", "server_type": "cx22", "image": "ubuntu-24.04", "networks": []any{json.Number(netID)}}), "server")
	pipID := id(a.ok("POST", "/v1/primary_ips", map[string]any{"name": "p1", "type": "ipv4", "assignee_type": "server", "location": "fsn1"}), "primary_ip")
	fwID := id(a.ok("POST", "/v1/firewalls", map[string]any{"name": "fw", "apply_to": []any{map[string]any{"type": "server", "server": map[string]any{"id": json.Number(srvID)}}}}), "firewall")
	lbID := id(a.ok("POST", "/v1/load_balancers", map[string]any{"name": "lb", "load_balancer_type": "lb11", "location": "fsn1"}), "load_balancer")
	svc := map[string]any{"protocol": "tcp", "listen_port": 80, "destination_port": 80, "proxyprotocol": false,
		"health_check": map[string]any{"protocol": "tcp", "port": 80, "interval": 15, "timeout": 10, "retries": 3}}
	a.ok("POST", "/v1/load_balancers/"+lbID+"/actions/add_service", svc)
	volID := id(a.ok("POST", "/v1/volumes", map[string]any{"name": "v1", "size": 10, "server": json.Number(srvID)}), "volume")
	other := id(a.ok("POST", "/v1/networks", map[string]any{"name": "other", "ip_range": "10.1.0.0/16"}), "network")

	tests := []struct {
		name         string
		token        string
		method, path string
		body         any
		status       int
		code         string
		field        string
	}{
		{"no token", "-", "GET", "/v1/networks", nil, 401, "unauthorized", ""},
		{"wrong token", "nope", "GET", "/v1/networks", nil, 401, "unauthorized", ""},
		{"unknown network", "", "GET", "/v1/networks/999999", nil, 404, "not_found", ""},
		{"duplicate network name", "", "POST", "/v1/networks", map[string]any{"name": "net", "ip_range": "10.2.0.0/16"}, 409, "uniqueness_error", "name"},
		{"duplicate ssh key name", "", "POST", "/v1/ssh_keys", map[string]any{"name": "k1", "public_key": sshPublicKey(t)}, 409, "uniqueness_error", "name"},
		{"duplicate ssh key", "", "POST", "/v1/ssh_keys", map[string]any{"name": "k2", "public_key": key}, 409, "uniqueness_error", "public_key"},
		{"invalid ssh key", "", "POST", "/v1/ssh_keys", map[string]any{"name": "k3", "public_key": "nonsense"}, 422, "invalid_input", "public_key"},
		{"duplicate server name", "", "POST", "/v1/servers", map[string]any{"name": "s1", "server_type": "cx22", "image": "debian-12"}, 409, "uniqueness_error", "name"},
		{"network without ip_range", "", "POST", "/v1/networks", map[string]any{"name": "x"}, 422, "invalid_input", "ip_range"},
		{"public network range", "", "POST", "/v1/networks", map[string]any{"name": "x", "ip_range": "8.8.0.0/16"}, 422, "invalid_input", "ip_range"},
		{"subnet outside network", "", "POST", "/v1/networks/" + netID + "/actions/add_subnet", map[string]any{"type": "cloud", "network_zone": "eu-central", "ip_range": "10.9.0.0/24"}, 422, "invalid_input", "ip_range"},
		{"overlapping subnet", "", "POST", "/v1/networks/" + netID + "/actions/add_subnet", map[string]any{"type": "cloud", "network_zone": "eu-central", "ip_range": "10.0.1.128/25"}, 422, "invalid_input", "ip_range"},
		{"route via 172.31.1.1", "", "POST", "/v1/networks/" + netID + "/actions/add_route", map[string]any{"destination": "10.100.0.0/24", "gateway": "172.31.1.1"}, 422, "invalid_input", "gateway"},
		{"route via network address", "", "POST", "/v1/networks/" + netID + "/actions/add_route", map[string]any{"destination": "10.100.0.0/24", "gateway": "10.0.0.0"}, 422, "invalid_input", "gateway"},
		{"route outside network", "", "POST", "/v1/networks/" + netID + "/actions/add_route", map[string]any{"destination": "10.100.0.0/24", "gateway": "10.5.0.1"}, 422, "invalid_input", "gateway"},
		{"server without subnet in zone", "", "POST", "/v1/servers", map[string]any{"name": "s9", "server_type": "cx22", "image": "debian-12", "location": "ash", "networks": []any{json.Number(netID)}}, 422, "no_subnet_available", ""},
		{"unknown server type", "", "POST", "/v1/servers", map[string]any{"name": "s9", "server_type": "cx99", "image": "debian-12"}, 422, "invalid_input", "server_type"},
		{"unknown image", "", "POST", "/v1/servers", map[string]any{"name": "s9", "server_type": "cx22", "image": "windows"}, 422, "invalid_input", "image"},
		{"unknown ssh key", "", "POST", "/v1/servers", map[string]any{"name": "s9", "server_type": "cx22", "image": "debian-12", "ssh_keys": []any{"nope"}}, 422, "invalid_input", "ssh_keys"},
		{"assign primary IP to running server", "", "POST", "/v1/primary_ips/" + pipID + "/actions/assign", map[string]any{"assignee_id": json.Number(srvID), "assignee_type": "server"}, 422, "server_not_stopped", ""},
		{"delete firewall in use", "", "DELETE", "/v1/firewalls/" + fwID, nil, 422, "resource_in_use", ""},
		{"apply firewall twice", "", "POST", "/v1/firewalls/" + fwID + "/actions/apply_to_resources", map[string]any{"apply_to": []any{map[string]any{"type": "server", "server": map[string]any{"id": json.Number(srvID)}}}}, 422, "firewall_already_applied", ""},
		{"duplicate listen port", "", "POST", "/v1/load_balancers/" + lbID + "/actions/add_service", svc, 412, "source_port_already_used", ""},
		{"private target outside LB networks", "", "POST", "/v1/load_balancers/" + lbID + "/actions/add_target", map[string]any{"type": "server", "server": map[string]any{"id": json.Number(srvID)}, "use_private_ip": true}, 422, "load_balancer_not_attached_to_network", ""},
		{"delete attached volume", "", "DELETE", "/v1/volumes/" + volID, nil, 422, "resource_in_use", ""},
		{"attach to network twice", "", "POST", "/v1/servers/" + srvID + "/actions/attach_to_network", map[string]any{"network": json.Number(netID)}, 422, "server_already_attached", ""},
		{"attach to network without subnet", "", "POST", "/v1/servers/" + srvID + "/actions/attach_to_network", map[string]any{"network": json.Number(other)}, 422, "no_subnet_available", ""},
		{"malformed JSON", "", "POST", "/v1/networks", json.RawMessage(`{"name":`), 400, "json_error", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // every case is refused, so none changes the shared fake
			token := testToken
			switch tt.token {
			case "-":
				token = ""
			case "":
			default:
				token = tt.token
			}
			a := &api{t: t, base: a.base, hc: a.hc}
			status, out, _ := a.callToken(token, tt.method, tt.path, tt.body)
			if status != tt.status || errCodeOf(out) != tt.code {
				t.Fatalf("%s %s = %d %q, want %d %q (%v)", tt.method, tt.path, status, errCodeOf(out), tt.status, tt.code, out)
			}
			if tt.field != "" {
				fields, _ := out["error"].(map[string]any)["details"].(map[string]any)["fields"].([]any)
				if len(fields) == 0 || fields[0].(map[string]any)["name"] != tt.field {
					t.Errorf("details.fields = %v, want a field %q", fields, tt.field)
				}
			}
		})
	}
}

func TestAssignedIPsCannotBeDeleted(t *testing.T) {
	t.Parallel()
	_, a := newAPI(t, Options{}, true)
	srv := a.ok("POST", "/v1/servers", map[string]any{"name": "s1", "server_type": "cx22", "image": "debian-12"})["server"].(map[string]any)
	pip := strconv.FormatFloat(srv["public_net"].(map[string]any)["ipv4"].(map[string]any)["id"].(float64), 'f', -1, 64)
	if status, out, _ := a.call("DELETE", "/v1/primary_ips/"+pip, nil); status != 422 || errCodeOf(out) != "must_be_unassigned" {
		t.Errorf("delete assigned primary IP = %d %v, want 422 must_be_unassigned", status, out)
	}
	sid := strconv.FormatFloat(srv["id"].(float64), 'f', -1, 64)
	fip := id(a.ok("POST", "/v1/floating_ips", map[string]any{"type": "ipv4", "server": json.Number(sid)}), "floating_ip")
	if status, out, _ := a.call("DELETE", "/v1/floating_ips/"+fip, nil); status != 422 || errCodeOf(out) != "must_be_unassigned" {
		t.Errorf("delete assigned floating IP = %d %v, want 422 must_be_unassigned", status, out)
	}
	// Powered off, the server's IPv4 can be unassigned, then deleted.
	a.ok("POST", "/v1/servers/"+sid+"/actions/poweroff", nil)
	a.ok("POST", "/v1/primary_ips/"+pip+"/actions/unassign", nil)
	if status, _, _ := a.call("DELETE", "/v1/primary_ips/"+pip, nil); status != 204 {
		t.Errorf("delete unassigned primary IP = %d, want 204", status)
	}
	// Deleting the server deletes its auto-created IPv6 and unassigns the floating IP.
	a.ok("DELETE", "/v1/servers/"+sid, nil)
	if got := a.ok("GET", "/v1/primary_ips", nil)["primary_ips"].([]any); len(got) != 0 {
		t.Errorf("primary IPs after server delete = %v, want none", got)
	}
	if got := a.ok("GET", "/v1/floating_ips/"+fip, nil)["floating_ip"].(map[string]any)["server"]; got != nil {
		t.Errorf("floating IP server after server delete = %v, want null", got)
	}
}

func TestLockedWhileActionRuns(t *testing.T) {
	t.Parallel()
	_, a := newAPI(t, Options{ActionPolls: 4}, true)
	netID := id(a.ok("POST", "/v1/networks", map[string]any{"name": "net", "ip_range": "10.0.0.0/16"}), "network")
	act := a.ok("POST", "/v1/networks/"+netID+"/actions/add_subnet", map[string]any{"type": "cloud", "network_zone": "eu-central"})["action"].(map[string]any)
	actID := strconv.FormatFloat(act["id"].(float64), 'f', -1, 64)
	if act["status"] != "running" || act["progress"].(float64) != 0 {
		t.Fatalf("new action = %v, want running at 0%%", act)
	}
	// The effect is visible at once; the network is held.
	if subnets := a.ok("GET", "/v1/networks/"+netID, nil)["network"].(map[string]any)["subnets"].([]any); len(subnets) != 1 {
		t.Errorf("subnets while running = %v, want 1", subnets)
	}
	for _, req := range []struct{ method, path string }{{"POST", "/v1/networks/" + netID + "/actions/add_route"}, {"DELETE", "/v1/networks/" + netID}} {
		status, out, _ := a.call(req.method, req.path, map[string]any{"destination": "10.9.0.0/24", "gateway": "10.0.0.5"})
		if req.method == "DELETE" {
			status, out, _ = a.call(req.method, req.path, nil)
		}
		if status != 423 || errCodeOf(out) != "locked" {
			t.Errorf("%s %s while an action runs = %d %v, want 423 locked", req.method, req.path, status, out)
		}
	}
	var progress []float64
	for range 4 {
		got := a.ok("GET", "/v1/actions/"+actID, nil)["action"].(map[string]any)
		progress = append(progress, got["progress"].(float64))
		if got["status"] == "success" && got["finished"] == nil {
			t.Error("finished action without finished time")
		}
	}
	if diff := cmp.Diff([]float64{25, 50, 75, 100}, progress); diff != "" {
		t.Errorf("progress per poll (-want +got):\n%s", diff)
	}
	a.ok("POST", "/v1/networks/"+netID+"/actions/add_route", map[string]any{"destination": "10.9.0.0/24", "gateway": "10.0.0.5"})
	// GET /actions?id= polls too.
	list := a.ok("GET", "/v1/actions?id="+actID, nil)["actions"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["status"] != "success" {
		t.Errorf("GET /actions?id= = %v, want the finished action", list)
	}
}

func TestActionDurationWithClock(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	_, a := newAPI(t, Options{ActionDuration: 10 * time.Second, Now: clock}, true)
	srv := a.ok("POST", "/v1/servers", map[string]any{"name": "s1", "server_type": "cx22", "image": "debian-12"})
	sid, aid := id(srv, "server"), id(srv, "action")
	advance(5 * time.Second)
	act := a.ok("GET", "/v1/actions/"+aid, nil)["action"].(map[string]any)
	if act["status"] != "running" || act["progress"].(float64) != 50 {
		t.Errorf("action after 5 of 10 s = %v %v, want running 50", act["status"], act["progress"])
	}
	if st := a.ok("GET", "/v1/servers/"+sid, nil)["server"].(map[string]any)["status"]; st != "initializing" {
		t.Errorf("server status while creating = %v, want initializing", st)
	}
	if status, out, _ := a.call("POST", "/v1/servers/"+sid+"/actions/poweroff", nil); status != 423 {
		t.Errorf("poweroff while creating = %d %v, want 423", status, out)
	}
	advance(5 * time.Second)
	if st := a.ok("GET", "/v1/servers/"+sid, nil)["server"].(map[string]any)["status"]; st != "running" {
		t.Errorf("server status after create = %v, want running", st)
	}
}

func TestPaginationAndLabelSelector(t *testing.T) {
	t.Parallel()
	_, a := newAPI(t, Options{}, true)
	for i := range 30 {
		labels := map[string]string{"env": []string{"prod", "dev", "test"}[i%3]}
		if i%2 == 0 {
			labels["tier"] = "web"
		}
		a.ok("POST", "/v1/networks", map[string]any{"name": fmt.Sprintf("net%02d", i), "ip_range": fmt.Sprintf("10.%d.0.0/16", i), "labels": labels})
	}
	page2 := a.ok("GET", "/v1/networks?page=2", nil)
	pag := page2["meta"].(map[string]any)["pagination"].(map[string]any)
	want := map[string]any{"page": 2.0, "per_page": 25.0, "previous_page": 1.0, "next_page": nil, "last_page": 2.0, "total_entries": 30.0}
	if diff := cmp.Diff(want, pag); diff != "" || len(page2["networks"].([]any)) != 5 {
		t.Errorf("page 2 meta (-want +got):\n%s, %d items", diff, len(page2["networks"].([]any)))
	}
	if n := len(a.ok("GET", "/v1/networks?per_page=100", nil)["networks"].([]any)); n != 30 {
		t.Errorf("per_page=100 gave %d, want all 30 (capped at 50)", n)
	}
	for sel, n := range map[string]int{
		"env=prod": 10, "env!=prod": 20, "tier": 15, "!tier": 15, "env in (prod,dev)": 20, "env notin (prod,dev)": 10,
		"env=prod,tier=web": 5, "env==dev": 10, "missing": 0,
	} {
		got := a.ok("GET", "/v1/networks?per_page=50&label_selector="+urlQuery(sel), nil)["networks"].([]any)
		if len(got) != n {
			t.Errorf("label_selector %q matched %d, want %d", sel, len(got), n)
		}
	}
	if got := a.ok("GET", "/v1/networks?name=net07", nil)["networks"].([]any); len(got) != 1 {
		t.Errorf("name=net07 matched %d, want 1", len(got))
	}
}

func urlQuery(s string) string {
	var b bytes.Buffer
	for _, c := range []byte(s) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

func TestFaultRate(t *testing.T) {
	t.Parallel()
	f, a := newAPI(t, Options{FaultRate: 0.3, Seed: 42}, true)
	codes := map[int]int{}
	for i := range 200 {
		status, out, h := a.call("POST", "/v1/networks", map[string]any{"name": fmt.Sprintf("n%d", i), "ip_range": "10.0.0.0/16"})
		codes[status]++
		if status == 429 && (errCodeOf(out) != "rate_limit_exceeded" || h.Get("RateLimit-Reset") == "") {
			t.Errorf("429 = %v %v, want rate_limit_exceeded with RateLimit-* headers", out, h)
		}
		if status == 503 && errCodeOf(out) != "unavailable" {
			t.Errorf("503 = %v, want unavailable", out)
		}
	}
	faults := codes[429] + codes[503]
	if faults < 35 || faults > 85 || codes[429] == 0 || codes[503] == 0 {
		t.Errorf("status counts %v: want about 60 of 200 faults, both kinds", codes)
	}
	// Faulty requests changed nothing.
	f.opts.FaultRate = 0
	if got := len(f.st.networks); got != codes[201] {
		t.Errorf("networks = %d, want one per 201 (%d)", got, codes[201])
	}
}

func TestRateLimitBucket(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	_, a := newAPI(t, Options{RateLimit: 3, Now: clock}, true)
	var remaining []string
	for range 3 {
		status, _, h := a.call("GET", "/v1/locations", nil)
		if status != 200 || h.Get("RateLimit-Limit") != "3" {
			t.Fatalf("status %d, limit %q; want 200 and 3", status, h.Get("RateLimit-Limit"))
		}
		remaining = append(remaining, h.Get("RateLimit-Remaining"))
	}
	if diff := cmp.Diff([]string{"2", "1", "0"}, remaining); diff != "" {
		t.Errorf("RateLimit-Remaining (-want +got):\n%s", diff)
	}
	status, out, h := a.call("GET", "/v1/locations", nil)
	if status != 429 || errCodeOf(out) != "rate_limit_exceeded" || h.Get("RateLimit-Reset") != strconv.FormatInt(now.Unix()+3, 10) {
		t.Errorf("4th request = %d %v reset %s, want 429 rate_limit_exceeded reset %d", status, out, h.Get("RateLimit-Reset"), now.Unix()+3)
	}
	mu.Lock()
	now = now.Add(time.Second)
	mu.Unlock()
	if status, _, _ := a.call("GET", "/v1/locations", nil); status != 200 {
		t.Errorf("after 1 s = %d, want 200 (one token refilled)", status)
	}
	// Without a limit the headers still come, with a large limit.
	_, b := newAPI(t, Options{}, true)
	if _, _, h := b.call("GET", "/v1/locations", nil); h.Get("RateLimit-Limit") != "3600" {
		t.Errorf("unlimited RateLimit-Limit = %q, want 3600", h.Get("RateLimit-Limit"))
	}
}

func TestFailActions(t *testing.T) {
	t.Parallel()
	f, a := newAPI(t, Options{ActionPolls: 1}, true)
	f.FailActions("create_server", 1)
	srv := a.ok("POST", "/v1/servers", map[string]any{"name": "s1", "server_type": "cx22", "image": "debian-12"})
	sid, aid := id(srv, "server"), id(srv, "action")
	if n := len(a.ok("GET", "/v1/primary_ips", nil)["primary_ips"].([]any)); n != 2 {
		t.Errorf("primary IPs while creating = %d, want 2", n)
	}
	act := a.ok("GET", "/v1/actions/"+aid, nil)["action"].(map[string]any)
	if act["status"] != "error" || act["error"].(map[string]any)["code"] != "action_failed" {
		t.Errorf("failed action = %v, want status error, code action_failed", act)
	}
	if status, _, _ := a.call("GET", "/v1/servers/"+sid, nil); status != 404 {
		t.Errorf("server after failed create = %d, want 404", status)
	}
	if n := len(a.ok("GET", "/v1/primary_ips", nil)["primary_ips"].([]any)); n != 0 {
		t.Errorf("primary IPs after failed create = %d, want 0", n)
	}
	// The next create succeeds.
	a.ok("POST", "/v1/servers", map[string]any{"name": "s1", "server_type": "cx22", "image": "debian-12"})

	// Over HTTP, as the binary offers it.
	if status, _, _ := a.call("POST", "/_fake/fail-actions", map[string]any{"command": "add_subnet", "count": 1}); status != 200 {
		t.Fatalf("POST /_fake/fail-actions = %d, want 200", status)
	}
	netID := id(a.ok("POST", "/v1/networks", map[string]any{"name": "net", "ip_range": "10.0.0.0/16"}), "network")
	aid = id(a.ok("POST", "/v1/networks/"+netID+"/actions/add_subnet", map[string]any{"type": "cloud", "network_zone": "eu-central"}), "action")
	if st := a.ok("GET", "/v1/actions/"+aid, nil)["action"].(map[string]any)["status"]; st != "error" {
		t.Errorf("add_subnet status = %v, want error", st)
	}
	if subnets := a.ok("GET", "/v1/networks/"+netID, nil)["network"].(map[string]any)["subnets"].([]any); len(subnets) != 0 {
		t.Errorf("subnets after a failed add_subnet = %v, want none", subnets)
	}
	_, log, _ := a.call("GET", "/_fake/requests", nil)
	if n := log["counts"].(map[string]any)["POST /networks/{id}/actions/add_subnet"]; n != 1.0 {
		t.Errorf("request log count for add_subnet = %v, want 1 (%v)", n, log["counts"])
	}
}

func TestConcurrentRequests(t *testing.T) {
	t.Parallel()
	_, a := newAPI(t, Options{}, true)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.ok("POST", "/v1/networks", map[string]any{"name": fmt.Sprintf("n%d", i), "ip_range": "10.0.0.0/16"})
		}()
	}
	wg.Wait()
	if n := len(a.ok("GET", "/v1/networks?per_page=50", nil)["networks"].([]any)); n != 50 {
		t.Errorf("networks = %d, want 50", n)
	}
}
