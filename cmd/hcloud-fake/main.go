// Command hcloud-fake serves the in-memory Hetzner Cloud API fake (package hcloudfake) on a local address,
// for end-to-end tests that run the cdkx binary.
//
// Usage:
//
//	hcloud-fake --listen 127.0.0.1:PORT --token T [--action-polls N] [--action-duration D]
//	            [--fault-rate F] [--seed S] [--rate-limit N] [--allow-remote]
//
// It prints "hcloud-fake listening on http://ADDR/v1" to stdout once it accepts connections and stops on
// SIGINT or SIGTERM. Control routes: POST /_fake/fail-actions {"command","count"}, GET /_fake/requests.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/cdkx-dev/cdkx/adapters/hcloud/hcloudfake"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "hcloud-fake:", err)
		os.Exit(1) //nolint:forbidigo // a main package of its own; only main exits
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("hcloud-fake", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on (host:port)")
	allowRemote := fs.Bool("allow-remote", false, "allow a non-loopback listen address")
	var opts hcloudfake.Options
	fs.StringVar(&opts.Token, "token", "", "bearer token clients must send (empty: any)")
	fs.IntVar(&opts.ActionPolls, "action-polls", 0, "an action runs until fetched this many times")
	fs.DurationVar(&opts.ActionDuration, "action-duration", 0, "an action runs for this long")
	fs.Float64Var(&opts.FaultRate, "fault-rate", 0, "share of /v1 requests answered 429 or 503")
	fs.Int64Var(&opts.Seed, "seed", 1, "seed of the fault PRNG")
	fs.IntVar(&opts.RateLimit, "rate-limit", 0, "token bucket size, refilled 1/s (0: unlimited)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	host, _, err := net.SplitHostPort(*listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	if ip := net.ParseIP(host); !*allowRemote && host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("--listen %s is not a loopback address; pass --allow-remote to bind it", *listen)
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", *listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: hcloudfake.New(opts), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "hcloud-fake listening on http://%s/v1\n", ln.Addr())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
