package rabbitmq

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/cdkx-dev/cdkx/adapters/internal/kit"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TypeExchange is an exchange: https://www.rabbitmq.com/docs/exchanges and
// https://www.rabbitmq.com/docs/http-api-reference#put-apiexchangesvhostname.
//
// Properties, all create-only (RabbitMQ refuses to redeclare an exchange with other settings: 400
// "inequivalent arg 'type' for exchange 'orders' in vhost 'app': received 'fanout' but current is
// 'topic'", so any change replaces the exchange, deleting it first since the name is taken):
//   - vhost (string, required): the exchange's vhost, usually {ref: VirtualHost, attr: name}.
//   - name (string, required): 1 to 255 bytes, not starting with "amq." (reserved: 401 "Access refused.").
//   - type (string, required): direct, fanout, topic, headers, or a plugin's x-… type (an unknown type is
//     400 "unknown exchange type 'x-…'").
//   - durable (boolean, default true), autoDelete (default false), internal (default false).
//   - arguments (object, default {}), e.g. {"alternate-exchange": "unrouted"}.
//
// Outputs: vhost, name.
//
// The physical ID is "<vhost>/<name>", each part escaped with url.PathEscape: "app/orders",
// "%2F/orders" in the default vhost. Create is GET /api/exchanges/{vhost}/{name} (200 →
// resource.ErrAlreadyExists), then PUT with type, durable, auto_delete, internal and arguments → 201; a
// missing vhost is 404 vhost_not_found. Delete is DELETE /api/exchanges/{vhost}/{name} → 204, which also
// deletes the exchange's bindings; 404 is success. Read is GET; 404 is resource.ErrNotFound. Update is
// never needed: with changed properties it is an error.
const TypeExchange = "RabbitMQ::Broker::Exchange"

// exchangeTypes are the exchange types every broker has; plugins add x-… types.
var exchangeTypes = []string{"direct", "fanout", "topic", "headers"}

var exchangeSchema = resource.Schema{
	Type:        TypeExchange,
	Description: "A RabbitMQ exchange (PUT/GET/DELETE /api/exchanges/{vhost}/{name}); every property is create-only.",
	Properties: map[string]resource.PropertySchema{
		"vhost": {Kind: resource.KindString, Required: true, CreateOnly: true,
			Description: "Virtual host of the exchange"},
		"name": {Kind: resource.KindString, Required: true, CreateOnly: true,
			Description: `Name of the exchange, e.g. "orders"`},
		"type": {Kind: resource.KindString, Required: true, CreateOnly: true,
			Description: "direct, fanout, topic, headers, or a plugin's x-… type"},
		"durable": {Kind: resource.KindBool, CreateOnly: true, Default: true,
			Description: "Survives a broker restart (default true)"},
		"autoDelete": {Kind: resource.KindBool, CreateOnly: true, Default: false,
			Description: "Deleted by RabbitMQ when its last binding goes (default false)"},
		"internal": {Kind: resource.KindBool, CreateOnly: true, Default: false,
			Description: "Publishers cannot publish to it directly, only exchange-to-exchange bindings (default false)"},
		"arguments": {Kind: resource.KindObject, CreateOnly: true, Default: map[string]any{},
			Description: `Optional arguments, e.g. {"alternate-exchange": "unrouted"}`},
	},
	Outputs:             []string{"vhost", "name"},
	StableOutputs:       []string{"vhost", "name"},
	DeleteBeforeReplace: true,
	Identity:            []string{"vhost", "name"},
	Check:               checkExchange,
}

func checkExchange(props resource.Properties, unknown resource.IsUnknownFunc) []resource.FieldError {
	errs := checkName(props, unknown, "vhost", "virtual host", false, false)
	errs = append(errs, checkName(props, unknown, "name", "exchange", true, true)...)
	if t, ok := kit.KnownString(props["type"], unknown); ok && !slices.Contains(exchangeTypes, t) && !strings.HasPrefix(t, "x-") {
		errs = append(errs, resource.FieldError{Path: "type", Message: fmt.Sprintf(
			"must be direct, fanout, topic, headers or a plugin's x-… type, got %q", t)})
	}
	return errs
}

// exchangeProps are an exchange's properties as the template writes them.
type exchangeProps struct {
	Vhost      string         `json:"vhost"`
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Durable    *bool          `json:"durable"`
	AutoDelete bool           `json:"autoDelete"`
	Internal   bool           `json:"internal"`
	Arguments  map[string]any `json:"arguments"`
}

// apiExchange is an exchange as the API sends and receives it (the fields cdkx uses).
type apiExchange struct {
	Vhost      string         `json:"vhost,omitempty"`
	Name       string         `json:"name,omitempty"`
	Type       string         `json:"type"`
	Durable    bool           `json:"durable"`
	AutoDelete bool           `json:"auto_delete"`
	Internal   bool           `json:"internal"`
	Arguments  map[string]any `json:"arguments"`
}

func decodeExchange(props resource.Properties) (exchangeProps, error) {
	var x exchangeProps
	err := decode(TypeExchange, props, &x)
	return x, err
}

func locateExchange(props resource.Properties) (string, error) {
	x, err := decodeExchange(props)
	return joinID(x.Vhost, x.Name), err
}

func parseExchangeID(id string) (vhost, name string, err error) {
	return splitPair(TypeExchange, id, "name")
}

func exchangeOutputs(id string) (resource.Properties, error) {
	vhost, name, err := parseExchangeID(id)
	if err != nil {
		return nil, err
	}
	return resource.Properties{"vhost": vhost, "name": name}, nil
}

func (p *Provider) createExchange(ctx context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
	x, err := decodeExchange(req.Properties)
	if err != nil {
		return resource.CreateResult{}, err
	}
	in := apiExchange{Type: x.Type, Durable: x.Durable == nil || *x.Durable, AutoDelete: x.AutoDelete, Internal: x.Internal,
		Arguments: object(x.Arguments)}
	if err := p.createAt(ctx, p.path("/exchanges", x.Vhost, x.Name), in, fmt.Sprintf("exchange %q in vhost %q", x.Name, x.Vhost),
		fmt.Sprintf("vhost %q does not exist", x.Vhost)); err != nil {
		return resource.CreateResult{}, err
	}
	id := joinID(x.Vhost, x.Name)
	out, _ := exchangeOutputs(id)
	return resource.CreateResult{PhysicalID: id, Outputs: out}, nil
}

func (p *Provider) readExchange(ctx context.Context, req resource.ReadRequest) (resource.ReadResult, error) {
	vhost, name, err := parseExchangeID(req.PhysicalID)
	if err != nil {
		return resource.ReadResult{}, err
	}
	var live apiExchange
	if _, err := p.api.Call(ctx, http.MethodGet, p.path("/exchanges", vhost, name), nil, &live); err != nil {
		return resource.ReadResult{}, p.readGone(ctx, err)
	}
	hint := req.Properties
	props := resource.Properties{"vhost": vhost, "name": name, "type": live.Type}
	setIf(props, hint, "durable", live.Durable, true)
	setIf(props, hint, "autoDelete", live.AutoDelete, false)
	setIf(props, hint, "internal", live.Internal, false)
	setIf(props, hint, "arguments", object(live.Arguments), map[string]any{})
	out, _ := exchangeOutputs(req.PhysicalID)
	return resource.ReadResult{Properties: props, Outputs: out}, nil
}

func (p *Provider) updateExchange(_ context.Context, req resource.UpdateRequest) (resource.UpdateResult, error) {
	return noUpdate(req, exchangeOutputs)
}

func (p *Provider) deleteExchange(ctx context.Context, req resource.DeleteRequest) error {
	vhost, name, err := parseExchangeID(req.PhysicalID)
	if err != nil {
		return err
	}
	_, err = p.api.Call(ctx, http.MethodDelete, p.path("/exchanges", vhost, name), nil, nil)
	return p.deleteGone(ctx, err)
}
