package hcloud

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/cdkx-dev/cdkx/adapters/internal/kit"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// TypeSSHKey is an SSH public key that servers get for root at create (https://docs.hetzner.cloud/#ssh-keys).
//
// Properties: name (required, create-only), publicKey (required, create-only: one OpenSSH public key line
// such as "ssh-ed25519 AAAA… comment"), labels (changes in place). Outputs: sshKeyId (integer), name,
// publicKey, fingerprint, labels.
//
// The physical ID is the key's name, as in the TypeScript provider (its L1 exposes only attrName, which
// Server.sshKeys uses). Because a rename would change the physical ID, which the engine records once, name
// is create-only: a rename replaces the key. Hetzner also keeps fingerprints unique, so the new key cannot
// exist beside the old one when only the name changes: every replacement deletes the old key first
// (harmless, servers keep the keys they were created with). Reads, updates and deletes go by the numeric
// ID recorded in the outputs (sshKeyId), not by name; only a record without it (written by another tool)
// falls back to GET /ssh_keys?name=.
//
// Create POST /ssh_keys {name, public_key, labels} (no action); read GET /ssh_keys/{id}; update
// PUT /ssh_keys/{id} {name, labels}; delete DELETE /ssh_keys/{id}; locate GET /ssh_keys?name=.
const TypeSSHKey = "Hetzner::Security::SshKey"

// sshKeyTypes are the OpenSSH public key types Hetzner accepts.
var sshKeyTypes = []string{"ssh-ed25519", "ssh-rsa", "ssh-dss", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384",
	"ecdsa-sha2-nistp521", "sk-ssh-ed25519@openssh.com", "sk-ecdsa-sha2-nistp256@openssh.com"}

// sshKeyKind is Hetzner::Security::SshKey, for the provider's table (hcloud.go).
func sshKeyKind() kit.Type[*Provider] {
	return hetzner(kit.Type[*Provider]{
		Schema: resource.Schema{
			Type:        TypeSSHKey,
			Description: "An SSH public key (POST /ssh_keys); its physical ID is its name",
			Properties: map[string]resource.PropertySchema{
				"name":      {Kind: resource.KindString, Required: true, CreateOnly: true, Description: "Name, unique in the project (the physical ID: a rename replaces the key)"},
				"publicKey": {Kind: resource.KindString, Required: true, CreateOnly: true, Description: "OpenSSH public key line, e.g. ssh-ed25519 AAAA… user@host"},
				"labels":    labelsSchema,
			},
			Outputs:             outputs("sshKeyId", "name", "publicKey", "fingerprint", "labels"),
			StableOutputs:       []string{"sshKeyId", "name", "publicKey", "fingerprint"},
			DeleteBeforeReplace: true,
			Check:               checkSSHKey,
		},
		Create: (*Provider).createSSHKey,
		Read:   (*Provider).readSSHKey,
		Update: (*Provider).updateSSHKey,
		Delete: (*Provider).deleteSSHKey,
		Locate: func(p *Provider, ctx context.Context, req resource.CreateRequest) (string, error) {
			name := str(req.Properties, "name")
			if _, err := p.c.findByName(ctx, "ssh_keys", name); err != nil {
				return "", err
			}
			return name, nil
		},
	})
}

func checkSSHKey(props resource.Properties, unknown resource.IsUnknownFunc) []resource.FieldError {
	v, ok := props["publicKey"].(string)
	if !ok || kit.IsUnknown(props["publicKey"], unknown) {
		return nil
	}
	if msg := checkPublicKey(v); msg != "" {
		return []resource.FieldError{{Path: "publicKey", Message: msg + "; Hetzner rejects it (422 invalid_input)"}}
	}
	return nil
}

// checkPublicKey says what is wrong with an OpenSSH public key line ("" when nothing is): a known key
// type, a base64 body that holds a key of that type, an optional comment, one line.
func checkPublicKey(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return "is empty; give an OpenSSH public key such as \"ssh-ed25519 AAAA… user@host\" (the .pub file's content)"
	}
	if strings.ContainsAny(s, "\r\n") {
		return "holds more than one line; give one OpenSSH public key"
	}
	if strings.HasPrefix(s, "-----BEGIN") {
		return "is a PEM block; give the key in OpenSSH format (ssh-keygen -y -f key, or the .pub file)"
	}
	fields := strings.Fields(s)
	if !slices.Contains(sshKeyTypes, fields[0]) {
		return fmt.Sprintf("starts with %q, not a key type (%s)", fields[0], strings.Join(sshKeyTypes, ", "))
	}
	if len(fields) < 2 {
		return "has no key data after " + fields[0]
	}
	blob, err := base64.StdEncoding.DecodeString(fields[1])
	if err != nil {
		return "has key data that is not base64"
	}
	if len(blob) < 4 || int(binary.BigEndian.Uint32(blob)) > len(blob)-4 || string(blob[4:4+binary.BigEndian.Uint32(blob)]) != fields[0] {
		return fmt.Sprintf("has key data that is not a %s key", fields[0])
	}
	return ""
}

// sshKey is the API's SSH key object.
type sshKey struct {
	ID          int64             `json:"id"`
	Name        string            `json:"name"`
	Fingerprint string            `json:"fingerprint"`
	PublicKey   string            `json:"public_key"`
	Labels      map[string]string `json:"labels"`
}

func (k *sshKey) outputs() resource.Properties {
	return resource.Properties{"sshKeyId": num(k.ID), "name": k.Name, "publicKey": k.PublicKey,
		"fingerprint": k.Fingerprint, "labels": labelsValue(k.Labels)}
}

func (p *Provider) createSSHKey(ctx context.Context, req resource.CreateRequest) (resource.CreateResult, error) {
	name := str(req.Properties, "name")
	body := map[string]any{"name": name, "public_key": str(req.Properties, "publicKey"), "labels": labelsOf(req.Properties)}
	var out struct {
		SSHKey sshKey `json:"ssh_key"`
	}
	if err := p.c.call(ctx, http.MethodPost, "/ssh_keys", body, &out); err != nil {
		return resource.CreateResult{}, existsError(err, "SSH key (this name or this key's fingerprint)", name)
	}
	return resource.CreateResult{PhysicalID: out.SSHKey.Name, Outputs: out.SSHKey.outputs()}, nil
}

// sshKeyID is the key's numeric ID: outputs' sshKeyId, or, for a record without it, the ID of the key
// named physicalID (GET /ssh_keys?name=).
func (p *Provider) sshKeyID(ctx context.Context, physicalID string, outputs resource.Properties) (int64, error) {
	if id, ok, err := idOf(outputs["sshKeyId"]); err == nil && ok {
		return id, nil
	}
	return p.c.findByName(ctx, "ssh_keys", physicalID)
}

func (p *Provider) readSSHKey(ctx context.Context, req resource.ReadRequest) (resource.ReadResult, error) {
	id, err := p.sshKeyID(ctx, req.PhysicalID, req.Outputs)
	if err != nil {
		return resource.ReadResult{}, err
	}
	var out struct {
		SSHKey sshKey `json:"ssh_key"`
	}
	if err := p.c.call(ctx, http.MethodGet, idPath("/ssh_keys", id), nil, &out); err != nil {
		return resource.ReadResult{}, err
	}
	k := out.SSHKey
	props := resource.Properties{"name": k.Name, "publicKey": k.PublicKey}
	if given := str(req.Properties, "publicKey"); strings.TrimSpace(given) == strings.TrimSpace(k.PublicKey) {
		props["publicKey"] = given
	}
	readLabels(props, req.Properties, k.Labels)
	return resource.ReadResult{Properties: props, Outputs: k.outputs()}, nil
}

func (p *Provider) updateSSHKey(ctx context.Context, req resource.UpdateRequest) (resource.UpdateResult, error) {
	id, err := p.sshKeyID(ctx, req.PhysicalID, req.OldOutputs)
	if err != nil {
		return resource.UpdateResult{}, err
	}
	body := map[string]any{"name": str(req.New, "name"), "labels": labelsOf(req.New)}
	var out struct {
		SSHKey sshKey `json:"ssh_key"`
	}
	if err := p.c.call(ctx, http.MethodPut, idPath("/ssh_keys", id), body, &out); err != nil {
		return resource.UpdateResult{}, existsError(err, "SSH key", str(req.New, "name"))
	}
	return resource.UpdateResult{Outputs: out.SSHKey.outputs()}, nil
}

func (p *Provider) deleteSSHKey(ctx context.Context, req resource.DeleteRequest) error {
	id, err := p.sshKeyID(ctx, req.PhysicalID, req.Outputs)
	if err != nil {
		return err
	}
	return p.c.call(ctx, http.MethodDelete, idPath("/ssh_keys", id), nil, nil)
}
