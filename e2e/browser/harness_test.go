//go:build browser

// Package browser drives the web console in Debian's headless chromium with chromedp: `cdkx console` on a
// SQLite file, and the console of `cdkx server` on a private PostgreSQL (CDKX_TEST_POSTGRES_URL, as the
// e2e suite; its tests skip without it). It builds the real cdkx binary once, starts every process it
// needs on 127.0.0.1 and stops each by its PID when the test ends (chromium: SIGTERM, then SIGKILL to it
// and to every process still using its profile folder).
//
//	apt-get install -y --no-install-recommends chromium   # .ci/run does this when it is missing
//	CDKX_TEST_POSTGRES_URL=$(bash scripts/pg-up.sh /tmp/pg) go test -tags browser -count=1 -v ./e2e/browser/
//
// Screenshots of every page at 1440 and 375 px wide go to $CDKX_SCREENSHOTS (created when missing), or
// to a temporary folder of the test; they are for review, not goldens. CDKX_CHROMIUM names the browser
// (default: chromium on PATH); CDKX_BROWSER_BIN a cdkx binary to test instead of building one. As root, chromium cannot start its sandbox, so the tests pass
// --no-sandbox then, and only then.
package browser

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// cdkxBin is the cdkx binary TestMain builds.
var cdkxBin string

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	if bin := os.Getenv("CDKX_BROWSER_BIN"); bin != "" { // a cdkx built elsewhere, e.g. from another worktree
		cdkxBin = bin
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "cdkx-browser-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	cdkxBin = filepath.Join(dir, "cdkx")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-o", cdkxBin, "./cmd/cdkx")
	build.Dir = filepath.Join("..", "..") // the module root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build ./cmd/cdkx: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// Bounds of every wait: one browser action, one process start, one cdkx command.
const (
	actionTimeout  = 20 * time.Second
	startTimeout   = 30 * time.Second
	commandTimeout = 2 * time.Minute
)

// chromiumPath finds the browser: CDKX_CHROMIUM, else chromium on PATH. Without one the test is skipped,
// but fails in CI (CI=true), where .ci/run installs it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CDKX_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed: .ci/run installs it (apt-get install chromium)")
	}
	t.Skip("chromium is not installed: apt-get install -y --no-install-recommends chromium (or set CDKX_CHROMIUM)")
	return ""
}

// screenshotDir is where screenshots go: $CDKX_SCREENSHOTS/TEST, or a temporary folder of the test.
func screenshotDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if root := os.Getenv("CDKX_SCREENSHOTS"); root != "" {
		dir = filepath.Join(root, strings.ReplaceAll(t.Name(), "/", "_"))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// browser is one headless chromium process with one tab; every user of a test gets their own, so that
// their sessions (cookies) stay apart.
type browser struct {
	t     *testing.T
	name  string          // whose browser, in messages and screenshot names
	ctx   context.Context // the tab's chromedp context
	base  string          // the console's root URL, without a trailing slash
	shots string          // the screenshot folder
	pid   int
}

// newBrowser starts chromium for the user name against the console at base; it is stopped by its PID
// when the test ends.
func newBrowser(t *testing.T, name, base, shots string) *browser {
	t.Helper()
	exe := chromiumPath(t)
	profile := t.TempDir()
	var (
		mu  sync.Mutex
		cmd *exec.Cmd
	)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1440, 900),
		chromedp.DisableGPU,
		// Chromium's sandbox needs an unprivileged user: as root (CI) it refuses to start without this.
		chromedp.Flag("no-sandbox", os.Geteuid() == 0),
		// Nothing but the console: no component updates, sync, or other calls out.
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("no-pings", true),
		chromedp.ModifyCmdFunc(func(c *exec.Cmd) {
			if c.SysProcAttr == nil {
				c.SysProcAttr = &syscall.SysProcAttr{}
			}
			c.SysProcAttr.Pdeathsig = syscall.SIGKILL // chromium dies with the test binary
			mu.Lock()
			cmd = c
			mu.Unlock()
		}),
	}
	opts = append(chromedp.DefaultExecAllocatorOptions[:], opts...)
	allocCtx, allocCancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))
	b := &browser{t: t, name: name, ctx: ctx, base: strings.TrimSuffix(base, "/"), shots: shots}
	start, startCancel := context.WithTimeout(context.Background(), startTimeout)
	defer startCancel()
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(ctx) }() // starts the browser, without a deadline on its life
	select {
	case err := <-started:
		if err != nil {
			cancel()
			allocCancel()
			t.Fatalf("start %s: %v", exe, err)
		}
	case <-start.Done():
		cancel()
		allocCancel()
		t.Fatalf("%s did not start within %s", exe, startTimeout)
	}
	mu.Lock()
	if cmd != nil && cmd.Process != nil {
		b.pid = cmd.Process.Pid
	}
	mu.Unlock()
	t.Cleanup(func() {
		cancel() // closes the browser gracefully, then kills it by PID
		done := make(chan struct{})
		go func() { allocCancel(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
		}
		if b.pid > 0 && syscall.Kill(b.pid, 0) == nil {
			_ = syscall.Kill(b.pid, syscall.SIGKILL)
			t.Logf("chromium %d (%s) still ran after its context ended: killed", b.pid, name)
		}
		killProfileLeftovers(t, profile)
	})
	return b
}

// killProfileLeftovers kills, by PID, the processes that chromium started with the profile folder dir
// and that outlived it (its zygote or network service), if any.
func killProfileLeftovers(t *testing.T, dir string) {
	t.Helper()
	want := []byte("--user-data-dir=" + dir)
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for arg := range bytes.SplitSeq(cmdline, []byte{0}) {
			if bytes.Equal(arg, want) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				t.Logf("chromium leftover %d killed", pid)
				break
			}
		}
	}
}

// do runs the actions within actionTimeout and fails the test on an error.
func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, actionTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s (%s's browser): %v", what, b.name, err)
	}
}

// open navigates to path (under the console's root) and returns the HTTP status of the page.
func (b *browser) open(path string) int64 {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, actionTimeout)
	defer cancel()
	resp, err := chromedp.Run(ctx, chromedp.NavigateResponse(b.url(path)))
	if err != nil {
		b.t.Fatalf("open %s (%s's browser): %v", path, b.name, err)
	}
	if resp == nil {
		return 0
	}
	return resp.Status
}

func (b *browser) url(path string) string {
	if strings.HasPrefix(path, "http://") || strings.HasPrefix(path, "https://") {
		return path
	}
	return b.base + path
}

// eval evaluates the JavaScript expression in the page and decodes its value into T. DevTools'
// evaluation is not subject to the page's Content-Security-Policy, which forbids eval and inline script.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, actionTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("evaluate %s (%s's browser): %v", expr, b.name, err)
	}
	return v
}

// waitJS evaluates expr every 100 ms until it is true, and fails the test after timeout. (chromedp's Poll
// builds its predicate with new Function, which the console's CSP rightly refuses.)
func (b *browser) waitJS(what, expr string, timeout time.Duration) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	var last error
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("Boolean("+expr+")"))
		if err == nil && ok {
			return
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			b.t.Fatalf("%s: not within %s (%s's browser, at %s; last error %v):\n%s", what, timeout, b.name,
				b.location(), last, b.text())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// location is the page's URL ("" when it cannot be read).
func (b *browser) location() string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	return loc
}

// text is the page's visible text (document.body.innerText), for messages and checks.
func (b *browser) text() string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	s, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	return s
}

// has reports whether the CSS selector matches an element of the page.
func (b *browser) has(sel string) bool {
	b.t.Helper()
	return eval[bool](b, fmt.Sprintf(`document.querySelector(%s) !== null`, jsString(sel)))
}

// buttons returns the visible texts of the page's buttons (button elements and submit inputs).
func (b *browser) buttons() []string {
	b.t.Helper()
	return eval[[]string](b, `Array.from(document.querySelectorAll('button, input[type=submit]'))
		.map(e => (e.innerText || e.value || '').trim())`)
}

// clickButton clicks the button whose visible text is text (the first when several) and waits for
// the page it leads to.
func (b *browser) clickButton(text string) {
	b.t.Helper()
	sel := fmt.Sprintf(`Array.from(document.querySelectorAll('button, input[type=submit]')).find(e => (e.innerText || e.value || '').trim() === %s)`, jsString(text))
	if !eval[bool](b, sel+` !== undefined`) {
		b.t.Fatalf("no button %q on %s (%s's browser); buttons: %q", text, b.location(), b.name, b.buttons())
	}
	before := eval[float64](b, `performance.timeOrigin`)
	b.do("click "+text, chromedp.Evaluate[chromedp.Void](sel+`.click()`))
	b.waitJS("the page after clicking "+text, `performance.timeOrigin !== `+jsNumber(before)+` && document.readyState === "complete"`, actionTimeout)
}

// csrf returns the value of the page's first CSRF field (name="csrf"), "" when it has none.
func (b *browser) csrf() string {
	b.t.Helper()
	return eval[string](b, `(document.querySelector('input[name=csrf]') || {value: ""}).value`)
}

// fetchPOST posts the form fields from the page with fetch (so with the page's cookies, as a forged
// request would be) and returns the answer's HTTP status.
func (b *browser) fetchPOST(path string, fields url.Values) int {
	b.t.Helper()
	body, _ := json.Marshal(fields.Encode())
	return eval[int](b, fmt.Sprintf(`fetch(%s, {method: "POST", redirect: "manual", credentials: "same-origin",
		headers: {"Content-Type": "application/x-www-form-urlencoded"}, body: %s}).then(r => r.status)`,
		jsString(b.url(path)), body))
}

// cookies returns the browser's cookies for the console (HttpOnly ones too: DevTools reads them).
func (b *browser) cookies() []*network.Cookie {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, actionTimeout)
	defer cancel()
	res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{b.base + "/"}})
	if err != nil {
		b.t.Fatalf("read cookies (%s's browser): %v", b.name, err)
	}
	return res.Cookies
}

// client returns an http.Client carrying the browser's cookies, which follows no redirect.
func (b *browser) client() *http.Client {
	b.t.Helper()
	jar := &staticJar{}
	for _, c := range b.cookies() {
		jar.cookies = append(jar.cookies, &http.Cookie{Name: c.Name, Value: c.Value})
	}
	return &http.Client{Jar: jar, Timeout: actionTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

type staticJar struct{ cookies []*http.Cookie }

func (j *staticJar) SetCookies(*url.URL, []*http.Cookie) {}
func (j *staticJar) Cookies(*url.URL) []*http.Cookie     { return j.cookies }

// shoot writes full-page screenshots of the page at 1440 and 375 px wide, as NAME-1440.png and
// NAME-375.png, and puts the viewport back to 1440 px.
func (b *browser) shoot(name string) {
	b.t.Helper()
	for _, w := range []int64{1440, 375} {
		b.do(fmt.Sprintf("set the viewport to %d px", w), chromedp.EmulateViewport(w, 900))
		ctx, cancel := context.WithTimeout(b.ctx, actionTimeout)
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		cancel()
		if err != nil {
			b.t.Fatalf("screenshot %s at %d px: %v", name, w, err)
		}
		file := filepath.Join(b.shots, fmt.Sprintf("%s-%s-%d.png", b.name, name, w))
		if err := os.WriteFile(file, png, 0o644); err != nil {
			b.t.Fatal(err)
		}
		if w == 375 {
			// Readable at 375 px: nothing wider than the viewport but what scrolls inside its own box.
			if sw := eval[int](b, `document.documentElement.scrollWidth`); sw > 375+1 {
				b.t.Errorf("%s at 375 px: the page is %d px wide (scrolls sideways); wider than the viewport: %s",
					name, sw, eval[string](b, overflowingJS))
			}
		}
	}
	b.do("set the viewport back to 1440 px", chromedp.EmulateViewport(1440, 900))
	b.t.Logf("screenshots: %s", filepath.Join(b.shots, b.name+"-"+name+"-{1440,375}.png"))
}

// overflowingJS names the elements whose right edge lies past the viewport, outside any box that scrolls
// sideways itself (followed through offsetParent, as an absolutely positioned element escapes the overflow
// of an ancestor that is not positioned) (the culprits of a page wider than the screen), as "tag.class (right edge px)".
const overflowingJS = `(() => {
  const out = [];
  const scrolls = e => { for (; e; e = e.offsetParent) { const o = getComputedStyle(e).overflowX; if (o === "auto" || o === "scroll" || o === "hidden") return true; } return false; };
  for (const e of document.body.querySelectorAll("*")) {
    const r = e.getBoundingClientRect().right;
    if (r > window.innerWidth + 1 && !scrolls(e.offsetParent)) out.push(e.tagName.toLowerCase() + (e.className ? "." + e.className : "") + " (" + Math.round(r) + " px)");
  }
  return out.slice(0, 8).join(", ") || "none found";
})()`

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}

// proc is a cdkx process in the background (the console or the server), stopped by its PID when the
// test ends: SIGTERM, and SIGKILL when it still runs 15 s later.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}

	mu    sync.Mutex
	lines []string // its output, stdout and stderr as they come
}

var urlRE = regexp.MustCompile(`https?://(127\.0\.0\.1|localhost|\[::1\]):[0-9]+[^\s"'<>]*`)

// startProc starts cdkx with args and env in dir and returns it with the first URL of 127.0.0.1 it
// prints (on stdout or stderr) within startTimeout.
func startProc(t *testing.T, dir string, env []string, args ...string) (*proc, string) {
	t.Helper()
	cmd := exec.Command(cdkxBin, args...)
	cmd.Dir, cmd.Env = dir, env
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.lines = append(p.lines, line)
			p.mu.Unlock()
			if u := urlRE.FindString(line); u != "" && !sent {
				found <- u
				sent = true
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	go func() {
		_ = cmd.Wait()
		_ = pw.Close()
		close(p.done)
	}()
	t.Cleanup(p.stop)
	select {
	case u := <-found:
		return p, u
	case <-p.done:
		t.Fatalf("cdkx %s exited before printing its URL:\n%s", strings.Join(args, " "), p.output())
	case <-time.After(startTimeout):
		t.Fatalf("cdkx %s printed no URL within %s:\n%s", strings.Join(args, " "), startTimeout, p.output())
	}
	return nil, ""
}

// stop ends the process by its PID.
func (p *proc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// clientEnv is the environment of cdkx commands: the test's without its CDKX_ variables, plain output,
// and kvs.
func clientEnv(kvs ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CDKX_") {
			env = append(env, kv)
		}
	}
	return append(append(env, "CI=true", "NO_COLOR=1"), kvs...)
}

// cdkx runs a cdkx command in dir with env, within commandTimeout, fails the test unless it exits 0,
// and returns its stdout.
func cdkx(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, cdkxBin, args...)
	cmd.Dir, cmd.Env, cmd.WaitDelay = dir, env, 10*time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("cdkx %s exited %d:\n%s%s", strings.Join(args, " "), ee.ExitCode(), stdout.String(), stderr.String())
		}
		t.Fatalf("cdkx %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// recorded is the one JSON line `cdkx deploy --json --propose` prints for a one-stack app.
type recorded struct {
	ID     string `json:"id"`
	Stack  string `json:"stack"`
	Status string `json:"status"`
}

// propose runs `cdkx deploy --app APP --propose --json` and returns the recorded proposal.
func propose(t *testing.T, dir string, env []string, app, message string) recorded {
	t.Helper()
	out := cdkx(t, dir, env, "deploy", "--app", app, "--propose", "--message", message, "--json")
	var r recorded
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &r); err != nil || r.ID == "" {
		t.Fatalf("cdkx deploy --propose --json printed %q: %v", out, err)
	}
	return r
}

// writeApp writes dir/cdkx.out, an assembly of one stack "App" whose Cdkx::Core::Data resources carry
// the given inputs (no provider server needed), and returns its path.
func writeApp(t *testing.T, dir string, inputs map[string]any) string {
	t.Helper()
	out := filepath.Join(dir, "cdkx.out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	resources := map[string]any{}
	for id, in := range inputs {
		resources[id] = map[string]any{"type": "Cdkx::Core::Data", "provider": "cdkx",
			"properties": map[string]any{"input": in}, "metadata": map[string]any{"cdkx:path": "App/" + id}}
	}
	files := map[string]any{
		"manifest.json": map[string]any{"version": "1.0.0", "artifacts": map[string]any{
			"App": map[string]any{"type": "cdkx:stack", "properties": map[string]any{"templateFile": "App.json"}, "displayName": "App"}}},
		"App.json": map[string]any{"resources": resources},
	}
	for name, v := range files {
		data, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// statusOf sends method to rawURL with the client (form, when not nil, as its body) and returns the
// answer's status code and headers.
func statusOf(t *testing.T, c *http.Client, method, rawURL string, form url.Values) (int, http.Header) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), actionTimeout)
	defer cancel()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, rawURL, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, rawURL, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, resp.Header
}

// status is the deployment status the page shows (its element with data-status), "" when none.
func (b *browser) status() string {
	b.t.Helper()
	return eval[string](b, `(document.querySelector('[data-status]') || {dataset: {}}).dataset.status || ""`)
}

// chromedpSetValue types v into the first element that matches the CSS selector, key by key.
func chromedpSetValue(sel, v string) chromedp.Action[chromedp.Void] {
	return chromedp.SendKeys(chromedp.CSS(sel), v)
}

// evalVoid evaluates the expression for its effect.
func evalVoid(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](expr)
}

// jsNumber writes f as a JavaScript number literal.
func jsNumber(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
