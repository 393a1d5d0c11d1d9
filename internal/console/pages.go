package console

import (
	"bytes"
	"cmp"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cdkx-dev/cdkx/operation/plantext"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/pkg/text"
)

// pageNames are the templates under templates/, each rendered inside layout.html.
var pageNames = []string{"login", "home", "error", "stacks", "stack", "deployment", "compare", "locks", "unlock", "audit"}

func parsePages() map[string]*template.Template {
	funcs := template.FuncMap{
		"clean": text.Sanitize,
		"lines": func(s string) []string { // a multi-line text, each line sanitized
			ls := strings.Split(s, "\n")
			for i, l := range ls {
				ls[i] = text.Sanitize(l)
			}
			return ls
		},
		"time": func(t time.Time) string {
			if t.IsZero() {
				return ""
			}
			return t.UTC().Format(time.RFC3339)
		},
		"short": func(id string) string {
			if len(id) > 8 {
				return id[:8]
			}
			return id
		},
		"lower": func(s state.DeploymentStatus) string { return strings.ToLower(string(s)) },
		"esc":   url.PathEscape,
		"sub":   func(a, b int) int { return a - b },
		"dict": func(kv ...any) map[string]any {
			m := map[string]any{}
			for i := 0; i+1 < len(kv); i += 2 {
				m[kv[i].(string)] = kv[i+1]
			}
			return m
		},
		"has":   func(v url.Values, key, value string) bool { return slices.Contains(v[key], value) },
		"query": url.QueryEscape,
	}
	out := map[string]*template.Template{}
	for _, name := range pageNames {
		out[name] = template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html"))
	}
	return out
}

// view is what every page's layout reads.
type view struct {
	Title  string
	Base   string
	Caller *Caller
	CSRF   string
	Scope  *Scope
	// ScopePath is the URL of the scope ("/org/project"), under the base path.
	ScopePath string
	Data      map[string]any
}

// CanWrite reports whether buttons are shown.
func (v view) CanWrite() bool { return v.Caller != nil && !v.Caller.ReadOnly }

func (c *console) render(w http.ResponseWriter, r *http.Request, status int, page string, s *session, data map[string]any) {
	v := view{Base: c.opts.BasePath, Data: data}
	if s != nil {
		v.Caller, v.CSRF = &s.caller, s.csrf
	}
	if org, project := r.PathValue("org"), r.PathValue("project"); org != "" && page != "error" {
		v.Scope = &Scope{Org: org, Project: project}
		v.ScopePath = c.opts.BasePath + "/" + url.PathEscape(org) + "/" + url.PathEscape(project)
	}
	if t, ok := data["Title"].(string); ok {
		v.Title = t
	}
	var b bytes.Buffer
	if err := c.pages[page].Execute(&b, v); err != nil {
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// --- stacks ---

func (c *console) stacksPage(w http.ResponseWriter, r *http.Request, s *session, sc Scope) {
	stacks, err := c.src.Stacks(r.Context(), s.caller, sc)
	if err != nil {
		c.sourceError(w, r, s, err)
		return
	}
	c.render(w, r, http.StatusOK, "stacks", s, map[string]any{"Title": "Stacks of " + sc.Org + "/" + sc.Project, "Stacks": stacks})
}

// queueOrder sorts a stack's open deployments as its queue runs them: RUNNING, then PENDING and
// APPROVED in creation order, then the open proposals in creation order.
func queueOrder(ds []state.Deployment) {
	rank := func(s state.DeploymentStatus) int {
		switch s {
		case state.StatusRunning:
			return 0
		case state.StatusPending, state.StatusApproved:
			return 1
		}
		return 2
	}
	slices.SortStableFunc(ds, func(a, b state.Deployment) int {
		return cmp.Or(cmp.Compare(rank(a.Status), rank(b.Status)), cmp.Compare(a.Seq, b.Seq))
	})
}

// allStatuses and allKinds are the filters the history offers.
var (
	allStatuses = []state.DeploymentStatus{state.StatusProposed, state.StatusApproved, state.StatusRejected, state.StatusPending,
		state.StatusRunning, state.StatusCompleted, state.StatusFailed, state.StatusAborted}
	allKinds = []state.DeploymentKind{state.KindDeploy, state.KindPlan, state.KindDestroy, state.KindImport, state.KindRefresh}
)

// historyPage is the size of a page of history.
const historyPage = 50

func (c *console) stackPage(w http.ResponseWriter, r *http.Request, s *session, sc Scope) {
	stack := r.PathValue("stack")
	queue, err := c.src.Deployments(r.Context(), s.caller, sc, Query{Stack: stack, Limit: 1000,
		Statuses: []state.DeploymentStatus{state.StatusRunning, state.StatusPending, state.StatusApproved, state.StatusProposed}})
	if err != nil {
		c.sourceError(w, r, s, err)
		return
	}
	queueOrder(queue.Deployments)
	q := r.URL.Query()
	hq := Query{Stack: stack, Cursor: q.Get("cursor"), Limit: historyPage}
	for _, st := range q["status"] {
		if slices.Contains(allStatuses, state.DeploymentStatus(st)) {
			hq.Statuses = append(hq.Statuses, state.DeploymentStatus(st))
		}
	}
	for _, k := range q["kind"] {
		if slices.Contains(allKinds, state.DeploymentKind(k)) {
			hq.Kinds = append(hq.Kinds, state.DeploymentKind(k))
		}
	}
	history, err := c.src.Deployments(r.Context(), s.caller, sc, hq)
	if err != nil {
		c.sourceError(w, r, s, err)
		return
	}
	next := ""
	if history.Next != "" {
		v := url.Values{"cursor": {history.Next}}
		for _, st := range hq.Statuses {
			v.Add("status", string(st))
		}
		for _, k := range hq.Kinds {
			v.Add("kind", string(k))
		}
		next = "?" + v.Encode()
	}
	c.render(w, r, http.StatusOK, "stack", s, map[string]any{"Title": "Stack " + stack, "Stack": stack,
		"Queue": queue.Deployments, "History": history.Deployments, "Next": next, "Filtered": hq.Cursor != "",
		"Statuses": allStatuses, "Kinds": allKinds, "Chosen": q})
}

// --- deployment ---

// stepsPage is how many plan steps a deployment page shows at once, eventsPage how many events.
const (
	stepsPage  = 200
	eventsPage = 500
)

// stepView is one step of a plan as the page shows it: its lines, plain text, and its op.
type stepView struct {
	Op    string
	Lines []plantext.Line
}

func (c *console) deploymentPage(w http.ResponseWriter, r *http.Request, s *session, sc Scope) {
	ctx := r.Context()
	d, err := c.src.Deployment(ctx, s.caller, sc, r.PathValue("id"))
	if err != nil {
		c.sourceError(w, r, s, err)
		return
	}
	events, err := c.src.Events(ctx, s.caller, sc, d.ID, 0)
	if err != nil {
		c.sourceError(w, r, s, err)
		return
	}
	// The events a page at a time, the newest by default (a run of 100,000 resources has 200,000): live
	// only on that last page, where the stream's new events belong.
	efrom := max(0, len(events)-eventsPage)
	if v, err := strconv.Atoi(r.URL.Query().Get("events")); err == nil {
		efrom = max(0, min(v, efrom))
	}
	eto := min(efrom+eventsPage, len(events))
	data := map[string]any{"Title": "Deployment " + d.ID, "D": d, "Events": events[efrom:eto],
		"Live": d.Status.Queued() && eto == len(events), "EventsFrom": efrom + 1, "EventsTo": eto, "EventsTotal": len(events)}
	if efrom > 0 {
		data["EventsPrev"] = strconv.Itoa(max(0, efrom-eventsPage))
	}
	if eto < len(events) {
		data["EventsNext"] = strconv.Itoa(eto)
	}
	// The plan: counts at once, steps a page at a time.
	if d.Plan != nil {
		from, _ := strconv.Atoi(r.URL.Query().Get("steps"))
		from = max(0, min(from, len(d.Plan.Steps)))
		to := min(from+stepsPage, len(d.Plan.Steps))
		steps := make([]stepView, 0, to-from)
		for _, st := range d.Plan.Steps[from:to] {
			steps = append(steps, stepView{Op: st.Op, Lines: plantext.StepLines(st)})
		}
		data["Steps"], data["StepsFrom"], data["StepsTo"], data["StepsTotal"] = steps, from+1, to, len(d.Plan.Steps)
		if from > 0 {
			data["StepsPrev"] = strconv.Itoa(max(0, from-stepsPage))
		}
		if to < len(d.Plan.Steps) {
			data["StepsNext"] = strconv.Itoa(to)
		}
	}
	// Has the stack moved since the deployment was planned? Only an open one can still run.
	if d.Status == state.StatusProposed || d.Status == state.StatusPending || d.Status == state.StatusApproved {
		if stacks, err := c.src.Stacks(ctx, s.caller, sc); err == nil {
			for _, st := range stacks {
				if st.Name == d.Stack && st.Version != d.StateVersion {
					data["Moved"] = st.Version
				}
			}
		}
	}
	// The last completed deploy of the stack before or after it, for "compare with the last completed".
	if last, err := c.src.Deployments(ctx, s.caller, sc, Query{Stack: d.Stack, Statuses: []state.DeploymentStatus{state.StatusCompleted},
		Kinds: []state.DeploymentKind{state.KindDeploy}, Limit: 2}); err == nil {
		for _, l := range last.Deployments {
			if l.ID != d.ID {
				data["LastCompleted"] = l.ID
				break
			}
		}
	}
	data["CanApprove"] = d.Status == state.StatusProposed
	data["CanReject"] = d.Status == state.StatusProposed
	data["CanAbort"] = d.Status.Queued() // a proposal is rejected, not aborted (operation.Review.Abort)
	data["CanRedeploy"] = !c.opts.NoRedeploy && d.Status == state.StatusCompleted && d.Kind == state.KindDeploy
	c.render(w, r, http.StatusOK, "deployment", s, data)
}

func (c *console) deploymentAction(w http.ResponseWriter, r *http.Request, s *session, sc Scope) {
	ctx, id := r.Context(), r.PathValue("id")
	comment := r.PostFormValue("comment")
	if err := state.CheckMessage(comment); err != nil {
		c.fail(w, r, s, http.StatusBadRequest, "The comment is too long or not text: "+err.Error())
		return
	}
	var err error
	to := id
	switch r.PathValue("action") {
	case "approve":
		err = c.src.Approve(ctx, s.caller, sc, id, comment)
	case "reject":
		err = c.src.Reject(ctx, s.caller, sc, id, comment)
	case "abort":
		err = c.src.Abort(ctx, s.caller, sc, id)
	case "redeploy":
		var nid string
		nid, err = c.src.Redeploy(ctx, s.caller, sc, id)
		if err == nil && nid == "" {
			c.render(w, r, http.StatusOK, "error", s, map[string]any{"Title": "Nothing to redeploy", "Heading": "Nothing to redeploy",
				"Message": "The stack already is as this deployment left it: no proposal was recorded.", "Back": c.path("/" + url.PathEscape(sc.Org) + "/" + url.PathEscape(sc.Project) + "/deployments/" + url.PathEscape(id))})
			return
		}
		to = nid
	default:
		c.fail(w, r, s, http.StatusNotFound, "No such action.")
		return
	}
	if err != nil {
		c.sourceError(w, r, s, err)
		return
	}
	http.Redirect(w, r, c.path("/"+url.PathEscape(sc.Org)+"/"+url.PathEscape(sc.Project)+"/deployments/"+url.PathEscape(to)), http.StatusSeeOther)
}

// --- locks ---

func (c *console) locksPage(w http.ResponseWriter, r *http.Request, s *session, sc Scope) {
	locks, err := c.src.Locks(r.Context(), s.caller, sc)
	if err != nil {
		c.sourceError(w, r, s, err)
		return
	}
	c.render(w, r, http.StatusOK, "locks", s, map[string]any{"Title": "Locks", "Locks": locks})
}

// findLock returns the held lock of stack with ID id, or nil.
func (c *console) findLock(r *http.Request, s *session, sc Scope, stack, id string) (*state.LockInfo, error) {
	locks, err := c.src.Locks(r.Context(), s.caller, sc)
	if err != nil {
		return nil, err
	}
	for _, l := range locks {
		if l.Stack == stack && l.ID == id {
			return &l, nil
		}
	}
	return nil, nil
}

func (c *console) unlockConfirm(w http.ResponseWriter, r *http.Request, s *session, sc Scope) {
	l, err := c.findLock(r, s, sc, r.URL.Query().Get("stack"), r.URL.Query().Get("id"))
	if err != nil {
		c.sourceError(w, r, s, err)
		return
	}
	if l == nil {
		c.fail(w, r, s, http.StatusNotFound, "That lock is not held any more.")
		return
	}
	c.render(w, r, http.StatusOK, "unlock", s, map[string]any{"Title": "Unlock stack " + l.Stack, "L": l})
}

func (c *console) unlock(w http.ResponseWriter, r *http.Request, s *session, sc Scope) {
	if err := c.src.Unlock(r.Context(), s.caller, sc, r.PostFormValue("stack"), r.PostFormValue("id")); err != nil {
		c.sourceError(w, r, s, err)
		return
	}
	http.Redirect(w, r, c.path("/"+url.PathEscape(sc.Org)+"/"+url.PathEscape(sc.Project)+"/locks"), http.StatusSeeOther)
}

// --- audit ---

// auditEntry is one act on a deployment: At is when (zero when the record does not say), sortAt the
// time it sorts by (At, or the deployment's creation).
type auditEntry struct {
	At         time.Time
	sortAt     time.Time
	Who, What  string
	Comment    string
	Deployment state.Deployment
}

func (c *console) auditPage(w http.ResponseWriter, r *http.Request, s *session, sc Scope) {
	page, err := c.src.Deployments(r.Context(), s.caller, sc, Query{Cursor: r.URL.Query().Get("cursor"), Limit: historyPage})
	if err != nil {
		c.sourceError(w, r, s, err)
		return
	}
	var entries []auditEntry
	for _, d := range page.Deployments {
		entries = append(entries, auditEntry{At: d.CreatedAt, Who: d.CreatedBy, What: "created (" + string(d.Status) + ")", Deployment: d})
		if d.ApprovedBy != "" {
			entries = append(entries, auditEntry{At: d.ApprovedAt, Who: d.ApprovedBy, What: "approved", Comment: d.ApprovalComment, Deployment: d})
		}
		if d.RejectedBy != "" {
			entries = append(entries, auditEntry{At: d.FinishedAt, Who: d.RejectedBy, What: "rejected", Comment: d.RejectionComment, Deployment: d})
		}
		if d.AbortedBy != "" {
			entries = append(entries, auditEntry{At: d.FinishedAt, Who: d.AbortedBy, What: "aborted", Deployment: d})
		}
	}
	for i := range entries {
		entries[i].sortAt = entries[i].At
		if entries[i].At.IsZero() {
			entries[i].sortAt = entries[i].Deployment.CreatedAt
		}
	}
	slices.SortStableFunc(entries, func(a, b auditEntry) int { return b.sortAt.Compare(a.sortAt) })
	next := ""
	if page.Next != "" {
		next = "?cursor=" + url.QueryEscape(page.Next)
	}
	c.render(w, r, http.StatusOK, "audit", s, map[string]any{"Title": "Audit", "Entries": entries, "Next": next})
}
