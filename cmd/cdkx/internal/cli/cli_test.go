package cli_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/deploy"
	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/pkg/diag"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

func TestExitCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errors.New("boom"), 1},
		{&diag.ListError{}, 1},
		{fmt.Errorf("wrapped: %w", &state.LockedError{}), 3},
		{&engine.FailedError{Failures: []engine.Failure{{Err: errors.New("x")}}}, 4},
		{engine.ErrInterrupted, 130},
		{context.Canceled, 130},
		{&cli.ExitError{Code: 2}, 2},
		{fmt.Errorf("preflight: %w", &resource.CredentialsError{Provider: "hetzner", Variables: "HCLOUD_TOKEN", Err: errors.New("401")}), 1},
	}
	for _, tt := range tests {
		if got := cli.ExitCode(tt.err); got != tt.want {
			t.Errorf("ExitCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

// TestDeployFlags checks flag parsing and configuration precedence (flag > CDKX_* > cdkx.json) through
// runF, without deploying anything.
func TestDeployFlags(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.WriteFile(filepath.Join(dir, "cdkx.json"), []byte(`{"app": "node app.js", "output": "out/assembly"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		args  []string
		env   map[string]string
		want  cli.Config
		stack []string
		excl  bool
	}{
		{name: "defaults", want: cli.Config{App: "out/assembly", State: ".cdkx/state.db", Concurrency: 10}},
		{name: "flags", args: []string{"--app", "x.out", "--state", "s.db", "--concurrency", "3", "--json", "--lock-timeout", "2m", "-e", "App", "Zones"},
			want: cli.Config{App: "x.out", State: "s.db", Concurrency: 3, JSON: true, LockTimeout: 2 * time.Minute}, stack: []string{"App", "Zones"}, excl: true},
		{name: "environment", env: map[string]string{"CDKX_CONCURRENCY": "7", "CDKX_LOCK_TIMEOUT": "30s", "CDKX_APP": "env.out"},
			want: cli.Config{App: "env.out", State: ".cdkx/state.db", Concurrency: 7, LockTimeout: 30 * time.Second}},
		{name: "flag beats environment", args: []string{"--concurrency", "2"}, env: map[string]string{"CDKX_CONCURRENCY": "7"},
			want: cli.Config{App: "out/assembly", State: ".cdkx/state.db", Concurrency: 2}},
		{name: "per-provider concurrency", env: map[string]string{"CDKX_CONCURRENCY_RABBITMQ": "2"},
			want: cli.Config{App: "out/assembly", State: ".cdkx/state.db", Concurrency: 10, ProviderConcurrency: map[string]int{"rabbitmq": 2}}},
		{name: "NO_COLOR", env: map[string]string{"NO_COLOR": "1"},
			want: cli.Config{App: "out/assembly", State: ".cdkx/state.db", Concurrency: 10, NoColor: true}},
		{name: "yes", args: []string{"--yes", "--require-approval", "any"},
			want: cli.Config{App: "out/assembly", State: ".cdkx/state.db", Concurrency: 10, Yes: true, RequireApproval: cli.ApprovalAny}},
		{name: "auto-approve", args: []string{"--auto-approve"},
			want: cli.Config{App: "out/assembly", State: ".cdkx/state.db", Concurrency: 10, Yes: true}},
		{name: "approval from the environment", env: map[string]string{"CDKX_REQUIRE_APPROVAL": "Never", "CDKX_YES": "true"},
			want: cli.Config{App: "out/assembly", State: ".cdkx/state.db", Concurrency: 10, Yes: true, RequireApproval: cli.ApprovalNever}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			f := &cli.Factory{IO: &cli.IOStreams{}, Getenv: os.Getenv}
			var got *deploy.Options
			root := cli.NewRootCmd("test")
			root.AddCommand(deploy.NewCmdDeploy(f, func(_ context.Context, o *deploy.Options) error { got = o; return nil }))
			root.SetArgs(append([]string{"deploy"}, tt.args...))
			if err := root.Execute(); err != nil {
				t.Fatalf("Execute: %v", err)
			}
			if tt.want.RequireApproval == "" {
				tt.want.RequireApproval = cli.ApprovalDestructive
			}
			if diff := cmp.Diff(tt.want, *got.Config); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.stack, got.Stacks, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("stacks (-want +got):\n%s", diff)
			}
			if got.Exclusively != tt.excl {
				t.Errorf("Exclusively = %t, want %t", got.Exclusively, tt.excl)
			}
		})
	}
}

// TestBadEnvironment: a malformed CDKX_CONCURRENCY or CDKX_LOCK_TIMEOUT is named, with the form it
// wants (viper alone reads "abc" as 0 and "5" as 5ns); a flag given on the command line wins over it.
func TestBadEnvironment(t *testing.T) {
	for _, tc := range []struct {
		env, value string
		args       []string
		want       string
	}{
		{"CDKX_CONCURRENCY", "abc", nil, `invalid value "abc" for CDKX_CONCURRENCY: want a whole number, e.g. 10`},
		{"CDKX_LOCK_TIMEOUT", "5", nil, `invalid value "5" for CDKX_LOCK_TIMEOUT: want a duration like 30s, 5m or 1h30m`},
		{"CDKX_CONCURRENCY", "abc", []string{"--concurrency", "3"}, ""},
	} {
		t.Run(tc.env+"="+tc.value, func(t *testing.T) {
			t.Chdir(t.TempDir())
			t.Setenv(tc.env, tc.value)
			f := &cli.Factory{IO: &cli.IOStreams{}, Getenv: os.Getenv}
			root := cli.NewRootCmd("test")
			root.AddCommand(deploy.NewCmdDeploy(f, func(context.Context, *deploy.Options) error { return nil }))
			root.SetArgs(append([]string{"deploy"}, tc.args...))
			err := root.Execute()
			if got := fmt.Sprint(err); (tc.want == "" && err != nil) || (tc.want != "" && got != tc.want) {
				t.Errorf("Execute() = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestDeployRejectsBadConcurrency(t *testing.T) {
	t.Chdir(t.TempDir())
	f := &cli.Factory{IO: &cli.IOStreams{}, Getenv: os.Getenv}
	root := cli.NewRootCmd("test")
	root.AddCommand(deploy.NewCmdDeploy(f, func(context.Context, *deploy.Options) error { return nil }))
	root.SetArgs([]string{"deploy", "--concurrency", "0"})
	err := root.Execute()
	if err == nil || err.Error() != "--concurrency must be at least 1, got 0" {
		t.Errorf("Execute() = %v, want the concurrency error", err)
	}
}

// TestRequireApproval: cdkx.json's "requireApproval" is the default of --require-approval, and a value
// outside never|destructive|any names its source and the accepted values.
func TestRequireApproval(t *testing.T) {
	tests := []struct {
		name, file string
		args       []string
		want       cli.Approval
		wantErr    string
	}{
		{name: "default", want: cli.ApprovalDestructive},
		{name: "cdkx.json", file: `{"requireApproval": "any"}`, want: cli.ApprovalAny},
		{name: "flag beats cdkx.json", file: `{"requireApproval": "any"}`, args: []string{"--require-approval", "never"}, want: cli.ApprovalNever},
		{name: "bad flag", args: []string{"--require-approval", "broadening"},
			wantErr: `invalid value "broadening" for --require-approval: want never, destructive or any`},
		{name: "bad cdkx.json", file: `{"requireApproval": "always"}`,
			wantErr: `invalid value "always" for requireApproval in cdkx.json: want never, destructive or any`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			if tt.file != "" {
				if err := os.WriteFile("cdkx.json", []byte(tt.file), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			f := &cli.Factory{IO: &cli.IOStreams{}, Getenv: os.Getenv}
			var got *deploy.Options
			root := cli.NewRootCmd("test")
			root.AddCommand(deploy.NewCmdDeploy(f, func(_ context.Context, o *deploy.Options) error { got = o; return nil }))
			root.SetArgs(append([]string{"deploy"}, tt.args...))
			err := root.Execute()
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Execute() = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Execute: %v", err)
			}
			if got.Config.RequireApproval != tt.want {
				t.Errorf("RequireApproval = %q, want %q", got.Config.RequireApproval, tt.want)
			}
		})
	}
}

// TestDefaultProvidersDeclare checks the CLI's own registry: each provider's declared abilities reach the
// engine unchanged although PowerDNS and RabbitMQ are built only on first use (the RabbitMQ default of 4
// calls at once used to be hidden by a wrapper).
func TestDefaultProvidersDeclare(t *testing.T) {
	t.Parallel()
	reg := cli.DefaultProviders(func(string) string { return "" })
	for _, tc := range []struct {
		name        string
		concurrency int
		canLocate   bool
	}{
		{"cdkx", 0, true},
		{"powerdns", 0, true},
		{"rabbitmq", 4, true},
		{"hetzner", 50, true},
	} {
		info, ok := reg.Info(tc.name)
		if !ok || info.DefaultConcurrency != tc.concurrency || info.CanLocate != tc.canLocate || len(info.Schemas) == 0 {
			t.Errorf("Info(%q) = {DefaultConcurrency: %d, CanLocate: %t, %d schemas}, %t; want {%d, %t, some}, true",
				tc.name, info.DefaultConcurrency, info.CanLocate, len(info.Schemas), ok, tc.concurrency, tc.canLocate)
		}
	}
	if err := reg.Configure([]string{"rabbitmq"}); err == nil || !strings.Contains(err.Error(), "RABBITMQ_API_URL") {
		t.Errorf("Configure(rabbitmq) without its variables = %v, want an error naming RABBITMQ_API_URL", err)
	}
	if err := reg.Configure([]string{"hetzner"}); err == nil || !strings.Contains(err.Error(), "HCLOUD_TOKEN") {
		t.Errorf("Configure(hetzner) without its variables = %v, want an error naming HCLOUD_TOKEN", err)
	}
}
