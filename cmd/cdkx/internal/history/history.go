// Package history implements `cdkx history`: list deployment records.
package history

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
)

// Options are the inputs of one `cdkx history`.
type Options struct {
	F      *cli.Factory
	Config *cli.Config
	Stack  string
	Limit  int
}

// NewCmdHistory returns the history command; runF replaces historyRun in tests.
func NewCmdHistory(f *cli.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{F: f}
	cmd := &cobra.Command{
		Use:   "history",
		Short: "List deployments, newest first",
		Long:  "History lists the deployment records (deploy, destroy) newest first: ID, stack, kind, status, start time, duration, resulting state version and who ran it.",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := cli.LoadConfig(cmd.Flags(), f.Getenv)
			if err != nil {
				return err
			}
			opts.Config = cfg
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return historyRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Stack, "stack", "", "only this stack's deployments")
	cmd.Flags().IntVar(&opts.Limit, "limit", 20, "at most this many deployments (0: all)")
	return cmd
}

func historyRun(ctx context.Context, opts *Options) error {
	b, err := opts.F.OpenBackend(ctx, opts.Config.State)
	if err != nil {
		return err
	}
	defer func() { _ = b.Close() }() // read only: nothing to lose
	ds, err := b.ListDeployments(ctx, opts.Stack, opts.Limit)
	if err != nil {
		return err
	}
	if opts.Config.JSON {
		enc := json.NewEncoder(opts.F.IO.Out)
		for _, d := range ds {
			if err := enc.Encode(d); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(opts.F.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTACK\tKIND\tSTATUS\tSTARTED\tDURATION\tVERSION\tBY")
	for _, d := range ds {
		dur := "-"
		if !d.FinishedAt.IsZero() {
			dur = d.FinishedAt.Sub(d.StartedAt).Round(time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", d.ID, d.Stack, d.Kind, d.Status,
			d.StartedAt.UTC().Format(time.RFC3339), dur, d.Version, d.CreatedBy)
	}
	return tw.Flush()
}
