package resource

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// FingerprintKey is the key of the object that stands for a write-only value in state:
// {"cdkx:fingerprint": "hmac-sha256:<salt hex>:<mac hex>"}.
const FingerprintKey = "cdkx:fingerprint"

// Sensitive is how plans and events show a write-only value.
const Sensitive = "(sensitive)"

// Fingerprint returns the object that stands for a write-only value in state: an HMAC-SHA256 of the
// value's canonical JSON keyed by salt (16 random bytes when salt is empty). Equal values with the same
// salt give equal fingerprints, so a diff can tell whether the value changed without storing it; the salt
// keeps equal secrets of different resources from looking alike.
func Fingerprint(v any, salt []byte) map[string]any {
	if len(salt) == 0 {
		salt = make([]byte, 16)
		_, _ = rand.Read(salt) // crypto/rand never fails on supported platforms
	}
	mac := hmac.New(sha256.New, salt)
	mac.Write(Canonical(v))
	return map[string]any{FingerprintKey: "hmac-sha256:" + hex.EncodeToString(salt) + ":" + hex.EncodeToString(mac.Sum(nil))}
}

// FingerprintSalt returns the salt of a fingerprint made by Fingerprint; ok is false for any other value.
func FingerprintSalt(v any) (salt []byte, ok bool) {
	m, isMap := v.(map[string]any)
	if !isMap || len(m) != 1 {
		return nil, false
	}
	s, isString := m[FingerprintKey].(string)
	if !isString {
		return nil, false
	}
	parts := strings.Split(s, ":")
	if len(parts) != 3 || parts[0] != "hmac-sha256" {
		return nil, false
	}
	salt, err := hex.DecodeString(parts[1])
	return salt, err == nil
}

// MatchesFingerprint reports whether value is the value fingerprint was made from.
func MatchesFingerprint(fingerprint, value any) bool {
	salt, ok := FingerprintSalt(fingerprint)
	if !ok {
		return false
	}
	return Equal(fingerprint, Fingerprint(value, salt))
}

// StoredInputs returns inputs as state keeps them: every write-only property of s replaced by its
// Fingerprint, reusing the salt of the same property in old (the last stored inputs) so that an unchanged
// secret stores an unchanged fingerprint. Other values are shared, not copied; inputs without a write-only
// property are returned as they are (the caller must not change them afterwards).
func StoredInputs(s Schema, inputs, old Properties) Properties {
	writeOnly := false
	for k, v := range inputs {
		if s.Properties[k].WriteOnly && v != nil {
			writeOnly = true
			break
		}
	}
	if !writeOnly {
		return inputs
	}
	out := make(Properties, len(inputs))
	for k, v := range inputs {
		if !s.Properties[k].WriteOnly || v == nil {
			out[k] = v
			continue
		}
		if _, already := FingerprintSalt(v); already {
			out[k] = v
			continue
		}
		salt, _ := FingerprintSalt(old[k])
		out[k] = Fingerprint(v, salt)
	}
	return out
}

// Redact returns inputs with every write-only property of s shown as Sensitive, for plans and events.
func Redact(s Schema, inputs Properties) Properties {
	out := make(Properties, len(inputs))
	for k, v := range inputs {
		if s.Properties[k].WriteOnly && v != nil {
			if _, unknown := v.(Unknown); !unknown {
				v = Sensitive
			}
		}
		out[k] = v
	}
	return out
}
