package stateapi

// EncryptValueRequest mirrors apitype.EncryptValueRequest (POST …/encrypt); []byte is base64 in JSON.
type EncryptValueRequest struct {
	Plaintext []byte `json:"plaintext"`
}

// EncryptValueResponse mirrors apitype.EncryptValueResponse.
type EncryptValueResponse struct {
	Ciphertext []byte `json:"ciphertext"`
}

// BatchEncryptRequest mirrors apitype.BatchEncryptRequest (POST …/batch-encrypt).
type BatchEncryptRequest struct {
	Plaintexts [][]byte `json:"plaintexts"`
}

// BatchEncryptResponse mirrors apitype.BatchEncryptResponse: the ciphertexts in request order.
type BatchEncryptResponse struct {
	Ciphertexts [][]byte `json:"ciphertexts"`
}

// DecryptValueRequest mirrors apitype.DecryptValueRequest (POST …/decrypt).
type DecryptValueRequest struct {
	Ciphertext []byte `json:"ciphertext"`
}

// DecryptValueResponse mirrors apitype.DecryptValueResponse.
type DecryptValueResponse struct {
	Plaintext []byte `json:"plaintext"`
}

// BatchDecryptRequest mirrors apitype.BatchDecryptRequest (POST …/batch-decrypt).
type BatchDecryptRequest struct {
	Ciphertexts [][]byte `json:"ciphertexts"`
}

// BatchDecryptResponse mirrors apitype.BatchDecryptResponse: the plaintexts keyed by the standard
// base64 encoding of their ciphertext.
type BatchDecryptResponse struct {
	Plaintexts map[string][]byte `json:"plaintexts"`
}

// Log3rdPartyDecryptionEvent mirrors apitype.Log3rdPartyDecryptionEvent: the body of POST
// …/decrypt/log-decryption (SecretName: one value shown) and …/decrypt/log-batch-decryption (CommandName:
// the command that showed a stack's secrets), which the Pulumi CLI sends when it decrypts with another
// secrets provider (e.g. passphrase) so that the service can audit it.
type Log3rdPartyDecryptionEvent struct {
	SecretName  string `json:"secretName,omitempty"`
	CommandName string `json:"commandName,omitempty"`
}
