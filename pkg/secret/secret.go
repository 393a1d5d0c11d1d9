// Package secret seals values with a key derived from a passphrase: AES-256-GCM (crypto/cipher) with a
// key from scrypt (golang.org/x/crypto/scrypt, N=2^15, r=8, p=1) over the passphrase and a random 16-byte
// salt. cdkx uses it for the sensitive values of a deployment's snapshot, with the passphrase from
// CDKX_SECRETS_PASSPHRASE.
package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"

	"golang.org/x/crypto/scrypt"
)

// EnvPassphrase is the environment variable that holds the passphrase.
const EnvPassphrase = "CDKX_SECRETS_PASSPHRASE"

// scrypt's cost parameters (the package's recommendation for interactive use in 2017, ~50 ms here).
const (
	scryptN = 1 << 15
	scryptR = 8
	scryptP = 1
	saltLen = 16
	keyLen  = 32
)

// ErrWrongPassphrase is returned by Box.Open when a sealed value does not open with the box's key: the
// passphrase differs from the one it was sealed with, or the value was altered.
var ErrWrongPassphrase = errors.New("the value does not open with this passphrase (wrong CDKX_SECRETS_PASSPHRASE, or the value was altered)")

// Box seals and opens values with one derived key. It is safe for concurrent use.
type Box struct {
	salt []byte
	aead cipher.AEAD
}

// NewBox derives the key of passphrase and salt (nil: a new random salt). An empty passphrase is an
// error: a box needs a secret.
func NewBox(passphrase string, salt []byte) (*Box, error) {
	if passphrase == "" {
		return nil, fmt.Errorf("no passphrase: set %s", EnvPassphrase)
	}
	if salt == nil {
		salt = make([]byte, saltLen)
		if _, err := rand.Read(salt); err != nil {
			return nil, err
		}
	}
	key, err := scrypt.Key([]byte(passphrase), salt, scryptN, scryptR, scryptP, keyLen)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Box{salt: salt, aead: aead}, nil
}

// Salt returns the salt the key was derived with (store it beside the sealed values).
func (b *Box) Salt() []byte { return b.salt }

// Seal encrypts plain and returns base64 (standard, padded) of nonce ‖ ciphertext ‖ tag; each call uses a
// new random 12-byte nonce, so equal values seal differently.
func (b *Box) Seal(plain []byte) string {
	nonce := make([]byte, b.aead.NonceSize())
	_, _ = rand.Read(nonce) // crypto/rand never fails on supported platforms
	return base64.StdEncoding.EncodeToString(b.aead.Seal(nonce, nonce, plain, nil))
}

// Open decrypts a value Seal returned; ErrWrongPassphrase when it does not authenticate.
func (b *Box) Open(sealed string) ([]byte, error) {
	raw, err := base64.StdEncoding.DecodeString(sealed)
	if err != nil || len(raw) < b.aead.NonceSize()+b.aead.Overhead() {
		return nil, errors.New("a sealed value is not base64 of nonce, ciphertext and tag")
	}
	n := b.aead.NonceSize()
	plain, err := b.aead.Open(nil, raw[:n], raw[n:], nil)
	if err != nil {
		return nil, ErrWrongPassphrase
	}
	return plain, nil
}
