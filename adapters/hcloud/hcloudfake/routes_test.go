package hcloudfake

import (
	"encoding/json"
	"strconv"
	"testing"
)

// actionID returns the ID of the action in an answer: its "action", or the first of its "actions".
func actionID(t *testing.T, out map[string]any) string {
	t.Helper()
	if a, ok := out["action"].(map[string]any); ok {
		return strconv.FormatFloat(a["id"].(float64), 'f', -1, 64)
	}
	if as, ok := out["actions"].([]any); ok && len(as) > 0 {
		return strconv.FormatFloat(as[0].(map[string]any)["id"].(float64), 'f', -1, 64)
	}
	t.Fatalf("no action in %v", out)
	return ""
}

// TestEveryRouteAnswersPerSpec sends a request that succeeds to each route the other tests leave out
// (updates, the less common actions, per-kind action lists, static lookups by ID), every request and
// answer checked against the spec. TestMain then finds every route of Fake.Routes answered at least once.
func TestEveryRouteAnswersPerSpec(t *testing.T) {
	t.Parallel()
	_, a := newAPI(t, Options{}, true)
	walkEveryRoute(t, a)
}

// walkEveryRoute builds a project through a and calls, with success, every route of Fake.Routes that the
// other tests do not; a fails the test on any answer that is not 2xx.
func walkEveryRoute(t *testing.T, a *api) {
	t.Helper()
	actions := func(kind, objID, actID string) {
		t.Helper()
		a.ok("GET", "/v1/"+kind+"/actions", nil)
		a.ok("GET", "/v1/"+kind+"/"+objID+"/actions", nil)
		a.ok("GET", "/v1/"+kind+"/"+objID+"/actions/"+actID, nil)
	}
	num := func(s string) json.Number { return json.Number(s) }

	// Static lists and lookups by ID.
	for _, kind := range []string{"datacenters", "locations", "server_types", "load_balancer_types", "images"} {
		first := a.ok("GET", "/v1/"+kind, nil)[kind].([]any)[0].(map[string]any)
		a.ok("GET", "/v1/"+kind+"/"+strconv.FormatFloat(first["id"].(float64), 'f', -1, 64), nil)
	}

	// Networks.
	netID := id(a.ok("POST", "/v1/networks", map[string]any{"name": "net", "ip_range": "10.0.0.0/16"}), "network")
	net := "/v1/networks/" + netID
	a.ok("PUT", net, map[string]any{"name": "net2", "labels": map[string]any{"env": "test"}})
	a.ok("POST", net+"/actions/add_subnet", map[string]any{"type": "cloud", "network_zone": "eu-central", "ip_range": "10.0.1.0/24"})
	a.ok("POST", net+"/actions/add_subnet", map[string]any{"type": "cloud", "network_zone": "eu-central", "ip_range": "10.0.2.0/24"})
	a.ok("POST", net+"/actions/delete_subnet", map[string]any{"ip_range": "10.0.2.0/24"})
	route := map[string]any{"destination": "10.9.0.0/24", "gateway": "10.0.1.5"}
	a.ok("POST", net+"/actions/add_route", route)
	a.ok("POST", net+"/actions/delete_route", route)
	a.ok("POST", net+"/actions/change_ip_range", map[string]any{"ip_range": "10.0.0.0/15"})
	actions("networks", netID, actionID(t, a.ok("POST", net+"/actions/change_protection", map[string]any{"delete": false})))

	// Servers and placement groups.
	sid := id(a.ok("POST", "/v1/servers", map[string]any{"name": "s1", "server_type": "cx22", "image": "ubuntu-24.04", "location": "fsn1"}), "server")
	srv := "/v1/servers/" + sid
	a.ok("PUT", srv, map[string]any{"name": "s1b"})
	a.ok("POST", srv+"/actions/attach_to_network", map[string]any{"network": num(netID)})
	a.ok("POST", srv+"/actions/detach_from_network", map[string]any{"network": num(netID)})
	a.ok("POST", srv+"/actions/reboot", nil)
	a.ok("POST", srv+"/actions/reset", nil)
	a.ok("POST", srv+"/actions/change_protection", map[string]any{"delete": false, "rebuild": false})
	actions("servers", sid, actionID(t, a.ok("POST", srv+"/actions/shutdown", nil)))
	pgID := id(a.ok("POST", "/v1/placement_groups", map[string]any{"name": "pg", "type": "spread"}), "placement_group")
	a.ok("PUT", "/v1/placement_groups/"+pgID, map[string]any{"name": "pg2"})
	a.ok("POST", srv+"/actions/add_to_placement_group", map[string]any{"placement_group": num(pgID)})
	a.ok("POST", srv+"/actions/remove_from_placement_group", nil)

	// Primary IPs: the server is off; its own IPv4 makes way for a new one.
	own := a.ok("GET", srv, nil)["server"].(map[string]any)["public_net"].(map[string]any)["ipv4"].(map[string]any)
	a.ok("POST", "/v1/primary_ips/"+strconv.FormatFloat(own["id"].(float64), 'f', -1, 64)+"/actions/unassign", nil)
	pipID := id(a.ok("POST", "/v1/primary_ips", map[string]any{"name": "p1", "type": "ipv4", "assignee_type": "server", "location": "fsn1"}), "primary_ip")
	pip := "/v1/primary_ips/" + pipID
	a.ok("PUT", pip, map[string]any{"name": "p2"})
	a.ok("POST", pip+"/actions/assign", map[string]any{"assignee_id": num(sid), "assignee_type": "server"})
	actions("primary_ips", pipID, actionID(t, a.ok("POST", pip+"/actions/change_protection", map[string]any{"delete": false})))

	// Floating IPs.
	fipID := id(a.ok("POST", "/v1/floating_ips", map[string]any{"type": "ipv4", "home_location": "fsn1"}), "floating_ip")
	fip := "/v1/floating_ips/" + fipID
	a.ok("PUT", fip, map[string]any{"description": "spare"})
	a.ok("POST", fip+"/actions/assign", map[string]any{"server": num(sid)})
	a.ok("POST", fip+"/actions/unassign", nil)
	actions("floating_ips", fipID, actionID(t, a.ok("POST", fip+"/actions/change_protection", map[string]any{"delete": false})))

	// Volumes.
	volID := id(a.ok("POST", "/v1/volumes", map[string]any{"name": "v1", "size": 10, "location": "fsn1"}), "volume")
	vol := "/v1/volumes/" + volID
	a.ok("PUT", vol, map[string]any{"name": "v2"})
	a.ok("POST", vol+"/actions/attach", map[string]any{"server": num(sid)})
	a.ok("POST", vol+"/actions/detach", nil)
	a.ok("POST", vol+"/actions/resize", map[string]any{"size": 20})
	actions("volumes", volID, actionID(t, a.ok("POST", vol+"/actions/change_protection", map[string]any{"delete": false})))

	// Load Balancers.
	lbID := id(a.ok("POST", "/v1/load_balancers", map[string]any{"name": "lb", "load_balancer_type": "lb11", "location": "fsn1"}), "load_balancer")
	lb := "/v1/load_balancers/" + lbID
	a.ok("PUT", lb, map[string]any{"name": "lb2"})
	a.ok("POST", lb+"/actions/add_service", map[string]any{"protocol": "tcp", "listen_port": 80, "destination_port": 80, "proxyprotocol": false,
		"health_check": map[string]any{"protocol": "tcp", "port": 80, "interval": 15, "timeout": 10, "retries": 3}})
	a.ok("POST", lb+"/actions/update_service", map[string]any{"listen_port": 80, "destination_port": 8080})
	a.ok("POST", lb+"/actions/delete_service", map[string]any{"listen_port": 80})
	target := map[string]any{"type": "server", "server": map[string]any{"id": num(sid)}}
	a.ok("POST", lb+"/actions/add_target", target)
	a.ok("POST", lb+"/actions/remove_target", target)
	a.ok("POST", lb+"/actions/attach_to_network", map[string]any{"network": num(netID)})
	a.ok("POST", lb+"/actions/disable_public_interface", nil) // only while attached to a network
	a.ok("POST", lb+"/actions/enable_public_interface", nil)
	a.ok("POST", lb+"/actions/detach_from_network", map[string]any{"network": num(netID)})
	a.ok("POST", lb+"/actions/change_algorithm", map[string]any{"type": "least_connections"})
	a.ok("POST", lb+"/actions/change_type", map[string]any{"load_balancer_type": "lb21"})
	actions("load_balancers", lbID, actionID(t, a.ok("POST", lb+"/actions/change_protection", map[string]any{"delete": false})))
	a.ok("DELETE", lb, nil)

	// Certificates: a managed one starts an action.
	certID := id(a.ok("POST", "/v1/certificates", map[string]any{"name": "c", "type": "managed", "domain_names": []any{"example.com"}}), "certificate")
	cert := a.ok("POST", "/v1/certificates", map[string]any{"name": "m", "type": "managed", "domain_names": []any{"www.example.com"}})
	a.ok("PUT", "/v1/certificates/"+certID, map[string]any{"name": "c2"})
	actions("certificates", id(cert, "certificate"), actionID(t, cert))

	// Firewalls, SSH keys.
	fwID := id(a.ok("POST", "/v1/firewalls", map[string]any{"name": "fw"}), "firewall")
	a.ok("PUT", "/v1/firewalls/"+fwID, map[string]any{"name": "fw2"})
	actions("firewalls", fwID, actionID(t, a.ok("POST", "/v1/firewalls/"+fwID+"/actions/set_rules", map[string]any{"rules": []any{}})))
	keyID := id(a.ok("POST", "/v1/ssh_keys", map[string]any{"name": "k", "public_key": sshPublicKey(t)}), "ssh_key")
	a.ok("PUT", "/v1/ssh_keys/"+keyID, map[string]any{"name": "k2"})
}
