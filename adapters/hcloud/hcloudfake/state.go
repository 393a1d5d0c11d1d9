package hcloudfake

import (
	"fmt"
	"maps"
	"net/http"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
)

// state is the project: every object by ID. Derived lists (network.servers, placement_group.servers,
// server.volumes, …) are computed when rendered, so they cannot go stale.
type state struct {
	actions       map[int64]*action
	running       map[int64]*action
	networks      map[int64]*network
	servers       map[int64]*server
	primaryIPs    map[int64]*primaryIP
	floatingIPs   map[int64]*floatingIP
	sshKeys       map[int64]*sshKey
	placementGrps map[int64]*placementGroup
	certificates  map[int64]*certificate
	volumes       map[int64]*volume
	firewalls     map[int64]*firewall
	loadBalancers map[int64]*loadBalancer
}

func newState() state {
	return state{
		actions: map[int64]*action{}, running: map[int64]*action{}, networks: map[int64]*network{}, servers: map[int64]*server{},
		primaryIPs: map[int64]*primaryIP{}, floatingIPs: map[int64]*floatingIP{}, sshKeys: map[int64]*sshKey{},
		placementGrps: map[int64]*placementGroup{}, certificates: map[int64]*certificate{}, volumes: map[int64]*volume{},
		firewalls: map[int64]*firewall{}, loadBalancers: map[int64]*loadBalancer{},
	}
}

type network struct{ schema.Network }

func (n *network) id() int64                   { return n.ID }
func (n *network) nameOf() string              { return n.Name }
func (n *network) labelsOf() map[string]string { return n.Labels }

type server struct {
	schema.Server
	dc             datacenter
	placementGroup int64
}

func (s *server) id() int64                   { return s.ID }
func (s *server) nameOf() string              { return s.Name }
func (s *server) labelsOf() map[string]string { return s.Labels }

type primaryIP struct {
	schema.PrimaryIP
	dc datacenter
}

func (p *primaryIP) id() int64                   { return p.ID }
func (p *primaryIP) nameOf() string              { return p.Name }
func (p *primaryIP) labelsOf() map[string]string { return p.Labels }

type floatingIP struct{ schema.FloatingIP }

func (p *floatingIP) id() int64                   { return p.ID }
func (p *floatingIP) nameOf() string              { return p.Name }
func (p *floatingIP) labelsOf() map[string]string { return p.Labels }

type sshKey struct{ schema.SSHKey }

func (k *sshKey) id() int64                   { return k.ID }
func (k *sshKey) nameOf() string              { return k.Name }
func (k *sshKey) labelsOf() map[string]string { return k.Labels }

type placementGroup struct{ schema.PlacementGroup }

func (p *placementGroup) id() int64                   { return p.ID }
func (p *placementGroup) nameOf() string              { return p.Name }
func (p *placementGroup) labelsOf() map[string]string { return p.Labels }

type certificate struct{ schema.Certificate }

func (c *certificate) id() int64                   { return c.ID }
func (c *certificate) nameOf() string              { return c.Name }
func (c *certificate) labelsOf() map[string]string { return c.Labels }

type volume struct{ schema.Volume }

func (v *volume) id() int64                   { return v.ID }
func (v *volume) nameOf() string              { return v.Name }
func (v *volume) labelsOf() map[string]string { return v.Labels }

type firewall struct{ schema.Firewall }

func (w *firewall) id() int64                   { return w.ID }
func (w *firewall) nameOf() string              { return w.Name }
func (w *firewall) labelsOf() map[string]string { return w.Labels }

type loadBalancer struct{ schema.LoadBalancer }

func (l *loadBalancer) id() int64                   { return l.ID }
func (l *loadBalancer) nameOf() string              { return l.Name }
func (l *loadBalancer) labelsOf() map[string]string { return l.Labels }

// values returns the map's values (any order; list sorts by ID).
func values[T any](m map[int64]T) []T {
	out := make([]T, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// nameTaken reports whether another object than self already uses name.
func nameTaken[T listed](m map[int64]T, name string, self int64) bool {
	for id, v := range m {
		if id != self && v.nameOf() == name {
			return true
		}
	}
	return false
}

func labelsOrEmpty(l *map[string]string) map[string]string {
	if l == nil || *l == nil {
		return map[string]string{}
	}
	return maps.Clone(*l)
}

// validLabels checks keys and values roughly like Hetzner (https://docs.hetzner.cloud/#labels).
func validLabels(l map[string]string) error {
	for k, v := range l {
		if k == "" || len(k) > 253 || len(v) > 63 {
			return invalid(field{"labels", fmt.Sprintf("invalid label %q=%q", k, v)})
		}
	}
	return nil
}

func (f *Fake) newID() int64 {
	f.nextID++
	return f.nextID
}

func (f *Fake) created() time.Time { return f.now().UTC().Truncate(time.Second) }

// publicIP returns a fresh public address: an IPv4 address or an IPv6 /64 network.
func (f *Fake) publicIP(typ string) string {
	f.ipSeq++
	if typ == "ipv6" {
		return fmt.Sprintf("2a01:4f8:c0c:%x::/64", f.ipSeq)
	}
	return fmt.Sprintf("49.13.%d.%d", f.ipSeq/250, f.ipSeq%250+2)
}

func (f *Fake) routes() {
	f.actionRoutes()
	f.staticRoutes()
	f.networkRoutes()
	f.serverRoutes()
	f.primaryIPRoutes()
	f.floatingIPRoutes()
	f.sshKeyRoutes()
	f.placementGroupRoutes()
	f.certificateRoutes()
	f.volumeRoutes()
	f.firewallRoutes()
	f.loadBalancerRoutes()
	f.handle("/v1/", func(r *http.Request) (int, any, error) {
		return 0, nil, errNotFound("route " + r.Method + " " + r.URL.Path)
	})
}
