package server

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"
)

func TestSecretsKey(t *testing.T) {
	key := bytes.Repeat([]byte{3}, 32)
	b64 := base64.StdEncoding.EncodeToString(key)
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good, short := write("good", b64+"\n"), write("short", base64.StdEncoding.EncodeToString(key[:16]))
	tests := []struct {
		name      string
		file, env string
		want      []byte
		wantErr   bool
	}{
		{"none", "", "", nil, false},
		{"env", "", b64, key, false},
		{"file, newline trimmed", good, "", key, false},
		{"file wins over env", good, "bm9wZQ==", key, false},
		{"short key", short, "", nil, true},
		{"not base64", "", "!!", nil, true},
		{"missing file", filepath.Join(dir, "nope"), "", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := secretsKey(&Options{SecretsKeyFile: tt.file, SecretsKeyEnv: tt.env})
			if (err != nil) != tt.wantErr || !bytes.Equal(got, tt.want) {
				t.Errorf("secretsKey() = %x, %v; want %x, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
