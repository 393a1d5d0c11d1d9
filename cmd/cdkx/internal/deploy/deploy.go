// Package deploy implements `cdkx deploy`: plan the selected stacks against state and apply the plan.
package deploy

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/project"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/refresh"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/view"
	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/planner"
)

// Options are the inputs of one `cdkx deploy`.
type Options struct {
	F      *cli.Factory
	Config *cli.Config
	project.PlanFlags
	// Refresh reads every resource from its provider first and plans against what exists (--refresh).
	Refresh bool
	// NoRollback keeps the partial progress of a failed deploy (--no-rollback).
	NoRollback bool
}

// NewCmdDeploy returns the deploy command; runF replaces deployRun in tests.
func NewCmdDeploy(f *cli.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{F: f}
	cmd := &cobra.Command{
		Use:   "deploy [STACK...]",
		Short: "Deploy stacks of the cloud assembly",
		Long: `Deploy plans the selected stacks (all when none is named; with the stacks they depend on unless
--exclusively) against recorded state and applies the plan: each resource is created, updated,
replaced or left alone in dependency order, resources gone from the assembly are deleted last.
Operations an interrupted run left pending are settled first, by reading the providers. When a
resource fails, the other branches finish and then what this run changed is rolled back (created
objects deleted, updated ones restored; --no-rollback keeps it). The live event table goes to
stderr, stack outputs to stdout.

--target ID (Stack/LogicalID, or a LogicalID unique across the stacks; repeatable) deploys only that
resource and what it depends on; reading another stack's outputs pulls in that whole stack. --exclude
ID leaves that resource and everything that depends on it alone, and wins over --target. Resources
left out get no provider call and no state change; resources gone from the assembly are deleted only
when selected; a stack covered only partly keeps its recorded outputs.

Exit codes: 0 ok, 1 error, 3 a stack is locked, 4 a resource failed, 130 interrupted.`,
		Example: "  cdkx deploy\n  cdkx deploy App --concurrency 20\n  cdkx deploy --json > events.jsonl\n" +
			"  cdkx deploy --target App/WwwRecordSet --exclude App/MailRecordSet",
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := cli.LoadConfig(cmd.Flags(), f.Getenv)
			if err != nil {
				return err
			}
			opts.Config, opts.Stacks = cfg, args
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return deployRun(cmd.Context(), opts)
		},
	}
	opts.Register(cmd.Flags())
	cmd.Flags().BoolVar(&opts.Refresh, "refresh", false, "read every resource from its provider first, so that drift is corrected")
	cmd.Flags().BoolVar(&opts.NoRollback, "no-rollback", false, "on a failure, keep what this run changed instead of rolling it back")
	return cmd
}

func deployRun(ctx context.Context, opts *Options) (err error) {
	f, cfg := opts.F, opts.Config
	l, err := project.LoadAssembly(f, cfg, "nothing was deployed")
	if err != nil {
		return err
	}
	stacks, err := project.SelectStacks(l.Assembly, opts.Stacks, opts.Exclusively)
	if err != nil {
		return err
	}
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

	release, err := cli.Lock(ctx, f, cfg, b, stacks, "deploy")
	if err != nil {
		return err
	}
	defer release()

	st, err := project.LoadState(ctx, b, l.Assembly, stacks)
	if err != nil {
		return err
	}
	if st, err = refresh.Settle(ctx, f, cfg, b, st, stacks, opts.Refresh, false); err != nil {
		return err
	}
	plan, err := project.MakePlan(f, cfg, l, stacks, st, opts.PlanFlags, "nothing was deployed")
	if err != nil {
		return err
	}
	if err := l.Registry.Configure(project.CalledProviders(plan)); err != nil {
		return err
	}
	return Apply(ctx, f, cfg, plan, b, l.Registry, opts.NoRollback)
}

// Apply runs the plan with the live event table (or JSON lines) and prints the summary and the stack
// outputs. It returns an error whose exit code says how the run ended.
func Apply(ctx context.Context, f *cli.Factory, cfg *cli.Config, plan *planner.Plan, b state.Backend, reg *engine.Registry, noRollback bool) error {
	var stackNames, types, ids []string
	stackNames = append(stackNames, plan.Stacks...)
	for _, s := range append(append([]*planner.Step{}, plan.Steps...), plan.Deletes...) {
		types = append(types, s.Type)
		ids = append(ids, s.LogicalID)
	}
	var ev view.Events
	if cfg.JSON {
		ev = view.NewJSONLines(f.IO.Out)
	} else {
		ev = view.NewTable(f.IO.ErrOut, f.IO.Live(), colorOn(f, cfg), stackNames, types, ids)
	}
	stopTicks := tick(f, ev)
	stopNotice := interruptNotice(ctx, f, cfg)
	start := f.Now()
	res, err := engine.Deploy(ctx, plan, engine.Options{Backend: b, Providers: reg, Concurrency: cfg.Concurrency,
		ProviderConcurrency: cfg.ProviderConcurrency, NoRollback: noRollback,
		OnEvent: ev.Event, Now: f.Now, CreatedBy: cli.CreatedBy(), CdkxVersion: f.Version})
	stopTicks()
	stopNotice()
	if err != nil {
		return err
	}
	outputs := map[string]map[string]any{}
	for _, name := range plan.Stacks {
		if st := res.Stacks[name]; st != nil && len(st.Outputs) > 0 {
			outputs[name] = st.Outputs
		}
	}
	ev.Summary(view.Summary{Command: "deploy", Result: res, Elapsed: f.Now().Sub(start), Outputs: outputs})
	if !cfg.JSON && res.Err() == nil {
		view.Outputs(f.IO.Out, plan.Stacks, outputs)
	}
	if err := res.Err(); err != nil {
		return &cli.ExitError{Code: cli.ExitCode(err)}
	}
	return nil
}

func colorOn(f *cli.Factory, cfg *cli.Config) bool { return f.IO.Color && !cfg.NoColor }

// tick drives the view's "still creating…" lines until the returned stop is called.
func tick(f *cli.Factory, ev view.Events) func() {
	c, stopTicker := f.Ticker()
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-done:
				return
			case now := <-c:
				ev.Tick(now)
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
		stopTicker()
	}
}

// interruptNotice tells the user, once, what happens after Ctrl-C.
func interruptNotice(ctx context.Context, f *cli.Factory, cfg *cli.Config) func() {
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			if !cfg.JSON {
				fmt.Fprintln(f.IO.ErrOut, "\nInterrupt received: no new step starts; running provider calls finish and are recorded. Press Ctrl-C again to quit at once (pending operations stay in state).")
			}
		case <-done:
		}
	}()
	return func() { close(done) }
}
