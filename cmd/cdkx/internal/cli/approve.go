package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/view"
	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/planner"
)

// NeedsApproval reports whether plan needs a "yes" at level: never never, destructive when it replaces or
// deletes a resource, any when it creates, updates, replaces or deletes one. It also returns what needs
// it, e.g. "replaces 1 and deletes 2 resource(s)".
func NeedsApproval(level Approval, plan *planner.Plan) (bool, string) {
	c, u, r, d := plan.Counts()
	var what []string
	add := func(n int, verb string) {
		if n > 0 {
			what = append(what, fmt.Sprintf("%s %d", verb, n))
		}
	}
	switch level {
	case ApprovalNever:
		return false, ""
	case ApprovalAny:
		add(c, "creates")
		add(u, "updates")
	}
	add(r, "replaces")
	add(d, "deletes")
	if len(what) == 0 {
		return false, ""
	}
	return true, strings.Join(what, ", ") + " resource(s)"
}

// ApprovePlan returns the Confirm of a deploy (operation.Deploy.Confirm): with --yes, or when the plan does
// not need approval at --require-approval's level, yes; on a terminal, the plan as diff shows it on
// stderr and the question; elsewhere an error that says to review the plan with diff and pass --yes.
func ApprovePlan(ctx context.Context, f *Factory, cfg *Config) func(*planner.Plan) (bool, error) {
	return func(plan *planner.Plan) (bool, error) {
		need, what := NeedsApproval(cfg.RequireApproval, plan)
		if cfg.Yes || !need {
			return true, nil
		}
		refusal := fmt.Errorf("deploy %w: the plan %s (--require-approval %s), but there is no terminal to ask on (or CI is set), so nothing was changed; review the plan with cdkx diff, then pass --yes to deploy it",
			ErrNeedsApproval, what, cfg.RequireApproval)
		return ask(ctx, f, refusal, "nothing was changed", func(w io.Writer, _ int) { view.Plan(w, plan, f.IO.Color && !cfg.NoColor) })
	}
}

// ApproveDestroy returns the Confirm of a destroy (operation.Destroy.Confirm): with --force or --yes, yes;
// on a terminal, the list of what will be deleted and the question; elsewhere an error that says to pass
// --force.
func ApproveDestroy(ctx context.Context, f *Factory, cfg *Config, force bool) func([]operation.Deletion, []string) (bool, error) {
	return func(deletions []operation.Deletion, stacks []string) (bool, error) {
		if force || cfg.Yes {
			return true, nil
		}
		refusal := fmt.Errorf("destroy %w: it deletes %d resource(s) in %s, but there is no terminal to ask on (or CI is set), so nothing was deleted; pass --force (or --yes) to destroy without asking",
			ErrNeedsApproval, len(deletions), strings.Join(stacks, ", "))
		return ask(ctx, f, refusal, "nothing was deleted", func(w io.Writer, width int) {
			view.Deletions(w, deletions, f.IO.Color && !cfg.NoColor, width)
		})
	}
}

// ask shows what a run is about to do (show, given stderr and the terminal's width) and asks
// ConfirmQuestion; without a terminal to ask on it ends with refusal (exit 1). unchanged says what a
// Ctrl-C at the question leaves alone. A live region still drawn (asked again after a settling run) is
// taken off the screen first.
func ask(ctx context.Context, f *Factory, refusal error, unchanged string, show func(w io.Writer, width int)) (bool, error) {
	if !f.IO.Interactive() {
		return false, &ExitError{Code: ExitErr, Err: refusal}
	}
	PauseView(f)
	width, _ := f.IO.Size()
	show(f.IO.ErrOut, width)
	fmt.Fprintln(f.IO.ErrOut)
	return Confirm(ctx, f.IO, ConfirmQuestion, unchanged)
}
