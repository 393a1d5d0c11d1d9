package server

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func TestWebhookSecret(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name    string
		path    string
		want    []byte
		wantErr bool
	}{
		{"none", "", nil, false},
		{"trimmed", write("good", "s3cret\n", 0o600), []byte("s3cret"), false},
		{"group may read", write("group", "s3cret", 0o640), []byte("s3cret"), false},
		{"empty", write("empty", " \n", 0o600), nil, true},
		{"world-readable", write("world", "s3cret", 0o644), nil, runtime.GOOS != "windows"},
		{"missing", filepath.Join(dir, "nope"), nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := webhookSecret(tt.path)
			if tt.wantErr {
				if err == nil {
					t.Errorf("webhookSecret() = %q, want an error", got)
				}
				return
			}
			if err != nil || !bytes.Equal(got, tt.want) {
				t.Errorf("webhookSecret() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
