package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TypePermission is the permissions of one user in one vhost:
// https://www.rabbitmq.com/docs/access-control#authorisation and
// https://www.rabbitmq.com/docs/http-api-reference#put-apipermissionsvhostuser.
//
// Properties:
//   - vhost (string, required, create-only), user (string, required, create-only).
//   - configure, write, read (strings, required, as the API requires them): regular expressions over
//     the names of the exchanges and queues the user may declare or delete, publish to, and consume
//     from or bind; ".*" allows all, "" nothing, "^orders\\." names starting with "orders.". RabbitMQ
//     uses PCRE; the schema check only catches errors PCRE would also report.
//
// Outputs: vhost, user.
//
// The physical ID is "<vhost>/<user>", each part escaped with url.PathEscape. Create is GET
// /api/permissions/{vhost}/{user} (200 → resource.ErrAlreadyExists), then PUT with configure, write and
// read → 201; a missing vhost or user is 400 vhost_or_user_not_found. Note that RabbitMQ grants the user
// that creates a vhost full permissions on it, so a Permission for cdkx's own user (RABBITMQ_USERNAME)
// on a vhost cdkx creates already exists. Update is the same PUT → 204. Delete is DELETE → 204; 404 is
// success, also after the vhost or the user was deleted (RabbitMQ deletes their permissions with them).
// Read is GET; 404 is resource.ErrNotFound.
const TypePermission = "RabbitMQ::Access::Permission"

var permissionSchema = resource.Schema{
	Type:        TypePermission,
	Description: "The permissions of a RabbitMQ user in a vhost (PUT/GET/DELETE /api/permissions/{vhost}/{user}).",
	Properties: map[string]resource.PropertySchema{
		"vhost": {Kind: resource.KindString, Required: true, CreateOnly: true,
			Description: "Virtual host the permissions apply to"},
		"user": {Kind: resource.KindString, Required: true, CreateOnly: true,
			Description: "Name of the user"},
		"configure": {Kind: resource.KindString, Required: true,
			Description: `Regular expression of the names the user may declare and delete, e.g. "^orders\\." or ".*"`},
		"write": {Kind: resource.KindString, Required: true,
			Description: "Regular expression of the names the user may publish to (and bind from)"},
		"read": {Kind: resource.KindString, Required: true,
			Description: "Regular expression of the names the user may consume from (and bind to)"},
	},
	Outputs:             []string{"vhost", "user"},
	StableOutputs:       []string{"vhost", "user"},
	DeleteBeforeReplace: true,
	Identity:            []string{"vhost", "user"},
	Check: func(props resource.Properties, unknown resource.IsUnknownFunc) []resource.FieldError {
		errs := checkName(props, unknown, "vhost", "virtual host", false, false)
		errs = append(errs, checkName(props, unknown, "user", "user", false, false)...)
		for _, key := range []string{"configure", "write", "read"} {
			errs = append(errs, checkRegexp(props, unknown, key)...)
		}
		return errs
	},
}

// permissionProps are a permission's properties as the template writes them.
type permissionProps struct {
	Vhost     string `json:"vhost"`
	User      string `json:"user"`
	Configure string `json:"configure"`
	Write     string `json:"write"`
	Read      string `json:"read"`
}

// apiPermission is a permission as the API sends and receives it.
type apiPermission struct {
	Configure string `json:"configure"`
	Write     string `json:"write"`
	Read      string `json:"read"`
}

func decodePermission(props resource.Properties) (permissionProps, error) {
	var perm permissionProps
	err := decode(TypePermission, props, &perm)
	return perm, err
}

func locatePermission(props resource.Properties) (string, error) {
	perm, err := decodePermission(props)
	return joinID(perm.Vhost, perm.User), err
}

func parsePermissionID(id string) (vhost, user string, err error) {
	return splitPair(TypePermission, id, "user")
}

func permissionOutputs(vhost, user string) resource.Properties {
	return resource.Properties{"vhost": vhost, "user": user}
}

// putPermission sends PUT /api/permissions/{vhost}/{user}; 400 vhost_or_user_not_found gets a message
// naming both.
func (p *Provider) putPermission(ctx context.Context, vhost, user string, perm permissionProps) error {
	in := apiPermission{Configure: perm.Configure, Write: perm.Write, Read: perm.Read}
	_, err := p.api.Call(ctx, http.MethodPut, p.path("/permissions", vhost, user), in, nil)
	var pe *resource.ProviderError
	if errors.As(err, &pe) && pe.Status == http.StatusBadRequest && pe.Message == "vhost_or_user_not_found" {
		pe.Message = fmt.Sprintf("vhost_or_user_not_found: vhost %q or user %q does not exist", vhost, user)
	}
	return err
}

func (p *Provider) createPermission(ctx context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
	perm, err := decodePermission(req.Properties)
	if err != nil {
		return resource.CreateResult{}, err
	}
	switch found, err := p.exists(ctx, p.path("/permissions", perm.Vhost, perm.User)); {
	case err != nil:
		return resource.CreateResult{}, err
	case found:
		return resource.CreateResult{}, alreadyExists(fmt.Sprintf("the permissions of user %q in vhost %q (RabbitMQ grants the user that creates a vhost full permissions on it)", perm.User, perm.Vhost))
	}
	if err := p.putPermission(ctx, perm.Vhost, perm.User, perm); err != nil {
		return resource.CreateResult{}, err
	}
	return resource.CreateResult{PhysicalID: joinID(perm.Vhost, perm.User), Outputs: permissionOutputs(perm.Vhost, perm.User)}, nil
}

func (p *Provider) readPermission(ctx context.Context, req resource.ReadRequest) (resource.ReadResult, error) {
	vhost, user, err := parsePermissionID(req.PhysicalID)
	if err != nil {
		return resource.ReadResult{}, err
	}
	var live apiPermission
	if _, err := p.api.Call(ctx, http.MethodGet, p.path("/permissions", vhost, user), nil, &live); err != nil {
		return resource.ReadResult{}, p.readGone(ctx, err)
	}
	props := resource.Properties{"vhost": vhost, "user": user, "configure": live.Configure, "write": live.Write, "read": live.Read}
	return resource.ReadResult{Properties: props, Outputs: permissionOutputs(vhost, user)}, nil
}

func (p *Provider) updatePermission(ctx context.Context, req resource.UpdateRequest) (resource.UpdateResult, error) {
	vhost, user, err := parsePermissionID(req.PhysicalID)
	if err != nil {
		return resource.UpdateResult{}, err
	}
	perm, err := decodePermission(req.New)
	if err != nil {
		return resource.UpdateResult{}, err
	}
	if err := p.putPermission(ctx, vhost, user, perm); err != nil {
		return resource.UpdateResult{}, err
	}
	return resource.UpdateResult{Outputs: permissionOutputs(vhost, user)}, nil
}

func (p *Provider) deletePermission(ctx context.Context, req resource.DeleteRequest) error {
	vhost, user, err := parsePermissionID(req.PhysicalID)
	if err != nil {
		return err
	}
	_, err = p.api.Call(ctx, http.MethodDelete, p.path("/permissions", vhost, user), nil, nil)
	return p.deleteGone(ctx, err)
}
