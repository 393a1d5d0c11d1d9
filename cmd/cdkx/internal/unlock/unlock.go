// Package unlock implements `cdkx unlock`: list stack locks, or remove one that cdkx cannot prove stale.
package unlock

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/engine"
)

// Options are the inputs of one `cdkx unlock`.
type Options struct {
	F      *cli.Factory
	Config *cli.Config
	ID     string
	Force  bool
}

// NewCmdUnlock returns the unlock command; runF replaces unlockRun in tests.
func NewCmdUnlock(f *cli.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{F: f}
	cmd := &cobra.Command{
		Use:   "unlock [LOCK-ID] --force",
		Short: "List stack locks, or remove one by its ID",
		Long: `Without an ID, unlock lists the held locks: stack, lock ID, operation, holder, PID, age of the last
heartbeat, and whether cdkx would take it over on its own (its process is gone on this machine, or
it sent no heartbeat for ` + engine.StaleAfter.String() + `).

With an ID and --force, it removes every lock with that ID. Do this only when you know the holder is
gone (e.g. a CI machine that was lost): two runs changing one stack at once can leave state and the
providers disagreeing. The next deploy then reconciles any pending operation the holder left.`,
		Example: "  cdkx unlock\n  cdkx unlock 0b5e… --force",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := cli.LoadConfig(cmd.Flags(), f.Getenv)
			if err != nil {
				return err
			}
			opts.Config = cfg
			if len(args) == 1 {
				opts.ID = args[0]
			}
			if opts.ID != "" && !opts.Force {
				return errors.New("removing a lock needs --force: make sure its holder is gone first (cdkx unlock lists the locks)")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return unlockRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Force, "force", false, "remove the lock even though its holder may still run")
	return cmd
}

func unlockRun(ctx context.Context, opts *Options) error {
	open := opts.F.OpenBackend
	if opts.ID == "" {
		open = opts.F.OpenReadOnly // listing only reads: a folder without state stays without
	}
	b, err := open(ctx, opts.Config.State)
	if err != nil {
		return err
	}
	defer func() { _ = b.Close() }()
	locks, err := b.Locks(ctx)
	if err != nil {
		return err
	}
	if opts.ID == "" {
		if len(locks) == 0 {
			fmt.Fprintln(opts.F.IO.ErrOut, "No stack is locked.")
			return nil
		}
		now := opts.F.Now()
		machine := engine.MachineID()
		tw := tabwriter.NewWriter(opts.F.IO.Out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "STACK\tLOCK ID\tOPERATION\tHOLDER\tPID\tHEARTBEAT\tSTALE")
		for _, l := range locks {
			stale, why := engine.Stale(l, machine, now)
			verdict := "no"
			if stale {
				verdict = "yes: " + why
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s@%s\t%d\t%s ago\t%s\n", l.Stack, l.ID, l.Operation, l.User, l.Host, l.PID,
				now.Sub(l.HeartbeatAt).Round(time.Second), verdict)
		}
		return tw.Flush()
	}
	removed := 0
	for _, l := range locks {
		if l.ID != opts.ID {
			continue
		}
		if err := b.Unlock(ctx, l.Stack, l.ID); err != nil {
			return err
		}
		fmt.Fprintf(opts.F.IO.ErrOut, "Removed the lock of stack %s held by %s\n", l.Stack, l)
		removed++
	}
	if removed == 0 {
		return fmt.Errorf("no lock with ID %s; cdkx unlock lists the held locks", opts.ID)
	}
	return nil
}
