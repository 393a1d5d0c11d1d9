package hcloudfake

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
)

// The read-only catalogue: locations, datacenters, server types, images and Load Balancer types.

var locations = []schema.Location{
	{ID: 1, Name: "fsn1", Description: "Falkenstein DC Park 1", Country: "DE", City: "Falkenstein", Latitude: 50.47612, Longitude: 12.370071, NetworkZone: "eu-central"},
	{ID: 2, Name: "nbg1", Description: "Nuremberg DC Park 1", Country: "DE", City: "Nuremberg", Latitude: 49.452102, Longitude: 11.076665, NetworkZone: "eu-central"},
	{ID: 3, Name: "hel1", Description: "Helsinki DC Park 1", Country: "FI", City: "Helsinki", Latitude: 60.169855, Longitude: 24.938379, NetworkZone: "eu-central"},
	{ID: 4, Name: "ash", Description: "Ashburn, VA", Country: "US", City: "Ashburn, VA", Latitude: 39.045821, Longitude: -77.487073, NetworkZone: "us-east"},
	{ID: 5, Name: "hil", Description: "Hillsboro, OR", Country: "US", City: "Hillsboro, OR", Latitude: 45.54222, Longitude: -122.951429, NetworkZone: "us-west"},
	{ID: 6, Name: "sin", Description: "Singapore", Country: "SG", City: "Singapore", Latitude: 1.283333, Longitude: 103.833333, NetworkZone: "ap-southeast"},
}

var datacenterNames = map[string]string{"fsn1": "fsn1-dc14", "nbg1": "nbg1-dc3", "hel1": "hel1-dc2", "ash": "ash-dc1", "hil": "hil-dc1", "sin": "sin-dc1"}

var networkZones = []string{"eu-central", "us-east", "us-west", "ap-southeast"}

type serverTypeSpec struct {
	name, cpu, arch string
	cores           int
	mem             float32
	disk            int
}

var serverTypeSpecs = []serverTypeSpec{
	{"cx22", "shared", "x86", 2, 4, 40}, {"cx32", "shared", "x86", 4, 8, 80}, {"cx42", "shared", "x86", 8, 16, 160}, {"cx52", "shared", "x86", 16, 32, 320},
	{"cpx11", "shared", "x86", 2, 2, 40}, {"cpx21", "shared", "x86", 3, 4, 80}, {"cpx31", "shared", "x86", 4, 8, 160}, {"cpx41", "shared", "x86", 8, 16, 240}, {"cpx51", "shared", "x86", 16, 32, 360},
	{"cax11", "shared", "arm", 2, 4, 40}, {"cax21", "shared", "arm", 4, 8, 80}, {"cax31", "shared", "arm", 8, 16, 160}, {"cax41", "shared", "arm", 16, 32, 320},
	{"ccx13", "dedicated", "x86", 2, 8, 80}, {"ccx23", "dedicated", "x86", 4, 16, 160}, {"ccx33", "dedicated", "x86", 8, 32, 240}, {"ccx43", "dedicated", "x86", 16, 64, 360},
	{"ccx53", "dedicated", "x86", 32, 128, 600}, {"ccx63", "dedicated", "x86", 48, 192, 960},
}

var (
	serverTypes       = buildServerTypes()
	datacenters       = buildDatacenters()
	images            = buildImages()
	loadBalancerTypes = buildLBTypes()
)

func price(net string) schema.Price { return schema.Price{Net: net, Gross: net} }

func buildServerTypes() []schema.ServerType {
	out := make([]schema.ServerType, 0, len(serverTypeSpecs))
	for i, s := range serverTypeSpecs {
		st := schema.ServerType{
			ID: int64(100 + i), Name: s.name, Description: strings.ToUpper(s.name), Category: "shared_vcpu", Cores: s.cores, Memory: s.mem, Disk: s.disk,
			StorageType: "local", CPUType: s.cpu, Architecture: s.arch, IncludedTraffic: 21990232555520,
		}
		if s.cpu == "dedicated" {
			st.Category = "dedicated_vcpu"
		}
		for _, l := range locations {
			st.Prices = append(st.Prices, schema.PricingServerTypePrice{Location: l.Name, PriceHourly: price("0.0060"), PriceMonthly: price("3.7900"),
				IncludedTraffic: 21990232555520, PricePerTBTraffic: price("1.0000")})
			st.Locations = append(st.Locations, schema.ServerTypeLocation{ID: l.ID, Name: l.Name, Available: true, Recommended: true})
		}
		out = append(out, st)
	}
	return out
}

func buildDatacenters() []datacenter {
	var ids []int64
	for _, st := range serverTypes {
		ids = append(ids, st.ID)
	}
	out := make([]datacenter, 0, len(locations))
	for i, l := range locations {
		out = append(out, datacenter{ID: int64(10 + i), Name: datacenterNames[l.Name], Description: l.Description + " virtual DC", Location: l,
			ServerTypes: dcServerTypes{Supported: ids, Available: ids, AvailableForMigration: ids}})
	}
	return out
}

func buildImages() []schema.Image {
	created := time.Date(2024, 4, 25, 0, 0, 0, 0, time.UTC)
	mk := func(id int64, name, desc, flavor, version, arch string) schema.Image {
		return schema.Image{ID: id, Status: "available", Type: "system", Name: &name, Description: desc, DiskSize: 5, Created: &created,
			OSFlavor: flavor, OSVersion: &version, Architecture: arch, RapidDeploy: true, Labels: map[string]string{}}
	}
	return []schema.Image{
		mk(67794396, "ubuntu-22.04", "Ubuntu 22.04", "ubuntu", "22.04", "x86"),
		mk(161547269, "ubuntu-24.04", "Ubuntu 24.04", "ubuntu", "24.04", "x86"),
		mk(114690387, "debian-12", "Debian 12", "debian", "12", "x86"),
		mk(103908130, "ubuntu-22.04", "Ubuntu 22.04", "ubuntu", "22.04", "arm"),
		mk(161547270, "ubuntu-24.04", "Ubuntu 24.04", "ubuntu", "24.04", "arm"),
		mk(114690389, "debian-12", "Debian 12", "debian", "12", "arm"),
	}
}

func buildLBTypes() []schema.LoadBalancerType {
	mk := func(id int64, name string, conns, services, targets, certs int) schema.LoadBalancerType {
		lt := schema.LoadBalancerType{ID: id, Name: name, Description: strings.ToUpper(name), MaxConnections: conns, MaxServices: services,
			MaxTargets: targets, MaxAssignedCertificates: certs}
		for _, l := range locations {
			lt.Prices = append(lt.Prices, schema.PricingLoadBalancerTypePrice{Location: l.Name, PriceHourly: price("0.0100"), PriceMonthly: price("5.3900"),
				IncludedTraffic: 21990232555520, PricePerTBTraffic: price("1.0000")})
		}
		return lt
	}
	return []schema.LoadBalancerType{mk(1, "lb11", 10000, 5, 25, 10), mk(2, "lb21", 20000, 15, 75, 25), mk(3, "lb31", 40000, 30, 150, 50)}
}

func findLocation(nameOrID string) (schema.Location, bool) {
	for _, l := range locations {
		if l.Name == nameOrID || strconv.FormatInt(l.ID, 10) == nameOrID {
			return l, true
		}
	}
	return schema.Location{}, false
}

func datacenterOf(loc string) datacenter {
	for _, d := range datacenters {
		if d.Location.Name == loc {
			return d
		}
	}
	return datacenter{}
}

func findDatacenter(nameOrID string) (datacenter, bool) {
	for _, d := range datacenters {
		if d.Name == nameOrID || strconv.FormatInt(d.ID, 10) == nameOrID {
			return d, true
		}
	}
	return datacenter{}, false
}

func findServerType(nameOrID string) (schema.ServerType, bool) {
	for _, s := range serverTypes {
		if s.Name == nameOrID || strconv.FormatInt(s.ID, 10) == nameOrID {
			return s, true
		}
	}
	return schema.ServerType{}, false
}

// findImage finds a system image by ID or by name for the architecture.
func findImage(nameOrID, arch string) (schema.Image, bool) {
	for _, im := range images {
		if strconv.FormatInt(im.ID, 10) == nameOrID || (*im.Name == nameOrID && im.Architecture == arch) {
			return im, true
		}
	}
	return schema.Image{}, false
}

func findLBType(nameOrID string) (schema.LoadBalancerType, bool) {
	for _, t := range loadBalancerTypes {
		if t.Name == nameOrID || strconv.FormatInt(t.ID, 10) == nameOrID {
			return t, true
		}
	}
	return schema.LoadBalancerType{}, false
}

// staticItem lets the catalogue go through list.
type staticItem[T any] struct {
	v     T
	ident int64
	name  string
}

func (s staticItem[T]) id() int64                   { return s.ident }
func (s staticItem[T]) nameOf() string              { return s.name }
func (s staticItem[T]) labelsOf() map[string]string { return nil }

func staticRoutes[T any](f *Fake, kind, one string, items []T, key func(T) (int64, string), extra func(*http.Request, T) bool) {
	wrapped := make([]staticItem[T], 0, len(items))
	for _, it := range items {
		id, name := key(it)
		wrapped = append(wrapped, staticItem[T]{it, id, name})
	}
	f.handle("GET /v1/"+kind, func(r *http.Request) (int, any, error) {
		status, body, err := list(r, kind, wrapped, func(s staticItem[T]) any { return s.v }, func(s staticItem[T]) bool {
			return extra == nil || extra(r, s.v)
		})
		if err == nil && kind == "datacenters" {
			body.(map[string]any)["recommendation"] = datacenters[0].ID // GET /datacenters also names a recommended one
		}
		return status, body, err
	})
	f.handle("GET /v1/"+kind+"/{id}", func(r *http.Request) (int, any, error) {
		id, err := pathID(r, one)
		if err != nil {
			return 0, nil, err
		}
		for _, s := range wrapped {
			if s.ident == id {
				return http.StatusOK, map[string]any{one: s.v}, nil
			}
		}
		return 0, nil, errNotFound(one)
	})
}

func (f *Fake) staticRoutes() {
	// https://docs.hetzner.cloud/#locations, #datacenters, #server-types, #images, #load-balancer-types
	staticRoutes(f, "locations", "location", locations, func(l schema.Location) (int64, string) { return l.ID, l.Name }, nil)
	staticRoutes(f, "datacenters", "datacenter", datacenters, func(d datacenter) (int64, string) { return d.ID, d.Name }, nil)
	staticRoutes(f, "server_types", "server_type", serverTypes, func(s schema.ServerType) (int64, string) { return s.ID, s.Name }, nil)
	staticRoutes(f, "load_balancer_types", "load_balancer_type", loadBalancerTypes, func(t schema.LoadBalancerType) (int64, string) { return t.ID, t.Name }, nil)
	staticRoutes(f, "images", "image", images, func(im schema.Image) (int64, string) { return im.ID, *im.Name }, func(r *http.Request, im schema.Image) bool {
		q := r.URL.Query()
		if a := q.Get("architecture"); a != "" && a != im.Architecture {
			return false
		}
		if t := q["type"]; len(t) > 0 && !contains(t, im.Type) {
			return false
		}
		return true
	})
}

// datacenter is a Hetzner datacenter (https://docs.hetzner.cloud/#datacenters). Hetzner deprecates
// datacenters, but the cached spec still requires one in every server and Primary IP answer.
type datacenter struct {
	ID          int64           `json:"id"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Location    schema.Location `json:"location"`
	ServerTypes dcServerTypes   `json:"server_types"`
}

type dcServerTypes struct {
	Supported             []int64 `json:"supported"`
	Available             []int64 `json:"available"`
	AvailableForMigration []int64 `json:"available_for_migration"`
}
