package server

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
)

func TestFlags(t *testing.T) {
	// def is the options of no flag but the listen address; with sets some of them.
	def := Options{Listen: "127.0.0.1:8080", Lease: 5 * time.Minute, LeaseGrace: 30 * time.Second, GCInterval: time.Minute,
		MaxBodyMiB: 64, BodyBudgetMiB: 128, ReadHeaderTimeout: 10 * time.Second, BodyTimeout: time.Minute, IdleTimeout: 2 * time.Minute,
		MaxConnsPerAddr: 64, ConsoleSession: 12 * time.Hour}
	with := func(f func(o *Options)) Options { o := def; f(&o); return o }
	tests := []struct {
		args []string
		env  string
		want Options
	}{
		{nil, "", def},
		{[]string{"--listen", "0.0.0.0:9000", "--database-url", "postgres://a@b/c"}, "", with(func(o *Options) {
			o.Listen, o.ListenSet, o.DatabaseURL = "0.0.0.0:9000", true, "postgres://a@b/c"
		})},
		{nil, "postgres://env@db/x", with(func(o *Options) { o.DatabaseURL = "postgres://env@db/x" })},
		{[]string{"--lease", "5s", "--lease-grace", "1s", "--gc-interval", "2s"}, "", with(func(o *Options) {
			o.Lease, o.LeaseGrace, o.GCInterval = 5*time.Second, time.Second, 2*time.Second
		})},
		{[]string{"--webhook", "https://a.example/x", "--webhook", "http://b.example", "--webhook-secret-file", "k", "--public-url", "https://cdkx.example"}, "", with(func(o *Options) {
			o.Webhooks, o.WebhookSecretFile, o.PublicURL = []string{"https://a.example/x", "http://b.example"}, "k", "https://cdkx.example"
		})},
		{[]string{"--max-body-mib", "16", "--body-budget-mib", "48", "--read-header-timeout", "3s", "--body-timeout", "20s",
			"--idle-timeout", "30s", "--max-conns-per-address", "0"}, "", with(func(o *Options) {
			o.MaxBodyMiB, o.BodyBudgetMiB, o.ReadHeaderTimeout, o.BodyTimeout, o.IdleTimeout, o.MaxConnsPerAddr = 16, 48, 3*time.Second, 20*time.Second, 30*time.Second, 0
		})},
		{[]string{"--no-console", "--console-secure-cookies", "--trusted-proxy", "--console-session", "1h"}, "", with(func(o *Options) {
			o.NoConsole, o.ConsoleSecureCookies, o.TrustedProxy, o.ConsoleSession = true, true, true, time.Hour
		})},
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
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Execute(%q) options (-want +got):\n%s", tt.args, diff)
		}
	}
}

func TestRefuseNonLoopbackDefault(t *testing.T) {
	f := &cli.Factory{IO: &cli.IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}}
	if err := serverRun(context.Background(), &Options{F: f, Listen: "0.0.0.0:8080"}); err == nil {
		t.Error("serverRun(0.0.0.0 not given explicitly) = nil, want an error")
	}
}

func TestConsoleOptions(t *testing.T) {
	f := &cli.Factory{}
	if got := consoleOptions(&Options{F: f, NoConsole: true}); got != nil {
		t.Errorf("consoleOptions(--no-console) = %+v, want nil", got)
	}
	got := consoleOptions(&Options{F: f, ConsoleSecureCookies: true, TrustedProxy: true, ConsoleSession: time.Hour})
	if got == nil || !got.SecureCookies || !got.TrustProxy || got.SessionLifetime != time.Hour {
		t.Errorf("consoleOptions(flags) = %+v, want secure cookies, a trusted proxy and 1h sessions", got)
	}
}
