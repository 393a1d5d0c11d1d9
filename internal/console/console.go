package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"errors"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// The headers of every answer. The policy allows scripts, styles and connections from the console's own
// origin only: no inline script or style, no frames.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"

// cookieName is the session cookie's name.
const cookieName = "cdkx_session"

type console struct {
	src   Source
	opts  Options
	mux   *http.ServeMux
	pages map[string]*template.Template

	sessions SessionStore
	logins   *limiter
}

func newConsole(src Source, opts Options) *console {
	if opts.SessionLifetime <= 0 {
		opts.SessionLifetime = 12 * time.Hour
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = 10000
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.PollEvery <= 0 {
		opts.PollEvery = 500 * time.Millisecond
	}
	if opts.LoginAttempts <= 0 {
		opts.LoginAttempts = 10
	}
	opts.BasePath = strings.TrimRight(opts.BasePath, "/")
	c := &console{src: src, opts: opts, mux: http.NewServeMux(), sessions: opts.Sessions,
		logins: &limiter{max: opts.LoginAttempts, per: time.Minute}}
	if c.sessions == nil {
		c.sessions = NewMemorySessions(opts.MaxSessions)
	}
	c.pages = parsePages()
	static, _ := fs.Sub(staticFS, "static")
	files := http.StripPrefix("/static/", staticHandler(http.FileServerFS(static)))
	for _, name := range []string{"console.css", "console.js"} {
		c.mux.Handle("GET /static/"+name, files)
	}
	c.mux.HandleFunc("GET /login", c.loginPage)
	c.mux.HandleFunc("POST /login", c.login)
	c.mux.HandleFunc("POST /logout", c.authed(c.logout))
	c.mux.HandleFunc("GET /{$}", c.authed(c.home))
	c.mux.HandleFunc("GET /{org}/{project}/stacks", c.scoped(c.stacksPage))
	c.mux.HandleFunc("GET /{org}/{project}/stacks/{stack}", c.scoped(c.stackPage))
	c.mux.HandleFunc("GET /{org}/{project}/deployments/{id}", c.scoped(c.deploymentPage))
	c.mux.HandleFunc("GET /{org}/{project}/deployments/{id}/events", c.scoped(c.eventsStream))
	c.mux.HandleFunc("POST /{org}/{project}/deployments/{id}/{action}", c.scoped(c.deploymentAction))
	c.mux.HandleFunc("GET /{org}/{project}/compare", c.scoped(c.comparePage))
	c.mux.HandleFunc("GET /{org}/{project}/locks", c.scoped(c.locksPage))
	c.mux.HandleFunc("GET /{org}/{project}/locks/unlock", c.scoped(c.unlockConfirm))
	c.mux.HandleFunc("POST /{org}/{project}/locks/unlock", c.scoped(c.unlock))
	c.mux.HandleFunc("GET /{org}/{project}/audit", c.scoped(c.auditPage))
	return c
}

// staticHandler serves the embedded CSS and script; they may be cached, pages may not.
func staticHandler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		h.ServeHTTP(w, r)
	})
}

func (c *console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	if c.opts.BasePath != "" {
		p, ok := strings.CutPrefix(r.URL.Path, c.opts.BasePath)
		if !ok || (p != "" && !strings.HasPrefix(p, "/")) {
			http.NotFound(w, r)
			return
		}
		r2 := new(http.Request)
		*r2 = *r
		u := *r.URL
		u.Path = p
		if u.Path == "" {
			u.Path = "/"
		}
		u.RawPath = ""
		r2.URL = &u
		r = r2
	}
	c.mux.ServeHTTP(w, r)
}

// path returns the console's URL of p (which starts with "/"), under the base path.
func (c *console) path(p string) string { return c.opts.BasePath + p }

// --- sessions ---

// session is one logged-in browser: its caller, its CSRF token and when it ends.
type session struct {
	id      string
	caller  Caller
	csrf    string
	created time.Time
	expires time.Time
}

// limiter bounds failed logins: at most max in any window of per, across the process. mu guards fails.
type limiter struct {
	mu    sync.Mutex
	fails []time.Time
	max   int
	per   time.Duration
}

func (l *limiter) prune(now time.Time) {
	l.fails = slices.DeleteFunc(l.fails, func(t time.Time) bool { return now.Sub(t) >= l.per })
}

// allow reports whether a login attempt may be tried now.
func (l *limiter) allow(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.prune(now)
	return len(l.fails) < l.max
}

func (l *limiter) fail(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.prune(now)
	l.fails = append(l.fails, now)
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b)
}

// secure reports whether the session cookie must be Secure for r.
func (c *console) secure(r *http.Request) bool {
	return c.opts.SecureCookies || r.TLS != nil ||
		(c.opts.TrustProxy && strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https"))
}

func (c *console) setCookie(w http.ResponseWriter, r *http.Request, value string, maxAge int) {
	path := c.opts.BasePath
	if path == "" {
		path = "/"
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: value, Path: path, MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: c.secure(r)})
}

// current returns the request's session: nil when it has none (or its session ended), an error when the
// session store failed.
func (c *console) current(r *http.Request) (*session, error) {
	ck, err := r.Cookie(cookieName)
	if err != nil || ck.Value == "" {
		return nil, nil
	}
	ss, err := c.sessions.Get(r.Context(), ck.Value, c.opts.Now())
	if ss == nil || err != nil {
		return nil, err
	}
	return &session{id: ss.ID, caller: ss.Caller, csrf: ss.CSRF, created: ss.Created, expires: ss.Expires}, nil
}

// endSession removes session id from the store; a failure only means that it ends at its expiry instead.
func (c *console) endSession(ctx context.Context, id string) {
	_ = c.sessions.Delete(context.WithoutCancel(ctx), id)
}

type ctxKey struct{}

func sessionOf(ctx context.Context) *session { s, _ := ctx.Value(ctxKey{}).(*session); return s }

// authed wraps a handler that needs a session: without one, GETs go to the login page and POSTs get 403.
// Every POST must carry the session's CSRF token and come from a caller that may write.
func (c *console) authed(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, err := c.current(r)
		if err != nil {
			c.fail(w, r, nil, http.StatusServiceUnavailable, "The console cannot read its sessions now; try again in a moment.")
			return
		}
		if s == nil {
			if r.Method == http.MethodGet {
				http.Redirect(w, r, c.path("/login")+"?next="+url.QueryEscape(c.opts.BasePath+r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			c.fail(w, r, nil, http.StatusForbidden, "Your session has ended: log in again.")
			return
		}
		if r.Method == http.MethodPost {
			if !c.sameOrigin(r) || subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(s.csrf)) != 1 {
				c.fail(w, r, s, http.StatusForbidden, "The form was refused (its CSRF token is missing or wrong): reload the page and try again.")
				return
			}
			if s.caller.ReadOnly && r.URL.Path != "/logout" {
				c.fail(w, r, s, http.StatusForbidden, "This token is read-only: it cannot change anything.")
				return
			}
		}
		h(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, s)))
	}
}

// sameOrigin refuses a POST whose Origin header names another host (when the browser sends one).
func (c *console) sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" || o == "null" {
		return o == ""
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

// scoped wraps an authed handler of a scope: the caller must see {org}/{project}, else 404.
func (c *console) scoped(h func(w http.ResponseWriter, r *http.Request, s *session, sc Scope)) http.HandlerFunc {
	return c.authed(func(w http.ResponseWriter, r *http.Request) {
		s := sessionOf(r.Context())
		sc := Scope{Org: r.PathValue("org"), Project: r.PathValue("project")}
		if s.caller.Orgs != nil && !slices.Contains(s.caller.Orgs, sc.Org) {
			c.fail(w, r, s, http.StatusNotFound, "No such project.")
			return
		}
		scopes, err := c.src.Scopes(r.Context(), s.caller)
		if err != nil {
			c.sourceError(w, r, s, err)
			return
		}
		if !slices.Contains(scopes, sc) {
			c.fail(w, r, s, http.StatusNotFound, "No such project.")
			return
		}
		h(w, r, s, sc)
	})
}

// --- login ---

func (c *console) loginPage(w http.ResponseWriter, r *http.Request) {
	if c.opts.URLLogin {
		if tok := r.URL.Query().Get("token"); tok != "" {
			c.tryLogin(w, r, tok, r.URL.Query().Get("next"))
			return
		}
	}
	c.render(w, r, http.StatusOK, "login", nil, map[string]any{"Title": "Log in", "Next": safeNext(r.URL.Query().Get("next"), c.opts.BasePath)})
}

func (c *console) login(w http.ResponseWriter, r *http.Request) {
	if !c.sameOrigin(r) {
		c.fail(w, r, nil, http.StatusForbidden, "The form was refused: it came from another site.")
		return
	}
	c.tryLogin(w, r, r.PostFormValue("token"), r.PostFormValue("next"))
}

func (c *console) tryLogin(w http.ResponseWriter, r *http.Request, token, next string) {
	now := c.opts.Now()
	if !c.logins.allow(now) {
		c.render(w, r, http.StatusTooManyRequests, "login", nil, map[string]any{"Title": "Log in", "Error": "Too many failed logins: wait a minute and try again."})
		return
	}
	caller, err := c.src.Authenticate(r.Context(), token)
	if err != nil || token == "" {
		c.logins.fail(now)
		status := http.StatusUnauthorized
		if err != nil && !errors.Is(err, ErrUnauthorized) {
			status = http.StatusInternalServerError
		}
		c.render(w, r, status, "login", nil, map[string]any{"Title": "Log in", "Error": "Login failed: the token was not accepted."})
		return
	}
	if ck, err := r.Cookie(cookieName); err == nil && ck.Value != "" { // a new session on every login: no fixation
		c.endSession(r.Context(), ck.Value)
	}
	s := Session{ID: randomToken(), Caller: caller, CSRF: randomToken(), Created: now, Expires: now.Add(c.opts.SessionLifetime)}
	if err := c.sessions.Put(r.Context(), s); err != nil {
		c.render(w, r, http.StatusServiceUnavailable, "login", nil, map[string]any{"Title": "Log in", "Error": "The console cannot store your session now; try again in a moment."})
		return
	}
	c.setCookie(w, r, s.ID, int(c.opts.SessionLifetime/time.Second))
	to := safeNext(next, c.opts.BasePath)
	if to == "" {
		to = c.path("/")
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// safeNext returns next when it is a path of the console (not another site), else "".
func safeNext(next, base string) string {
	if !strings.HasPrefix(next, base+"/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return ""
	}
	return next
}

func (c *console) logout(w http.ResponseWriter, r *http.Request) {
	if s := sessionOf(r.Context()); s != nil {
		c.endSession(r.Context(), s.id)
	}
	c.setCookie(w, r, "", -1)
	http.Redirect(w, r, c.path("/login"), http.StatusSeeOther)
}

func (c *console) home(w http.ResponseWriter, r *http.Request) {
	s := sessionOf(r.Context())
	scopes, err := c.src.Scopes(r.Context(), s.caller)
	if err != nil {
		c.sourceError(w, r, s, err)
		return
	}
	if len(scopes) == 1 {
		http.Redirect(w, r, c.path("/"+url.PathEscape(scopes[0].Org)+"/"+url.PathEscape(scopes[0].Project)+"/stacks"), http.StatusSeeOther)
		return
	}
	c.render(w, r, http.StatusOK, "home", s, map[string]any{"Title": "Projects", "Scopes": scopes})
}

// --- errors ---

// fail answers with the error page.
func (c *console) fail(w http.ResponseWriter, r *http.Request, s *session, status int, msg string) {
	c.render(w, r, status, "error", s, map[string]any{"Title": http.StatusText(status), "Status": status, "StatusText": http.StatusText(status), "Message": msg})
}

// sourceError maps a Source's error to an answer (see the error values).
func (c *console) sourceError(w http.ResponseWriter, r *http.Request, s *session, err error) {
	var fe *state.ForbiddenError
	var te *state.TransitionError
	switch {
	case errors.Is(err, ErrUnauthorized):
		if s != nil {
			c.endSession(r.Context(), s.id)
		}
		if r.Method == http.MethodGet {
			http.Redirect(w, r, c.path("/login"), http.StatusSeeOther)
			return
		}
		c.fail(w, r, nil, http.StatusForbidden, "Your session has ended: log in again.")
	case errors.As(err, &fe):
		c.fail(w, r, s, http.StatusForbidden, fe.Error())
	case errors.Is(err, ErrForbidden):
		c.fail(w, r, s, http.StatusForbidden, "You may not do this.")
	case errors.Is(err, ErrNotFound), errors.Is(err, state.ErrNotFound):
		c.fail(w, r, s, http.StatusNotFound, "Not found.")
	case errors.As(err, &te):
		c.fail(w, r, s, http.StatusConflict, te.Error())
	case errors.Is(err, context.Canceled):
		c.fail(w, r, s, http.StatusServiceUnavailable, "The request was cancelled.")
	default:
		c.fail(w, r, s, http.StatusInternalServerError, "Something went wrong on the server; its log may say more.")
	}
}
