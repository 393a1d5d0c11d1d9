// Package unlock implements `cdkx unlock`: list stack locks, or remove one that cdkx cannot prove stale.
package unlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/view"
	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// Options are the inputs of one `cdkx unlock`.
type Options struct {
	IO     *cli.IOStreams
	Config *cli.Config
	// Open opens the state backend for a removal; OpenReadOnly for a listing (cli.Factory's).
	Open, OpenReadOnly func(ctx context.Context, location string) (state.Backend, error)
	// Now is the clock the heartbeats' ages are measured by.
	Now func() time.Time
	// Machine identifies this machine for the staleness verdict (engine.MachineID).
	Machine string
	ID      string
	Force   bool
}

// NewCmdUnlock returns the unlock command; runF replaces unlockRun in tests.
func NewCmdUnlock(f *cli.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{IO: f.IO, Open: f.OpenBackend, OpenReadOnly: f.OpenReadOnly, Now: f.Now}
	cmd := &cobra.Command{
		Use:   "unlock [LOCK-ID] --force",
		Short: "List stack locks, or remove one by its ID",
		Long: `Without an ID, unlock lists the held locks: stack, lock ID, operation, holder, PID, age of the last
heartbeat, and whether cdkx would take it over on its own (its process is gone on this machine, or
it sent no heartbeat for ` + engine.StaleAfter.String() + `).

With an ID and --force, it removes every lock with that ID. Do this only when you know the holder is
gone (e.g. a CI machine that was lost): two runs changing one stack at once can leave state and the
providers disagreeing. The next deploy then reconciles any pending operation the holder left.

With --json, each lock listed or removed is one JSON object on stdout.`,
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
			opts.Machine = engine.MachineID()
			return unlockRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Force, "force", false, "remove the lock even though its holder may still run")
	return cmd
}

func unlockRun(ctx context.Context, opts *Options) error {
	open := opts.Open
	if opts.ID == "" {
		open = opts.OpenReadOnly // listing only reads: a folder without state stays without
	}
	b, err := open(ctx, opts.Config.State)
	if err != nil {
		return err
	}
	defer func() { _ = b.Close() }()
	if opts.ID == "" {
		return list(ctx, opts, b)
	}
	enc := view.JSONEncoder(opts.IO.Out)
	var werr error
	_, err = operation.Unlock{Backend: b, ID: opts.ID, OnRemoved: func(l state.LockInfo) {
		if opts.Config.JSON {
			werr = errors.Join(werr, enc.Encode(view.LockJSON{LockInfo: l, Removed: true}))
			return
		}
		fmt.Fprintf(opts.IO.ErrOut, "Removed the lock of stack %s held by %s\n", l.Stack, l)
	}}.Run(ctx)
	if err != nil {
		return err
	}
	return werr
}

// list prints the held locks: a table on stdout (or a line on stderr when there are none), or one JSON
// object per lock.
func list(ctx context.Context, opts *Options, b state.Backend) error {
	now := opts.Now()
	locks, err := operation.Locks(ctx, b, opts.Machine, now)
	if err != nil {
		return err
	}
	if opts.Config.JSON {
		enc := view.JSONEncoder(opts.IO.Out)
		for _, l := range locks {
			if err := enc.Encode(view.HeldLockJSON(l)); err != nil {
				return err
			}
		}
		return nil
	}
	if len(locks) == 0 {
		fmt.Fprintln(opts.IO.ErrOut, "No stack is locked.")
		return nil
	}
	return view.LockTable(opts.IO.Out, locks, now)
}
