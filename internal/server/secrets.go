package server

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"

	"github.com/cdkx-dev/cdkx/internal/server/storage"
	"github.com/cdkx-dev/cdkx/pkg/stateapi"
)

// The secrets endpoints encrypt and decrypt the values of the Pulumi CLI's service secrets provider (the
// default of a stack created on a service: `pulumi config set --secret`). A ciphertext is
//
//	version byte (sealVersion) | 12-byte random nonce | AES-256-GCM sealed plaintext and tag
//
// under Options.SecretsKey, with the stack's organization as additional data: a ciphertext made for one
// organization does not decrypt in another, while a stack keeps decrypting its values after a rename or
// an export and import into another stack of its organization.

// SecretsKeySize is the length of Options.SecretsKey in bytes (AES-256).
const SecretsKeySize = 32

// sealVersion is the first byte of every ciphertext this version writes.
const sealVersion = 1

// maxSecretsBatch bounds the values of one batch request.
const maxSecretsBatch = 10000

// errNoSecretsKey answers the secrets endpoints of a server started without a key: 400, which the
// Pulumi CLI does not retry (it retries 5xx).
var errNoSecretsKey = &apiError{code: http.StatusBadRequest, msg: "Bad Request: this cdkx server has no secrets key, so it cannot encrypt or decrypt secrets; " +
	"start it with --secrets-key-file FILE (32 random bytes, base64; or set CDKX_SERVER_SECRETS_KEY), or use another secrets provider: " +
	"pulumi stack init --secrets-provider passphrase (an existing stack: pulumi stack change-secrets-provider passphrase)"}

// newSecretsAEAD returns the AEAD of key, nil for no key.
func newSecretsAEAD(key []byte) (cipher.AEAD, error) {
	if key == nil {
		return nil, nil
	}
	if len(key) != SecretsKeySize {
		return nil, fmt.Errorf("secrets key: %d bytes; want %d (generate one with: head -c 32 /dev/urandom | base64)", len(key), SecretsKeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secrets key: %w", err)
	}
	return cipher.NewGCM(block)
}

// seal encrypts plaintext for org.
func (s *Server) seal(org string, plaintext []byte) ([]byte, error) {
	ns := s.secrets.NonceSize()
	out := make([]byte, 1+ns, 1+ns+len(plaintext)+s.secrets.Overhead())
	out[0] = sealVersion
	if _, err := rand.Read(out[1:]); err != nil {
		return nil, err
	}
	return s.secrets.Seal(out, out[1:], plaintext, []byte(org)), nil
}

// open decrypts what seal made for org; a 400 apiError when it is not such a ciphertext.
func (s *Server) open(org string, ciphertext []byte, i int) ([]byte, error) {
	ns := s.secrets.NonceSize()
	if len(ciphertext) < 1+ns+s.secrets.Overhead() || ciphertext[0] != sealVersion {
		return nil, errorf(http.StatusBadRequest, "Bad Request: ciphertext %d was not made by this server's encrypt (wrong format)", i)
	}
	pt, err := s.secrets.Open(nil, ciphertext[1:1+ns], ciphertext[1+ns:], []byte(org))
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "Bad Request: ciphertext %d does not decrypt: it was made for another organization or under another secrets key", i)
	}
	if pt == nil {
		pt = []byte{}
	}
	return pt, nil
}

// secretsFor checks that the server has a key and that the path's stack exists.
func (s *Server) secretsFor(r *http.Request) error {
	if s.secrets == nil {
		return errNoSecretsKey
	}
	_, err := s.db.LookupStack(r.Context(), stackPath(r), false)
	if errors.Is(err, storage.ErrNotFound) {
		return errorf(http.StatusNotFound, "Not Found: stack '%s/%s/%s' not found", r.PathValue("org"), r.PathValue("project"), r.PathValue("stack"))
	}
	return err
}

// encrypt serves POST …/encrypt: stateapi.EncryptValueRequest → stateapi.EncryptValueResponse.
func (s *Server) encrypt(r *http.Request, c *call) (any, error) {
	var req stateapi.EncryptValueRequest
	if _, err := s.decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	if err := s.secretsFor(r); err != nil {
		return nil, err
	}
	ct, err := s.seal(r.PathValue("org"), req.Plaintext)
	if err != nil {
		return nil, err
	}
	return stateapi.EncryptValueResponse{Ciphertext: ct}, nil
}

// batchEncrypt serves POST …/batch-encrypt: stateapi.BatchEncryptRequest → stateapi.BatchEncryptResponse.
func (s *Server) batchEncrypt(r *http.Request, c *call) (any, error) {
	var req stateapi.BatchEncryptRequest
	if _, err := s.decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	if len(req.Plaintexts) > maxSecretsBatch {
		return nil, errorf(http.StatusBadRequest, "Bad Request: %d plaintexts; send at most %d per request", len(req.Plaintexts), maxSecretsBatch)
	}
	if err := s.secretsFor(r); err != nil {
		return nil, err
	}
	resp := stateapi.BatchEncryptResponse{Ciphertexts: make([][]byte, len(req.Plaintexts))}
	for i, pt := range req.Plaintexts {
		ct, err := s.seal(r.PathValue("org"), pt)
		if err != nil {
			return nil, err
		}
		resp.Ciphertexts[i] = ct
	}
	return resp, nil
}

// decrypt serves POST …/decrypt: stateapi.DecryptValueRequest → stateapi.DecryptValueResponse; 400 for
// a ciphertext this server did not make for the stack's organization.
func (s *Server) decrypt(r *http.Request, c *call) (any, error) {
	var req stateapi.DecryptValueRequest
	if _, err := s.decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	if err := s.secretsFor(r); err != nil {
		return nil, err
	}
	pt, err := s.open(r.PathValue("org"), req.Ciphertext, 0)
	if err != nil {
		return nil, err
	}
	return stateapi.DecryptValueResponse{Plaintext: pt}, nil
}

// batchDecrypt serves POST …/batch-decrypt: stateapi.BatchDecryptRequest → stateapi.BatchDecryptResponse
// (plaintexts keyed by the standard base64 of their ciphertext); 400 when any does not decrypt.
func (s *Server) batchDecrypt(r *http.Request, c *call) (any, error) {
	var req stateapi.BatchDecryptRequest
	if _, err := s.decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	if len(req.Ciphertexts) > maxSecretsBatch {
		return nil, errorf(http.StatusBadRequest, "Bad Request: %d ciphertexts; send at most %d per request", len(req.Ciphertexts), maxSecretsBatch)
	}
	if err := s.secretsFor(r); err != nil {
		return nil, err
	}
	resp := stateapi.BatchDecryptResponse{Plaintexts: make(map[string][]byte, len(req.Ciphertexts))}
	for i, ct := range req.Ciphertexts {
		pt, err := s.open(r.PathValue("org"), ct, i)
		if err != nil {
			return nil, err
		}
		resp.Plaintexts[base64.StdEncoding.EncodeToString(ct)] = pt
	}
	return resp, nil
}

// logDecryption serves POST …/decrypt/log-decryption and …/decrypt/log-batch-decryption
// (stateapi.Log3rdPartyDecryptionEvent): the Pulumi CLI reports that it showed secrets it decrypted with
// another secrets provider; the server logs the report (token, stack, secret or command) and answers 200.
func (s *Server) logDecryption(r *http.Request, c *call) (any, error) {
	var req stateapi.Log3rdPartyDecryptionEvent
	if _, err := s.decodeBody(r, &req, true); err != nil {
		return nil, err
	}
	s.log.InfoContext(r.Context(), "secrets shown by the client", "token", c.user,
		"stack", r.PathValue("org")+"/"+r.PathValue("project")+"/"+r.PathValue("stack"),
		"secret", req.SecretName, "command", req.CommandName)
	return nil, nil
}
