//go:build browser

package browser

import (
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHarness checks the harness itself against a small page served under the console's strict
// Content-Security-Policy: chromium starts, the token form is filled and submitted, a button is clicked,
// values are read and waited for without eval (which the CSP forbids), a fetch POST reports its status,
// the session cookie is read, screenshots are written at both widths, and chromium is gone, by its PID,
// once the test using it has ended.
func TestHarness(t *testing.T) {
	chromiumPath(t)
	mux := http.NewServeMux()
	page := func(w http.ResponseWriter, body string) {
		w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; frame-ancestors 'none'")
		w.Header().Set("X-Frame-Options", "DENY")
		fmt.Fprintf(w, "<!doctype html><html><head><title>t</title></head><body>%s</body></html>", body)
	}
	mux.HandleFunc("GET /login", func(w http.ResponseWriter, r *http.Request) {
		page(w, `<form method="post" action="/login"><label>Token <input name="token"></label><button>Log in</button></form>`)
	})
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) {
		if r.FormValue("token") != "tok-1" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: "s", Value: "v", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		http.Redirect(w, r, "/x/y/stacks", http.StatusSeeOther)
	})
	mux.HandleFunc("GET /x/y/stacks", func(w http.ResponseWriter, r *http.Request) {
		page(w, `<p data-status="PROPOSED">App</p><form method="post" action="/x/y/act"><input type="hidden" name="csrf" value="c1">`+
			`<textarea name="comment"></textarea><button>Approve</button></form>`)
	})
	mux.HandleFunc("POST /x/y/act", func(w http.ResponseWriter, r *http.Request) {
		if r.FormValue("csrf") != "c1" {
			http.Error(w, "csrf", http.StatusForbidden)
			return
		}
		page(w, `<p data-status="APPROVED">`+html.EscapeString(r.FormValue("comment"))+`</p>`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	var pid int
	t.Run("drive", func(t *testing.T) {
		b := newBrowser(t, "harness", srv.URL, screenshotDir(t))
		pid = b.pid
		if pid == 0 {
			t.Fatal("the harness did not learn chromium's PID")
		}
		checkHeaders(t, srv.URL+"/login")
		loginWithToken(t, b, "tok-1", "")
		if got := b.status(); got != "PROPOSED" {
			t.Errorf("status = %q, want PROPOSED", got)
		}
		if code := b.fetchPOST("/x/y/act", nil); code != http.StatusForbidden {
			t.Errorf("fetch POST without csrf = %d, want 403", code)
		}
		if code, _ := statusOf(t, b.client(), http.MethodPost, srv.URL+"/x/y/act", nil); code != http.StatusForbidden {
			t.Errorf("client POST without csrf = %d, want 403", code)
		}
		b.do("type", chromedpSetValue(`textarea[name=comment]`, comment))
		b.clickButton("Approve")
		b.waitJS("approved", `document.querySelector('[data-status]').dataset.status === 'APPROVED'`, 5*time.Second)
		if txt := b.text(); !strings.Contains(txt, comment) {
			t.Errorf("text = %q, want the comment %q", txt, comment)
		}
		b.shoot("approved")
		for _, w := range []string{"1440", "375"} {
			if fi, err := os.Stat(filepath.Join(b.shots, "harness-approved-"+w+".png")); err != nil || fi.Size() == 0 {
				t.Errorf("screenshot at %s px: %v", w, err)
			}
		}
	})
	if pid != 0 {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("chromium %d still runs after its test ended", pid)
		}
	}
}
