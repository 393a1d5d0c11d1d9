package rabbitmq

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TypeVirtualHost is a virtual host: https://www.rabbitmq.com/docs/vhosts and
// https://www.rabbitmq.com/docs/http-api-reference#put-apivhostsvhost.
//
// Properties:
//   - name (string, required, create-only): e.g. "app". Any text; "/" is the default vhost, which every
//     broker has (so cdkx cannot create it).
//   - description (string, default ""), tags (list of strings without commas, default []): metadata.
//   - defaultQueueType ("classic", "quorum" or "stream"): the type of the queues declared in the vhost
//     without an x-queue-type argument. RabbitMQ 3.10 sets it only when it creates the vhost and ignores
//     a change; 3.11 and later change it in place. Update reads it back and fails when the broker kept the
//     old value. It cannot be removed from a vhost once set.
//
// Outputs: name.
//
// The physical ID is the name as it is (e.g. "app", or "/"). Create is GET /api/vhosts/{name} (200 →
// resource.ErrAlreadyExists), then PUT /api/vhosts/{name} with description, tags (comma-separated) and the
// default queue type (sent both as default_queue_type and as defaultqueuetype, the key RabbitMQ 3.10
// reads) → 201. Update is the same PUT → 204; it sends every property, so one removed from the template
// goes back to its default. The user that creates a vhost gets full permissions on it from RabbitMQ.
// Delete is DELETE /api/vhosts/{name} → 204, which deletes everything in the vhost (exchanges, queues
// and their messages, bindings, policies, permissions); 404 is success. Read is GET /api/vhosts/{name};
// 404 is resource.ErrNotFound.
const TypeVirtualHost = "RabbitMQ::Broker::VirtualHost"

// queueTypes are the queue types of RabbitMQ 3.10 to 4.x.
var queueTypes = []string{"classic", "quorum", "stream"}

var vhostSchema = resource.Schema{
	Type:        TypeVirtualHost,
	Description: "A RabbitMQ virtual host (PUT/GET/DELETE /api/vhosts/{vhost}).",
	Properties: map[string]resource.PropertySchema{
		"name": {Kind: resource.KindString, Required: true, CreateOnly: true,
			Description: `Name of the virtual host, e.g. "app"`},
		"description": {Kind: resource.KindString, Default: "",
			Description: "Free-form description"},
		"tags": {Kind: resource.KindList, Items: &resource.PropertySchema{Kind: resource.KindString}, Default: []any{},
			Description: "Tags (metadata), without commas"},
		"defaultQueueType": {Kind: resource.KindString, Enum: queueTypes,
			Description: "Type of queues declared without x-queue-type: classic, quorum or stream"},
	},
	Outputs:             []string{"name"},
	StableOutputs:       []string{"name"},
	DeleteBeforeReplace: true,
	Identity:            []string{"name"},
	Check: func(props resource.Properties, unknown resource.IsUnknownFunc) []resource.FieldError {
		return append(checkName(props, unknown, "name", "virtual host", false, false), checkTags(props, unknown)...)
	},
}

// vhostProps are a vhost's properties as the template writes them.
type vhostProps struct {
	Name             string   `json:"name"`
	Description      string   `json:"description"`
	Tags             []string `json:"tags"`
	DefaultQueueType string   `json:"defaultQueueType"`
}

// apiVhostIn is the body of PUT /api/vhosts/{name}.
type apiVhostIn struct {
	Description      string `json:"description"`
	Tags             string `json:"tags"`
	DefaultQueueType string `json:"default_queue_type,omitempty"`
	// DefaultQueueType310 is the key RabbitMQ 3.10 reads; later versions read default_queue_type first.
	DefaultQueueType310 string `json:"defaultqueuetype,omitempty"`
}

// apiVhost is a vhost as GET /api/vhosts/{name} answers it (the fields cdkx uses).
type apiVhost struct {
	Name             string  `json:"name"`
	Description      string  `json:"description"`
	Tags             tagList `json:"tags"`
	DefaultQueueType string  `json:"default_queue_type"` // "undefined" when not set
}

func decodeVhost(props resource.Properties) (vhostProps, error) {
	var v vhostProps
	err := decode(TypeVirtualHost, props, &v)
	return v, err
}

func vhostIn(v vhostProps) apiVhostIn {
	return apiVhostIn{Description: v.Description, Tags: strings.Join(v.Tags, ","),
		DefaultQueueType: v.DefaultQueueType, DefaultQueueType310: v.DefaultQueueType}
}

func locateVhost(props resource.Properties) (string, error) {
	v, err := decodeVhost(props)
	return v.Name, err
}

func vhostOutputs(name string) resource.Properties { return resource.Properties{"name": name} }

func (p *Provider) createVhost(ctx context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
	v, err := decodeVhost(req.Properties)
	if err != nil {
		return resource.CreateResult{}, err
	}
	if err := p.createAt(ctx, p.path("/vhosts", v.Name), vhostIn(v), fmt.Sprintf("vhost %q", v.Name), ""); err != nil {
		return resource.CreateResult{}, err
	}
	return resource.CreateResult{PhysicalID: v.Name, Outputs: vhostOutputs(v.Name)}, nil
}

func (p *Provider) getVhost(ctx context.Context, name string) (apiVhost, error) {
	var live apiVhost
	_, err := p.api.Call(ctx, http.MethodGet, p.path("/vhosts", name), nil, &live)
	return live, err
}

func (p *Provider) readVhost(ctx context.Context, req resource.ReadRequest) (resource.ReadResult, error) {
	live, err := p.getVhost(ctx, req.PhysicalID)
	if err != nil {
		return resource.ReadResult{}, p.readGone(ctx, err)
	}
	hint := req.Properties
	props := resource.Properties{"name": live.Name}
	setIf(props, hint, "description", live.Description, "")
	setIf(props, hint, "tags", tagsProp(live.Tags, hint["tags"]), []any{})
	if dqt := liveQueueType(live.DefaultQueueType); dqt != "" {
		// "classic" is what a vhost without a default queue type does anyway.
		setIf(props, hint, "defaultQueueType", dqt, "classic")
	}
	return resource.ReadResult{Properties: props, Outputs: vhostOutputs(live.Name)}, nil
}

// liveQueueType is a vhost's default queue type as GET answers it, "" when not set.
func liveQueueType(s string) string {
	if s == "undefined" {
		return ""
	}
	return s
}

func (p *Provider) updateVhost(ctx context.Context, req resource.UpdateRequest) (resource.UpdateResult, error) {
	v, err := decodeVhost(req.New)
	if err != nil {
		return resource.UpdateResult{}, err
	}
	v.Name = req.PhysicalID
	dqtChanged := slices.Contains(req.Changed, "defaultQueueType")
	if dqtChanged && v.DefaultQueueType == "" {
		return resource.UpdateResult{}, fmt.Errorf("rabbitmq: vhost %q: defaultQueueType cannot be removed, RabbitMQ keeps it once set; set it to the type you want (classic is RabbitMQ's own default)", v.Name)
	}
	if _, err := p.api.Call(ctx, http.MethodPut, p.path("/vhosts", v.Name), vhostIn(v), nil); err != nil {
		return resource.UpdateResult{}, err
	}
	if dqtChanged {
		live, err := p.getVhost(ctx, v.Name)
		if err != nil {
			return resource.UpdateResult{}, err
		}
		if got := liveQueueType(live.DefaultQueueType); got != v.DefaultQueueType {
			if got == "" {
				got = "none"
			}
			return resource.UpdateResult{}, fmt.Errorf("rabbitmq: vhost %q kept its default queue type %s instead of %s: this RabbitMQ (3.10 or older) sets it only when it creates a vhost; upgrade to 3.11 or later, or replace the vhost (which deletes its queues)",
				v.Name, got, v.DefaultQueueType)
		}
	}
	return resource.UpdateResult{Outputs: vhostOutputs(v.Name)}, nil
}

func (p *Provider) deleteVhost(ctx context.Context, req resource.DeleteRequest) error {
	_, err := p.api.Call(ctx, http.MethodDelete, p.path("/vhosts", req.PhysicalID), nil, nil)
	return p.deleteGone(ctx, err)
}
