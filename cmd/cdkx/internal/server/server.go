// Package server implements `cdkx server`: run the state service, and manage its API tokens.
package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/internal/console"
	"github.com/cdkx-dev/cdkx/internal/server"
)

// Options are the inputs of one `cdkx server`.
type Options struct {
	F           *cli.Factory
	Listen      string
	ListenSet   bool
	DatabaseURL string
	// Lease is the lifetime of a lease token issued by start; LeaseGrace how long after expiry the
	// collector cancels the update; GCInterval how often it runs.
	Lease, LeaseGrace, GCInterval time.Duration
	// RequireSecondPerson refuses an approval by the proposal's own author (--require-second-person).
	RequireSecondPerson bool
	// SecretsKeyFile names the file holding the secrets key (--secrets-key-file); SecretsKeyEnv is
	// $CDKX_SERVER_SECRETS_KEY. Each holds the base64 of 32 bytes.
	SecretsKeyFile, SecretsKeyEnv string
	// MaxBodyMiB bounds the body of a state request (checkpoint, commit, import) in MiB; BodyBudgetMiB
	// the bytes of bodies in flight together (--max-body-mib, --body-budget-mib).
	MaxBodyMiB, BodyBudgetMiB int64
	// ReadHeaderTimeout, BodyTimeout and IdleTimeout bound a request's headers, its body, and an idle
	// keep-alive connection; MaxConnsPerAddr caps the open connections of one client address (0: none).
	ReadHeaderTimeout, BodyTimeout, IdleTimeout time.Duration
	MaxConnsPerAddr                             int
	// Webhooks are the URLs deployment events are posted to (--webhook, repeatable); WebhookSecretFile
	// holds the key that signs them (--webhook-secret-file); PublicURL is the base of the links to the
	// console in them (--public-url).
	Webhooks                     []string
	WebhookSecretFile, PublicURL string
	// NoConsole turns the web console off (--no-console); ConsoleSecureCookies marks its session cookie
	// Secure (--console-secure-cookies: TLS ends in a proxy that does not send X-Forwarded-Proto);
	// TrustedProxy trusts X-Forwarded-Proto from the proxy in front (--trusted-proxy); ConsoleSession is
	// a session's lifetime (--console-session).
	NoConsole, ConsoleSecureCookies, TrustedProxy bool
	ConsoleSession                                time.Duration
}

// NewCmdServer returns the server command and its token subcommands; runF replaces serverRun in tests.
func NewCmdServer(f *cli.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{F: f}
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run the state service (Pulumi-compatible HTTP API on PostgreSQL)",
		Long: `Server serves stacks' state over HTTP, on PostgreSQL, speaking the update lifecycle of the Pulumi
Service API: the cdkx CLI and the Pulumi CLI (pulumi login http://HOST:PORT) can both use it.

It listens on 127.0.0.1:8080 unless --listen says otherwise; it speaks plain HTTP, so terminate TLS
in a proxy in front of it. Several replicas may share one database. Clients authenticate with API
tokens from "cdkx server token create NAME".

Console: the web console is served at / on the same address (http://HOST:PORT/login): log in with
an API token; the token's organizations and read-only scope apply to every page and action. Its
session cookie is HttpOnly and SameSite=Strict, and Secure with --console-secure-cookies or, with
--trusted-proxy, when the proxy in front sends X-Forwarded-Proto: https. --no-console turns it off.

Secrets: with a key (--secrets-key-file, or CDKX_SERVER_SECRETS_KEY), the server encrypts the
secrets of stacks that use the Pulumi CLI's default service secrets provider (AES-256-GCM; a
ciphertext decrypts only in the organization it was made for). Without a key, those stacks must use
another provider (pulumi stack init --secrets-provider passphrase). Make a key with:

  head -c 32 /dev/urandom | base64 > secrets.key

Webhooks: each --webhook URL receives every deployment event (proposed, approved, rejected,
started, completed, failed, aborted) as a JSON POST with a Slack-compatible "text" and, with
--public-url, a link to the deployment's page; with --webhook-secret-file, signed with
HMAC-SHA256 of the body under the file's content in the X-Cdkx-Signature header (sha256=HEX).
Deliveries are retried with backoff, never delay a request, and are listed by
GET /api/cdkx/webhooks/deliveries.

Environment: CDKX_DATABASE_URL is the default of --database-url; CDKX_SERVER_SECRETS_KEY (base64 of
32 bytes) is the secrets key when --secrets-key-file is not given.`,
		Example: `  export CDKX_DATABASE_URL=postgres://cdkx@127.0.0.1:5432/cdkx
  cdkx server token create ci --org web
  cdkx server --listen 127.0.0.1:8080 --secrets-key-file secrets.key`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ListenSet = cmd.Flags().Changed("listen")
			if opts.DatabaseURL == "" {
				opts.DatabaseURL = f.Getenv("CDKX_DATABASE_URL")
			}
			opts.SecretsKeyEnv = f.Getenv("CDKX_SERVER_SECRETS_KEY")
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return serverRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Listen, "listen", "127.0.0.1:8080", "address to listen on (host:port); a non-loopback host must be given explicitly")
	cmd.Flags().DurationVar(&opts.Lease, "lease", server.DefaultLease, "lease of an update whose client asks for none (the Pulumi CLI, which renews at half time); cdkx clients ask for 20s")
	cmd.Flags().DurationVar(&opts.LeaseGrace, "lease-grace", server.LeaseGrace, "how long after its lease expired an update is cancelled by the collector")
	cmd.Flags().BoolVar(&opts.RequireSecondPerson, "require-second-person", false, "refuse the approval of a deployment by the token that proposed it, and any deploy that is not a proposal (cdkx deploy --propose)")
	cmd.Flags().StringVar(&opts.SecretsKeyFile, "secrets-key-file", "", "file holding the secrets key: the base64 of 32 random bytes (default $CDKX_SERVER_SECRETS_KEY)")
	cmd.Flags().DurationVar(&opts.GCInterval, "gc-interval", server.GCInterval, "how often the collector cancels expired updates")
	cmd.Flags().Int64Var(&opts.MaxBodyMiB, "max-body-mib", server.DefaultMaxBody>>20, "largest body of a state request (checkpoint, commit, import) in MiB, after gzip decoding; other routes take less (secrets: 256 KiB, batches and events: 8 MiB, deployments: 32 MiB); beyond: 413")
	cmd.Flags().Int64Var(&opts.BodyBudgetMiB, "body-budget-mib", server.DefaultBodyBudget>>20, "MiB of request bodies all requests in flight may hold together (at least --max-body-mib); beyond: 503 with Retry-After")
	cmd.Flags().DurationVar(&opts.ReadHeaderTimeout, "read-header-timeout", 10*time.Second, "time a client has to send a request's headers")
	cmd.Flags().DurationVar(&opts.BodyTimeout, "body-timeout", server.DefaultBodyTimeout, "time a client has to send a request's body, from the end of its headers; beyond: 408 and the connection is closed")
	cmd.Flags().DurationVar(&opts.IdleTimeout, "idle-timeout", 120*time.Second, "how long an idle keep-alive connection is kept open")
	cmd.Flags().IntVar(&opts.MaxConnsPerAddr, "max-conns-per-address", 64, "open connections one client IP address may hold (0: no cap; behind a proxy every client has its address); beyond: 503 and closed")
	cmd.Flags().StringArrayVar(&opts.Webhooks, "webhook", nil, "URL to post each deployment event to (repeatable); see Webhooks above")
	cmd.Flags().StringVar(&opts.WebhookSecretFile, "webhook-secret-file", "", "file holding the key that signs webhook deliveries (HMAC-SHA256 in X-Cdkx-Signature); not readable by others")
	cmd.Flags().StringVar(&opts.PublicURL, "public-url", "", "URL the server is reached at by people (e.g. https://cdkx.example.com), the base of the links in webhook payloads")
	cmd.Flags().BoolVar(&opts.NoConsole, "no-console", false, "serve the API alone, without the web console at /")
	cmd.Flags().BoolVar(&opts.ConsoleSecureCookies, "console-secure-cookies", false, "mark the console's session cookie Secure (TLS ends in a proxy in front)")
	cmd.Flags().BoolVar(&opts.TrustedProxy, "trusted-proxy", false, "trust X-Forwarded-Proto from the reverse proxy in front: https makes the console's session cookie Secure")
	cmd.Flags().DurationVar(&opts.ConsoleSession, "console-session", 12*time.Hour, "how long a console session lasts after login")
	cmd.PersistentFlags().StringVar(&opts.DatabaseURL, "database-url", "", "PostgreSQL URL, e.g. postgres://user:password@host:5432/cdkx (default $CDKX_DATABASE_URL)")
	cmd.AddCommand(newCmdToken(f, opts))
	return cmd
}

func openServer(ctx context.Context, opts *Options, log *slog.Logger) (*server.Server, error) {
	if opts.DatabaseURL == "" {
		return nil, errors.New("no database: pass --database-url postgres://user@host:5432/cdkx or set CDKX_DATABASE_URL")
	}
	key, err := secretsKey(opts)
	if err != nil {
		return nil, err
	}
	hookKey, err := webhookSecret(opts.WebhookSecretFile)
	if err != nil {
		return nil, err
	}
	if opts.PublicURL != "" {
		if u, err := url.Parse(opts.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("--public-url %q: want an http or https URL such as https://cdkx.example.com", opts.PublicURL)
		}
	}
	if len(opts.Webhooks) > 0 && hookKey == nil {
		log.Warn("webhook deliveries are not signed: pass --webhook-secret-file to sign them")
	}
	return server.Open(ctx, opts.DatabaseURL, server.Options{Now: opts.F.Now, Logger: log, Lease: opts.Lease, LeaseGrace: opts.LeaseGrace,
		RequireSecondPerson: opts.RequireSecondPerson, SecretsKey: key, MaxBody: opts.MaxBodyMiB << 20, BodyBudget: opts.BodyBudgetMiB << 20,
		BodyTimeout: opts.BodyTimeout, Webhooks: opts.Webhooks, WebhookSecret: hookKey, PublicURL: opts.PublicURL,
		Console: consoleOptions(opts)})
}

// webhookSecret reads the webhook signing key from path (nil when path is ""): the file's content
// without surrounding white space. It refuses an empty key and, except on Windows, a file that users
// other than its owner and group may read.
func webhookSecret(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read the webhook secret: %w", err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o004 != 0 {
		return nil, fmt.Errorf("webhook secret %s is readable by every user; make it private: chmod 600 %s", path, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the webhook secret: %w", err)
	}
	key := bytes.TrimSpace(data)
	if len(key) == 0 {
		return nil, fmt.Errorf("webhook secret %s is empty; make one with: head -c 32 /dev/urandom | base64 > %s", path, path)
	}
	return key, nil
}

// consoleOptions are the web console's options of the flags; nil with --no-console.
func consoleOptions(opts *Options) *console.Options {
	if opts.NoConsole {
		return nil
	}
	return &console.Options{SecureCookies: opts.ConsoleSecureCookies, TrustProxy: opts.TrustedProxy, SessionLifetime: opts.ConsoleSession, Now: opts.F.Now}
}

// secretsKey reads the secrets key from --secrets-key-file, else from $CDKX_SERVER_SECRETS_KEY; nil
// when neither is set.
func secretsKey(opts *Options) ([]byte, error) {
	text, from := opts.SecretsKeyEnv, "CDKX_SERVER_SECRETS_KEY"
	if opts.SecretsKeyFile != "" {
		data, err := os.ReadFile(opts.SecretsKeyFile)
		if err != nil {
			return nil, fmt.Errorf("read the secrets key: %w", err)
		}
		text, from = string(data), opts.SecretsKeyFile
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, nil
	}
	key, err := base64.StdEncoding.DecodeString(text)
	if err != nil || len(key) != server.SecretsKeySize {
		return nil, fmt.Errorf("secrets key in %s: want the base64 of %d bytes; make one with: head -c 32 /dev/urandom | base64", from, server.SecretsKeySize)
	}
	return key, nil
}

func serverRun(ctx context.Context, opts *Options) error {
	if !opts.ListenSet && !cli.IsLoopback(opts.Listen) {
		return fmt.Errorf("refusing to listen on %s, which is not a loopback address; pass --listen explicitly", opts.Listen)
	}
	log := slog.New(slog.NewJSONHandler(opts.F.IO.ErrOut, nil))
	srv, err := openServer(ctx, opts, log)
	if err != nil {
		return err
	}
	defer srv.Close()
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", opts.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", opts.Listen, err)
	}
	fmt.Fprintf(opts.F.IO.ErrOut, "cdkx server listening on http://%s\n", ln.Addr())
	ln = server.LimitListener(ln, opts.MaxConnsPerAddr)
	hs := &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: opts.ReadHeaderTimeout,
		IdleTimeout:       opts.IdleTimeout,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	gcDone := make(chan error, 1)
	go func() { gcDone <- srv.RunCollector(ctx, opts.GCInterval) }()
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()
	select {
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	err = hs.Shutdown(shutdownCtx)
	<-gcDone
	// The last requests' events: a few seconds for their deliveries (more are lost, as the log says).
	drainCtx, cancelDrain := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancelDrain()
	if derr := srv.DrainWebhooks(drainCtx); derr != nil {
		log.Warn("webhook deliveries still queued at shutdown are lost", "error", derr)
	}
	if err != nil {
		return fmt.Errorf("shut down: %w", err)
	}
	return nil
}
