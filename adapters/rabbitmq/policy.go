package rabbitmq

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TypePolicy is a policy, a set of optional arguments applied by RabbitMQ to the queues or exchanges of a
// vhost whose names match a pattern: https://www.rabbitmq.com/docs/policies and
// https://www.rabbitmq.com/docs/http-api-reference#put-apipoliciesvhostname.
//
// Properties:
//   - vhost (string, required, create-only), name (string, required, create-only).
//   - pattern (string, required): a regular expression matched against queue or exchange names, e.g.
//     "^orders\\.created$". RabbitMQ uses PCRE; the schema check only catches errors PCRE would also report.
//   - applyTo (default "all"): all, queues or exchanges; RabbitMQ 3.12 and later also take
//     classic_queues, quorum_queues and streams (older brokers answer 400 "apply-to 'streams'
//     unrecognised").
//   - priority (integer, default 0): among the policies that match, the highest wins.
//   - definition (object, required, not empty): e.g. {"dead-letter-exchange": "dlx"}. RabbitMQ validates
//     its keys and values (400 "Validation failed … are not recognised policy settings").
//
// Outputs: vhost, name.
//
// The physical ID is "<vhost>/<name>", each part escaped with url.PathEscape. Create is GET
// /api/policies/{vhost}/{name} (200 → resource.ErrAlreadyExists), then PUT with pattern, definition,
// priority and apply-to → 201. Update is the same PUT → 204, with every property. Delete is DELETE → 204;
// 404 is success (also after the vhost was deleted). Read is GET; 404 is resource.ErrNotFound.
const TypePolicy = "RabbitMQ::Broker::Policy"

// policyTargets are the values of applyTo.
var policyTargets = []string{"all", "queues", "exchanges", "classic_queues", "quorum_queues", "streams"}

var policySchema = resource.Schema{
	Type:        TypePolicy,
	Description: "A RabbitMQ policy (PUT/GET/DELETE /api/policies/{vhost}/{name}).",
	Properties: map[string]resource.PropertySchema{
		"vhost": {Kind: resource.KindString, Required: true, CreateOnly: true,
			Description: "Virtual host of the policy"},
		"name": {Kind: resource.KindString, Required: true, CreateOnly: true,
			Description: `Name of the policy, e.g. "dead-lettering"`},
		"pattern": {Kind: resource.KindString, Required: true,
			Description: `Regular expression matched against names, e.g. "^orders\\."`},
		"applyTo": {Kind: resource.KindString, Enum: policyTargets, Default: "all",
			Description: "What the policy applies to: all (default), queues, exchanges; 3.12+: classic_queues, quorum_queues, streams"},
		"priority": {Kind: resource.KindInteger, Default: json.Number("0"),
			Description: "Priority among matching policies (default 0; the highest wins)"},
		"definition": {Kind: resource.KindObject, Required: true,
			Description: `Arguments applied, e.g. {"dead-letter-exchange": "dlx"}`},
	},
	Outputs:             []string{"vhost", "name"},
	StableOutputs:       []string{"vhost", "name"},
	DeleteBeforeReplace: true,
	Identity:            []string{"vhost", "name"},
	Check: func(props resource.Properties, unknown resource.IsUnknownFunc) []resource.FieldError {
		errs := checkName(props, unknown, "vhost", "virtual host", false, false)
		errs = append(errs, checkName(props, unknown, "name", "policy", false, false)...)
		errs = append(errs, checkRegexp(props, unknown, "pattern")...)
		return append(errs, checkNotEmptyObject(props, unknown, "definition", `a policy sets at least one argument, e.g. {"dead-letter-exchange": "dlx"}`)...)
	},
}

// policyProps are a policy's properties as the template writes them.
type policyProps struct {
	Vhost      string         `json:"vhost"`
	Name       string         `json:"name"`
	Pattern    string         `json:"pattern"`
	ApplyTo    string         `json:"applyTo"`
	Priority   json.Number    `json:"priority"`
	Definition map[string]any `json:"definition"`
}

// apiPolicy is a policy as the API sends and receives it.
type apiPolicy struct {
	Pattern    string         `json:"pattern"`
	ApplyTo    string         `json:"apply-to"`
	Priority   json.Number    `json:"priority"`
	Definition map[string]any `json:"definition"`
}

func decodePolicy(props resource.Properties) (policyProps, error) {
	var pol policyProps
	if err := decode(TypePolicy, props, &pol); err != nil {
		return pol, err
	}
	if pol.ApplyTo == "" {
		pol.ApplyTo = "all"
	}
	if pol.Priority == "" {
		pol.Priority = "0"
	}
	return pol, nil
}

func policyIn(pol policyProps) apiPolicy {
	return apiPolicy{Pattern: pol.Pattern, ApplyTo: pol.ApplyTo, Priority: pol.Priority, Definition: object(pol.Definition)}
}

func locatePolicy(props resource.Properties) (string, error) {
	pol, err := decodePolicy(props)
	return joinID(pol.Vhost, pol.Name), err
}

func parsePolicyID(id string) (vhost, name string, err error) {
	return splitPair(TypePolicy, id, "name")
}

func policyOutputs(vhost, name string) resource.Properties {
	return resource.Properties{"vhost": vhost, "name": name}
}

func (p *Provider) createPolicy(ctx context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
	pol, err := decodePolicy(req.Properties)
	if err != nil {
		return resource.CreateResult{}, err
	}
	if err := p.createAt(ctx, p.path("/policies", pol.Vhost, pol.Name), policyIn(pol), fmt.Sprintf("policy %q in vhost %q", pol.Name, pol.Vhost),
		fmt.Sprintf("vhost %q does not exist", pol.Vhost)); err != nil {
		return resource.CreateResult{}, err
	}
	return resource.CreateResult{PhysicalID: joinID(pol.Vhost, pol.Name), Outputs: policyOutputs(pol.Vhost, pol.Name)}, nil
}

func (p *Provider) readPolicy(ctx context.Context, req resource.ReadRequest) (resource.ReadResult, error) {
	vhost, name, err := parsePolicyID(req.PhysicalID)
	if err != nil {
		return resource.ReadResult{}, err
	}
	var live apiPolicy
	if _, err := p.api.Call(ctx, http.MethodGet, p.path("/policies", vhost, name), nil, &live); err != nil {
		return resource.ReadResult{}, p.readGone(ctx, err)
	}
	hint := req.Properties
	props := resource.Properties{"vhost": vhost, "name": name, "pattern": live.Pattern, "definition": object(live.Definition)}
	setIf(props, hint, "applyTo", live.ApplyTo, "all")
	priority := live.Priority
	if priority == "" {
		priority = "0"
	}
	setIf(props, hint, "priority", priority, json.Number("0"))
	return resource.ReadResult{Properties: props, Outputs: policyOutputs(vhost, name)}, nil
}

func (p *Provider) updatePolicy(ctx context.Context, req resource.UpdateRequest) (resource.UpdateResult, error) {
	vhost, name, err := parsePolicyID(req.PhysicalID)
	if err != nil {
		return resource.UpdateResult{}, err
	}
	pol, err := decodePolicy(req.New)
	if err != nil {
		return resource.UpdateResult{}, err
	}
	if _, err := p.api.Call(ctx, http.MethodPut, p.path("/policies", vhost, name), policyIn(pol), nil); err != nil {
		return resource.UpdateResult{}, err
	}
	return resource.UpdateResult{Outputs: policyOutputs(vhost, name)}, nil
}

func (p *Provider) deletePolicy(ctx context.Context, req resource.DeleteRequest) error {
	vhost, name, err := parsePolicyID(req.PhysicalID)
	if err != nil {
		return err
	}
	_, err = p.api.Call(ctx, http.MethodDelete, p.path("/policies", vhost, name), nil, nil)
	return p.deleteGone(ctx, err)
}
