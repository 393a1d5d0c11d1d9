package hcloud

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// Preflight checks the token with one cheap authenticated read, GET /locations?per_page=1, on the first
// call only (a 401, or a 403 forbidden, is a *resource.CredentialsError naming HCLOUD_TOKEN), and, when
// servers to be created (or replaced) name SSH keys by literal name or ID, lists the project's keys once (GET /ssh_keys, page
// by page) and reports each key that is neither there nor made by a planned Hetzner::Security::SshKey:
// Hetzner would refuse the server's create with 422 after the objects planned before it were made.
func (p *Provider) Preflight(ctx context.Context, req resource.PreflightRequest) ([]resource.PreflightProblem, error) {
	if !p.credentialsOK.Load() {
		err := p.c.call(ctx, http.MethodGet, "/locations?per_page=1", nil, nil)
		if code := errorCode(err); code == "unauthorized" || code == "forbidden" || code == "token_readonly" {
			return nil, &resource.CredentialsError{Provider: Name, Variables: EnvToken, Err: err}
		}
		if err != nil {
			return nil, err // it names the method, URL and HCLOUD_ENDPOINT
		}
		p.credentialsOK.Store(true)
	}
	wanted := sshKeysWanted(req.Resources)
	if len(wanted) == 0 {
		return nil, nil
	}
	names, ids, err := p.sshKeys(ctx)
	if err != nil {
		return nil, err
	}
	var problems []resource.PreflightProblem
	for _, w := range wanted {
		id, intLike := intProp(w.value)
		name, isName := w.value.(string)
		switch {
		case isName && (names[name] || intLike && ids[id]), !isName && ids[id]:
		case isName:
			problems = append(problems, w.problem(fmt.Sprintf("SSH key %q is not in the Hetzner project (GET /ssh_keys), and no planned "+
				"Hetzner::Security::SshKey makes it: correct the name, upload the key to the project, or add it with a "+
				"Hetzner::Security::SshKey and point at it with {\"ref\": …, \"attr\": \"name\"}", name)))
		default:
			problems = append(problems, w.problem(fmt.Sprintf("SSH key %d is not in the Hetzner project (GET /ssh_keys): "+
				"correct the ID, or name a key of the project, or add one with a Hetzner::Security::SshKey", id)))
		}
	}
	return problems, nil
}

// sshKeyUse is one literal SSH key (a name or an integer ID) that a planned server names.
type sshKeyUse struct {
	stack, logicalID string
	index            int
	value            any
}

func (u sshKeyUse) problem(msg string) resource.PreflightProblem {
	return resource.PreflightProblem{Stack: u.stack, LogicalID: u.logicalID,
		FieldError: resource.FieldError{Path: fmt.Sprintf("sshKeys[%d]", u.index), Message: msg}}
}

// sshKeysWanted returns the SSH keys that servers to be created name literally (values known only at
// deploy are skipped), leaving out the names of planned SSH keys.
func sshKeysWanted(rs []resource.PreflightResource) []sshKeyUse {
	planned := map[string]bool{}
	for _, r := range rs {
		if name, ok := r.Properties["name"].(string); ok && r.Type == TypeSSHKey {
			planned[name] = true
		}
	}
	var out []sshKeyUse
	for _, r := range rs {
		if r.Type != TypeServer || !r.Creates { // sshKeys are create-only: an update sends none
			continue
		}
		keys, _ := r.Properties["sshKeys"].([]any)
		for i, k := range keys {
			if _, isNumber := k.(json.Number); isNumber {
				out = append(out, sshKeyUse{r.Stack, r.LogicalID, i, k})
			} else if name, ok := k.(string); ok && name != "" && !planned[name] {
				out = append(out, sshKeyUse{r.Stack, r.LogicalID, i, k})
			}
		}
	}
	return out
}

// sshKeys lists the project's SSH keys: their names and IDs.
func (p *Provider) sshKeys(ctx context.Context) (names map[string]bool, ids map[int64]bool, err error) {
	names, ids = map[string]bool{}, map[int64]bool{}
	for page := 1; page > 0; {
		var out struct {
			SSHKeys []struct {
				ID   int64  `json:"id"`
				Name string `json:"name"`
			} `json:"ssh_keys"`
			Meta struct {
				Pagination struct {
					NextPage *int `json:"next_page"`
				} `json:"pagination"`
			} `json:"meta"`
		}
		if err := p.c.call(ctx, http.MethodGet, "/ssh_keys?per_page=50&page="+strconv.Itoa(page), nil, &out); err != nil {
			return nil, nil, fmt.Errorf("%s: list the SSH keys the servers name (GET /ssh_keys): %w", Name, err)
		}
		for _, k := range out.SSHKeys {
			names[k.Name], ids[k.ID] = true, true
		}
		page = 0
		if next := out.Meta.Pagination.NextPage; next != nil && *next > 0 {
			page = *next
		}
	}
	return names, ids, nil
}
