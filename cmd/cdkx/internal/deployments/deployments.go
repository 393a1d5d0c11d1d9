// Package deployments implements `cdkx deployments`: list, show, approve, reject, abort, run, compare and
// redeploy deployment records (Massdriver's model), and `cdkx history`, its short form.
package deployments

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/view"
	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/pkg/diag"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/planner"
)

// session is what a subcommand works with: the configuration and the open backend.
type session struct {
	f   *cli.Factory
	cfg *cli.Config
	b   state.Backend
}

// with loads the configuration and runs do with the backend open (cli.WithBackend).
func with(cmd *cobra.Command, f *cli.Factory, do func(ctx context.Context, s *session) error) error {
	cfg, err := cli.LoadConfig(cmd.Flags(), f.Getenv)
	if err != nil {
		return err
	}
	return cli.WithBackend(cmd.Context(), f, cfg, func(b state.Backend) error {
		return do(cmd.Context(), &session{f: f, cfg: cfg, b: b})
	})
}

// readOnly runs do with the backend of cfg opened read-only, for a subcommand that only reads: a folder
// without state stays without (cli.Factory.OpenReadOnly).
func readOnly(ctx context.Context, f *cli.Factory, cfg *cli.Config, do func(b state.Backend) error) error {
	b, err := f.OpenReadOnly(ctx, cfg.State)
	if err != nil {
		return err
	}
	defer func() { _ = b.Close() }() // read only: nothing to lose
	return do(b)
}

// NewCmdDeployments returns the deployments command and its subcommands.
func NewCmdDeployments(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "deployments",
		Short: "List, approve, reject, abort, run, compare and redeploy deployments",
		Long: `Every deploy, destroy, refresh, import and recorded plan is a deployment: a record of what it runs
(a snapshot of the assembly and its plan), who created, approved, rejected or aborted it, and how it
ended. Each stack has one queue: PENDING and APPROVED deployments run one at a time in creation
order; PROPOSED ones wait for approval and hold no place.

Statuses: PROPOSED → APPROVED | REJECTED; PENDING | APPROVED → RUNNING → COMPLETED | FAILED;
PENDING | APPROVED | RUNNING → ABORTED. COMPLETED, FAILED, REJECTED and ABORTED are final.

Wherever an ID is taken, a unique prefix of 6 or more characters of it will do (6f1c2a… as list
shows it); an ambiguous prefix lists the deployments it matches.`,
		Example: "  cdkx deploy --propose --message \"lower the TTL\"\n  cdkx deployments list --status PROPOSED\n" +
			"  cdkx deployments approve 6f1c… --run\n  cdkx deployments compare 6f1c… 9a2b… --json",
	}
	cmd.AddCommand(newCmdList(f, "list", nil), newCmdShow(f, nil), newCmdApprove(f), newCmdReject(f), newCmdAbort(f),
		newCmdRun(f, nil), newCmdCompare(f, nil), newCmdRedeploy(f))
	return cmd
}

// ListOptions are the inputs of one `cdkx deployments list` (or `cdkx history`).
type ListOptions struct {
	F      *cli.Factory
	Config *cli.Config
	// Filter is what --stack, --status (statuses in upper case) and --limit select.
	Filter state.DeploymentFilter
}

// NewCmdList returns `deployments list`, or `history` (its short form) when use is "history".
func NewCmdList(f *cli.Factory, use string) *cobra.Command {
	return newCmdList(f, use, nil)
}

// newCmdList is NewCmdList; runF replaces listRun in tests.
func newCmdList(f *cli.Factory, use string, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{F: f}
	var status, kind string
	path := "cdkx deployments list"
	if use == "history" {
		path = "cdkx history"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: "List deployments, newest first",
		Long: `List prints the deployment records newest first: ID, stack, kind, status, creation time, duration,
plan (+create ~update ±replace -delete), resulting state version, who created it and its message
(cut to the terminal's width). With --json, a JSON array of the records (as "deployments show
--json" prints them, without events).`,
		Example: "  " + path + "\n  " + path + " --stack App --status PENDING,RUNNING --json\n  " + path + " --kind destroy,import",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, s := range strings.Split(status, ",") {
				if s = strings.ToUpper(strings.TrimSpace(s)); s != "" {
					if !validStatus(s) {
						return fmt.Errorf("--status %q: not a status; use PROPOSED, APPROVED, REJECTED, PENDING, RUNNING, COMPLETED, FAILED or ABORTED (comma-separated)", s)
					}
					opts.Filter.Statuses = append(opts.Filter.Statuses, state.DeploymentStatus(s))
				}
			}
			for _, k := range strings.Split(kind, ",") {
				if k = strings.ToLower(strings.TrimSpace(k)); k != "" {
					if !validKind(k) {
						return fmt.Errorf("--kind %q: not a kind; use deploy, plan, destroy, import or refresh (comma-separated)", k)
					}
					opts.Filter.Kinds = append(opts.Filter.Kinds, state.DeploymentKind(k))
				}
			}
			cfg, err := cli.LoadConfig(cmd.Flags(), f.Getenv)
			if err != nil {
				return err
			}
			opts.Config = cfg
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return listRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Filter.Stack, "stack", "", "only this stack's deployments")
	cmd.Flags().StringVar(&status, "status", "", "only deployments in these statuses (comma-separated)")
	cmd.Flags().StringVar(&kind, "kind", "", "only deployments of these kinds (comma-separated)")
	cmd.Flags().IntVar(&opts.Filter.Limit, "limit", 20, "at most this many deployments (0: all)")
	return cmd
}

func listRun(ctx context.Context, opts *ListOptions) error {
	return readOnly(ctx, opts.F, opts.Config, func(b state.Backend) error {
		ds, err := b.ListDeployments(ctx, opts.Filter)
		if err != nil {
			return err
		}
		width, _ := opts.F.IO.Size()
		return view.Deployments(opts.F.IO.Out, opts.Config.JSON, ds, width)
	})
}

func validKind(k string) bool {
	switch state.DeploymentKind(k) {
	case state.KindDeploy, state.KindPlan, state.KindDestroy, state.KindImport, state.KindRefresh:
		return true
	}
	return false
}

func validStatus(s string) bool {
	switch state.DeploymentStatus(s) {
	case state.StatusProposed, state.StatusApproved, state.StatusRejected, state.StatusPending, state.StatusRunning,
		state.StatusCompleted, state.StatusFailed, state.StatusAborted:
		return true
	}
	return false
}

// ShowOptions are the inputs of one `cdkx deployments show`.
type ShowOptions struct {
	F      *cli.Factory
	Config *cli.Config
	// ID is the deployment's ID or a unique prefix of it.
	ID string
	// Format is view.FormatText or view.FormatMarkdown (--format; markdown never with --json).
	Format string
}

// newCmdShow returns `deployments show`; runF replaces showRun in tests.
func newCmdShow(f *cli.Factory, runF func(context.Context, *ShowOptions) error) *cobra.Command {
	opts := &ShowOptions{F: f}
	var format string
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show a deployment: its record, plan and events",
		Long: `Show prints a deployment's record, its plan as cdkx diff printed it (every changed value, old and
new; write-only ones as (sensitive)) and its events. --json prints the record with its plan's steps
as diff --json does; --format markdown prints the deployment and its plan as GitHub Markdown for a
pull-request comment.`,
		Example: "  cdkx deployments show 6f1c…\n  cdkx deployments show 6f1c… --json | jq .status\n" +
			"  cdkx deployments show 6f1c… --format markdown | gh pr comment 42 --body-file -",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := cli.LoadConfig(cmd.Flags(), f.Getenv)
			if err != nil {
				return err
			}
			if opts.Format, err = view.ParseFormat(format, cfg.JSON); err != nil {
				return err
			}
			opts.Config, opts.ID = cfg, args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return showRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&format, "format", view.FormatText, "print as text or as GitHub Markdown for a pull-request comment (text, markdown)")
	return cmd
}

func showRun(ctx context.Context, opts *ShowOptions) error {
	return readOnly(ctx, opts.F, opts.Config, func(b state.Backend) error {
		d, err := get(ctx, b, opts.ID)
		if err != nil {
			return err
		}
		events, err := b.Events(ctx, d.ID)
		if err != nil {
			return err
		}
		d.Snapshot = nil
		if opts.Format == view.FormatMarkdown {
			view.DeploymentMarkdown(opts.F.IO.Out, d)
			return nil
		}
		return view.Deployment(opts.F.IO.Out, opts.Config.JSON, d, events)
	})
}

// get reads a deployment, named by its ID or a unique prefix of it (resolve); absent is a clear error.
func get(ctx context.Context, b state.Backend, id string) (*state.Deployment, error) {
	full, err := resolve(ctx, b, id)
	if err != nil {
		return nil, err
	}
	d, err := b.GetDeployment(ctx, full)
	if errors.Is(err, state.ErrNotFound) {
		return nil, notFound(id)
	}
	return d, err
}

// resolve returns the full ID of the deployment id names: itself, or the one deployment whose ID starts
// with it (state.ResolveDeploymentID). Errors say what to do: too short, none, or the matches.
func resolve(ctx context.Context, b state.Backend, id string) (string, error) {
	full, err := state.ResolveDeploymentID(ctx, b, id)
	if errors.Is(err, state.ErrNotFound) {
		return "", notFound(id)
	}
	var ae *state.AmbiguousIDError
	if errors.As(err, &ae) {
		var lines []string
		for _, d := range ae.Matches {
			lines = append(lines, fmt.Sprintf("  %s  %s  %s  %s", d.ID, d.Stack, d.Status, d.CreatedAt.UTC().Format(time.RFC3339)))
		}
		more := ""
		if len(ae.Matches) > 10 {
			lines, more = lines[:10], "\n  …"
		}
		return "", fmt.Errorf("deployment ID prefix %q is ambiguous; it matches:\n%s%s\ngive more characters of the ID", id, view.Sanitize(strings.Join(lines, "\n")), more)
	}
	return full, err
}

// notFound is the error for an ID no deployment has.
func notFound(id string) error {
	return fmt.Errorf("no deployment %q; list them with cdkx deployments list", view.Sanitize(id))
}

// each applies change to each of ids (each resolved to a full ID first) and prints each deployment it
// returns; errors are printed as they come, and the command then exits 1.
func (s *session) each(ctx context.Context, ids []string, change func(id string) (*state.Deployment, error)) error {
	failed := false
	for _, id := range ids {
		full, err := resolve(ctx, s.b, id)
		var d *state.Deployment
		if err == nil {
			d, err = change(full)
		}
		if errors.Is(err, state.ErrNotFound) {
			err = notFound(id)
		}
		if err != nil {
			fmt.Fprintf(s.f.IO.ErrOut, "error: %v\n", err)
			failed = true
			continue
		}
		if err := s.print(d); err != nil {
			return err
		}
	}
	if failed {
		return &cli.ExitError{Code: cli.ExitErr}
	}
	return nil
}

// review is the review of deployments by this user, now (operation.Review).
func (s *session) review() operation.Review {
	return operation.Review{Backend: s.b, By: cli.CreatedBy(), Now: s.f.Now}
}

// print shows one deployment after a change: its JSON record with --json, else one line.
func (s *session) print(d *state.Deployment) error {
	d.Snapshot = nil
	if s.cfg.JSON {
		return view.JSONEncoder(s.f.IO.Out).Encode(view.DeploymentOf(d))
	}
	fmt.Fprintf(s.f.IO.Out, "%s %s of stack %s\n", d.Status, view.Sanitize(d.ID), view.Sanitize(d.Stack))
	return nil
}

func newCmdApprove(f *cli.Factory) *cobra.Command {
	var run, replan bool
	var comment string
	cmd := &cobra.Command{
		Use:   "approve ID...",
		Short: "Approve proposed deployments (with --run, run them here when their turn comes)",
		Long: `Approve moves PROPOSED deployments to APPROVED: each joins its stack's queue, in creation order, for
an agent (cdkx agent) or for this command with --run, which waits for its turn (up to
--lock-timeout) and runs it from its snapshot with this machine's provider credentials. A deployment
whose stack moved since it was planned is refused as stale when its plan now differs, unless
--replan. With "approval": {"requireSecondPerson": true} in cdkx.json (or the state service's
setting), the proposer cannot approve their own proposal. --comment is recorded on the deployment
(at most 4 KiB; deployments show prints it).`,
		Example: "  cdkx deployments approve 6f1c… --comment \"TTL change checked with the DNS team\"\n" +
			"  cdkx deployments approve 6f1c… --run --lock-timeout 10m",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := state.CheckMessage(comment); err != nil {
				return fmt.Errorf("--comment: %w", err)
			}
			return with(cmd, f, func(ctx context.Context, s *session) error {
				// The store enforces the second-person rule (state.CheckTransition): cdkx.json's on SQLite and
				// PostgreSQL, the server's on a state service.
				r := s.review()
				err := s.each(ctx, args, func(id string) (*state.Deployment, error) { return r.Approve(ctx, id, comment) })
				if err != nil || !run {
					return err
				}
				for _, id := range args {
					if err := s.run(ctx, id, replan); err != nil {
						return err
					}
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&comment, "comment", "", "a comment recorded with the approval (at most 4 KiB)")
	cmd.Flags().BoolVar(&run, "run", false, "run the approved deployments here when their turn comes")
	cmd.Flags().BoolVar(&replan, "replan", false, "with --run: apply the new plan even if the stack moved and the plan differs from the approved one")
	return cmd
}

func newCmdReject(f *cli.Factory) *cobra.Command {
	var message, comment string
	cmd := &cobra.Command{
		Use:   "reject ID...",
		Short: "Reject proposed deployments (final: they never run)",
		Long: `Reject moves PROPOSED deployments to REJECTED, a final status: they never run. --comment (or its
older name --message) says why: it is recorded on the deployment (at most 4 KiB; deployments show
prints it).`,
		Example: "  cdkx deployments reject 6f1c… --comment \"wrong zone\"",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			flag := "--comment"
			switch {
			case cmd.Flags().Changed("message") && cmd.Flags().Changed("comment") && message != comment:
				return errors.New("--message and --comment are the same flag: give one")
			case cmd.Flags().Changed("message"):
				flag, comment = "--message", message
			}
			if err := state.CheckMessage(comment); err != nil {
				return fmt.Errorf("%s: %w", flag, err)
			}
			return with(cmd, f, func(ctx context.Context, s *session) error {
				r := s.review()
				return s.each(ctx, args, func(id string) (*state.Deployment, error) { return r.Reject(ctx, id, comment) })
			})
		},
	}
	cmd.Flags().StringVar(&comment, "comment", "", "why it was rejected, recorded with the rejection (at most 4 KiB)")
	cmd.Flags().StringVar(&message, "message", "", "the same as --comment (its older name)")
	return cmd
}

func newCmdAbort(f *cli.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "abort ID...",
		Short: "Abort queued or running deployments (nothing is rolled back)",
		Long: `Abort ends PENDING and APPROVED deployments at once (ABORTED). A RUNNING deployment is asked to
stop: its process starts no new step within a second, lets the provider calls in flight finish and
records them, then records it ABORTED and exits 130. ABORTED is not undo: what ran stays; the next
deploy converges. A deploy of several stacks runs one deployment per stack: aborting one of them
while it runs ends only that one and the stacks that wait for its outputs (ABORTED, not started);
the independent stacks run on. One aborted while the run still waits for its turn ends the run:
its other deployments are recorded ABORTED, not run.`,
		Example: "  cdkx deployments abort 6f1c…",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return with(cmd, f, func(ctx context.Context, s *session) error {
				r := s.review()
				return s.each(ctx, args, func(id string) (*state.Deployment, error) {
					d, asked, err := r.Abort(ctx, id)
					if asked && !s.cfg.JSON {
						fmt.Fprintf(f.IO.ErrOut, "Asked the runner of %s (%s) to stop: it starts no new step and records the deployment ABORTED once its calls in flight finish.\n", id, view.Sanitize(d.Runner))
					}
					return d, err
				})
			})
		},
	}
}

// RunOptions are the inputs of one `cdkx deployments run`.
type RunOptions struct {
	F      *cli.Factory
	Config *cli.Config
	// ID is the deployment's ID or a unique prefix of it.
	ID string
	// Replan applies the new plan even if the stack moved since the deployment was planned (--replan).
	Replan bool
}

// newCmdRun returns `deployments run`; runF replaces runRun in tests.
func newCmdRun(f *cli.Factory, runF func(context.Context, *RunOptions) error) *cobra.Command {
	opts := &RunOptions{F: f}
	cmd := &cobra.Command{
		Use:   "run ID",
		Short: "Run an approved or queued deployment here when its turn comes",
		Long: `Run waits for the deployment's turn in its stack's queue (up to --lock-timeout) and runs it from its
snapshot, with this machine's provider credentials (and CDKX_SECRETS_PASSPHRASE when it holds
encrypted values). A deployment in a final status is refused.`,
		Example: "  cdkx deployments run 6f1c… --lock-timeout 10m",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := cli.LoadConfig(cmd.Flags(), f.Getenv)
			if err != nil {
				return err
			}
			opts.Config, opts.ID = cfg, args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Replan, "replan", false, "apply the new plan even if the stack moved and the plan differs from the approved one")
	return cmd
}

func runRun(ctx context.Context, opts *RunOptions) error {
	return cli.WithBackend(ctx, opts.F, opts.Config, func(b state.Backend) error {
		return (&session{f: opts.F, cfg: opts.Config, b: b}).run(ctx, opts.ID, opts.Replan)
	})
}

// run runs a stored deployment here and renders it like a deploy.
func (s *session) run(ctx context.Context, id string, replan bool) error {
	d, err := get(ctx, s.b, id)
	if err != nil {
		return err
	}
	if d.Status == state.StatusProposed {
		return fmt.Errorf("deployment %s is PROPOSED: approve it first (cdkx deployments approve %s --run)", d.ID, d.ID)
	}
	reg := s.f.Providers()
	start := s.f.Now()
	res, plan, err := operation.RunDeployment{Env: cli.Env(s.f, s.cfg, s.b, reg), Deployment: d, Replan: replan,
		Passphrase: s.cfg.Passphrase, Notify: cli.QueueWaitNotice(s.f.IO, s.cfg),
		OnPlan: func(p *planner.Plan, ds diag.Diagnostics) {
			cli.ShowPlanDiagnostics(s.f, s.cfg, p, ds, "nothing was deployed")
		}}.Run(ctx)
	if err != nil && res == nil {
		return cli.RunError(s.f, s.cfg, err)
	}
	return cli.Finish(s.f, s.cfg, "deploy", res, s.f.Now().Sub(start), operation.Outputs(res, plan))
}

// CompareOptions are the inputs of one `cdkx deployments compare`.
type CompareOptions struct {
	F      *cli.Factory
	Config *cli.Config
	// A and B are the IDs (or unique prefixes) of the deployments compared, A the older.
	A, B string
}

// newCmdCompare returns `deployments compare`; runF replaces compareRun in tests.
func newCmdCompare(f *cli.Factory, runF func(context.Context, *CompareOptions) error) *cobra.Command {
	opts := &CompareOptions{F: f}
	return &cobra.Command{
		Use:   "compare A B",
		Short: "Compare the snapshots of two deployments, property by property",
		Long: `Compare lists what differs between the snapshots of deployments A and B, resource by resource: each
changed property as "properties.<name>" (nested: "properties.records[0]"), a changed type, provider
or dependsOn, and resources only in one of them. Encrypted values are compared when
CDKX_SECRETS_PASSPHRASE opens them.
With --json: {"changes": [{"resource", "path", "from", "to"}, …]}.`,
		Example: "  cdkx deployments compare 6f1c… 9a2b…\n  cdkx deployments compare 6f1c… 9a2b… --json",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := cli.LoadConfig(cmd.Flags(), f.Getenv)
			if err != nil {
				return err
			}
			opts.Config, opts.A, opts.B = cfg, args[0], args[1]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return compareRun(cmd.Context(), opts)
		},
	}
}

func compareRun(ctx context.Context, opts *CompareOptions) error {
	f := opts.F
	return readOnly(ctx, f, opts.Config, func(st state.Backend) error {
		a, err := get(ctx, st, opts.A)
		if err != nil {
			return err
		}
		b, err := get(ctx, st, opts.B)
		if err != nil {
			return err
		}
		changes, hidden, err := operation.Compare(a, b, opts.Config.Passphrase)
		if err != nil {
			return err
		}
		if hidden {
			fmt.Fprintln(f.IO.ErrOut, "Note: encrypted values were not compared; set CDKX_SECRETS_PASSPHRASE to compare them.")
		}
		if opts.Config.JSON {
			return view.JSONEncoder(f.IO.Out).Encode(map[string]any{"changes": changes})
		}
		if len(changes) == 0 {
			fmt.Fprintln(f.IO.Out, "The two snapshots are the same.")
			return nil
		}
		for _, c := range changes {
			switch {
			case c.Path == "" && c.From == nil:
				fmt.Fprintf(f.IO.Out, "+ %s (only in %s)\n", c.Resource, b.ID)
			case c.Path == "":
				fmt.Fprintf(f.IO.Out, "- %s (only in %s)\n", c.Resource, a.ID)
			default:
				fmt.Fprintf(f.IO.Out, "~ %s %s: %s → %s\n", c.Resource, c.Path, show(c.From), show(c.To))
			}
		}
		return nil
	})
}

// unchangedStack is the stack of a redeploy that recorded nothing (its plan changes nothing), else none.
func unchangedStack(rec []*state.Deployment, stack string) []string {
	if len(rec) > 0 {
		return nil
	}
	return []string{stack}
}

func show(v any) string {
	if v == nil {
		return "(absent)"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return view.Sanitize(string(b))
}

func newCmdRedeploy(f *cli.Factory) *cobra.Command {
	var message string
	cmd := &cobra.Command{
		Use:   "redeploy ID",
		Short: "Propose again the snapshot of a past completed deployment (how a team reverts)",
		Long: `Redeploy records a new PROPOSED deployment with the snapshot of a COMPLETED one, planned against the
stack's current state: approving and running it brings the stack back to what that deployment
deployed. When the stack already is as that deployment left it, nothing is recorded: "Stack X: no
changes".`,
		Example: "  cdkx deployments redeploy 6f1c… --message \"revert the TTL change\"",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return with(cmd, f, func(ctx context.Context, s *session) error {
				d, err := get(ctx, s.b, args[0])
				if err != nil {
					return err
				}
				if d.Status != state.StatusCompleted || d.Kind != state.KindDeploy {
					return fmt.Errorf("deployment %s is a %s %s: only a COMPLETED deploy can be redeployed", d.ID, d.Status, d.Kind)
				}
				if message == "" {
					message = "redeploy of " + d.ID
				}
				rec, err := operation.Redeploy(ctx, cli.Env(s.f, s.cfg, s.b, s.f.Providers()), d, s.cfg.Passphrase, message)
				if err != nil {
					return err
				}
				return view.Recorded(f.IO.Out, s.cfg.JSON, rec, unchangedStack(rec, d.Stack))
			})
		},
	}
	cmd.Flags().StringVar(&message, "message", "", "what the new proposal is for (default: redeploy of ID)")
	return cmd
}
