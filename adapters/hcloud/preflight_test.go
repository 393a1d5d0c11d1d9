package hcloud_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/adapters/hcloud"
	"github.com/cdkx-dev/cdkx/adapters/internal/adaptertest"
	"github.com/cdkx-dev/cdkx/adapters/internal/scripted"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

var locationsOK = scripted.Exchange{Method: "GET", Path: "/v1/locations", Query: "per_page=1", Status: 200,
	JSON: `{"locations":[{"id":1,"name":"fsn1"}],"meta":{"pagination":{"page":1,"per_page":1,"next_page":2,"last_page":6,"total_entries":6}}}`}

// TestPreflightCredentials: the token is checked by one GET /locations on the first Preflight only; a 401
// is a *resource.CredentialsError naming HCLOUD_TOKEN.
func TestPreflightCredentials(t *testing.T) {
	t.Parallel()
	t.Run("accepted once", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, locationsOK)
		for range 2 {
			if problems, err := p.Preflight(ctx(t), resource.PreflightRequest{}); err != nil || problems != nil {
				t.Errorf("Preflight = %v, %v; want nothing", problems, err)
			}
		}
	})
	t.Run("refused", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/locations", Query: "per_page=1", Status: 401,
			JSON: `{"error":{"code":"unauthorized","message":"unable to authenticate","details":{}}}`})
		_, err := p.Preflight(ctx(t), resource.PreflightRequest{})
		var ce *resource.CredentialsError
		if !errors.As(err, &ce) || ce.Variables != "HCLOUD_TOKEN" || ce.Provider != "hetzner" {
			t.Errorf("Preflight error = %v, want a *resource.CredentialsError naming HCLOUD_TOKEN", err)
		}
	})
}

// TestPreflightSSHKeys: SSH keys that servers to be created name literally are looked up with one listing
// of the project's keys (page by page); those absent and not made by a planned SshKey are problems at their
// index. A server updated in place sends no keys and is not checked.
func TestPreflightSSHKeys(t *testing.T) {
	t.Parallel()
	server := func(id, keys string) resource.PreflightResource {
		return resource.PreflightResource{Stack: "App", LogicalID: id, Type: hcloud.TypeServer, Creates: true,
			Properties: adaptertest.Props(t, `{"name":"`+id+`","sshKeys":`+keys+`}`)}
	}
	updated := server("Old", `["gone-key"]`)
	updated.Creates = false
	planned := resource.PreflightResource{Stack: "App", LogicalID: "Key", Type: hcloud.TypeSSHKey,
		Properties: adaptertest.Props(t, `{"name":"planned-key","publicKey":"ssh-ed25519 AAAA"}`)}
	page1 := scripted.Exchange{Method: "GET", Path: "/v1/ssh_keys", Query: "per_page=50&page=1", Status: 200,
		JSON: `{"ssh_keys":[{"id":11,"name":"alice"}],"meta":{"pagination":{"page":1,"per_page":50,"next_page":2,"last_page":2,"total_entries":2}}}`}
	page2 := scripted.Exchange{Method: "GET", Path: "/v1/ssh_keys", Query: "per_page=50&page=2", Status: 200,
		JSON: `{"ssh_keys":[{"id":12,"name":"bob"}],"meta":{"pagination":{"page":2,"per_page":50,"next_page":null,"last_page":2,"total_entries":2}}}`}
	problem := func(id, path, msg string) resource.PreflightProblem {
		return resource.PreflightProblem{Stack: "App", LogicalID: id, FieldError: resource.FieldError{Path: path, Message: msg}}
	}
	absentName := func(name string) string {
		return `SSH key "` + name + `" is not in the Hetzner project (GET /ssh_keys), and no planned Hetzner::Security::SshKey makes it: ` +
			`correct the name, upload the key to the project, or add it with a Hetzner::Security::SshKey and point at it with {"ref": …, "attr": "name"}`
	}
	for _, tc := range []struct {
		name      string
		resources []resource.PreflightResource
		script    []scripted.Exchange
		want      []resource.PreflightProblem
	}{
		{"no server names a key: no listing", []resource.PreflightResource{server("Web", `[]`), planned}, nil, nil},
		{"a server updated in place sends no keys: no listing", []resource.PreflightResource{updated}, nil, nil},
		{"keys known only at deploy or planned: no listing",
			[]resource.PreflightResource{server("Web", `[{"ref":"Key","attr":"name"},"planned-key"]`), planned}, nil, nil},
		{"keys of the project by name, ID and ID string pass", []resource.PreflightResource{server("Web", `["alice",12,"11"]`)},
			[]scripted.Exchange{page1, page2}, nil},
		{"absent names and IDs are problems", []resource.PreflightResource{server("Web", `["alice","carol"]`), server("Db", `[13]`)},
			[]scripted.Exchange{page1, page2}, []resource.PreflightProblem{
				problem("Web", "sshKeys[1]", absentName("carol")),
				problem("Db", "sshKeys[0]", "SSH key 13 is not in the Hetzner project (GET /ssh_keys): correct the ID, or name a key of the project, "+
					"or add one with a Hetzner::Security::SshKey"),
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, _ := scriptedProvider(t, append([]scripted.Exchange{locationsOK}, tc.script...)...)
			got, err := p.Preflight(ctx(t), resource.PreflightRequest{Resources: tc.resources})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Preflight problems (-want +got):\n%s", diff)
			}
		})
	}
}
