package rabbitmq

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/cdkx-dev/cdkx/adapters/internal/kit"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TypeQueue is a queue: https://www.rabbitmq.com/docs/queues and
// https://www.rabbitmq.com/docs/http-api-reference#put-apiqueuesvhostname.
//
// Properties, all create-only (RabbitMQ refuses to redeclare a queue with other settings: 400
// "inequivalent arg 'x-max-length' for queue 'q' in vhost 'app': received the value '10' of type 'long'
// but current is none", so any change replaces the queue, deleting it and its messages first since the
// name is taken):
//   - vhost (string, required): the queue's vhost, usually {ref: VirtualHost, attr: name}.
//   - name (string, required): 1 to 255 bytes, not starting with "amq." (reserved: 401 "Access refused.").
//   - durable (boolean, default true), autoDelete (default false). Quorum queues and streams must be
//     durable and not auto-delete (400 "invalid property 'non-durable' for queue …").
//   - arguments (object, default {}), e.g. {"x-queue-type": "quorum", "x-max-length": 10000}.
//
// Outputs: vhost, name.
//
// The physical ID is "<vhost>/<name>", each part escaped with url.PathEscape, e.g. "app/orders.created".
// Create is GET /api/queues/{vhost}/{name} (200 → resource.ErrAlreadyExists), then PUT with durable,
// auto_delete and arguments → 201; a missing vhost is 404 vhost_not_found. Delete is DELETE
// /api/queues/{vhost}/{name} → 204, messages included; 404 is success. Read is GET; 404 is
// resource.ErrNotFound. A queue declared without x-queue-type in a vhost with a default queue type gets
// x-queue-type added by RabbitMQ; Read leaves it out unless the template sets it. Update is never
// needed: with changed properties it is an error.
const TypeQueue = "RabbitMQ::Broker::Queue"

var queueSchema = resource.Schema{
	Type:        TypeQueue,
	Description: "A RabbitMQ queue (PUT/GET/DELETE /api/queues/{vhost}/{name}); every property is create-only.",
	Properties: map[string]resource.PropertySchema{
		"vhost": {Kind: resource.KindString, Required: true, CreateOnly: true,
			Description: "Virtual host of the queue"},
		"name": {Kind: resource.KindString, Required: true, CreateOnly: true,
			Description: `Name of the queue, e.g. "orders.created"`},
		"durable": {Kind: resource.KindBool, CreateOnly: true, Default: true,
			Description: "Survives a broker restart (default true)"},
		"autoDelete": {Kind: resource.KindBool, CreateOnly: true, Default: false,
			Description: "Deleted by RabbitMQ when its last consumer goes (default false)"},
		"arguments": {Kind: resource.KindObject, CreateOnly: true, Default: map[string]any{},
			Description: `Optional arguments, e.g. {"x-queue-type": "quorum", "x-max-length": 10000}`},
	},
	Outputs:             []string{"vhost", "name"},
	StableOutputs:       []string{"vhost", "name"},
	DeleteBeforeReplace: true,
	Identity:            []string{"vhost", "name"},
	Check:               checkQueue,
}

func checkQueue(props resource.Properties, unknown resource.IsUnknownFunc) []resource.FieldError {
	errs := checkName(props, unknown, "vhost", "virtual host", false, false)
	errs = append(errs, checkName(props, unknown, "name", "queue", true, true)...)
	args, _ := kit.Known(props["arguments"], unknown).(map[string]any)
	qt, ok := kit.KnownString(args["x-queue-type"], unknown)
	if !ok {
		return errs
	}
	if !slices.Contains(queueTypes, qt) {
		return append(errs, resource.FieldError{Path: "arguments.x-queue-type", Message: fmt.Sprintf("must be classic, quorum or stream, got %q", qt)})
	}
	if qt == "classic" {
		return errs
	}
	if d, ok := kit.Known(props["durable"], unknown).(bool); ok && !d {
		errs = append(errs, resource.FieldError{Path: "durable", Message: fmt.Sprintf("a %s queue is always durable; remove durable: false", qt)})
	}
	if a, ok := kit.Known(props["autoDelete"], unknown).(bool); ok && a {
		errs = append(errs, resource.FieldError{Path: "autoDelete", Message: fmt.Sprintf("a %s queue cannot be auto-delete; remove autoDelete: true", qt)})
	}
	return errs
}

// queueProps are a queue's properties as the template writes them.
type queueProps struct {
	Vhost      string         `json:"vhost"`
	Name       string         `json:"name"`
	Durable    *bool          `json:"durable"`
	AutoDelete bool           `json:"autoDelete"`
	Arguments  map[string]any `json:"arguments"`
}

// apiQueue is a queue as the API sends and receives it (the fields cdkx uses).
type apiQueue struct {
	Durable    bool           `json:"durable"`
	AutoDelete bool           `json:"auto_delete"`
	Arguments  map[string]any `json:"arguments"`
}

func decodeQueue(props resource.Properties) (queueProps, error) {
	var q queueProps
	err := decode(TypeQueue, props, &q)
	return q, err
}

func locateQueue(props resource.Properties) (string, error) {
	q, err := decodeQueue(props)
	return joinID(q.Vhost, q.Name), err
}

func parseQueueID(id string) (vhost, name string, err error) { return splitPair(TypeQueue, id, "name") }

func queueOutputs(id string) (resource.Properties, error) {
	vhost, name, err := parseQueueID(id)
	if err != nil {
		return nil, err
	}
	return resource.Properties{"vhost": vhost, "name": name}, nil
}

func (p *Provider) createQueue(ctx context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
	q, err := decodeQueue(req.Properties)
	if err != nil {
		return resource.CreateResult{}, err
	}
	in := apiQueue{Durable: q.Durable == nil || *q.Durable, AutoDelete: q.AutoDelete, Arguments: object(q.Arguments)}
	if err := p.createAt(ctx, p.path("/queues", q.Vhost, q.Name), in, fmt.Sprintf("queue %q in vhost %q", q.Name, q.Vhost),
		fmt.Sprintf("vhost %q does not exist", q.Vhost)); err != nil {
		return resource.CreateResult{}, err
	}
	id := joinID(q.Vhost, q.Name)
	out, _ := queueOutputs(id)
	return resource.CreateResult{PhysicalID: id, Outputs: out}, nil
}

func (p *Provider) readQueue(ctx context.Context, req resource.ReadRequest) (resource.ReadResult, error) {
	vhost, name, err := parseQueueID(req.PhysicalID)
	if err != nil {
		return resource.ReadResult{}, err
	}
	var live apiQueue
	if _, err := p.api.Call(ctx, http.MethodGet, p.path("/queues", vhost, name), nil, &live); err != nil {
		return resource.ReadResult{}, p.readGone(ctx, err)
	}
	hint := req.Properties
	args := object(live.Arguments)
	if hintArgs, _ := hint["arguments"].(map[string]any); hint != nil && hintArgs["x-queue-type"] == nil {
		// RabbitMQ adds the vhost's default queue type; the template did not ask for one.
		delete(args, "x-queue-type")
	}
	props := resource.Properties{"vhost": vhost, "name": name}
	setIf(props, hint, "durable", live.Durable, true)
	setIf(props, hint, "autoDelete", live.AutoDelete, false)
	setIf(props, hint, "arguments", args, map[string]any{})
	out, _ := queueOutputs(req.PhysicalID)
	return resource.ReadResult{Properties: props, Outputs: out}, nil
}

func (p *Provider) updateQueue(_ context.Context, req resource.UpdateRequest) (resource.UpdateResult, error) {
	return noUpdate(req, queueOutputs)
}

func (p *Provider) deleteQueue(ctx context.Context, req resource.DeleteRequest) error {
	vhost, name, err := parseQueueID(req.PhysicalID)
	if err != nil {
		return err
	}
	_, err = p.api.Call(ctx, http.MethodDelete, p.path("/queues", vhost, name), nil, nil)
	return p.deleteGone(ctx, err)
}
