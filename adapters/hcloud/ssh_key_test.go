package hcloud_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/adapters/hcloud"
	"github.com/cdkx-dev/cdkx/adapters/internal/adaptertest"
	"github.com/cdkx-dev/cdkx/adapters/internal/scripted"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

const (
	e2ePublicKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAILBqIumJRyTs5ZUONSSE0+WAGckrsRXEIRFL5wWM6Uim e2e@cdkx-synth"
	sshKeyJSON   = `{"id":11,"name":"e2e-ssh-key","fingerprint":"b7:2f:30:a0:2f:6c:58:6c:21:04:58:61:ba:06:3b:2f","public_key":"` + e2ePublicKey + `","labels":{},"created":"2026-01-01T00:00:00Z"}`
)

func TestSSHKeyRequests(t *testing.T) {
	t.Parallel()
	props := adaptertest.Props(t, `{"name":"e2e-ssh-key","publicKey":"`+e2ePublicKey+`"}`)
	wantOut := adaptertest.Props(t, `{"sshKeyId":11,"name":"e2e-ssh-key","publicKey":"`+e2ePublicKey+`","fingerprint":"b7:2f:30:a0:2f:6c:58:6c:21:04:58:61:ba:06:3b:2f","labels":{}}`)
	t.Run("create", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "POST", Path: "/v1/ssh_keys",
			Body: `{"name":"e2e-ssh-key","public_key":"` + e2ePublicKey + `","labels":{}}`, Status: 201, JSON: `{"ssh_key":` + sshKeyJSON + `}`})
		got, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeSSHKey, Properties: props})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(resource.CreateResult{PhysicalID: "e2e-ssh-key", Outputs: wantOut}, got); diff != "" {
			t.Errorf("create (-want +got):\n%s", diff)
		}
	})
	t.Run("create exists", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "POST", Path: "/v1/ssh_keys",
			Body: `{"name":"e2e-ssh-key","public_key":"` + e2ePublicKey + `","labels":{}}`, Status: 409,
			JSON: `{"error":{"code":"uniqueness_error","message":"SSH key with the same fingerprint already exists","details":{}}}`})
		_, err := p.Create(ctx(t), resource.CreateRequest{Type: hcloud.TypeSSHKey, Properties: props})
		if !errors.Is(err, resource.ErrAlreadyExists) || !strings.Contains(err.Error(), "fingerprint") {
			t.Errorf("create of an existing key = %v, want ErrAlreadyExists naming the fingerprint", err)
		}
	})
	t.Run("read by the recorded ID", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/ssh_keys/11", Status: 200, JSON: `{"ssh_key":` + sshKeyJSON + `}`})
		got, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeSSHKey, PhysicalID: "e2e-ssh-key", Properties: props, Outputs: wantOut})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(resource.ReadResult{Properties: props, Outputs: wantOut}, got); diff != "" {
			t.Errorf("read (-want +got):\n%s", diff)
		}
	})
	t.Run("read without a recorded ID", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t,
			scripted.Exchange{Method: "GET", Path: "/v1/ssh_keys", Query: "name=e2e-ssh-key", Status: 200, JSON: listJSON("ssh_keys", sshKeyJSON)},
			scripted.Exchange{Method: "GET", Path: "/v1/ssh_keys/11", Status: 200, JSON: `{"ssh_key":` + sshKeyJSON + `}`})
		if _, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeSSHKey, PhysicalID: "e2e-ssh-key", Properties: props}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("read gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/ssh_keys/11", Status: 404, JSON: notFoundJSON})
		if _, err := p.Read(ctx(t), resource.ReadRequest{Type: hcloud.TypeSSHKey, PhysicalID: "e2e-ssh-key", Outputs: wantOut}); !errors.Is(err, resource.ErrNotFound) {
			t.Errorf("read of a gone key = %v, want ErrNotFound", err)
		}
	})
	t.Run("update", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "PUT", Path: "/v1/ssh_keys/11",
			Body: `{"name":"e2e-ssh-key","labels":{"a":"b"}}`, Status: 200, JSON: `{"ssh_key":` + strings.Replace(sshKeyJSON, `"labels":{}`, `"labels":{"a":"b"}`, 1) + `}`})
		newProps := adaptertest.Props(t, `{"name":"e2e-ssh-key","publicKey":"`+e2ePublicKey+`","labels":{"a":"b"}}`)
		got, err := p.Update(ctx(t), resource.UpdateRequest{Type: hcloud.TypeSSHKey, PhysicalID: "e2e-ssh-key", Old: props, New: newProps,
			OldOutputs: wantOut, Changed: []string{"labels"}})
		if err != nil {
			t.Fatal(err)
		}
		if got.Outputs["labels"].(map[string]any)["a"] != "b" {
			t.Errorf("update outputs = %v, want the new labels", got.Outputs)
		}
	})
	t.Run("delete", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "DELETE", Path: "/v1/ssh_keys/11", Status: 204})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeSSHKey, PhysicalID: "e2e-ssh-key", Outputs: wantOut}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("delete gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "DELETE", Path: "/v1/ssh_keys/11", Status: 404, JSON: notFoundJSON})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeSSHKey, PhysicalID: "e2e-ssh-key", Outputs: wantOut}); err != nil {
			t.Errorf("delete of a gone key = %v, want nil", err)
		}
	})
	t.Run("delete without a recorded ID, gone", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/ssh_keys", Query: "name=e2e-ssh-key", Status: 200, JSON: listJSON("ssh_keys")})
		if err := p.Delete(ctx(t), resource.DeleteRequest{Type: hcloud.TypeSSHKey, PhysicalID: "e2e-ssh-key"}); err != nil {
			t.Errorf("delete of a gone key = %v, want nil", err)
		}
	})
	t.Run("locate", func(t *testing.T) {
		t.Parallel()
		p, _ := scriptedProvider(t, scripted.Exchange{Method: "GET", Path: "/v1/ssh_keys", Query: "name=e2e-ssh-key", Status: 200, JSON: listJSON("ssh_keys", sshKeyJSON)})
		if id, err := p.Locate(ctx(t), resource.CreateRequest{Type: hcloud.TypeSSHKey, Properties: props}); err != nil || id != "e2e-ssh-key" {
			t.Errorf("locate = %q, %v; want e2e-ssh-key", id, err)
		}
	})
}

func TestSSHKeySchema(t *testing.T) {
	t.Parallel()
	s := typeSchema(t, hcloud.TypeSSHKey)
	if diff := cmp.Diff([]string{"name", "publicKey"}, s.CreateOnly()); diff != "" {
		t.Errorf("create-only (-want +got):\n%s", diff)
	}
	// Hetzner keeps names and fingerprints unique: a renamed key with the same public key cannot exist
	// beside the old one, so every replacement deletes first.
	if !s.DeleteBeforeReplace || len(s.Identity) != 0 {
		t.Errorf("DeleteBeforeReplace, Identity = %v, %v; want true, none", s.DeleteBeforeReplace, s.Identity)
	}
}

func TestSSHKeyCheck(t *testing.T) {
	t.Parallel()
	const rsa = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQDD x@y"
	for _, tc := range []struct{ props, want string }{
		{`{"name":"k","publicKey":"` + e2ePublicKey + `"}`, ""},
		{`{"name":"k","publicKey":"` + e2ePublicKey + `\n"}`, ""},
		{`{"name":"k","publicKey":"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAILBqIumJRyTs5ZUONSSE0+WAGckrsRXEIRFL5wWM6Uim"}`, ""},
		{`{"name":"k","publicKey":{"ref":"Other","attr":"publicKey"}}`, ""},
		{`{"name":"k","publicKey":""}`, `publicKey: is empty; give an OpenSSH public key such as "ssh-ed25519 AAAA… user@host" (the .pub file's content); Hetzner rejects it (422 invalid_input)`},
		{`{"name":"k","publicKey":"ssh-foo AAAA"}`, `publicKey: starts with "ssh-foo", not a key type (ssh-ed25519, ssh-rsa, ssh-dss, ecdsa-sha2-nistp256, ecdsa-sha2-nistp384, ecdsa-sha2-nistp521, sk-ssh-ed25519@openssh.com, sk-ecdsa-sha2-nistp256@openssh.com); Hetzner rejects it (422 invalid_input)`},
		{`{"name":"k","publicKey":"ssh-ed25519"}`, `publicKey: has no key data after ssh-ed25519; Hetzner rejects it (422 invalid_input)`},
		{`{"name":"k","publicKey":"ssh-ed25519 not!base64"}`, `publicKey: has key data that is not base64; Hetzner rejects it (422 invalid_input)`},
		{`{"name":"k","publicKey":"ssh-ed25519 ` + strings.Fields(rsa)[1] + `"}`, `publicKey: has key data that is not a ssh-ed25519 key; Hetzner rejects it (422 invalid_input)`},
		{`{"name":"k","publicKey":"` + rsa + `\n` + rsa + `"}`, `publicKey: holds more than one line; give one OpenSSH public key; Hetzner rejects it (422 invalid_input)`},
		{`{"name":"k","publicKey":"-----BEGIN PUBLIC KEY-----"}`, `publicKey: is a PEM block; give the key in OpenSSH format (ssh-keygen -y -f key, or the .pub file); Hetzner rejects it (422 invalid_input)`},
		{`{"name":"k"}`, `publicKey: required property "publicKey" is missing`},
	} {
		if got := validation(t, hcloud.TypeSSHKey, tc.props); got != tc.want {
			t.Errorf("Validate(%s) = %q, want %q", tc.props, got, tc.want)
		}
	}
}
