package hcloudfake

import (
	"crypto/md5" //nolint:gosec // Hetzner's SSH key fingerprint is MD5
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
)

// SSH keys: https://docs.hetzner.cloud/#ssh-keys

// fingerprint is the MD5 of the key blob in colon-separated hex, as Hetzner shows it.
func fingerprint(publicKey string) (string, error) {
	fields := strings.Fields(publicKey)
	if len(fields) < 2 || !strings.HasPrefix(fields[0], "ssh-") && !strings.HasPrefix(fields[0], "ecdsa-") {
		return "", fmt.Errorf("not an OpenSSH public key")
	}
	blob, err := base64.StdEncoding.DecodeString(fields[1])
	if err != nil || len(blob) < 8 {
		return "", fmt.Errorf("invalid key data")
	}
	sum := md5.Sum(blob) //nolint:gosec // see import
	hexes := make([]string, len(sum))
	for i, b := range sum {
		hexes[i] = fmt.Sprintf("%02x", b)
	}
	return strings.Join(hexes, ":"), nil
}

func (f *Fake) findSSHKey(nameOrID string) *sshKey {
	for _, k := range f.st.sshKeys {
		if k.Name == nameOrID || strconv.FormatInt(k.ID, 10) == nameOrID {
			return k
		}
	}
	return nil
}

func (f *Fake) sshKey(r *http.Request) (*sshKey, error) {
	return byPathID(r, "ssh_key", f.st.sshKeys)
}

func renderSSHKey(k *sshKey) schema.SSHKey {
	out := k.SSHKey
	out.Labels = labelsOrEmpty(&k.Labels)
	return out
}

func (f *Fake) sshKeyRoutes() {
	f.handle("GET /v1/ssh_keys", func(r *http.Request) (int, any, error) {
		fp := r.URL.Query().Get("fingerprint")
		return list(r, "ssh_keys", values(f.st.sshKeys), func(k *sshKey) any { return renderSSHKey(k) }, func(k *sshKey) bool {
			return fp == "" || k.Fingerprint == fp
		})
	})
	f.handle("GET /v1/ssh_keys/{id}", func(r *http.Request) (int, any, error) {
		k, err := f.sshKey(r)
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, map[string]any{"ssh_key": renderSSHKey(k)}, nil
	})
	f.handle("POST /v1/ssh_keys", func(r *http.Request) (int, any, error) {
		var req schema.SSHKeyCreateRequest
		if err := decode(r, &req, "name", "public_key"); err != nil {
			return 0, nil, err
		}
		if req.Name == "" {
			return 0, nil, invalid(field{"name", "must not be empty"})
		}
		fp, err := fingerprint(req.PublicKey)
		if err != nil {
			return 0, nil, invalid(field{"public_key", err.Error()})
		}
		if nameTaken(f.st.sshKeys, req.Name, 0) {
			return 0, nil, errUnique("ssh_key", "name")
		}
		for _, k := range f.st.sshKeys {
			if k.Fingerprint == fp {
				return 0, nil, errUnique("ssh_key", "public_key")
			}
		}
		labels := labelsOrEmpty(req.Labels)
		if err := validLabels(labels); err != nil {
			return 0, nil, err
		}
		k := &sshKey{schema.SSHKey{ID: f.newID(), Name: req.Name, Fingerprint: fp, PublicKey: strings.TrimSpace(req.PublicKey), Labels: labels, Created: f.created()}}
		f.st.sshKeys[k.ID] = k
		return http.StatusCreated, map[string]any{"ssh_key": renderSSHKey(k)}, nil
	})
	f.handle("PUT /v1/ssh_keys/{id}", func(r *http.Request) (int, any, error) {
		k, err := f.sshKey(r)
		if err != nil {
			return 0, nil, err
		}
		var req schema.SSHKeyUpdateRequest
		if err := decode(r, &req); err != nil {
			return 0, nil, err
		}
		if req.Name != "" {
			if nameTaken(f.st.sshKeys, req.Name, k.ID) {
				return 0, nil, errUnique("ssh_key", "name")
			}
			k.Name = req.Name
		}
		if req.Labels != nil {
			if err := validLabels(*req.Labels); err != nil {
				return 0, nil, err
			}
			k.Labels = labelsOrEmpty(req.Labels)
		}
		return http.StatusOK, map[string]any{"ssh_key": renderSSHKey(k)}, nil
	})
	f.handle("DELETE /v1/ssh_keys/{id}", func(r *http.Request) (int, any, error) {
		k, err := f.sshKey(r)
		if err != nil {
			return 0, nil, err
		}
		delete(f.st.sshKeys, k.ID)
		return http.StatusNoContent, nil, nil
	})
}
