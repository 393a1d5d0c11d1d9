// Package console implements `cdkx console`: the web console over the local state (SQLite or
// PostgreSQL), on 127.0.0.1, with a one-time login URL.
package console

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/internal/console"
	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// Options are the inputs of one `cdkx console`.
type Options struct {
	F      *cli.Factory
	Config *cli.Config
	// Listen is the loopback address to serve on (--listen; port 0: a free one).
	Listen string
	// Ready, when set, is told the login URL once the console listens (tests).
	Ready func(loginURL string)
}

// NewCmdConsole returns the console command; runF replaces consoleRun in tests.
func NewCmdConsole(f *cli.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{F: f}
	cmd := &cobra.Command{
		Use:   "console",
		Short: "Serve the web console of the local state on 127.0.0.1",
		Long: `Console serves the web console — stacks, queues, plans with their values, approvals, live
events, comparisons, locks and the audit list — for the state of --state (a SQLite file or a
PostgreSQL URL), on 127.0.0.1 and a free port unless --listen names another loopback address. It
prints a one-time login URL: the token in it logs in once and is then useless. It stops on Ctrl-C.

Approvals, rejections, aborts, redeploys and unlocks are made as you (user@host), under the same
rules as cdkx deployments and cdkx unlock. A state service has its own console, in cdkx server.`,
		Example: "  cdkx console\n  cdkx console --state postgres://cdkx@127.0.0.1:5432/cdkx --listen 127.0.0.1:8099",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := cli.LoadConfig(cmd.Flags(), f.Getenv)
			if err != nil {
				return err
			}
			opts.Config = cfg
			if !cli.IsLoopback(opts.Listen) {
				return fmt.Errorf("refusing to listen on %s: the console listens only on a loopback address (127.0.0.1, ::1 or localhost); serve a team with cdkx server", opts.Listen)
			}
			if strings.HasPrefix(cfg.State, "http://") || strings.HasPrefix(cfg.State, "https://") {
				return errors.New("--state is a state service: its console is served by cdkx server at its own address")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return consoleRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Listen, "listen", "127.0.0.1:0", "loopback address to listen on (port 0: a free port)")
	return cmd
}

func consoleRun(ctx context.Context, opts *Options) error {
	f := opts.F
	b, err := f.OpenBackend(ctx, opts.Config.State)
	if err != nil {
		return err
	}
	defer func() { _ = b.Close() }()
	tok := make([]byte, 24)
	_, _ = rand.Read(tok) // crypto/rand.Read never fails (Go 1.24+)
	src := &console.Local{Backend: b, Token: base64.RawURLEncoding.EncodeToString(tok), By: cli.CreatedBy(), Now: f.Now,
		RedeployFunc: func(ctx context.Context, d *state.Deployment) (string, error) {
			rec, err := operation.Redeploy(ctx, cli.Env(f, opts.Config, b, f.Providers()), d, opts.Config.Passphrase, "redeploy of "+d.ID)
			if err != nil || len(rec) == 0 {
				return "", err
			}
			return rec[0].ID, nil
		}}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", opts.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", opts.Listen, err)
	}
	hs := &http.Server{
		Handler:           console.New(src, console.Options{URLLogin: true, Now: f.Now}),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	login := "http://" + ln.Addr().String() + "/login?token=" + src.Token
	fmt.Fprintf(f.IO.ErrOut, "cdkx console of %s; open this URL once to log in (Ctrl-C stops it):\n", displayState(opts.Config.State))
	fmt.Fprintln(f.IO.Out, login)
	if opts.Ready != nil {
		opts.Ready(login)
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()
	select {
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdownCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shut down: %w", err)
	}
	_ = hs.Close() // event streams still open end now
	return nil
}

// displayState names the state without a PostgreSQL URL's password.
func displayState(location string) string {
	if i := strings.Index(location, "://"); i >= 0 {
		if at := strings.LastIndex(location, "@"); at > i {
			user := location[i+3 : at]
			if u, _, ok := strings.Cut(user, ":"); ok {
				return location[:i+3] + u + ":***" + location[at:]
			}
		}
	}
	return location
}
