package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// res is one generated resource: its template entry, the number of actions its create awaits one after
// another, and the serial groups (Hetzner: one action at a time per network and per load balancer) it
// takes part in.
type res struct {
	id, typ  string
	props    map[string]any
	deps     []string // logical IDs it depends on (tokens or dependsOn)
	actions  int
	serial   []string
	explicit []string // dependsOn written into the template
}

type fleetSpec struct {
	resources []*res
}

func ref(id, attr string) map[string]any { return map[string]any{"ref": id, "attr": attr} }

// fleet generates n networks of s servers each (see the package documentation).
func fleet(n, s int) *fleetSpec {
	f := &fleetSpec{}
	add := func(r *res) { f.resources = append(f.resources, r) }
	for i := range n {
		net := fmt.Sprintf("Net%02d", i)
		sub, pg, lb := net+"Subnet", net+"Pg", net+"Lb"
		netKey, lbKey := "network="+net, "lb="+lb
		add(&res{id: net, typ: "Hetzner::Networking::Network", props: map[string]any{
			"name": fmt.Sprintf("fleet-net-%02d", i), "ipRange": fmt.Sprintf("10.%d.0.0/16", i)}})
		add(&res{id: sub, typ: "Hetzner::Networking::Subnet", deps: []string{net}, actions: 1, serial: []string{netKey},
			props: map[string]any{"networkId": ref(net, "networkId"), "type": "cloud", "networkZone": "eu-central",
				"ipRange": fmt.Sprintf("10.%d.1.0/24", i)}})
		add(&res{id: pg, typ: "Hetzner::Compute::PlacementGroup", props: map[string]any{
			"name": fmt.Sprintf("fleet-pg-%02d", i), "type": "spread"}})
		// create_load_balancer, then attach_to_network (a network change).
		add(&res{id: lb, typ: "Hetzner::Compute::LoadBalancer", deps: []string{net, sub}, explicit: []string{sub}, actions: 2,
			serial: []string{netKey, lbKey}, props: map[string]any{"name": fmt.Sprintf("fleet-lb-%02d", i),
				"loadBalancerType": "lb11", "networkId": ref(net, "networkId"), "networkZone": "eu-central",
				"labels": map[string]any{"fleet": fmt.Sprintf("%02d", i)}}})
		add(&res{id: lb + "Http", typ: "Hetzner::Compute::LoadBalancerService", deps: []string{lb}, actions: 1, serial: []string{lbKey},
			props: map[string]any{"loadBalancerId": ref(lb, "loadBalancerId"), "listenPort": 80, "protocol": "tcp", "destinationPort": 8080}})
		for j := range s {
			srv := fmt.Sprintf("%sServer%02d", net, j)
			add(&res{id: srv, typ: "Hetzner::Compute::Server", deps: []string{net, sub, pg}, explicit: []string{sub}, actions: 1,
				props: map[string]any{"name": fmt.Sprintf("fleet-%02d-%02d", i, j), "serverType": "cax11", "image": "ubuntu-24.04",
					"location": "nbg1", "placementGroupId": ref(pg, "placementGroupId"), "networks": []any{ref(net, "networkId")},
					"labels": map[string]any{"fleet": fmt.Sprintf("%02d", i), "role": "web"}}})
			add(&res{id: srv + "Target", typ: "Hetzner::Compute::LoadBalancerTarget", deps: []string{lb, srv}, actions: 1, serial: []string{lbKey},
				props: map[string]any{"loadBalancerId": ref(lb, "loadBalancerId"), "type": "server", "serverId": ref(srv, "serverId"), "usePrivateIp": true}})
		}
	}
	return f
}

// write writes the fleet as a one-stack cloud assembly into dir.
func (f *fleetSpec) write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	resources := map[string]any{}
	for _, r := range f.resources {
		e := map[string]any{"type": r.typ, "provider": "hetzner", "properties": r.props,
			"metadata": map[string]any{"cdkx:path": "Fleet/" + r.id}}
		if len(r.explicit) > 0 {
			e["dependsOn"] = r.explicit
		}
		resources[r.id] = e
	}
	manifest := map[string]any{"version": "1.0.0", "artifacts": map[string]any{
		"Fleet": map[string]any{"type": "cdkx:stack", "properties": map[string]any{"templateFile": "Fleet.json"}, "displayName": "Fleet"}}}
	for name, v := range map[string]any{"manifest.json": manifest, "Fleet.json": map[string]any{"resources": resources}} {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// countByType counts the resources of each type (the last segment of the type name).
func (f *fleetSpec) countByType() map[string]int {
	out := map[string]int{}
	for _, r := range f.resources {
		out[r.typ[strings.LastIndex(r.typ, ":")+1:]]++
	}
	out["LoadBalancerService/Target"] = out["LoadBalancerService"] + out["LoadBalancerTarget"]
	return out
}

// criticalPath schedules the fleet with unbounded concurrency: each resource starts when its
// dependencies are done and each of its serial groups is free (groups are taken in the order resources
// become ready, as the engine does), and runs actions × d. It returns when the last one ends.
func (f *fleetSpec) criticalPath(d time.Duration) time.Duration {
	done := map[string]time.Duration{}
	groupFree := map[string]time.Duration{}
	pending := append([]*res(nil), f.resources...)
	var end time.Duration
	for len(pending) > 0 {
		// Among the resources whose dependencies are done, start the one that can start earliest.
		best, bestStart := -1, time.Duration(0)
		for i, r := range pending {
			start, ready := time.Duration(0), true
			for _, dep := range r.deps {
				t, ok := done[dep]
				if !ok {
					ready = false
					break
				}
				start = max(start, t)
			}
			if !ready {
				continue
			}
			for _, g := range r.serial {
				start = max(start, groupFree[g])
			}
			if best < 0 || start < bestStart {
				best, bestStart = i, start
			}
		}
		r := pending[best]
		finish := bestStart + time.Duration(r.actions)*d
		done[r.id] = finish
		for _, g := range r.serial {
			groupFree[g] = finish
		}
		end = max(end, finish)
		pending = append(pending[:best], pending[best+1:]...)
	}
	return end
}
