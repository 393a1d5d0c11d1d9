package server

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
)

func TestFlags(t *testing.T) {
	tests := []struct {
		args []string
		env  string
		want Options
	}{
		{nil, "", Options{Listen: "127.0.0.1:8080", Lease: 5 * time.Minute, LeaseGrace: 30 * time.Second, GCInterval: time.Minute}},
		{[]string{"--listen", "0.0.0.0:9000", "--database-url", "postgres://a@b/c"}, "", Options{Listen: "0.0.0.0:9000", ListenSet: true,
			DatabaseURL: "postgres://a@b/c", Lease: 5 * time.Minute, LeaseGrace: 30 * time.Second, GCInterval: time.Minute}},
		{nil, "postgres://env@db/x", Options{Listen: "127.0.0.1:8080", DatabaseURL: "postgres://env@db/x", Lease: 5 * time.Minute,
			LeaseGrace: 30 * time.Second, GCInterval: time.Minute}},
		{[]string{"--lease", "5s", "--lease-grace", "1s", "--gc-interval", "2s"}, "", Options{Listen: "127.0.0.1:8080", Lease: 5 * time.Second,
			LeaseGrace: time.Second, GCInterval: 2 * time.Second}},
	}
	for _, tt := range tests {
		f := &cli.Factory{IO: &cli.IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}},
			Getenv: func(k string) string {
				if k == "CDKX_DATABASE_URL" {
					return tt.env
				}
				return ""
			}}
		var got Options
		cmd := NewCmdServer(f, func(_ context.Context, o *Options) error { got = *o; return nil })
		cmd.SetArgs(tt.args)
		if err := cmd.Execute(); err != nil {
			t.Fatalf("Execute(%q) = %v", tt.args, err)
		}
		got.F = nil
		if got != tt.want {
			t.Errorf("Execute(%q) options = %+v, want %+v", tt.args, got, tt.want)
		}
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:8080": true, "[::1]:80": true, "localhost:1": true, "0.0.0.0:8080": false, ":8080": false, "10.0.0.1:80": false} {
		if got := isLoopback(addr); got != want {
			t.Errorf("isLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

func TestRefuseNonLoopbackDefault(t *testing.T) {
	f := &cli.Factory{IO: &cli.IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}}
	if err := serverRun(context.Background(), &Options{F: f, Listen: "0.0.0.0:8080"}); err == nil {
		t.Error("serverRun(0.0.0.0 not given explicitly) = nil, want an error")
	}
}
