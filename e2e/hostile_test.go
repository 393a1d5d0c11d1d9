//go:build e2e

package e2e

// The real cdkx binary against a hostile PowerDNS: a stand-in in front of the real server that forwards
// what it is not told to spoil and answers the rest as an attacker or a broken proxy would. Each case
// checks what cdkx does (exit code, error, time taken, peak memory), that nothing leaked (the stand-in
// on another port records every request; none may arrive), and that nothing is orphaned (a zone the
// API made is recorded in state once, never created twice, never left outside state).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// hostileReq is what a stand-in received of one request.
type hostileReq struct {
	Method, Host, Path string
	Header             http.Header
	Body               string
}

// hostileFront stands in front of the real PowerDNS.
type hostileFront struct {
	t     *testing.T
	front *httptest.Server // the URL cdkx is given
	other *httptest.Server // another port of the same address: must receive nothing
	pdns  *httputil.ReverseProxy
	// spoil answers a request itself (true) or leaves it to PowerDNS (false); body is the request's.
	spoil func(f *hostileFront, w http.ResponseWriter, r *http.Request, body []byte) bool

	mu       sync.Mutex
	got      []hostileReq
	otherGot []hostileReq
}

func newHostileFront(t *testing.T, p pdns, spoil func(f *hostileFront, w http.ResponseWriter, r *http.Request, body []byte) bool) *hostileFront {
	t.Helper()
	target, err := url.Parse(p.apiURL)
	if err != nil {
		t.Fatal(err)
	}
	f := &hostileFront{t: t, pdns: httputil.NewSingleHostReverseProxy(target), spoil: spoil}
	record := func(list *[]hostileReq, r *http.Request) []byte {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		f.mu.Lock()
		*list = append(*list, hostileReq{Method: r.Method, Host: r.Host, Path: r.URL.Path, Header: r.Header.Clone(), Body: string(body)})
		f.mu.Unlock()
		return body
	}
	f.other = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		record(&f.otherGot, r)
		_, _ = io.WriteString(w, `{}`)
	}))
	f.front = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := record(&f.got, r)
		if f.spoil != nil && f.spoil(f, w, r, body) {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		f.pdns.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		f.front.CloseClientConnections()
		f.front.Close()
		f.other.Close()
	})
	return f
}

// forward sends r (with body) to PowerDNS and returns its answer's status, or 0 when it failed.
func (f *hostileFront) forward(r *http.Request, body []byte) int {
	rec := httptest.NewRecorder()
	r2 := r.Clone(context.Background())
	r2.Body = io.NopCloser(bytes.NewReader(body))
	f.pdns.ServeHTTP(rec, r2)
	return rec.Code
}

func (f *hostileFront) requests() []hostileReq {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]hostileReq(nil), f.got...)
}

// count is how many requests of method to a path ending in suffix the front received.
func (f *hostileFront) count(method, suffix string) int {
	n := 0
	for _, r := range f.requests() {
		if r.Method == method && strings.HasSuffix(r.Path, suffix) {
			n++
		}
	}
	return n
}

// hostileRun is how one cdkx process ended.
type hostileRun struct {
	code           int
	stdout, stderr string
	took           time.Duration
	maxRSS         int64 // bytes
}

func (r hostileRun) output() string { return r.stdout + r.stderr }

// hostileStart starts cdkx; wait returns how it ended. The process is killed if it runs for 3 minutes.
func hostileStart(t *testing.T, bin, dir string, env []string, args ...string) (cmd *exec.Cmd, wait func() hostileRun) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	cmd = exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env, cmd.WaitDelay = dir, env, 10*time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	var once sync.Once
	var res hostileRun
	wait = func() hostileRun {
		once.Do(func() {
			defer cancel()
			err := cmd.Wait()
			res = hostileRun{took: time.Since(start), stdout: stdout.String(), stderr: stderr.String()}
			var ee *exec.ExitError
			switch {
			case errors.As(err, &ee):
				res.code = ee.ExitCode()
			case err != nil:
				res.code = -1
			}
			if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
				res.maxRSS = ru.Maxrss << 10 // KiB on Linux
			}
		})
		return res
	}
	t.Cleanup(func() { cancel(); wait() })
	return cmd, wait
}

// hostileEnv is the environment of cdkx in these tests: plain output, PDNS_API_URL set to apiURL, and
// extra variables.
func hostileEnv(p pdns, apiURL string, extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CDKX_") && !strings.HasPrefix(kv, "PDNS_") {
			env = append(env, kv)
		}
	}
	env = append(env, "CI=true", "NO_COLOR=1", "PDNS_API_URL="+apiURL, "PDNS_API_KEY="+p.apiKey, "PDNS_SERVER_ID="+p.serverID)
	return append(env, extra...)
}

// hostileAssembly writes an app of one zone and a record set in it into dir/cdkx.out.
func hostileAssembly(t *testing.T, dir, zone string) {
	t.Helper()
	out := filepath.Join(dir, "cdkx.out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := `{"version": "1.0.0", "artifacts": {"Dns": {"type": "cdkx:stack", "properties": {"templateFile": "Dns.json"}}}}`
	template := fmt.Sprintf(`{"resources": {
  "Zone": {"type": "PowerDNS::DNS::Zone", "provider": "powerdns",
    "properties": {"name": %[1]q, "kind": "Native", "nameservers": ["ns1.%[1]s"]}},
  "Www": {"type": "PowerDNS::DNS::RecordSet", "provider": "powerdns",
    "properties": {"zoneId": {"ref": "Zone", "attr": "zoneId"}, "name": "www.%[1]s", "type": "A", "ttl": 300, "records": ["127.0.0.10"]}}
}}`, zone)
	for name, data := range map[string]string{"manifest.json": manifest, "Dns.json": template} {
		if err := os.WriteFile(filepath.Join(out, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// hugeBody streams n bytes of a JSON string: an answer larger than any cap; announced sets its
// Content-Length.
func hugeBody(w http.ResponseWriter, status int, n int, announced bool) {
	w.Header().Set("Content-Type", "application/json")
	if announced {
		w.Header().Set("Content-Length", fmt.Sprint(n/(64<<10)*(64<<10)+len(`{"id":""}`)))
	}
	w.WriteHeader(status)
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	_, _ = io.WriteString(w, `{"id":"`)
	for sent := 0; sent < n; sent += len(chunk) {
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
	_, _ = io.WriteString(w, `"}`)
}

// dripBody sends the start of a JSON answer and then one byte every 2 s until the client goes away.
func dripBody(w http.ResponseWriter, r *http.Request, status int) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, `{"id":"`)
	w.(http.Flusher).Flush()
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
			if _, err := io.WriteString(w, "x"); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	}
}

const (
	zonesPath  = "/zones"
	serverPath = "/servers/localhost"
)

// isCreate reports whether r is the zone create.
func isCreate(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, zonesPath)
}

func TestHostileProvider(t *testing.T) {
	p := pdns{apiURL: os.Getenv("PDNS_API_URL"), apiKey: envOr("PDNS_API_KEY", "e2e-key"), serverID: envOr("PDNS_SERVER_ID", "localhost")}
	if p.apiURL == "" {
		t.Skip("PDNS_API_URL is unset: start PowerDNS with scripts/pdns-up.sh DIR")
	}
	if err := p.ping(); err != nil {
		t.Fatalf("PowerDNS at %s does not answer: %v", p.apiURL, err)
	}
	bin := svcBuild(t)
	const urlPass = "url-pass-7f3a"

	type outcome int
	const (
		refused  outcome = iota // exit wantCode, no zone made
		recorded                // the zone the API made is in state once; the deploy completes
	)
	for _, tc := range []struct {
		name  string
		spoil func(f *hostileFront, w http.ResponseWriter, r *http.Request, body []byte) bool
		// env are extra variables; userInURL puts credentials into PDNS_API_URL.
		env       []string
		userInURL bool
		want      outcome
		wantCode  int // of a refused deploy: 1 before any change (preflight), 4 when a step failed
		wantErr   []string
		within    time.Duration
	}{{
		name: "redirect to another port",
		spoil: func(f *hostileFront, w http.ResponseWriter, r *http.Request, _ []byte) bool {
			http.Redirect(w, r, f.other.URL+r.URL.Path, http.StatusTemporaryRedirect)
			return true
		},
		want: refused, wantCode: 1, wantErr: []string{"another scheme, host or port than PDNS_API_URL", "check PDNS_API_URL"}, within: 30 * time.Second,
	}, {
		name: "redirect to another host",
		spoil: func(f *hostileFront, w http.ResponseWriter, r *http.Request, _ []byte) bool {
			http.Redirect(w, r, strings.Replace(f.other.URL, "127.0.0.1", "localhost", 1)+r.URL.Path, http.StatusTemporaryRedirect)
			return true
		},
		want: refused, wantCode: 1, wantErr: []string{"redirected to http://localhost:", "check PDNS_API_URL"}, within: 30 * time.Second,
	}, {
		name: "redirect loop",
		spoil: func(_ *hostileFront, w http.ResponseWriter, r *http.Request, _ []byte) bool {
			http.Redirect(w, r, r.URL.Path, http.StatusTemporaryRedirect)
			return true
		},
		want: refused, wantCode: 1, wantErr: []string{"redirect loop", "check PDNS_API_URL"}, within: 30 * time.Second,
	}, {
		name: "huge answer to the credentials check, announced",
		spoil: func(_ *hostileFront, w http.ResponseWriter, r *http.Request, _ []byte) bool {
			if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, serverPath) {
				hugeBody(w, http.StatusOK, 100<<20, true)
				return true
			}
			return false
		},
		want: refused, wantCode: 1, wantErr: []string{"larger than the 32 MiB cap on response bodies"}, within: 60 * time.Second,
	}, {
		name: "huge answer to the create",
		spoil: func(f *hostileFront, w http.ResponseWriter, r *http.Request, body []byte) bool {
			if isCreate(r) {
				hugeBody(w, f.forward(r, body), 100<<20, false)
				return true
			}
			return false
		},
		want: recorded, within: 60 * time.Second,
	}, {
		name: "answer to the create drips",
		spoil: func(f *hostileFront, w http.ResponseWriter, r *http.Request, body []byte) bool {
			if isCreate(r) {
				dripBody(w, r, f.forward(r, body))
				return true
			}
			return false
		},
		env:  []string{"CDKX_BODY_TIMEOUT_POWERDNS=3s"},
		want: recorded, within: 60 * time.Second,
	}, {
		name: "late answer to the create",
		spoil: func(f *hostileFront, _ http.ResponseWriter, r *http.Request, body []byte) bool {
			if isCreate(r) {
				f.forward(r, body)
				<-r.Context().Done() // made, but the answer never comes before the client gives up
				return true
			}
			return false
		},
		env:  []string{"CDKX_RESPONSE_TIMEOUT_POWERDNS=2s"},
		want: recorded, within: 60 * time.Second,
	}, {
		name: "invalid JSON answer to the create",
		spoil: func(f *hostileFront, w http.ResponseWriter, r *http.Request, body []byte) bool {
			if isCreate(r) {
				w.WriteHeader(f.forward(r, body))
				_, _ = io.WriteString(w, `{"id": "x", nope}`)
				return true
			}
			return false
		},
		want: recorded, within: 60 * time.Second,
	}, {
		name: "credentials in the URL, 4xx answer",
		spoil: func(_ *hostileFront, w http.ResponseWriter, r *http.Request, _ []byte) bool {
			if isCreate(r) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnprocessableEntity)
				_, pass, _ := r.BasicAuth() // the URL's credentials, quoted back as a hostile answer would
				_, _ = fmt.Fprintf(w, `{"error": "refused %s for password %s"}`, r.URL.String(), pass)
				return true
			}
			return false
		},
		userInURL: true,
		want:      refused, wantCode: 4, wantErr: []string{"422", "for password REDACTED"}, within: 30 * time.Second,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			zone := "hostile-" + strings.NewReplacer(" ", "-", ",", "").Replace(tc.name) + ".test."
			if ok, _ := p.zoneExists(zone); ok {
				if err := p.deleteZone(zone); err != nil {
					t.Fatal(err)
				}
			}
			t.Cleanup(func() {
				if ok, _ := p.zoneExists(zone); ok {
					_ = p.deleteZone(zone)
				}
			})
			f := newHostileFront(t, p, tc.spoil)
			apiURL := f.front.URL
			if tc.userInURL {
				apiURL = "http://proxyuser:" + urlPass + "@" + strings.TrimPrefix(f.front.URL, "http://")
			}
			dir := t.TempDir()
			hostileAssembly(t, dir, zone)
			env := hostileEnv(p, apiURL, tc.env...)

			_, wait := hostileStart(t, bin, dir, env, "deploy", "--json")
			r := wait()
			t.Logf("cdkx deploy: exit %d in %s, peak RSS %d MiB", r.code, r.took.Round(time.Millisecond), r.maxRSS>>20)
			t.Cleanup(func() {
				if t.Failed() {
					for _, req := range f.requests() {
						t.Logf("the front received %s %s", req.Method, req.Path)
					}
				}
			})
			if r.took > tc.within {
				t.Errorf("the deploy took %s, want it within %s", r.took.Round(time.Millisecond), tc.within)
			}
			if r.maxRSS > 256<<20 {
				t.Errorf("the deploy peaked at %d MiB RSS, want under 256 MiB", r.maxRSS>>20)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(r.output(), want) {
					t.Errorf("output lacks %q:\n%s", want, r.output())
				}
			}

			// Nothing leaked: the other port received nothing; neither the API key nor the URL's
			// password is in the output or the state file.
			f.mu.Lock()
			if len(f.otherGot) > 0 {
				t.Errorf("the other port received %d requests, first %s %s with headers %v", len(f.otherGot),
					f.otherGot[0].Method, f.otherGot[0].Path, f.otherGot[0].Header)
			}
			f.mu.Unlock()
			stateFiles, _ := filepath.Glob(filepath.Join(dir, ".cdkx", "state.db*"))
			var stateBytes int64
			for _, secret := range []string{p.apiKey, urlPass} {
				if strings.Contains(r.output(), secret) {
					t.Errorf("the output holds the secret %q:\n%s", secret, r.output())
				}
				for _, sf := range stateFiles {
					b, err := os.ReadFile(sf)
					if err != nil {
						t.Fatal(err)
					}
					if secret == p.apiKey {
						stateBytes += int64(len(b))
					}
					if bytes.Contains(b, []byte(secret)) {
						t.Errorf("%s holds the secret %q", filepath.Base(sf), secret)
					}
				}
			}
			if stateBytes > 4<<20 {
				t.Errorf("the state files take %d bytes, want under 4 MiB", stateBytes)
			}

			exists, err := p.zoneExists(zone)
			if err != nil {
				t.Fatal(err)
			}
			switch tc.want {
			case refused:
				if r.code != tc.wantCode {
					t.Errorf("the deploy exited %d, want %d:\n%s", r.code, tc.wantCode, r.output())
				}
				if exists {
					t.Errorf("zone %s exists after a refused deploy", zone)
				}
			case recorded:
				if r.code != 0 {
					t.Fatalf("the deploy exited %d, want 0 (the zone located and recorded):\n%s", r.code, r.output())
				}
				if n := f.count(http.MethodPost, zonesPath); n != 1 {
					t.Errorf("the front received %d zone creates, want 1", n)
				}
				if !exists {
					t.Errorf("zone %s does not exist", zone)
				}
				// The zone is in state: nothing to do on a fresh plan through the real server.
				good := hostileEnv(p, p.apiURL)
				_, dwait := hostileStart(t, bin, dir, good, "diff", "--detailed-exitcode")
				if d := dwait(); d.code != 0 {
					t.Errorf("cdkx diff --detailed-exitcode exited %d after the deploy, want 0:\n%s", d.code, d.output())
				}
				_, xwait := hostileStart(t, bin, dir, good, "destroy", "--force")
				if x := xwait(); x.code != 0 {
					t.Errorf("cdkx destroy --force exited %d:\n%s", x.code, x.output())
				}
				if ok, _ := p.zoneExists(zone); ok {
					t.Errorf("zone %s still exists after destroy", zone)
				}
			}
		})
	}
}

// TestHostileProviderInterrupt: SIGINT while the answer to a create drips (no body deadline close by)
// ends the run within seconds with exit 130 and no deployment left RUNNING; the next deploy, through the
// real server, finds the zone the API made and records it instead of creating it again.
func TestHostileProviderInterrupt(t *testing.T) {
	p := pdns{apiURL: os.Getenv("PDNS_API_URL"), apiKey: envOr("PDNS_API_KEY", "e2e-key"), serverID: envOr("PDNS_SERVER_ID", "localhost")}
	if p.apiURL == "" {
		t.Skip("PDNS_API_URL is unset: start PowerDNS with scripts/pdns-up.sh DIR")
	}
	bin := svcBuild(t)
	zone := "hostile-interrupt.test."
	if ok, _ := p.zoneExists(zone); ok {
		if err := p.deleteZone(zone); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if ok, _ := p.zoneExists(zone); ok {
			_ = p.deleteZone(zone)
		}
	})
	dripping := make(chan struct{})
	var once sync.Once
	f := newHostileFront(t, p, func(f *hostileFront, w http.ResponseWriter, r *http.Request, body []byte) bool {
		if !isCreate(r) {
			return false
		}
		status := f.forward(r, body)
		once.Do(func() { close(dripping) })
		dripBody(w, r, status)
		return true
	})
	dir := t.TempDir()
	hostileAssembly(t, dir, zone)
	cmd, wait := hostileStart(t, bin, dir, hostileEnv(p, f.front.URL), "deploy")
	select {
	case <-dripping:
	case <-time.After(time.Minute):
		t.Fatalf("the create never reached the front:\n%s", wait().output())
	}
	time.Sleep(500 * time.Millisecond) // inside the dripping body read
	sent := time.Now()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	r := wait()
	after := time.Since(sent)
	t.Logf("cdkx deploy: exit %d, %s after SIGINT", r.code, after.Round(time.Millisecond))
	if r.code != 130 {
		t.Errorf("the deploy exited %d after SIGINT, want 130:\n%s", r.code, r.output())
	}
	if after > 15*time.Second {
		t.Errorf("the deploy ended %s after SIGINT, want within 15 s (without the stall cut it was 59.5 s)", after.Round(time.Millisecond))
	}

	good := hostileEnv(p, p.apiURL)
	_, hwait := hostileStart(t, bin, dir, good, "history")
	h := hwait()
	if strings.Contains(h.stdout, "RUNNING") {
		t.Errorf("a deployment is still RUNNING after the interrupted run:\n%s", h.output())
	}
	_, dwait := hostileStart(t, bin, dir, good, "deploy")
	d := dwait()
	if d.code != 0 {
		t.Fatalf("the next deploy exited %d:\n%s", d.code, d.output())
	}
	if n := f.count(http.MethodPost, zonesPath); n != 1 {
		t.Errorf("the front received %d zone creates, want 1", n)
	}
	_, xwait := hostileStart(t, bin, dir, good, "destroy", "--force")
	if x := xwait(); x.code != 0 {
		t.Errorf("cdkx destroy --force exited %d:\n%s", x.code, x.output())
	}
}
