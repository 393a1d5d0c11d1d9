package hcloud

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cdkx-dev/cdkx/adapters/internal/kit"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TypeServer is a cloud server (https://docs.hetzner.cloud/#servers).
//
// Properties: name (required; an RFC 1123 hostname, unique in the project; changes in place), labels
// (changes in place), serverType (required; changes in place: the server is resized, see below) and, all
// create-only: image (required; name or ID), location or datacenter (deprecated), startAfterCreate,
// placementGroupId, sshKeys (names or IDs), volumes and networks (IDs), firewalls ([{firewall: ID}]),
// userData (at most 32 KiB), automount, publicNet {enableIpv4, enableIpv6, ipv4, ipv6 (Primary IP IDs)}.
//
// Outputs: serverId (integer, also the physical ID), name and labels (from the API), and every other
// property as resolved, when set: location, datacenter, serverType, startAfterCreate, image,
// placementGroupId, sshKeys, volumes, networks, firewalls, userData, automount, publicNet. There is no IP
// address or status output (the TypeScript provider has none). The root password Hetzner returns for a
// server without sshKeys is a secret: it is never decoded, stored, logged or shown.
//
// Create POST /servers, then wait for its action and every one of its next_actions (power on, volume
// mounts, network attachments), then GET /servers/{id} until the server is running (or off when
// startAfterCreate is false: the TypeScript runtime failed there); read GET /servers/{id}; update: a new
// serverType resizes the server in place, keeping its ID, disk and addresses (GET /server_types?name= to
// refuse, before any change, a type of another architecture or storage or with a disk smaller than the
// server's; POST /servers/{id}/actions/poweroff → wait → GET /servers/{id} until off; …/change_type
// {server_type, upgrade_disk: false} → wait, so that the disk keeps its size and the type can be changed
// back; …/poweron → wait if the server was not off before), then PUT /servers/{id} {name, labels}; delete
// DELETE /servers/{id} and wait for its action, so that its network attachments are gone before its
// subnets are deleted; locate GET /servers?name=. A change of architecture (x86 ↔ arm) cannot be made in
// place: the update fails before any change and says to replace the server (cdkx deploy --replace).
const TypeServer = "Hetzner::Compute::Server"

// serverTypes are the server types the TypeScript schema lists, plus the 2025 generation (cx23…, cpx12…),
// which Hetzner sells now.
var serverTypes = []string{
	"cx22", "cx32", "cx42", "cx52",
	"cx23", "cx33", "cx43", "cx53",
	"cpx11", "cpx21", "cpx31", "cpx41", "cpx51",
	"cpx12", "cpx22", "cpx32", "cpx42", "cpx52", "cpx62",
	"cax11", "cax21", "cax31", "cax41",
	"ccx13", "ccx23", "ccx33", "ccx43", "ccx53", "ccx63",
}

// locations are Hetzner's locations (the TypeScript schema's Location enum).
var locations = []string{"fsn1", "nbg1", "hel1", "ash", "hil", "sin"}

// maxUserData is the largest user data Hetzner accepts, in bytes.
const maxUserData = 32 * 1024

// serverEchoed are the server's properties that its outputs echo as resolved when set (besides name and
// labels, which come from the API).
var serverEchoed = []string{"location", "datacenter", "serverType", "startAfterCreate", "image", "placementGroupId",
	"sshKeys", "volumes", "networks", "firewalls", "userData", "automount", "publicNet"}

// serverKind is Hetzner::Compute::Server, for the provider's table (hcloud.go).
func serverKind() kit.Type[*Provider] {
	return hetzner(kit.Type[*Provider]{
		Schema: resource.Schema{
			Type:        TypeServer,
			Description: "A cloud server (POST /servers)",
			Properties: map[string]resource.PropertySchema{
				"name":   {Kind: resource.KindString, Required: true, Description: "Name, an RFC 1123 hostname unique in the project"},
				"labels": labelsSchema,
				"serverType": {Kind: resource.KindString, Required: true, Enum: serverTypes, UpdateNote: "the server is powered off while it is resized",
					Description: "Server type, e.g. cx22; a change resizes the server in place (powered off meanwhile; its disk keeps its size)"},
				"image":            {Kind: resource.KindString, Required: true, CreateOnly: true, Description: "Image name or ID, e.g. ubuntu-24.04"},
				"location":         {Kind: resource.KindString, CreateOnly: true, Enum: locations, Description: "Location, e.g. nbg1"},
				"datacenter":       {Kind: resource.KindString, CreateOnly: true, Description: "Data center, e.g. nbg1-dc3 (deprecated by Hetzner after 2026-07-01: use location)"},
				"startAfterCreate": {Kind: resource.KindBool, CreateOnly: true, Description: "Power the server on after create (Hetzner's default: true)"},
				"placementGroupId": idSchema("Placement group", false, true),
				"sshKeys": {Kind: resource.KindList, CreateOnly: true, Items: &resource.PropertySchema{Kind: resource.KindAny},
					Description: "SSH keys for root, by name or ID (without any, Hetzner sets a root password, which cdkx never shows)"},
				"volumes":   idSchema("Volumes to attach at create", false, true),
				"networks":  idSchema("Networks to attach at create (each needs a subnet in the server's network zone)", false, true),
				"firewalls": {Kind: resource.KindList, CreateOnly: true, Items: &resource.PropertySchema{Kind: resource.KindObject}, Description: "Firewalls to apply at create: [{firewall: ID}]"},
				"userData":  {Kind: resource.KindString, CreateOnly: true, Description: "Cloud-init user data, at most 32 KiB"},
				"automount": {Kind: resource.KindBool, CreateOnly: true, Description: "Mount the volumes after create"},
				"publicNet": {Kind: resource.KindObject, CreateOnly: true,
					Description: "Public network: {enableIpv4, enableIpv6: bool, ipv4, ipv6: Primary IP ID or null}"},
			},
			Outputs: outputs(append([]string{"serverId", "name", "labels"}, serverEchoed...)...),
			// serverType changes in place; the other echoed properties are create-only.
			StableOutputs:       append([]string{"serverId"}, slices.DeleteFunc(slices.Clone(serverEchoed), func(k string) bool { return k == "serverType" })...),
			ReplaceNote:         "its disk and all data on it are lost; it gets new public IPs unless publicNet names Primary IPs",
			DeleteBeforeReplace: true,
			// A server in a network needs a subnet in its zone, and leaves the network before its subnets go.
			After:    []resource.After{{Type: TypeSubnet, Property: "networks", OtherProperty: "networkId"}},
			Identity: []string{"name"},
			// A resize powers the server off and on, as a Primary IP assignment does: one at a time.
			Serialize: []resource.SerialKey{{Group: "server"}},
			Check:     checkServer,
		},
		Create: (*Provider).createServer,
		Read:   (*Provider).readServer,
		Update: (*Provider).updateServer,
		Delete: (*Provider).deleteServer,
		Locate: func(p *Provider, ctx context.Context, req resource.CreateRequest) (string, error) {
			return p.locateByName(ctx, "servers", req.Properties)
		},
	}, "placementGroupId", "volumes", "networks")
}

// hostnameLabel is one label of an RFC 1123 hostname.
var hostnameLabel = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$`)

func checkServer(props resource.Properties, unknown resource.IsUnknownFunc) []resource.FieldError {
	var errs []resource.FieldError
	bad := func(path, format string, args ...any) {
		errs = append(errs, resource.FieldError{Path: path, Message: fmt.Sprintf(format, args...)})
	}
	if name, ok := props["name"].(string); ok && !kit.IsUnknown(props["name"], unknown) {
		valid := name != "" && len(name) <= 253
		for _, l := range strings.Split(name, ".") {
			valid = valid && hostnameLabel.MatchString(l)
		}
		if !valid {
			bad("name", "%q is not an RFC 1123 hostname (letters, digits and hyphens in dot-separated labels of at most 63 characters, no hyphen at either end), which Hetzner requires of server names", name)
		}
	}
	if _, loc := props["location"]; loc {
		if _, dc := props["datacenter"]; dc {
			bad("datacenter", "give location or datacenter, not both (Hetzner rejects both; datacenter is deprecated)")
		}
	}
	if s, ok := props["userData"].(string); ok && !kit.IsUnknown(props["userData"], unknown) && len(s) > maxUserData {
		bad("userData", "is %d bytes; Hetzner accepts at most 32 KiB (%d bytes)", len(s), maxUserData)
	}
	if keys, ok := props["sshKeys"].([]any); ok {
		for i, k := range keys {
			if kit.IsUnknown(k, unknown) {
				continue
			}
			switch k := k.(type) {
			case string:
				if strings.TrimSpace(k) == "" {
					bad(fmt.Sprintf("sshKeys[%d]", i), "is empty; give an SSH key's name or ID")
				}
			case json.Number:
				if _, _, err := idOf(k); err != nil {
					bad(fmt.Sprintf("sshKeys[%d]", i), "%s", err)
				}
			default:
				bad(fmt.Sprintf("sshKeys[%d]", i), "must be an SSH key's name or ID, got %T", k)
			}
		}
	}
	if fws, ok := props["firewalls"].([]any); ok {
		for i, f := range fws {
			m, ok := f.(map[string]any)
			if !ok || kit.IsUnknown(f, unknown) {
				continue // not an object: reported by the schema; a token: known later
			}
			for k := range m {
				if k != "firewall" {
					bad(fmt.Sprintf("firewalls[%d].%s", i, k), "unknown key; a firewalls entry is {firewall: ID}")
				}
			}
			v, has := m["firewall"]
			switch {
			case !has || v == nil:
				bad(fmt.Sprintf("firewalls[%d].firewall", i), "is required: a firewall's ID")
			case !kit.IsUnknown(v, unknown):
				if _, _, err := idOf(v); err != nil {
					bad(fmt.Sprintf("firewalls[%d].firewall", i), "%s", err)
				}
			}
		}
	}
	if pn, ok := props["publicNet"].(map[string]any); ok && !kit.IsUnknown(props["publicNet"], unknown) {
		for k, v := range pn {
			path := "publicNet." + k
			if kit.IsUnknown(v, unknown) {
				continue
			}
			switch k {
			case "enableIpv4", "enableIpv6":
				if _, ok := v.(bool); !ok {
					bad(path, "must be true or false")
				}
			case "ipv4", "ipv6":
				if _, _, err := idOf(v); err != nil {
					bad(path, "%s (a Primary IP's ID, or null)", err)
				}
			default:
				bad(path, "unknown key; publicNet has enableIpv4, enableIpv6, ipv4 and ipv6")
			}
		}
	}
	return errs
}

// server is the API's server object (the fields the adapter reads).
type server struct {
	ID       int64             `json:"id"`
	Name     string            `json:"name"`
	Status   string            `json:"status"`
	Labels   map[string]string `json:"labels"`
	Location *struct {
		Name string `json:"name"`
	} `json:"location"`
	Datacenter *struct {
		Name     string `json:"name"`
		Location struct {
			Name string `json:"name"`
		} `json:"location"`
	} `json:"datacenter"`
	ServerType      serverType `json:"server_type"`
	PrimaryDiskSize int        `json:"primary_disk_size"` // GB
	PlacementGroup  *struct {
		ID int64 `json:"id"`
	} `json:"placement_group"`
}

// serverType is the API's server type object (the fields the adapter reads).
type serverType struct {
	Name         string `json:"name"`
	Architecture string `json:"architecture"` // x86 or arm
	StorageType  string `json:"storage_type"` // local or network
	Disk         int    `json:"disk"`         // GB
}

// location is the name of the server's location.
func (s *server) location() string {
	if s.Location != nil && s.Location.Name != "" {
		return s.Location.Name
	}
	if s.Datacenter != nil {
		return s.Datacenter.Location.Name
	}
	return ""
}

// serverOutputs are a server's outputs: ID, name and labels from the API, the rest echoed from props.
func serverOutputs(s *server, props resource.Properties) resource.Properties {
	out := resource.Properties{"serverId": num(s.ID), "name": s.Name, "labels": labelsValue(s.Labels)}
	for _, k := range serverEchoed {
		if v, ok := props[k]; ok && v != nil {
			out[k] = v
		}
	}
	if _, ok := out["serverType"]; ok && s.ServerType.Name != "" {
		out["serverType"] = s.ServerType.Name // what the server is now, e.g. after a resize
	}
	return out
}

// serverCreateBody maps the properties to POST /servers' body.
func serverCreateBody(props resource.Properties) (map[string]any, error) {
	body := map[string]any{"name": str(props, "name"), "server_type": str(props, "serverType"),
		"image": str(props, "image"), "labels": labelsOf(props)}
	for _, k := range [][2]string{{"location", "location"}, {"datacenter", "datacenter"}, {"userData", "user_data"}} {
		if v, ok := props[k[0]].(string); ok {
			body[k[1]] = v
		}
	}
	for _, k := range [][2]string{{"startAfterCreate", "start_after_create"}, {"automount", "automount"}} {
		if v, ok := boolean(props, k[0]); ok {
			body[k[1]] = v
		}
	}
	if id, ok, err := idOf(props["placementGroupId"]); err != nil {
		return nil, fmt.Errorf("%s: property placementGroupId %w", Name, err)
	} else if ok {
		body["placement_group"] = id
	}
	if keys, ok := props["sshKeys"].([]any); ok {
		names := make([]string, 0, len(keys))
		for i, k := range keys {
			switch k := k.(type) {
			case string:
				names = append(names, k)
			case json.Number:
				names = append(names, k.String())
			default:
				return nil, fmt.Errorf("%s: property sshKeys[%d] must be an SSH key's name or ID, got %T", Name, i, k)
			}
		}
		body["ssh_keys"] = names
	}
	for _, k := range [][2]string{{"volumes", "volumes"}, {"networks", "networks"}} {
		if list, ok := props[k[0]].([]any); ok {
			ids, err := idList(list, k[0])
			if err != nil {
				return nil, err
			}
			body[k[1]] = ids
		}
	}
	if fws, ok := props["firewalls"].([]any); ok {
		out := make([]map[string]int64, 0, len(fws))
		for i, f := range fws {
			m, _ := f.(map[string]any)
			id, err := propID(m, "firewall")
			if err != nil {
				return nil, fmt.Errorf("firewalls[%d]: %w", i, err)
			}
			out = append(out, map[string]int64{"firewall": id})
		}
		body["firewalls"] = out
	}
	if pn, ok := props["publicNet"].(map[string]any); ok {
		out := map[string]any{}
		for _, k := range [][2]string{{"enableIpv4", "enable_ipv4"}, {"enableIpv6", "enable_ipv6"}} {
			if v, ok := boolean(pn, k[0]); ok {
				out[k[1]] = v
			}
		}
		for _, k := range []string{"ipv4", "ipv6"} {
			if id, ok, err := idOf(pn[k]); err != nil {
				return nil, fmt.Errorf("%s: property publicNet.%s %w", Name, k, err)
			} else if ok {
				out[k] = id
			}
		}
		body["public_net"] = out
	}
	return body, nil
}

// idList reads a list of IDs; key names the property in errors.
func idList(list []any, key string) ([]int64, error) {
	ids := make([]int64, 0, len(list))
	for i, v := range list {
		id, ok, err := idOf(v)
		if err == nil && !ok {
			err = fmt.Errorf("must be an integer ID, got null")
		}
		if err != nil {
			return nil, fmt.Errorf("%s: property %s[%d] %w", Name, key, i, err)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func (p *Provider) createServer(ctx context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
	body, err := serverCreateBody(req.Properties)
	if err != nil {
		return resource.CreateResult{}, err
	}
	// root_password is deliberately not decoded: it is a secret cdkx never keeps.
	var out struct {
		Server server `json:"server"`
		started
	}
	name := str(req.Properties, "name")
	if err := p.c.call(ctx, http.MethodPost, "/servers", body, &out); err != nil {
		return resource.CreateResult{}, existsError(err, "server", name)
	}
	id := out.Server.ID
	if err := p.c.wait(ctx, out.all()...); err != nil {
		return p.unfinished(ctx, idPath("/servers", id), id, fmt.Errorf("%s: server %q (ID %d) was created but did not start: %w", Name, name, id, err))
	}
	// Once its create action and next_actions (start_server) succeeded, the server is running (off
	// without startAfterCreate): its outputs are those of the create's answer, with no further read.
	return resource.CreateResult{PhysicalID: strconv.FormatInt(id, 10), Outputs: serverOutputs(&out.Server, req.Properties)}, nil
}

// getServer reads GET /servers/{id}.
func (p *Provider) getServer(ctx context.Context, id int64) (*server, error) {
	var out struct {
		Server server `json:"server"`
	}
	if err := p.c.call(ctx, http.MethodGet, idPath("/servers", id), nil, &out); err != nil {
		return nil, err
	}
	return &out.Server, nil
}

func (p *Provider) readServer(ctx context.Context, req resource.ReadRequest) (resource.ReadResult, error) {
	id, err := physicalID(req.PhysicalID)
	if err != nil {
		return resource.ReadResult{}, err
	}
	s, err := p.getServer(ctx, id)
	if err != nil {
		return resource.ReadResult{}, err
	}
	// Inputs the API does not show as given (image by name or ID, keys, volumes and networks attached
	// since, user data, …) are echoed; those it shows plainly are live.
	props := resource.Properties{}
	for k, v := range req.Properties {
		if !slices.Contains([]string{"name", "labels"}, k) {
			props[k] = v
		}
	}
	props["name"] = s.Name
	readLabels(props, req.Properties, s.Labels)
	if s.ServerType.Name != "" {
		props["serverType"] = s.ServerType.Name
	}
	if _, ok := req.Properties["location"]; ok && s.location() != "" {
		props["location"] = s.location()
	}
	if _, ok := req.Properties["datacenter"]; ok && s.Datacenter != nil {
		props["datacenter"] = s.Datacenter.Name
	}
	switch _, had := req.Properties["placementGroupId"]; {
	case s.PlacementGroup != nil:
		props["placementGroupId"] = num(s.PlacementGroup.ID)
	case had:
		delete(props, "placementGroupId")
	}
	return resource.ReadResult{Properties: props, Outputs: serverOutputs(s, props)}, nil
}

func (p *Provider) updateServer(ctx context.Context, req resource.UpdateRequest) (resource.UpdateResult, error) {
	id, err := physicalID(req.PhysicalID)
	if err != nil {
		return resource.UpdateResult{}, err
	}
	if slices.Contains(req.Changed, "serverType") {
		if err := p.resizeServer(ctx, id, str(req.New, "serverType")); err != nil {
			return resource.UpdateResult{}, err
		}
	}
	var out struct {
		Server server `json:"server"`
	}
	body := map[string]any{"name": str(req.New, "name"), "labels": labelsOf(req.New)}
	if err := p.c.call(ctx, http.MethodPut, idPath("/servers", id), body, &out); err != nil {
		return resource.UpdateResult{}, existsError(err, "server", str(req.New, "name"))
	}
	return resource.UpdateResult{Outputs: serverOutputs(&out.Server, req.New)}, nil
}

func (p *Provider) deleteServer(ctx context.Context, req resource.DeleteRequest) error {
	id, err := physicalID(req.PhysicalID)
	if err != nil {
		return err
	}
	var out started
	if err := p.c.call(ctx, http.MethodDelete, idPath("/servers", id), nil, &out); err != nil {
		return err
	}
	return p.c.wait(ctx, out.all()...)
}

// resizeServer changes server id's type to typeName in place, as Hetzner's Console does: it refuses, before
// any change, a type that cannot take the server (another architecture or storage, or a disk smaller than
// the server's, which never shrinks); powers the server off and waits until it is off; changes the type
// with upgrade_disk false, so that the disk keeps its size and the change can be undone; and powers the
// server on again unless it was off before (or Hetzner started it already). A server that already has
// the type is left as it is (a resize retried after an interruption). When the change fails, a server
// that was on is powered on again.
func (p *Provider) resizeServer(ctx context.Context, id int64, typeName string) error {
	s, err := p.getServer(ctx, id)
	if err != nil {
		return err
	}
	if s.ServerType.Name == typeName {
		return nil
	}
	var types struct {
		ServerTypes []serverType `json:"server_types"`
	}
	if err := p.c.call(ctx, http.MethodGet, "/server_types"+query("name", typeName), nil, &types); err != nil {
		return fmt.Errorf("%s: server %d: look up server type %q: %w", Name, id, typeName, err)
	}
	if len(types.ServerTypes) == 0 {
		return fmt.Errorf("%s: server %d: server type %q does not exist at Hetzner; choose one that GET /server_types lists", Name, id, typeName)
	}
	to, from := types.ServerTypes[0], s.ServerType
	replace := "replace the server instead (cdkx deploy --replace STACK/LOGICAL_ID: its disk and all data on it are lost)"
	switch {
	case from.Architecture != "" && to.Architecture != from.Architecture:
		return fmt.Errorf("%s: server %d: serverType %s → %s changes the architecture (%s → %s), which Hetzner cannot resize in place; %s",
			Name, id, from.Name, to.Name, from.Architecture, to.Architecture, replace)
	case from.StorageType != "" && to.StorageType != from.StorageType:
		return fmt.Errorf("%s: server %d: serverType %s → %s changes the storage (%s → %s), which Hetzner cannot resize in place; %s",
			Name, id, from.Name, to.Name, from.StorageType, to.StorageType, replace)
	case to.Disk < s.PrimaryDiskSize:
		return fmt.Errorf("%s: server %d: serverType %s has a %d GB disk, smaller than the server's %d GB disk, which cannot shrink; choose a type with at least %d GB, or %s",
			Name, id, to.Name, to.Disk, s.PrimaryDiskSize, s.PrimaryDiskSize, replace)
	}
	on := s.Status != "off"
	if on {
		if err := p.runAction(ctx, "/servers", id, "poweroff", nil); err != nil {
			return fmt.Errorf("%s: server %d: power off to resize it: %w", Name, id, err)
		}
		if err := p.waitServerOff(ctx, id); err != nil {
			return p.powerOnAfter(ctx, id, on, fmt.Errorf("%s: server %d: power off to resize it: %w", Name, id, err))
		}
	}
	if err := p.runAction(ctx, "/servers", id, "change_type", map[string]any{"server_type": typeName, "upgrade_disk": false}); err != nil {
		return p.powerOnAfter(ctx, id, on, fmt.Errorf("%s: server %d: resize from %s to %s: %w", Name, id, from.Name, typeName, err))
	}
	return p.powerOnAfter(ctx, id, on, nil)
}

// powerOnAfter powers server id on again after a resize when it was on before and is off now, and
// returns cause joined with any error of that.
func (p *Provider) powerOnAfter(ctx context.Context, id int64, wasOn bool, cause error) error {
	if !wasOn {
		return cause
	}
	status, err := p.serverPowerStatus(ctx, id)
	if err == nil && status != "off" {
		return cause // Hetzner started it already
	}
	if err == nil {
		err = p.runAction(ctx, "/servers", id, "poweron", nil)
	}
	if err != nil {
		return errors.Join(cause, fmt.Errorf("%s: server %d was powered off to resize it and did not power on again; start it in the Hetzner Console: %w", Name, id, err))
	}
	return cause
}

// waitServerOff polls GET /servers/{id} until the server is off, backing off from the poll interval up to
// the action timeout: Hetzner may report a server running for some seconds after its power-off action
// succeeded, and refuses change_type until then (422 server_not_stopped).
func (p *Provider) waitServerOff(ctx context.Context, id int64) error {
	opts := p.c.poll.withDefaults()
	deadline := p.c.now().Add(opts.Timeout)
	wait := opts.Interval
	for {
		status, err := p.serverPowerStatus(ctx, id)
		if err != nil {
			return err
		}
		if status == "off" {
			return nil
		}
		if !p.c.now().Before(deadline) {
			return fmt.Errorf("it is still %s %s after its power-off action succeeded; deploy again once it is off", status, opts.Timeout)
		}
		t := time.NewTimer(min(wait, max(deadline.Sub(p.c.now()), 0)))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(wait*2, 50*opts.Interval)
	}
}
