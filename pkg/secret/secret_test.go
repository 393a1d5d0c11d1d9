package secret

import (
	"errors"
	"strings"
	"testing"
)

func TestSealOpen(t *testing.T) {
	b, err := NewBox("correct horse", nil)
	if err != nil {
		t.Fatal(err)
	}
	s1, s2 := b.Seal([]byte("hunter2")), b.Seal([]byte("hunter2"))
	if s1 == s2 {
		t.Errorf("two seals of one value are equal: %q", s1)
	}
	if strings.Contains(s1, "hunter2") {
		t.Errorf("sealed value %q holds the plain text", s1)
	}
	again, err := NewBox("correct horse", b.Salt())
	if err != nil {
		t.Fatal(err)
	}
	got, err := again.Open(s1)
	if err != nil || string(got) != "hunter2" {
		t.Errorf("Open() = %q, %v; want hunter2", got, err)
	}
	wrong, err := NewBox("wrong", b.Salt())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wrong.Open(s1); !errors.Is(err, ErrWrongPassphrase) {
		t.Errorf("Open with the wrong passphrase = %v, want ErrWrongPassphrase", err)
	}
	tampered := []byte(s1)
	tampered[20] ^= 1
	if _, err := again.Open(string(tampered)); err == nil {
		t.Errorf("Open of an altered value = nil error")
	}
	if _, err := NewBox("", nil); err == nil || !strings.Contains(err.Error(), EnvPassphrase) {
		t.Errorf("NewBox(\"\") = %v, want an error naming %s", err, EnvPassphrase)
	}
}
