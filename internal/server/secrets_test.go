package server

import (
	"bytes"
	"encoding/base64"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/pkg/stateapi"
)

// testKey is a fixed 32-byte secrets key.
var testKey = bytes.Repeat([]byte{7}, SecretsKeySize)

// TestSecretsRoundTrip encrypts and decrypts through every endpoint, also after a rename.
func TestSecretsRoundTrip(t *testing.T) {
	e := newEnvWith(t, Options{SecretsKey: testKey})
	e.createStack("dev")
	st := "/api/stacks/org/proj/dev"
	var enc stateapi.EncryptValueResponse
	decode(t, e.must(200, "POST", st+"/encrypt", e.token, stateapi.EncryptValueRequest{Plaintext: []byte("hush")}), &enc)
	if bytes.Contains(enc.Ciphertext, []byte("hush")) || enc.Ciphertext[0] != sealVersion {
		t.Errorf("ciphertext %x: want version %d and no plaintext", enc.Ciphertext, sealVersion)
	}
	var again stateapi.EncryptValueResponse
	decode(t, e.must(200, "POST", st+"/encrypt", e.token, stateapi.EncryptValueRequest{Plaintext: []byte("hush")}), &again)
	if bytes.Equal(enc.Ciphertext, again.Ciphertext) {
		t.Error("two encryptions of one value are equal; want a random nonce")
	}
	var dec stateapi.DecryptValueResponse
	decode(t, e.must(200, "POST", st+"/decrypt", e.token, stateapi.DecryptValueRequest(enc)), &dec)
	if string(dec.Plaintext) != "hush" {
		t.Errorf("decrypt = %q, want hush", dec.Plaintext)
	}

	var batch stateapi.BatchEncryptResponse
	decode(t, e.must(200, "POST", st+"/batch-encrypt", e.token, stateapi.BatchEncryptRequest{Plaintexts: [][]byte{[]byte("a"), {}, []byte("c")}}), &batch)
	if len(batch.Ciphertexts) != 3 {
		t.Fatalf("batch-encrypt = %d ciphertexts, want 3", len(batch.Ciphertexts))
	}
	e.must(200, "POST", st+"/rename", e.token, `{"newName":"prod"}`)
	var bd stateapi.BatchDecryptResponse
	decode(t, e.must(200, "POST", "/api/stacks/org/proj/prod/batch-decrypt", e.token,
		stateapi.BatchDecryptRequest{Ciphertexts: append(batch.Ciphertexts, enc.Ciphertext)}), &bd)
	want := map[string][]byte{
		base64.StdEncoding.EncodeToString(batch.Ciphertexts[0]): []byte("a"),
		base64.StdEncoding.EncodeToString(batch.Ciphertexts[1]): {},
		base64.StdEncoding.EncodeToString(batch.Ciphertexts[2]): []byte("c"),
		base64.StdEncoding.EncodeToString(enc.Ciphertext):       []byte("hush"),
	}
	if diff := cmp.Diff(want, bd.Plaintexts); diff != "" {
		t.Errorf("batch-decrypt after rename (-want +got):\n%s", diff)
	}

	tampered := bytes.Clone(enc.Ciphertext)
	tampered[len(tampered)-1] ^= 1
	tests := []struct {
		name, path string
		body       any
		want       int
	}{
		{"tampered", "/api/stacks/org/proj/prod/decrypt", stateapi.DecryptValueRequest{Ciphertext: tampered}, 400},
		{"short", "/api/stacks/org/proj/prod/decrypt", stateapi.DecryptValueRequest{Ciphertext: []byte{1, 2}}, 400},
		{"other version", "/api/stacks/org/proj/prod/decrypt", stateapi.DecryptValueRequest{Ciphertext: append([]byte{9}, enc.Ciphertext[1:]...)}, 400},
		{"one bad in a batch", "/api/stacks/org/proj/prod/batch-decrypt", stateapi.BatchDecryptRequest{Ciphertexts: [][]byte{enc.Ciphertext, tampered}}, 400},
		{"missing stack", "/api/stacks/org/proj/nope/encrypt", stateapi.EncryptValueRequest{Plaintext: []byte("x")}, 404},
		{"malformed", "/api/stacks/org/proj/prod/encrypt", `{"plaintext":`, 400},
		{"not base64", "/api/stacks/org/proj/prod/decrypt", `{"ciphertext":"!!"}`, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if code, body := e.do("POST", tt.path, e.token, tt.body); code != tt.want {
				t.Errorf("POST %s = %d %s, want %d", tt.path, code, body, tt.want)
			}
		})
	}
}

// TestSecretsOrganization checks that a ciphertext decrypts only in the organization it was made for.
func TestSecretsOrganization(t *testing.T) {
	aead, err := newSecretsAEAD(testKey)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{secrets: aead}
	ct, err := s.seal("acme", []byte("hush"))
	if err != nil {
		t.Fatal(err)
	}
	if pt, err := s.open("acme", ct, 0); err != nil || string(pt) != "hush" {
		t.Errorf("open in acme = %q, %v; want hush", pt, err)
	}
	if _, err := s.open("other", ct, 0); err == nil {
		t.Error("open in another organization succeeded; want an error")
	}
	if _, err := newSecretsAEAD([]byte("short")); err == nil {
		t.Error("newSecretsAEAD(5 bytes) succeeded; want an error")
	}
}

// TestSecretsWithoutKey checks the answer of a server without a key: 400, which the Pulumi CLI does not
// retry, with what to do.
func TestSecretsWithoutKey(t *testing.T) {
	e := newEnv(t)
	e.createStack("dev")
	for _, p := range []string{"encrypt", "decrypt", "batch-encrypt", "batch-decrypt"} {
		code, body := e.do("POST", "/api/stacks/org/proj/dev/"+p, e.token, `{}`)
		var er errorResponse
		decode(t, body, &er)
		if code != 400 || er.Message != errNoSecretsKey.msg {
			t.Errorf("POST …/%s = %d %q, want 400 %q", p, code, er.Message, errNoSecretsKey.msg)
		}
	}
}
