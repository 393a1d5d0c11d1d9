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

// TypeUser is a user of RabbitMQ's internal authentication backend:
// https://www.rabbitmq.com/docs/access-control and
// https://www.rabbitmq.com/docs/http-api-reference#put-apiusersuser.
//
// Properties:
//   - name (string, required, create-only): e.g. "order-service".
//   - password (string, required, write-only): sent to RabbitMQ, which keeps only a salted hash; cdkx
//     never stores or shows it, and Read never reports it (the API has no way to read it back).
//   - tags (list of strings, default []): e.g. ["management"], or "administrator", "monitoring",
//     "policymaker", "impersonator". RabbitMQ answers tags as a list (3.9+) or a comma-separated string
//     (3.8); the adapter sends a comma-separated string, which every version takes.
//
// Outputs: name.
//
// The physical ID is the name as it is. Create is GET /api/users/{name} (200 →
// resource.ErrAlreadyExists), then PUT /api/users/{name} with {"password", "tags"} → 201. A new user has
// no permissions; grant them with RabbitMQ::Access::Permission.
//
// Update is PUT /api/users/{name} → 204, which replaces the whole user: a PUT without a password clears
// it, so that the user can no longer log in (checked on RabbitMQ 3.10). So when "password" is in
// req.Changed the new password is sent; otherwise Update first reads the user (GET) and sends back its
// password_hash and hashing_algorithm with the new tags, which keeps the password. A password changed
// by someone else between that GET and the PUT is overwritten.
//
// Delete is DELETE /api/users/{name} → 204, which also deletes the user's permissions; 404 is success.
// Read is GET /api/users/{name} → {name, tags}; 404 is resource.ErrNotFound.
const TypeUser = "RabbitMQ::Access::User"

var userSchema = resource.Schema{
	Type:        TypeUser,
	Description: "A RabbitMQ user (PUT/GET/DELETE /api/users/{name}); its password is write-only.",
	Properties: map[string]resource.PropertySchema{
		"name": {Kind: resource.KindString, Required: true, CreateOnly: true,
			Description: `Name of the user, e.g. "order-service"`},
		"password": {Kind: resource.KindString, Required: true, WriteOnly: true,
			Description: "Password; sent to RabbitMQ, never stored in state or shown"},
		"tags": {Kind: resource.KindList, Items: &resource.PropertySchema{Kind: resource.KindString}, Default: []any{},
			Description: `Tags, e.g. ["management"]; "administrator" grants every management right`},
	},
	Outputs:             []string{"name"},
	StableOutputs:       []string{"name"},
	DeleteBeforeReplace: true,
	Identity:            []string{"name"},
	Check: func(props resource.Properties, unknown resource.IsUnknownFunc) []resource.FieldError {
		errs := checkName(props, unknown, "name", "user", false, false)
		if pw, ok := kit.KnownString(props["password"], unknown); ok && pw == "" {
			// An empty password makes RabbitMQ's internal backend refuse every login.
			errs = append(errs, resource.FieldError{Path: "password", Message: "must not be empty"})
		}
		return append(errs, checkTags(props, unknown)...)
	},
}

// userProps are a user's properties as the template writes them.
type userProps struct {
	Name     string   `json:"name"`
	Password string   `json:"password"`
	Tags     []string `json:"tags"`
}

// apiUserIn is the body of PUT /api/users/{name}: a password, or the hash of the current one.
type apiUserIn struct {
	Password         string `json:"password,omitempty"`
	PasswordHash     string `json:"password_hash,omitempty"`
	HashingAlgorithm string `json:"hashing_algorithm,omitempty"`
	Tags             string `json:"tags"`
}

// apiUser is a user as GET /api/users/{name} answers it.
type apiUser struct {
	Name             string  `json:"name"`
	PasswordHash     string  `json:"password_hash"`
	HashingAlgorithm string  `json:"hashing_algorithm"`
	Tags             tagList `json:"tags"`
}

func decodeUser(props resource.Properties) (userProps, error) {
	var u userProps
	err := decode(TypeUser, props, &u)
	return u, err
}

func locateUser(props resource.Properties) (string, error) {
	u, err := decodeUser(props)
	return u.Name, err
}

func userOutputs(name string) resource.Properties { return resource.Properties{"name": name} }

func (p *Provider) createUser(ctx context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
	usr, err := decodeUser(req.Properties)
	if err != nil {
		return resource.CreateResult{}, err
	}
	if usr.Password == "" {
		return resource.CreateResult{}, fmt.Errorf("rabbitmq: user %q: no password", usr.Name)
	}
	in := apiUserIn{Password: usr.Password, Tags: strings.Join(usr.Tags, ",")}
	if err := p.createAt(ctx, p.path("/users", usr.Name), in, fmt.Sprintf("user %q", usr.Name), "", usr.Password); err != nil {
		return resource.CreateResult{}, err
	}
	return resource.CreateResult{PhysicalID: usr.Name, Outputs: userOutputs(usr.Name)}, nil
}

func (p *Provider) getUser(ctx context.Context, name string) (apiUser, error) {
	var live apiUser
	_, err := p.api.Call(ctx, http.MethodGet, p.path("/users", name), nil, &live)
	return live, err
}

func (p *Provider) readUser(ctx context.Context, req resource.ReadRequest) (resource.ReadResult, error) {
	live, err := p.getUser(ctx, req.PhysicalID)
	if err != nil {
		return resource.ReadResult{}, p.readGone(ctx, err)
	}
	props := resource.Properties{"name": live.Name}
	setIf(props, req.Properties, "tags", tagsProp(live.Tags, req.Properties["tags"]), []any{})
	return resource.ReadResult{Properties: props, Outputs: userOutputs(live.Name)}, nil
}

func (p *Provider) updateUser(ctx context.Context, req resource.UpdateRequest) (resource.UpdateResult, error) {
	usr, err := decodeUser(req.New)
	if err != nil {
		return resource.UpdateResult{}, err
	}
	name := req.PhysicalID
	in := apiUserIn{Tags: strings.Join(usr.Tags, ",")}
	if slices.Contains(req.Changed, "password") {
		if usr.Password == "" {
			return resource.UpdateResult{}, fmt.Errorf("rabbitmq: user %q: no password", name)
		}
		in.Password = usr.Password
	} else {
		// A PUT without a password would clear it: send the current hash back (a user without a
		// password, e.g. one that logs in with a certificate, stays without one).
		live, err := p.getUser(ctx, name)
		if err != nil {
			return resource.UpdateResult{}, err
		}
		if live.PasswordHash != "" {
			in.PasswordHash, in.HashingAlgorithm = live.PasswordHash, live.HashingAlgorithm
		}
	}
	if _, err := p.api.Call(ctx, http.MethodPut, p.path("/users", name), in, nil, usr.Password, in.PasswordHash); err != nil {
		return resource.UpdateResult{}, err
	}
	return resource.UpdateResult{Outputs: userOutputs(name)}, nil
}

func (p *Provider) deleteUser(ctx context.Context, req resource.DeleteRequest) error {
	_, err := p.api.Call(ctx, http.MethodDelete, p.path("/users", req.PhysicalID), nil, nil)
	return p.deleteGone(ctx, err)
}
