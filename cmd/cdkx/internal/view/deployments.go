package view

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

// PlanCounts is the plan of a deployment as scripts read it: {"create", "update", "replace", "delete"}.
type PlanCounts struct {
	Create  int `json:"create"`
	Update  int `json:"update"`
	Replace int `json:"replace"`
	Delete  int `json:"delete"`
}

func countsOf(p *state.Plan) PlanCounts {
	if p == nil {
		return PlanCounts{}
	}
	return PlanCounts{p.Create, p.Update, p.Replace, p.Delete}
}

// RecordedJSON is what deploy --propose and --no-wait print per stack with --json.
type RecordedJSON struct {
	ID     string                 `json:"id"`
	Stack  string                 `json:"stack"`
	Status state.DeploymentStatus `json:"status"`
	Plan   PlanCounts             `json:"plan"`
}

// UnchangedJSON is what deploy --propose and --no-wait print with --json for a stack the plan leaves
// unchanged, for which no deployment was recorded: {"stack": "Db", "noChanges": true}.
type UnchangedJSON struct {
	Stack     string `json:"stack"`
	NoChanges bool   `json:"noChanges"`
}

// Recorded prints the deployments just recorded, then the stacks left unchanged (no deployment): one
// JSON object per line with asJSON, else one line each ("Stack X: no changes").
func Recorded(w io.Writer, asJSON bool, ds []*state.Deployment, unchanged []string) error {
	enc := JSONEncoder(w)
	for _, d := range ds {
		c := countsOf(d.Plan)
		if asJSON {
			if err := enc.Encode(RecordedJSON{ID: d.ID, Stack: d.Stack, Status: d.Status, Plan: c}); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(w, "%s %s of stack %s: %d to create, %d to update, %d to replace, %d to delete\n",
			d.Status, Sanitize(d.ID), Sanitize(d.Stack), c.Create, c.Update, c.Replace, c.Delete)
	}
	for _, s := range unchanged {
		if asJSON {
			if err := enc.Encode(UnchangedJSON{Stack: s, NoChanges: true}); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(w, "Stack %s: no changes\n", Sanitize(s))
	}
	return nil
}

// DeploymentJSON is a deployment record as `deployments list --json` prints it (and show, with its
// events: ShowJSON). Times are RFC 3339 (UTC); those not reached yet are null.
type DeploymentJSON struct {
	ID         string                 `json:"id"`
	Stack      string                 `json:"stack"`
	Kind       state.DeploymentKind   `json:"kind"`
	Status     state.DeploymentStatus `json:"status"`
	Message    string                 `json:"message"`
	CreatedBy  string                 `json:"createdBy"`
	ApprovedBy string                 `json:"approvedBy"`
	RejectedBy string                 `json:"rejectedBy"`
	AbortedBy  string                 `json:"abortedBy"`
	// ApprovalComment and RejectionComment are the reviewer's comments ("" when none).
	ApprovalComment  string      `json:"approvalComment"`
	RejectionComment string      `json:"rejectionComment"`
	CreatedAt        *time.Time  `json:"createdAt"`
	ApprovedAt       *time.Time  `json:"approvedAt"`
	StartedAt        *time.Time  `json:"startedAt"`
	FinishedAt       *time.Time  `json:"finishedAt"`
	Plan             *state.Plan `json:"plan"`
	SnapshotHash     string      `json:"snapshotHash"`
	StateVersion     int64       `json:"stateVersion"`
	Version          int64       `json:"version"`
	CdkxVersion      string      `json:"cdkxVersion"`
	Runner           string      `json:"runner"`
	Error            string      `json:"error"`
}

// ShowJSON is what `deployments show --json` prints: the record and its events ([] when none).
type ShowJSON struct {
	DeploymentJSON
	Events []state.Event `json:"events"`
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// DeploymentOf returns d as printed in JSON.
func DeploymentOf(d *state.Deployment) DeploymentJSON {
	return DeploymentJSON{ID: d.ID, Stack: d.Stack, Kind: d.Kind, Status: d.Status, Message: d.Message,
		CreatedBy: d.CreatedBy, ApprovedBy: d.ApprovedBy, RejectedBy: d.RejectedBy, AbortedBy: d.AbortedBy,
		ApprovalComment: d.ApprovalComment, RejectionComment: d.RejectionComment,
		CreatedAt: timeOrNil(d.CreatedAt), ApprovedAt: timeOrNil(d.ApprovedAt), StartedAt: timeOrNil(d.StartedAt), FinishedAt: timeOrNil(d.FinishedAt),
		Plan: d.Plan, SnapshotHash: d.SnapshotHash, StateVersion: d.StateVersion, Version: d.Version,
		CdkxVersion: d.CdkxVersion, Runner: d.Runner, Error: d.Error}
}

// minMessageWidth is the fewest cells `deployments list` gives a message, however narrow the terminal.
const minMessageWidth = 24

// Deployments prints a list of deployments: a JSON array with asJSON, else a table whose last column,
// MESSAGE, is cut (with …) so that each line fits width cells, keeping at least minMessageWidth of it.
// Every value is sanitized.
func Deployments(w io.Writer, asJSON bool, ds []state.Deployment, width int) error {
	if asJSON {
		out := make([]DeploymentJSON, 0, len(ds))
		for i := range ds {
			out = append(out, DeploymentOf(&ds[i]))
		}
		enc := JSONEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	rows := [][]string{{"ID", "STACK", "KIND", "STATUS", "CREATED", "DURATION", "PLAN", "VERSION", "BY", "MESSAGE"}}
	for _, d := range ds {
		dur := "-"
		if !d.FinishedAt.IsZero() && !d.StartedAt.IsZero() {
			dur = d.FinishedAt.Sub(d.StartedAt).Round(time.Millisecond).String()
		}
		plan := "-"
		if d.Plan != nil {
			plan = fmt.Sprintf("+%d ~%d ±%d -%d", d.Plan.Create, d.Plan.Update, d.Plan.Replace, d.Plan.Delete)
		}
		rows = append(rows, []string{Sanitize(d.ID), Sanitize(d.Stack), Sanitize(string(d.Kind)), Sanitize(string(d.Status)),
			d.CreatedAt.UTC().Format(time.RFC3339), dur, plan, fmt.Sprint(d.Version), Sanitize(d.CreatedBy), Sanitize(d.Message)})
	}
	last := len(rows[0]) - 1
	widths := make([]int, last)
	for _, r := range rows {
		for i, c := range r[:last] {
			widths[i] = max(widths[i], ansi.StringWidth(c))
		}
	}
	prefix := 0
	for _, n := range widths {
		prefix += n + 2
	}
	room := max(width-prefix, minMessageWidth)
	var b strings.Builder
	for _, r := range rows {
		b.Reset()
		for i, c := range r[:last] {
			b.WriteString(c)
			b.WriteString(strings.Repeat(" ", widths[i]-ansi.StringWidth(c)+2))
		}
		b.WriteString(ansi.Truncate(r[last], room, "…"))
		if _, err := fmt.Fprintln(w, strings.TrimRight(b.String(), " ")); err != nil {
			return err
		}
	}
	return nil
}

// Deployment prints one deployment and its events: JSON with asJSON, else a readable block and its
// recorded plan as diff prints a plan (RecordedPlan).
func Deployment(w io.Writer, asJSON bool, d *state.Deployment, events []state.Event) error {
	if asJSON {
		enc := JSONEncoder(w)
		enc.SetIndent("", "  ")
		if events == nil {
			events = []state.Event{}
		}
		return enc.Encode(ShowJSON{DeploymentJSON: DeploymentOf(d), Events: events})
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k, v string) { // every value from the record is sanitized: none forges a row or moves the cursor
		if v != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", k, Sanitize(v))
		}
	}
	ts := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339)
	}
	row("Deployment", d.ID)
	row("Stack", d.Stack)
	row("Kind", string(d.Kind))
	row("Status", string(d.Status))
	row("Message", d.Message)
	row("Created", ts(d.CreatedAt)+" by "+d.CreatedBy)
	approved := d.ApprovedBy
	if approved != "" && !d.ApprovedAt.IsZero() {
		approved += " at " + ts(d.ApprovedAt)
	}
	row("Approved by", approved)
	row("Approval comment", d.ApprovalComment)
	row("Rejected by", d.RejectedBy)
	row("Rejection comment", d.RejectionComment)
	row("Aborted by", d.AbortedBy)
	row("Started", ts(d.StartedAt))
	row("Finished", ts(d.FinishedAt))
	row("Planned at", fmt.Sprintf("state version %d", d.StateVersion))
	row("Snapshot", d.SnapshotHash)
	row("Error", d.Error)
	if err := tw.Flush(); err != nil {
		return err
	}
	if d.Plan != nil {
		fmt.Fprintln(w)
		RecordedPlan(w, d.Stack, d.Plan, false)
	}
	if len(events) > 0 {
		fmt.Fprintln(w, "\nEvents:")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, e := range events {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", e.Time.UTC().Format("15:04:05.000"), e.LogicalID, e.Type, e.Status, Sanitize(e.Reason))
		}
		return tw.Flush()
	}
	return nil
}
