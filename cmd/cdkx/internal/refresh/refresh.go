// Package refresh implements `cdkx refresh`: read every resource from its provider and record drift.
package refresh

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/view"
	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// Options are the inputs of one `cdkx refresh`.
type Options struct {
	F      *cli.Factory
	Config *cli.Config
	Stacks []string
}

// NewCmdRefresh returns the refresh command; runF replaces refreshRun in tests.
func NewCmdRefresh(f *cli.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{F: f}
	return &cobra.Command{
		Use:   "refresh [STACK...]",
		Short: "Read every resource from its provider and record drift",
		Long: `Refresh reads every resource recorded in state for the stacks (all stacks with state when none is
named) from its provider, and records what it finds as a deployment of kind "refresh":
IN_SYNC, MODIFIED (changed outside cdkx: the recorded inputs take the live values, so that the next
diff shows the change that corrects them) or DELETED (gone: the record goes, the next deploy creates it
again). It also settles operations an interrupted run left pending. Nothing is changed at the providers.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := cli.LoadConfig(cmd.Flags(), f.Getenv)
			if err != nil {
				return err
			}
			opts.Config, opts.Stacks = cfg, args
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return refreshRun(cmd.Context(), opts)
		},
	}
}

func refreshRun(ctx context.Context, opts *Options) (err error) {
	f, cfg := opts.F, opts.Config
	b, err := f.OpenBackend(ctx, cfg.State)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := b.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	names := opts.Stacks
	if len(names) == 0 {
		if names, err = b.ListStacks(ctx); err != nil {
			return err
		}
	}
	release, err := cli.Lock(ctx, f, cfg, b, names, "refresh")
	if err != nil {
		return err
	}
	defer release()
	var stacks []*state.Stack
	var providers, types, ids []string
	for _, n := range names {
		st, err := b.GetStack(ctx, n)
		if err != nil {
			return err
		}
		if st.Version == 0 {
			return fmt.Errorf("stack %s has no state; deploy it first", n)
		}
		stacks = append(stacks, st)
		for _, r := range st.Resources {
			providers, types, ids = append(providers, r.Provider), append(types, r.Type), append(ids, r.LogicalID)
		}
	}
	reg := f.Providers()
	sort.Strings(providers)
	if err := reg.Configure(compact(providers)); err != nil {
		return err
	}
	ev := Events(f, cfg, names, types, ids)
	start := f.Now()
	res, err := engine.Refresh(ctx, stacks, engine.Options{Backend: b, Providers: reg, Concurrency: cfg.Concurrency,
		OnEvent: ev.Event, Now: f.Now, CreatedBy: cli.CreatedBy(), CdkxVersion: f.Version}, engine.RefreshOptions{})
	if err != nil {
		return err
	}
	ev.Summary(view.Summary{Command: "refresh", Result: res, Elapsed: f.Now().Sub(start)})
	if err := res.Err(); err != nil {
		return &cli.ExitError{Code: cli.ExitCode(err)}
	}
	return nil
}

// Events returns the event view of the configuration: JSON lines or the table.
func Events(f *cli.Factory, cfg *cli.Config, stacks, types, ids []string) view.Events {
	if cfg.JSON {
		return view.NewJSONLines(f.IO.Out)
	}
	return view.NewTable(f.IO.ErrOut, f.IO.Live(), f.IO.Color && !cfg.NoColor, stacks, types, ids)
}

func compact(sorted []string) []string {
	var out []string
	for _, s := range sorted {
		if len(out) == 0 || out[len(out)-1] != s {
			out = append(out, strings.TrimSpace(s))
		}
	}
	return out
}

// Settle reads the named stacks' resources from their providers before a deploy, diff or destroy plans:
// with full, every resource (drift: deploy --refresh, diff --refresh); otherwise only those with a pending
// operation left by an interrupted run, and only when there are any. With dryRun nothing is written (diff).
// It prints what it finds on stderr and returns st with the refreshed stacks in place. A resource it cannot
// settle stops the command: planning on an unknown state could create a duplicate or orphan an object.
func Settle(ctx context.Context, f *cli.Factory, cfg *cli.Config, b state.Backend, st map[string]*state.Stack, names []string,
	full, dryRun bool) (map[string]*state.Stack, error) {
	var stacks []*state.Stack
	var providers, types, ids []string
	for _, n := range names {
		s := st[n]
		if s == nil || s.Version == 0 {
			continue
		}
		stacks = append(stacks, s)
		for _, r := range s.Resources {
			if full || r.Pending != nil {
				providers, types, ids = append(providers, r.Provider), append(types, r.Type), append(ids, r.LogicalID)
			}
		}
	}
	pending := engine.PendingOperations(stacks)
	if len(ids) == 0 {
		return st, nil
	}
	if !full && !cfg.JSON {
		fmt.Fprintf(f.IO.ErrOut, "Settling %d operation(s) left pending by an interrupted run, by reading the providers:\n", pending)
	}
	reg := f.Providers()
	sort.Strings(providers)
	if err := reg.Configure(compact(providers)); err != nil {
		return nil, err
	}
	ev := Events(f, cfg, names, types, ids)
	res, err := engine.Refresh(ctx, stacks, engine.Options{Backend: b, Providers: reg, Concurrency: cfg.Concurrency,
		ProviderConcurrency: cfg.ProviderConcurrency, OnEvent: ev.Event, Now: f.Now, CreatedBy: cli.CreatedBy(), CdkxVersion: f.Version},
		engine.RefreshOptions{PendingOnly: !full, DryRun: dryRun})
	if err != nil {
		return nil, err
	}
	if len(res.Failures) > 0 {
		ev.Summary(view.Summary{Command: "refresh", Result: res})
		return nil, &cli.ExitError{Code: cli.ExitFailed, Err: errors.New("some resources could not be read back from their providers; nothing else was done")}
	}
	if !cfg.JSON {
		fmt.Fprintln(f.IO.ErrOut)
	}
	out := make(map[string]*state.Stack, len(st))
	for k, v := range st {
		out[k] = v
	}
	for name, s := range res.Stacks {
		out[name] = s
	}
	return out, nil
}
