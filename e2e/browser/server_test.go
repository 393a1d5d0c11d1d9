//go:build browser

package browser

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cdkx-dev/cdkx/pkg/backend/postgres/postgrestest"
)

// serverProject is the project of the server test's deployments (CDKX_PROJECT); its tokens reach the
// server's default organization.
const (
	serverOrg     = "organization"
	serverProject = "web"
)

// TestConsoleServer runs `cdkx server --require-second-person` on a private PostgreSQL schema and walks
// its console in chromium: alice (token A) proposes with `cdkx deploy --propose`; bob (token B) logs in
// with his token in the login form, reads the proposal's values, approves it with a comment and watches
// the run's events arrive live until COMPLETED (`cdkx deployments run` as alice, started after the
// approval), compares it with the previous deployment, and a POST without the CSRF token gets 403. alice
// approving her own proposal in the browser gets 403 naming the second-person rule. A read-only token
// (auditor) sees no button on a proposal, and its forged approval — with a valid CSRF token, from the
// page's fetch and from a plain client with its session cookie — gets 403; the proposal stays PROPOSED.
//
//	CDKX_TEST_POSTGRES_URL=… go test -tags browser -run TestConsoleServer -count=1 -v ./e2e/browser/
func TestConsoleServer(t *testing.T) {
	chromiumPath(t)
	if os.Getenv(postgrestest.URLEnv) == "" && os.Getenv("CI") != "" {
		t.Fatalf("%s is unset: scripts/test.sh starts a PostgreSQL and sets it", postgrestest.URLEnv)
	}
	dbURL := postgrestest.FreshSchema(t)
	dir := t.TempDir()
	token := func(name string, flags ...string) string {
		out := cdkx(t, dir, clientEnv(), append([]string{"server", "token", "create", name, "--database-url", dbURL}, flags...)...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		return strings.TrimSpace(lines[len(lines)-1])
	}
	alice, bob, auditor := token("alice"), token("bob"), token("auditor", "--read-only")

	_, base := startProc(t, dir, clientEnv(), "server", "--listen", "127.0.0.1:0", "--database-url", dbURL, "--require-second-person")
	base = strings.TrimSuffix(base, "/")
	as := func(tok string) []string {
		return clientEnv("CDKX_STATE="+base, "CDKX_TOKEN="+tok, "CDKX_PROJECT="+serverProject)
	}

	// v1: proposed by alice, approved and run by bob: the previous deployment.
	prev := propose(t, dir, as(alice), writeApp(t, filepath.Join(dir, "v1"), appV1), "first")
	cdkx(t, dir, as(bob), "deployments", "approve", prev.ID, "--run")
	prop := propose(t, dir, as(alice), writeApp(t, filepath.Join(dir, "v2"), appV2), "lower the TTL")
	open := propose(t, dir, as(alice), writeApp(t, filepath.Join(dir, "v3"), appV3), "lower it again")
	scope := "/" + serverOrg + "/" + serverProject
	shots := screenshotDir(t)
	checkHeaders(t, base+"/login")

	t.Run("second person", func(t *testing.T) {
		a := newBrowser(t, "alice", base, shots)
		loginWithToken(t, a, alice, "")
		a.open(scope + "/deployments/" + prop.ID)
		csrf := a.csrf()
		if csrf == "" {
			t.Fatalf("alice's page of the proposal has no CSRF field:\n%s", a.text())
		}
		code, _ := statusOf(t, a.client(), http.MethodPost, a.url(scope+"/deployments/"+prop.ID+"/approve"),
			url.Values{"csrf": {csrf}, "comment": {"my own"}})
		if code != http.StatusForbidden {
			t.Errorf("alice approving her own proposal = %d, want 403", code)
		}
		if slices.Contains(a.buttons(), "Approve") {
			a.do("type the comment", chromedpSetValue(`textarea[name=comment]`, "my own"))
			a.clickButton("Approve")
			if txt := a.text(); !strings.Contains(strings.ToLower(txt), "second person") {
				t.Errorf("alice's Approve of her own proposal: the page does not name the second-person rule:\n%s", txt)
			}
			a.shoot("second-person")
		}
		if st := showRecord(t, dir, as(alice), prop.ID)["status"]; st != "PROPOSED" {
			t.Fatalf("after alice's approvals: %s is %s, want PROPOSED", prop.ID, st)
		}
	})

	t.Run("second token approves", func(t *testing.T) {
		b := newBrowser(t, "bob", base, shots)
		loginWithToken(t, b, bob, "")
		if txt := b.text(); !strings.Contains(txt, "bob") {
			t.Errorf("the page header does not name the caller bob:\n%s", txt)
		}
		walk(t, b, walkCase{
			scope: scope, prev: prev.ID, prop: prop.ID, open: open.ID,
			run:    func() { cdkx(t, dir, as(alice), "deployments", "run", prop.ID) },
			record: func(id string) map[string]any { return showRecord(t, dir, as(alice), id) },
		})
		logout(t, b, scope+"/stacks")
	})

	// The walk rejected v3: the read-only session forges its POSTs against a proposal still open.
	open2 := propose(t, dir, as(alice), writeApp(t, filepath.Join(dir, "v3b"), appV3), "still open")
	t.Run("read-only", func(t *testing.T) {
		r := newBrowser(t, "auditor", base, shots)
		loginWithToken(t, r, auditor, "")
		if code := r.open(scope + "/deployments/" + open2.ID); code != http.StatusOK {
			t.Fatalf("the auditor's GET of the proposal = %d, want 200:\n%s", code, r.text())
		}
		for _, b := range r.buttons() {
			if slices.Contains([]string{"Approve", "Reject", "Abort", "Redeploy", "Unlock"}, b) {
				t.Errorf("a read-only session sees the button %s", b)
			}
		}
		if r.has(`textarea[name=comment]`) {
			t.Errorf("a read-only session sees the comment field")
		}
		r.shoot("read-only")
		csrf := r.csrf() // the Log out form's: a valid token of this session
		if csrf == "" {
			t.Fatalf("the auditor's page has no CSRF field (its Log out form should):\n%s", r.text())
		}
		fields := url.Values{"csrf": {csrf}, "comment": {"forged"}}
		if code := r.fetchPOST(scope+"/deployments/"+open2.ID+"/approve", fields); code != http.StatusForbidden {
			t.Errorf("the auditor's forged approve from the page = %d, want 403", code)
		}
		cl := r.client()
		for _, action := range []string{"approve", "reject", "abort"} {
			code, _ := statusOf(t, cl, http.MethodPost, r.url(scope+"/deployments/"+open2.ID+"/"+action), fields)
			if code != http.StatusForbidden {
				t.Errorf("the auditor's forged %s with a valid CSRF token = %d, want 403", action, code)
			}
		}
		code, _ := statusOf(t, cl, http.MethodPost, r.url(scope+"/locks/unlock"), url.Values{"csrf": {csrf}, "stack": {"App"}, "lock": {"x"}})
		if code != http.StatusForbidden {
			t.Errorf("the auditor's forged unlock with a valid CSRF token = %d, want 403", code)
		}
		if st := showRecord(t, dir, as(alice), open2.ID)["status"]; st != "PROPOSED" {
			t.Errorf("after the auditor's forged POSTs: %s is %s, want PROPOSED", open2.ID, st)
		}
	})
}
