//go:build browser

package browser

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cdkx-dev/cdkx/pkg/backend/sqlite"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// Values of the app's versions: v1 is deployed, v2 proposed (and approved in the browser), v3 proposed,
// the target of the forged POSTs, then rejected in the browser. Mail never changes: compare's "hide
// identical" hides it.
var (
	appV1 = map[string]any{"Www": map[string]any{"ttl": 300, "owner": "team-blue"}, "Mail": map[string]any{"priority": 10}}
	appV2 = map[string]any{"Www": map[string]any{"ttl": 120, "owner": "team-green"}, "Mail": map[string]any{"priority": 10}}
	appV3 = map[string]any{"Www": map[string]any{"ttl": 60, "owner": "team-red"}, "Mail": map[string]any{"priority": 10}}
)

// comment is the approval comment typed in the browser: markup in it must show as text.
const comment = `ship it <b>now</b>`

// rejection is the comment the walk rejects the other proposal with.
const rejection = "not this week: the freeze"

// TestConsoleLocal runs `cdkx console --state FILE` on a SQLite file and walks it in chromium: the login
// form with the token of the printed URL, the stacks, the stack's queue, the proposal with its values,
// an approval with a comment and the run's events arriving live until COMPLETED (`cdkx deployments run`
// started after the approval), compare with the previous deployment, locks and audit, a POST without
// the CSRF token (403, from the page and from a plain client with the session cookie), and log out;
// screenshots of every page at 1440 and 375 px.
//
//	go test -tags browser -run TestConsoleLocal -count=1 -v ./e2e/browser/
func TestConsoleLocal(t *testing.T) {
	chromiumPath(t)
	dir := t.TempDir()
	stateFile := filepath.Join(dir, "state.db")
	env := clientEnv("CDKX_STATE=" + stateFile)

	prev := deployApp(t, dir, env, writeApp(t, filepath.Join(dir, "v1"), appV1))
	prop := propose(t, dir, env, writeApp(t, filepath.Join(dir, "v2"), appV2), "lower the TTL")
	open := propose(t, dir, env, writeApp(t, filepath.Join(dir, "v3"), appV3), "lower it again")

	_, login := startProc(t, dir, env, "console", "--state", stateFile)
	t.Logf("cdkx console printed %s", login)
	base, token := splitLoginURL(t, login)
	shots := screenshotDir(t)

	b := newBrowser(t, "local", base, shots)
	checkHeaders(t, base+"/login")
	b.open("/local/default/stacks")
	if !b.has(`input[name=token]`) {
		t.Errorf("without a session, /local/default/stacks is not the login form (at %s):\n%s", b.location(), b.text())
	}
	loginWithToken(t, b, token, login)
	walk(t, b, walkCase{
		scope: "/local/default", prev: prev, prop: prop.ID, open: open.ID,
		run:      func() { cdkx(t, dir, env, "deployments", "run", prop.ID) },
		record:   func(id string) map[string]any { return showRecord(t, dir, env, id) },
		redeploy: true,
		lock:     func() string { return leaveLock(t, stateFile, "App") },
	})
	logout(t, b, "/local/default/stacks")
}

// walkCase is what walk needs of a console: its scope's path, the deployments the test recorded, how
// the approved one is run, and how to read a deployment's record outside the browser.
type walkCase struct {
	scope            string // "/{org}/{project}"
	prev, prop, open string // the completed v1, the proposal to approve (v2), the one rejected (v3)
	run              func()
	record           func(id string) map[string]any // `cdkx deployments show ID --json`
	// redeploy is set where the console can plan again (cdkx console): Redeploy is offered and driven.
	redeploy bool
	// lock, when set, leaves stack App locked by gone-holder@lockhost as a crashed run would, and returns
	// the lock's ID; the walk unlocks it through the locks page.
	lock func() string
}

// walk drives the pages of a logged-in browser, as one person would (see TestConsoleLocal).
func walk(t *testing.T, b *browser, c walkCase) {
	t.Helper()
	// Stacks.
	if code := b.open(c.scope + "/stacks"); code != http.StatusOK {
		t.Fatalf("GET %s/stacks = %d, want 200:\n%s", c.scope, code, b.text())
	}
	if txt := b.text(); !strings.Contains(txt, "App") {
		t.Errorf("the stacks page does not name stack App:\n%s", txt)
	}
	if !slices.Contains(b.buttons(), "Log out") {
		t.Errorf("the stacks page has no button Log out; buttons: %q", b.buttons())
	}
	b.shoot("stacks")

	// The stack's queue: both proposals, linked; history: the completed v1.
	if code := b.open(c.scope + "/stacks/App"); code != http.StatusOK {
		t.Fatalf("GET %s/stacks/App = %d, want 200:\n%s", c.scope, code, b.text())
	}
	for _, id := range []string{c.prop, c.open, c.prev} {
		if !b.has(`a[href*="/deployments/` + id + `"]`) {
			t.Errorf("the stack page has no link to deployment %s:\n%s", id, b.text())
		}
	}
	// The queue comes first and lists open proposals in creation order: v2's before v3's.
	order := eval[[]string](b, `Array.from(document.querySelectorAll('a[href*="/deployments/"]'))
		.map(a => a.getAttribute('href').split('/deployments/')[1])`)
	if i, j := slices.Index(order, c.prop), slices.Index(order, c.open); i < 0 || j < 0 || i > j {
		t.Errorf("the stack page lists the deployments %q: want the proposal %s before %s (the queue, in creation order)", order, c.prop, c.open)
	}
	b.shoot("stack")

	// The proposal, with its values.
	if code := b.open(c.scope + "/deployments/" + c.prop); code != http.StatusOK {
		t.Fatalf("GET the proposal = %d, want 200:\n%s", code, b.text())
	}
	if got := b.status(); got != "PROPOSED" {
		t.Errorf("the proposal's data-status = %q, want PROPOSED", got)
	}
	txt := b.text()
	// The plan with its values, as `cdkx deployments show` renders it.
	for _, want := range []string{"Cdkx::Core::Data Www", `input.owner = "team-blue" → "team-green"`, "300 → 120", "lower the TTL"} {
		if !strings.Contains(txt, want) {
			t.Errorf("the proposal's page does not show %q:\n%s", want, txt)
		}
	}
	for _, want := range []string{"Approve", "Reject"} {
		if !slices.Contains(b.buttons(), want) {
			t.Errorf("the proposal's page has no button %s; buttons: %q", want, b.buttons())
		}
	}
	b.shoot("proposal")

	// Approve with a comment, recorded and shown as text.
	review(t, b, c, c.prop, "Approve", comment, "APPROVED", "approvalComment")
	if txt := b.text(); !strings.Contains(txt, comment) {
		t.Errorf("the approved deployment's page does not show the comment %q as text:\n%s", comment, txt)
	}
	if b.has(`b`) && eval[bool](b, `Array.from(document.querySelectorAll('b')).some(e => e.textContent === 'now')`) {
		t.Errorf("the comment's markup %q became an element: not escaped", comment)
	}
	if bs := b.buttons(); !slices.Contains(bs, "Abort") || slices.Contains(bs, "Approve") {
		t.Errorf("the approved deployment's page has the buttons %q, want Abort and no Approve", bs)
	}
	b.shoot("approved")

	// Live events: count .event rows added to this very document while the run goes.
	eval[bool](b, `(() => {
		window.cdkxLive = {added: 0, origin: performance.timeOrigin};
		new MutationObserver(ms => { for (const m of ms) for (const n of m.addedNodes)
			if (n.nodeType === 1 && (n.matches('.event') || n.querySelector('.event'))) window.cdkxLive.added++; })
			.observe(document.body, {childList: true, subtree: true});
		return true; })()`)
	b.waitJS("the page's event stream open before the run starts",
		`(document.getElementById('event-table') || {dataset: {}}).dataset.stream === 'open'`, actionTimeout)
	c.run()
	b.waitJS("the run's events arriving live until COMPLETED",
		`window.cdkxLive && window.cdkxLive.added > 0 && (
			(document.querySelector('[data-status]') || {dataset: {}}).dataset.status === 'COMPLETED' ||
			Array.from(document.querySelectorAll('.event')).some(e => e.textContent.includes('COMPLETED')))`, 30*time.Second)
	t.Logf("live: %d event rows added without a reload", eval[int](b, `window.cdkxLive.added`))
	b.shoot("live")
	b.open(c.scope + "/deployments/" + c.prop)
	if got := b.status(); got != "COMPLETED" {
		t.Errorf("after the run: data-status = %q, want COMPLETED", got)
	}
	if n := eval[int](b, `document.querySelectorAll('.event').length`); n == 0 {
		t.Errorf("the completed deployment's page lists no .event rows:\n%s", b.text())
	}
	if st := c.record(c.prop)["status"]; st != "COMPLETED" {
		t.Errorf("the record of %s says %s, want COMPLETED", c.prop, st)
	}
	b.shoot("completed")

	// Compare with the previous deployment.
	if code := b.open(c.scope + "/compare?a=" + c.prev + "&b=" + c.prop); code != http.StatusOK {
		t.Fatalf("GET compare = %d, want 200:\n%s", code, b.text())
	}
	txt = b.text()
	for _, want := range []string{"App/Www", "team-blue", "team-green"} {
		if !strings.Contains(txt, want) {
			t.Errorf("compare does not show %q:\n%s", want, txt)
		}
	}
	if !strings.Contains(txt, "App/Mail") {
		t.Errorf("compare does not show the identical resource App/Mail before hiding identical ones:\n%s", txt)
	}
	b.shoot("compare")
	if !b.has(`input[name=hideIdentical]`) {
		t.Errorf("compare has no checkbox name=hideIdentical")
	} else {
		before := eval[float64](b, `performance.timeOrigin`)
		b.do("hide identical", chromedp.Click(chromedp.CSS(`input[name=hideIdentical]`)),
			evalVoid(`document.querySelector('input[name=hideIdentical]').form.requestSubmit()`))
		b.waitJS("compare with identical resources hidden", `performance.timeOrigin !== `+jsNumber(before)+` && document.readyState === "complete"`, actionTimeout)
		if txt := b.text(); strings.Contains(txt, "App/Mail") || !strings.Contains(txt, "team-green") {
			t.Errorf("compare with hideIdentical: want App/Www's change and no App/Mail:\n%s", txt)
		}
		b.shoot("compare-hide-identical")
	}

	// Locks and audit.
	for _, page := range []string{"locks", "audit"} {
		if code := b.open(c.scope + "/" + page); code != http.StatusOK {
			t.Errorf("GET %s/%s = %d, want 200:\n%s", c.scope, page, code, b.text())
		}
		b.shoot(page)
	}

	// A POST without the CSRF token is refused, from the page and from a plain client with the cookie.
	b.open(c.scope + "/deployments/" + c.open)
	if code := b.fetchPOST(c.scope+"/deployments/"+c.open+"/approve", url.Values{"comment": {"forged"}}); code != http.StatusForbidden {
		t.Errorf("POST approve from the page without the CSRF token = %d, want 403", code)
	}
	cl := b.client()
	for _, action := range []string{"approve", "reject", "abort"} {
		code, _ := statusOf(t, cl, http.MethodPost, b.url(c.scope+"/deployments/"+c.open+"/"+action), url.Values{"comment": {"forged"}})
		if code != http.StatusForbidden {
			t.Errorf("POST %s with the session cookie, without the CSRF token = %d, want 403", action, code)
		}
	}
	if st := c.record(c.open)["status"]; st != "PROPOSED" {
		t.Errorf("after the POSTs without CSRF token: %s is %s, want PROPOSED", c.open, st)
	}

	// Reject the other proposal with a comment.
	review(t, b, c, c.open, "Reject", rejection, "REJECTED", "rejectionComment")
	if bs := b.buttons(); slices.Contains(bs, "Approve") || slices.Contains(bs, "Reject") {
		t.Errorf("the rejected deployment's page has the buttons %q, want neither Approve nor Reject", bs)
	}
	b.shoot("rejected")

	// Redeploy v1, which v2 superseded: a new proposal of v1's snapshot (a roll-back), where the console
	// can plan again.
	b.open(c.scope + "/deployments/" + c.prev)
	if !c.redeploy {
		if slices.Contains(b.buttons(), "Redeploy") {
			t.Errorf("a completed deployment's page offers Redeploy where the console cannot plan; buttons: %q", b.buttons())
		}
	} else {
		b.clickButton("Redeploy")
		loc := b.location()
		_, id, ok := strings.Cut(loc, "/deployments/")
		if !ok || id == "" || id == c.prev {
			t.Fatalf("after Redeploy the browser is at %s, want the new deployment's page", loc)
		}
		if got := b.status(); got != "PROPOSED" {
			t.Errorf("the redeploy %s: data-status = %q, want PROPOSED:\n%s", id, got, b.text())
		}
		if r := c.record(id); r["status"] != "PROPOSED" || r["kind"] != "deploy" {
			t.Errorf("the redeploy's record: status %v, kind %v; want PROPOSED, deploy", r["status"], r["kind"])
		}
		if txt := b.text(); !strings.Contains(txt, `"team-green" → "team-blue"`) {
			t.Errorf("the redeploy of v1 does not plan owner team-green → team-blue:\n%s", txt)
		}
		b.shoot("redeploy")
	}

	// Unlock a lock left by a holder that is gone, after the confirmation naming it.
	if c.lock == nil {
		return
	}
	id := c.lock()
	b.open(c.scope + "/locks")
	if txt := b.text(); !strings.Contains(txt, "gone-holder@lockhost") {
		t.Errorf("the locks page does not show the holder gone-holder@lockhost:\n%s", txt)
	}
	b.clickButton("Unlock")
	if txt := b.text(); !strings.Contains(txt, id) || !strings.Contains(txt, "gone-holder@lockhost") {
		t.Errorf("the unlock confirmation does not name the lock %s and its holder:\n%s", id, txt)
	}
	b.shoot("unlock")
	b.clickButton("Unlock")
	if txt := b.text(); !strings.Contains(txt, "No stack is locked.") {
		t.Errorf("after Unlock the locks page still lists a lock:\n%s", txt)
	}
}

// review opens deployment id, types text into the comment box of the form of button (Approve or
// Reject), clicks it, and checks the status it leads to and the comment its record keeps under key.
func review(t *testing.T, b *browser, c walkCase, id, button, text, wantStatus, key string) {
	t.Helper()
	b.open(c.scope + "/deployments/" + id)
	b.do("type the comment", chromedpSetValue(`form[action$="/`+strings.ToLower(button)+`"] textarea[name=comment]`, text))
	b.clickButton(button)
	b.open(c.scope + "/deployments/" + id)
	if got := b.status(); got != wantStatus {
		t.Fatalf("after %s: data-status = %q, want %s:\n%s", button, got, wantStatus, b.text())
	}
	if got := c.record(id)[key]; got != text {
		t.Errorf("the record's %s = %v, want %q", key, got, text)
	}
}

// loginWithToken shows the login page, types the token into its field name="token" and submits it;
// without a token in the printed URL it opens that URL instead (a one-time link).
func loginWithToken(t *testing.T, b *browser, token, link string) {
	t.Helper()
	if code := b.open("/login"); code != http.StatusOK {
		t.Fatalf("GET /login = %d, want 200:\n%s", code, b.text())
	}
	if !b.has(`input[name=token]`) {
		t.Fatalf("the login page has no field name=token:\n%s", b.text())
	}
	b.shoot("login")
	if token == "" {
		b.open(link)
	} else {
		b.do("type the token", chromedpSetValue(`input[name=token]`, token))
		before := eval[float64](b, `performance.timeOrigin`)
		b.do("submit the login form", evalVoid(`document.querySelector('input[name=token]').form.requestSubmit()`))
		b.waitJS("the page after login", `performance.timeOrigin !== `+jsNumber(before)+` && document.readyState === "complete"`, actionTimeout)
	}
	if strings.Contains(b.location(), "/login") {
		t.Fatalf("after login the browser is still at %s:\n%s", b.location(), b.text())
	}
	var session bool
	for _, c := range b.cookies() {
		if c.HTTPOnly {
			session = true
			if c.SameSite != "Strict" {
				t.Errorf("cookie %s: SameSite=%s, want Strict", c.Name, c.SameSite)
			}
		}
	}
	if !session {
		t.Errorf("after login the browser holds no HttpOnly session cookie")
	}
}

// logout clicks Log out and checks that page then leads to the login form.
func logout(t *testing.T, b *browser, page string) {
	t.Helper()
	b.open(page)
	b.clickButton("Log out")
	b.open(page)
	if !b.has(`input[name=token]`) {
		t.Errorf("after Log out, %s is not the login form (at %s):\n%s", page, b.location(), b.text())
	}
}

// checkHeaders GETs the URL with a plain client and checks the console's safety headers.
func checkHeaders(t *testing.T, rawURL string) {
	t.Helper()
	_, h := statusOf(t, &http.Client{Timeout: actionTimeout}, http.MethodGet, rawURL, nil)
	csp := h.Get("Content-Security-Policy")
	if csp == "" || strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("GET %s: Content-Security-Policy = %q, want a strict one", rawURL, csp)
	}
	if got := h.Get("X-Frame-Options"); got != "DENY" {
		t.Errorf("GET %s: X-Frame-Options = %q, want DENY", rawURL, got)
	}
}

// splitLoginURL splits the printed login URL into the console's root and the token it carries ("" when
// none: then the URL itself logs in).
func splitLoginURL(t *testing.T, raw string) (base, token string) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("the printed login URL %q: %v", raw, err)
	}
	token = u.Query().Get("token")
	if token == "" && u.Fragment != "" {
		if f, err := url.ParseQuery(u.Fragment); err == nil {
			token = f.Get("token")
		}
	}
	return u.Scheme + "://" + u.Host, token
}

// deployApp deploys app and returns its deployment's ID.
func deployApp(t *testing.T, dir string, env []string, app string, extra ...string) string {
	t.Helper()
	out := cdkx(t, dir, env, append([]string{"deploy", "--app", app, "--json"}, extra...)...)
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		var s struct {
			Kind        string            `json:"kind"`
			Deployments map[string]string `json:"deployments"`
		}
		if json.Unmarshal([]byte(line), &s) == nil && s.Kind == "summary" && s.Deployments["App"] != "" {
			return s.Deployments["App"]
		}
	}
	t.Fatalf("cdkx deploy --json printed no summary with the deployment of App:\n%s", out)
	return ""
}

// showRecord returns a deployment's record as `cdkx deployments show ID --json` prints it.
func showRecord(t *testing.T, dir string, env []string, id string) map[string]any {
	t.Helper()
	var d map[string]any
	out := cdkx(t, dir, env, "deployments", "show", id, "--json")
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("cdkx deployments show %s --json: %v\n%s", id, err, out)
	}
	return d
}

// leaveLock locks stack in the SQLite state file as gone-holder@lockhost and closes the file without
// unlocking: the lock a crashed run leaves behind. It returns the lock's ID.
func leaveLock(t *testing.T, stateFile, stack string) string {
	t.Helper()
	ctx := context.Background()
	b, err := sqlite.Open(ctx, stateFile)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Close() }()
	now := time.Now().UTC()
	info := state.LockInfo{ID: "lock-of-a-crashed-run", Stack: stack, Operation: "deploy", User: "gone-holder",
		Host: "lockhost", PID: 999999, StartedAt: now, HeartbeatAt: now}
	if err := b.Lock(ctx, info); err != nil {
		t.Fatalf("lock %s: %v", stack, err)
	}
	return info.ID
}
