package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/cdkx-dev/cdkx/adapters/internal/kit"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TypeBinding is a binding from an exchange to a queue or to another exchange:
// https://www.rabbitmq.com/docs/exchanges#bindings and
// https://www.rabbitmq.com/docs/http-api-reference#post-apibindingsvhosteexchangeqqueue.
//
// Properties, all create-only (a binding has nothing to change; a change replaces it):
//   - vhost (string, required): the vhost of the binding, of its source and of its destination.
//   - source (string, required): the exchange, usually {ref: Exchange, attr: name}. Not the default
//     exchange ("" or "amq.default"), which cannot be bound (401 "Access refused.").
//   - destination (string, required): the queue or exchange, usually {ref: Queue, attr: name}.
//   - destinationType ("queue" or "exchange", default "queue").
//   - routingKey (string, default "", at most 255 bytes). With arguments, it must not hold "~": RabbitMQ
//     (checked on 3.10.8; the code is unchanged in later versions) creates such a binding but answers
//     500, and every listing of the bindings from that source to that destination fails with 500 until
//     it is deleted.
//   - arguments (object, default {}), e.g. {"x-match": "all", "format": "pdf"} for a headers exchange.
//
// Outputs: propertiesKey (RabbitMQ's key of the binding among those from the same source to the same
// destination: the escaped routing key, plus "~" and a hash of the arguments when there are any, e.g.
// "order.created" or "order.created~3ujGfg"; "~" for an empty routing key) and vhost.
//
// The physical ID is "<vhost>/<source>/<destinationType>/<destination>/<propertiesKey>", each part
// escaped with url.PathEscape, e.g. "app/orders/queue/orders.created/order.created".
//
// Create lists the bindings from source to destination (GET /api/bindings/{vhost}/e/{source}/{q|e}/
// {destination}) and fails with resource.ErrAlreadyExists when one has the same routing key and
// arguments; then it sends POST to the same URL with {"routing_key", "arguments"} → 201 with a Location
// header whose last path segment is the properties key (escaped once more, e.g. Location
// "orders.created/a%2Bb%252Fc" for the key "a+b%2Fc"). RabbitMQ's POST itself is idempotent: an identical
// binding is answered 201 with the same key, and nothing changes. A missing vhost, source or destination
// is 404 ("no exchange 'x' in vhost 'app'"). Read is GET …/{propertiesKey}; 404 is resource.ErrNotFound.
// Delete is DELETE …/{propertiesKey} → 204; 404 is success, also when the source, the destination or
// the vhost was deleted first (RabbitMQ deletes their bindings with them).
const TypeBinding = "RabbitMQ::Broker::Binding"

// destinationTypes are the kinds of binding destinations, as properties and physical IDs write them.
var destinationTypes = []string{"queue", "exchange"}

var bindingSchema = resource.Schema{
	CheckReferences: CheckBindingVhosts,
	Type:            TypeBinding,
	Description:     "A RabbitMQ binding from an exchange to a queue or exchange (POST/GET/DELETE /api/bindings/{vhost}/e/{source}/{q|e}/{destination}); every property is create-only.",
	Properties: map[string]resource.PropertySchema{
		"vhost": {Kind: resource.KindString, Required: true, CreateOnly: true,
			Description: "Virtual host of the binding and of its source and destination"},
		"source": {Kind: resource.KindString, Required: true, CreateOnly: true,
			Description: "Name of the source exchange"},
		"destination": {Kind: resource.KindString, Required: true, CreateOnly: true,
			Description: "Name of the destination queue or exchange"},
		"destinationType": {Kind: resource.KindString, Enum: destinationTypes, CreateOnly: true, Default: "queue",
			Description: "queue (default) or exchange"},
		"routingKey": {Kind: resource.KindString, CreateOnly: true, Default: "",
			Description: "Routing key (binding key), e.g. \"order.created\" or \"order.*\" for a topic exchange"},
		"arguments": {Kind: resource.KindObject, CreateOnly: true, Default: map[string]any{},
			Description: `Binding arguments, e.g. {"x-match": "all"} for a headers exchange`},
	},
	Outputs:       []string{"propertiesKey", "vhost"},
	StableOutputs: []string{"propertiesKey", "vhost"},
	// Two identical bindings are one binding; any replacement changes one of these, so it is
	// create-before-delete in practice, and delete-before-create when nothing did.
	DeleteBeforeReplace: true,
	Identity:            []string{"vhost", "source", "destination", "destinationType", "routingKey", "arguments"},
	Check:               checkBinding,
}

func checkBinding(props resource.Properties, unknown resource.IsUnknownFunc) []resource.FieldError {
	errs := checkName(props, unknown, "vhost", "virtual host", false, false)
	if s, ok := kit.KnownString(props["source"], unknown); ok && (s == "" || s == "amq.default") {
		errs = append(errs, resource.FieldError{Path: "source", Message: fmt.Sprintf(
			"%q is the default exchange, which cannot be bound; it already routes to every queue by its name", s)})
	} else {
		errs = append(errs, checkName(props, unknown, "source", "exchange", true, false)...)
	}
	what := "queue"
	if dt, _ := kit.KnownString(props["destinationType"], unknown); dt == "exchange" {
		what = "exchange"
	}
	errs = append(errs, checkName(props, unknown, "destination", what, true, false)...)
	rk, ok := kit.KnownString(props["routingKey"], unknown)
	if ok && len(rk) > maxShortString {
		errs = append(errs, resource.FieldError{Path: "routingKey", Message: fmt.Sprintf("is %d bytes long; a routing key has at most %d", len(rk), maxShortString)})
	}
	if args, _ := kit.Known(props["arguments"], unknown).(map[string]any); ok && strings.Contains(rk, "~") && len(args) > 0 {
		errs = append(errs, resource.FieldError{Path: "routingKey", Message: fmt.Sprintf(
			"%q holds a \"~\" and the binding has arguments: RabbitMQ's management API creates such a binding but answers 500, and then fails every listing of the bindings from %s to %s (a bug in rabbit_mgmt_format:pack_binding_props); use another routing key or no arguments",
			rk, "its source", "its destination")})
	}
	return errs
}

// bindingProps are a binding's properties as the template writes them.
type bindingProps struct {
	Vhost           string         `json:"vhost"`
	Source          string         `json:"source"`
	Destination     string         `json:"destination"`
	DestinationType string         `json:"destinationType"`
	RoutingKey      string         `json:"routingKey"`
	Arguments       map[string]any `json:"arguments"`
}

// apiBindingIn is the body of POST /api/bindings/….
type apiBindingIn struct {
	RoutingKey string         `json:"routing_key"`
	Arguments  map[string]any `json:"arguments"`
}

// apiBinding is a binding as the API answers it.
type apiBinding struct {
	Source          string         `json:"source"`
	Vhost           string         `json:"vhost"`
	Destination     string         `json:"destination"`
	DestinationType string         `json:"destination_type"`
	RoutingKey      string         `json:"routing_key"`
	Arguments       map[string]any `json:"arguments"`
	PropertiesKey   string         `json:"properties_key"`
}

// bindingKey identifies a binding: its physical ID's parts.
type bindingKey struct {
	vhost, source, destType, destination, propertiesKey string
}

func (k bindingKey) id() string {
	return joinID(k.vhost, k.source, k.destType, k.destination, k.propertiesKey)
}

func (k bindingKey) outputs() resource.Properties {
	return resource.Properties{"propertiesKey": k.propertiesKey, "vhost": k.vhost}
}

func parseBindingID(id string) (bindingKey, error) {
	const shape = "<vhost>/<source>/<queue|exchange>/<destination>/<propertiesKey>"
	parts, err := splitID(TypeBinding, id, 5, shape)
	if err != nil {
		return bindingKey{}, err
	}
	if parts[2] != "queue" && parts[2] != "exchange" {
		return bindingKey{}, fmt.Errorf("rabbitmq: %s id %q is not %s", TypeBinding, id, shape)
	}
	return bindingKey{parts[0], parts[1], parts[2], parts[3], parts[4]}, nil
}

func bindingOutputs(id string) (resource.Properties, error) {
	k, err := parseBindingID(id)
	if err != nil {
		return nil, err
	}
	return k.outputs(), nil
}

func decodeBinding(props resource.Properties) (bindingProps, error) {
	var b bindingProps
	if err := decode(TypeBinding, props, &b); err != nil {
		return b, err
	}
	if b.DestinationType == "" {
		b.DestinationType = "queue"
	}
	b.Arguments = object(b.Arguments)
	return b, nil
}

// bindingsURL is /api/bindings/{vhost}/e/{source}/{q|e}/{destination}, plus /{propertiesKey} when given.
func (p *Provider) bindingsURL(vhost, source, destType, destination string, propertiesKey ...string) string {
	d := "q"
	if destType == "exchange" {
		d = "e"
	}
	u := p.path("/bindings", vhost) + "/e/" + url.PathEscape(source) + "/" + d + "/" + url.PathEscape(destination)
	for _, k := range propertiesKey {
		u += "/" + url.PathEscape(k)
	}
	return u
}

// findBinding returns the key of the binding b describes, or an error wrapping resource.ErrNotFound. A
// missing vhost, source or destination is ErrNotFound too: then the binding cannot exist.
func (p *Provider) findBinding(ctx context.Context, b bindingProps) (bindingKey, error) {
	var list []apiBinding
	_, err := p.api.Call(ctx, http.MethodGet, p.bindingsURL(b.Vhost, b.Source, b.DestinationType, b.Destination), nil, &list)
	if err != nil {
		return bindingKey{}, err
	}
	for _, live := range list {
		if live.RoutingKey == b.RoutingKey && resource.Equal(object(live.Arguments), b.Arguments) {
			return bindingKey{b.Vhost, b.Source, b.DestinationType, b.Destination, live.PropertiesKey}, nil
		}
	}
	return bindingKey{}, fmt.Errorf("rabbitmq: binding %s: %w", describeBinding(b), resource.ErrNotFound)
}

func describeBinding(b bindingProps) string {
	return fmt.Sprintf("from exchange %q to %s %q with routing key %q in vhost %q", b.Source, b.DestinationType, b.Destination, b.RoutingKey, b.Vhost)
}

func (p *Provider) createBinding(ctx context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
	b, err := decodeBinding(req.Properties)
	if err != nil {
		return resource.CreateResult{}, err
	}
	switch _, err := p.findBinding(ctx, b); {
	case err == nil:
		return resource.CreateResult{}, alreadyExists("binding " + describeBinding(b))
	case !errors.Is(err, resource.ErrNotFound):
		return resource.CreateResult{}, err
	}
	u := p.bindingsURL(b.Vhost, b.Source, b.DestinationType, b.Destination)
	h, err := p.api.Call(ctx, http.MethodPost, u, apiBindingIn{RoutingKey: b.RoutingKey, Arguments: b.Arguments}, nil)
	if err != nil {
		return resource.CreateResult{}, missingParent(err, fmt.Sprintf("vhost %q does not exist", b.Vhost))
	}
	key, err := propertiesKey(h.Get("Location"))
	if err != nil {
		return resource.CreateResult{}, fmt.Errorf("rabbitmq: POST %s: %w", u, err)
	}
	k := bindingKey{b.Vhost, b.Source, b.DestinationType, b.Destination, key}
	return resource.CreateResult{PhysicalID: k.id(), Outputs: k.outputs()}, nil
}

// propertiesKey extracts the properties key from the Location of a created binding: its last path
// segment, which RabbitMQ escapes like a query value (quote_plus).
func propertiesKey(location string) (string, error) {
	if location == "" {
		return "", errors.New("the response has no Location header with the binding's properties key")
	}
	if i := strings.IndexAny(location, "?#"); i >= 0 {
		location = location[:i]
	}
	seg := location[strings.LastIndex(location, "/")+1:]
	key, err := url.QueryUnescape(seg)
	if err != nil || key == "" {
		return "", fmt.Errorf("cannot read the binding's properties key from Location %q", location)
	}
	return key, nil
}

func (p *Provider) readBinding(ctx context.Context, req resource.ReadRequest) (resource.ReadResult, error) {
	k, err := parseBindingID(req.PhysicalID)
	if err != nil {
		return resource.ReadResult{}, err
	}
	var live apiBinding
	if _, err := p.api.Call(ctx, http.MethodGet, p.bindingsURL(k.vhost, k.source, k.destType, k.destination, k.propertiesKey), nil, &live); err != nil {
		return resource.ReadResult{}, p.readGone(ctx, err)
	}
	hint := req.Properties
	props := resource.Properties{"vhost": k.vhost, "source": k.source, "destination": k.destination}
	setIf(props, hint, "destinationType", k.destType, "queue")
	setIf(props, hint, "routingKey", live.RoutingKey, "")
	setIf(props, hint, "arguments", object(live.Arguments), map[string]any{})
	return resource.ReadResult{Properties: props, Outputs: k.outputs()}, nil
}

func (p *Provider) updateBinding(_ context.Context, req resource.UpdateRequest) (resource.UpdateResult, error) {
	return noUpdate(req, bindingOutputs)
}

func (p *Provider) deleteBinding(ctx context.Context, req resource.DeleteRequest) error {
	k, err := parseBindingID(req.PhysicalID)
	if err != nil {
		return err
	}
	_, err = p.api.Call(ctx, http.MethodDelete, p.bindingsURL(k.vhost, k.source, k.destType, k.destination, k.propertiesKey), nil, nil)
	return p.deleteGone(ctx, err)
}

// locateBinding finds the binding a create with req.Properties makes by its routing key and arguments.
func (p *Provider) locateBinding(ctx context.Context, req resource.CreateRequest) (string, error) {
	b, err := decodeBinding(req.Properties)
	if err != nil {
		return "", err
	}
	k, err := p.findBinding(ctx, b)
	if err != nil {
		return "", p.readGone(ctx, err)
	}
	return k.id(), nil
}
