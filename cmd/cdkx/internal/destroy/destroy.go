// Package destroy implements `cdkx destroy`: delete every object that state records for the stacks.
package destroy

import (
	"bufio"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/project"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/refresh"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/view"
	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/planner"
)

// Options are the inputs of one `cdkx destroy`.
type Options struct {
	F      *cli.Factory
	Config *cli.Config
	Stacks []string
	Force  bool
	// Target holds --target and --exclude.
	Target project.TargetFlags
}

// NewCmdDestroy returns the destroy command; runF replaces destroyRun in tests.
func NewCmdDestroy(f *cli.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{F: f}
	cmd := &cobra.Command{
		Use:   "destroy [STACK...]",
		Short: "Delete everything state records for the stacks",
		Long: `Destroy deletes every object recorded in state for the named stacks (all stacks with state when
none is named), plus the stacks that depend on them. It is driven by state, not by the assembly:
resources already removed from the assembly are deleted too. Objects go in reverse dependency
order, independent ones in parallel; a failure stops only what depends on it, and every failure
is reported.

--target ID (Stack/LogicalID, or a LogicalID unique across the stacks; repeatable) destroys only
that resource and everything that depends on it (by state's recorded dependencies; a resource in a
stack that depends on another stack counts as depending on all of it). --exclude ID keeps that
resource and everything it depends on, and wins over --target.

On a terminal destroy asks for confirmation; elsewhere (CI) it refuses unless --force is given.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := cli.LoadConfig(cmd.Flags(), f.Getenv)
			if err != nil {
				return err
			}
			opts.Config, opts.Stacks = cfg, args
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return destroyRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVarP(&opts.Force, "force", "f", false, "do not ask for confirmation")
	opts.Target.Register(cmd.Flags(), true)
	return cmd
}

func destroyRun(ctx context.Context, opts *Options) (err error) {
	f, cfg := opts.F, opts.Config
	b, err := f.OpenBackend(ctx, cfg.State)
	if err != nil {
		return err
	}
	defer func() {
		// Closing writes the last WAL checkpoint; a failure there is worth knowing.
		if cerr := b.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	all, err := stacksWithState(ctx, b)
	if err != nil {
		return err
	}
	names, err := selectStacks(all, opts.Stacks)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		fmt.Fprintln(f.IO.ErrOut, "Nothing to destroy: no stack has resources in state.")
		return nil
	}
	var sel *planner.Selection
	if opts.Target.Active() {
		picked := make([]*state.Stack, len(names))
		for i, n := range names {
			picked[i] = all[n]
		}
		if sel, err = planner.SelectDestroy(picked, opts.Target.Targets, opts.Target.Excludes); err != nil {
			return err
		}
		project.WarnTargeting(f.IO.ErrOut, sel)
		if sel.Len() == 0 {
			fmt.Fprintln(f.IO.ErrOut, "Nothing to destroy: --target and --exclude select no resource.")
			return nil
		}
	}
	if !opts.Force {
		if !f.IO.Interactive() {
			return fmt.Errorf("refusing to destroy %s without confirmation: not running on a terminal; pass --force to destroy", strings.Join(names, ", "))
		}
		ok, err := confirm(f, all, names, sel)
		if err != nil {
			return err
		}
		if !ok {
			fmt.Fprintln(f.IO.ErrOut, "Destroy cancelled; nothing was deleted.")
			return nil
		}
	}
	release, err := cli.Lock(ctx, f, cfg, b, names, "destroy")
	if err != nil {
		return err
	}
	defer release()
	var stacks []*state.Stack
	var providers, types, ids []string
	for _, n := range names {
		st, err := b.GetStack(ctx, n) // read again under the lock
		if err != nil {
			return err
		}
		stacks = append(stacks, st)
	}
	// Settle operations an interrupted run left pending first: a create whose result was never recorded
	// may have made an object that destroy must delete too.
	byName := map[string]*state.Stack{}
	for _, st := range stacks {
		byName[st.Name] = st
	}
	settled, err := refresh.Settle(ctx, f, cfg, b, byName, names, false, false)
	if err != nil {
		return err
	}
	for i, st := range stacks {
		stacks[i] = settled[st.Name]
	}
	if sel != nil {
		// Select again from what was read under the lock, and hand the engine only the selected resources.
		if sel, err = planner.SelectDestroy(stacks, opts.Target.Targets, opts.Target.Excludes); err != nil {
			return err
		}
		stacks = sel.FilterStacks(stacks)
		if len(stacks) == 0 {
			fmt.Fprintln(f.IO.ErrOut, "Nothing to destroy: --target and --exclude select no resource.")
			return nil
		}
		names = make([]string, len(stacks)) // a new slice: the lock keeps the old one
		for i, st := range stacks {
			names[i] = st.Name
		}
	}
	for _, st := range stacks {
		for _, r := range st.Resources {
			providers = append(providers, r.Provider)
			types = append(types, r.Type)
			ids = append(ids, r.LogicalID)
		}
	}
	reg := f.Providers()
	if err := reg.Configure(dedupe(providers)); err != nil {
		return err
	}
	var ev view.Events
	if cfg.JSON {
		ev = view.NewJSONLines(f.IO.Out)
	} else {
		ev = view.NewTable(f.IO.ErrOut, f.IO.Live(), f.IO.Color && !cfg.NoColor, names, types, ids)
	}
	start := f.Now()
	res, err := engine.Destroy(ctx, stacks, engine.Options{Backend: b, Providers: reg, Concurrency: cfg.Concurrency, Selection: sel,
		ProviderConcurrency: cfg.ProviderConcurrency,
		OnEvent:             ev.Event, Now: f.Now, CreatedBy: cli.CreatedBy(), CdkxVersion: f.Version})
	if err != nil {
		return err
	}
	ev.Summary(view.Summary{Command: "destroy", Result: res, Elapsed: f.Now().Sub(start)})
	if err := res.Err(); err != nil {
		return &cli.ExitError{Code: cli.ExitCode(err)}
	}
	return nil
}

// stacksWithState returns every stack that has resources in state.
func stacksWithState(ctx context.Context, b state.Backend) (map[string]*state.Stack, error) {
	names, err := b.ListStacks(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]*state.Stack{}
	for _, n := range names {
		st, err := b.GetStack(ctx, n)
		if err != nil {
			return nil, err
		}
		if len(st.Resources) > 0 {
			out[n] = st
		}
	}
	return out, nil
}

// selectStacks returns the named stacks (all when none) and every stack with state that depends on them,
// sorted. A named stack without state is an error.
func selectStacks(all map[string]*state.Stack, named []string) ([]string, error) {
	var known []string
	for n := range all {
		known = append(known, n)
	}
	sort.Strings(known)
	if len(named) == 0 {
		return known, nil
	}
	want := map[string]bool{}
	for _, n := range named {
		if _, ok := all[n]; !ok {
			return nil, fmt.Errorf("stack %q has no resources in state (stacks with resources: %s)", n, listOrNone(known))
		}
		want[n] = true
	}
	for changed := true; changed; {
		changed = false
		for _, n := range known {
			if want[n] {
				continue
			}
			for _, d := range all[n].Dependencies {
				if want[d] {
					want[n], changed = true, true
					break
				}
			}
		}
	}
	return slices.DeleteFunc(known, func(n string) bool { return !want[n] }), nil
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func confirm(f *cli.Factory, all map[string]*state.Stack, names []string, sel *planner.Selection) (bool, error) {
	n := 0
	for _, s := range names {
		n += len(all[s].Resources)
	}
	if sel != nil {
		n = sel.Len()
		names = slices.DeleteFunc(slices.Clone(names), func(s string) bool { return !sel.Covers(s) })
	}
	fmt.Fprintf(f.IO.ErrOut, "This deletes %d resource(s) in %s, at their providers and in state.\nAre you sure? (y/N) ",
		n, strings.Join(names, ", "))
	line, err := bufio.NewReader(f.IO.In).ReadString('\n')
	if err != nil && line == "" {
		return false, nil
	}
	ans := strings.ToLower(strings.TrimSpace(line))
	return ans == "y" || ans == "yes", nil
}

func dedupe(s []string) []string {
	sort.Strings(s)
	return slices.Compact(s)
}
