//go:build e2e && linux

package pulumicli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const (
	baseProject = "cdkx-pulumicli-base" // a stack with outputs and no resources, referenced by the app
	appProject  = "cdkx-pulumicli-app"  // stackRefs StackReferences to the base stack
	stackRefs   = 150
	// cmdTimeout bounds each Pulumi CLI command (the slowest, an update of 151 resources, takes seconds).
	cmdTimeout = 3 * time.Minute
	// passphrase encrypts the file backend's secrets (the service encrypts with its own key).
	passphrase = "cdkx-pulumicli-passphrase"
	// serviceConflict is what Pulumi Cloud answers when a stack is busy; the Pulumi CLI prints it as the
	// loser of two concurrent updates (ConflictingUpdateError, backend/httpstate/backend.go) and its
	// automation API recognises it (IsConcurrentUpdateError, sdk/go/auto/errors.go).
	serviceConflict = "[409] Conflict: Another update is currently in progress."
	// conflictHelp is the CLI's own addition to a 409 on starting an update (backenderr.ConflictingUpdateError).
	conflictHelp = "https://www.pulumi.com/docs/support/troubleshooting/common-issues/update-conflicts/"
	// fileConflict is the file backend's message for a locked stack (backend/diy/lock.go).
	fileConflict = "the stack is currently locked by 1 lock(s)"
)

// backend is one of the two backends the script runs against.
type backend struct {
	name  string
	login string // the URL of `pulumi login`
	token string // PULUMI_ACCESS_TOKEN (the service)
	file  bool   // Pulumi's file backend: the control
}

// TestPulumiCLI runs the same script of Pulumi CLI commands against Pulumi's file backend (the control) and
// against a private `cdkx server`, each in a subtest, then compares each command's exit code and the key
// parts of its output between the two. Each step also checks what it must show on its own (stack names,
// outputs, secrets, resource counts), so that a failure common to both backends is a failure too.
func TestPulumiCLI(t *testing.T) {
	postgresURL(t) // skip (or fail under CI) before the long build
	becomeSubreaper(t)
	t.Cleanup(func() {
		reapOrphans()
		t.Logf("reaped %d processes left running by finished commands", orphans)
	})
	bins, err := pulumiBinaries()
	if err != nil {
		t.Fatal(err)
	}
	cdkx := buildCdkx(t)
	srv, token := startServer(t, cdkx)

	backends := []backend{
		{name: "file", login: "file://" + t.TempDir(), file: true},
		{name: "service", login: srv.url, token: token},
	}
	sessions := map[string]*session{}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			s := newSession(t, bins, b)
			sessions[b.name] = s
			s.script()
			s.summary()
		})
	}
	t.Run("server log", func(t *testing.T) {
		// The CLI retries 5xx answers and may succeed in the end, hiding them: none may occur, nor a 405 (a
		// route the server lacks).
		var bad []string
		for _, line := range strings.Split(srv.log(), "\n") {
			var rec struct {
				Method, Path string
				Status       int
			}
			if json.Unmarshal([]byte(line), &rec) == nil && (rec.Status >= 500 || rec.Status == 405) {
				bad = append(bad, line)
			}
		}
		if len(bad) > 0 {
			t.Errorf("%d requests answered 5xx or 405:\n%s", len(bad), strings.Join(bad, "\n"))
		}
	})
	t.Run("compare", func(t *testing.T) {
		file, svc := sessions["file"], sessions["service"]
		if file == nil || svc == nil {
			t.Fatal("a backend's script did not run")
		}
		for _, name := range file.order {
			fk, ok := file.keys[name]
			if !ok {
				continue // skipped on the file backend
			}
			sk, ok := svc.keys[name]
			if !ok {
				t.Errorf("%s: ran on the file backend, not on the service", name)
				continue
			}
			if diff := cmp.Diff(fk, sk); diff != "" {
				t.Errorf("%s: the service differs from the file backend (-file +service):\n%s", name, diff)
			}
		}
	})
}

// session is one run of the script against one backend.
type session struct {
	t         *testing.T
	be        backend
	pulumi    string
	env       []string
	work      string // the working folder of commands outside a project
	base, app string // the two projects' folders

	order   []string          // step names, in the order they ran
	keys    map[string]string // step name → exit code and key parts of its output
	fails   map[string]string // step name → what went wrong
	skipped map[string]string // step name → why it does not run on this backend

	lastHistory []historyEntry // what the last history step listed, oldest first
}

func newSession(t *testing.T, bins string, b backend) *session {
	home, work := t.TempDir(), t.TempDir()
	s := &session{
		t: t, be: b, pulumi: filepath.Join(bins, "pulumi"), work: work,
		base: filepath.Join(work, "base"), app: filepath.Join(work, "app"),
		keys: map[string]string{}, fails: map[string]string{}, skipped: map[string]string{},
	}
	s.env = cleanEnv(
		"PATH="+bins+string(os.PathListSeparator)+os.Getenv("PATH"), // pulumi-language-yaml
		"PULUMI_HOME="+home,
		"PULUMI_SKIP_UPDATE_CHECK=1",
		"PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true", // no network: the builtin provider serves StackReference
		"PULUMI_CONFIG_PASSPHRASE="+passphrase,
		"PULUMI_ACCESS_TOKEN="+b.token,
	)
	writeFile(t, filepath.Join(s.base, "Pulumi.yaml"), "name: "+baseProject+"\nruntime: yaml\noutputs:\n  greeting: hello\n  answer: 42\n")
	var app strings.Builder
	fmt.Fprintf(&app, "name: %s\nruntime: yaml\nconfig:\n  message:\n    type: string\n  password:\n    type: string\nresources:\n", appProject)
	for i := range stackRefs {
		fmt.Fprintf(&app, "  ref%03d:\n    type: pulumi:pulumi:StackReference\n    properties:\n      name: ${pulumi.organization}/%s/base\n", i, baseProject)
	}
	fmt.Fprintf(&app, "outputs:\n  greeting: ${ref000.outputs[\"greeting\"]}\n  answer: ${ref%03d.outputs[\"answer\"]}\n  message: ${message}\n  password: ${password}\n", stackRefs-1)
	writeFile(t, filepath.Join(s.app, "Pulumi.yaml"), app.String())
	return s
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// globalFlags go before every command: no prompts, no colours.
var globalFlags = []string{"--non-interactive", "--color", "never"}

// step runs `pulumi args…` in dir, wants exit code want, and records the exit code as the step's key.
func (s *session) step(name, dir string, want int, args ...string) result {
	s.t.Helper()
	r := run(dir, s.env, cmdTimeout, s.pulumi, append(slices.Clone(globalFlags), args...)...)
	s.order = append(s.order, name)
	s.keys[name] = fmt.Sprintf("exit %d", r.code)
	s.t.Logf("%s: exit %d in %s", name, r.code, r.took.Round(time.Millisecond))
	if r.code != want || r.err != nil {
		s.fail(name, fmt.Sprintf("exited %d, want %d:\n%s", r.code, want, r.output()))
	}
	return r
}

// skip records that step name does not run on this backend, and why.
func (s *session) skip(name, why string) {
	s.t.Logf("%s: skipped on the %s backend: %s", name, s.be.name, why)
	s.skipped[name] = why
}

func (s *session) fail(name, msg string) {
	s.t.Helper()
	s.t.Errorf("%s: %s", name, msg)
	if _, ok := s.fails[name]; !ok {
		s.fails[name] = msg
	}
}

// key adds key to step name's record and, unless want is anyKey, checks it.
func (s *session) key(name, key, want string) {
	s.t.Helper()
	s.keys[name] += "; " + key
	if want != anyKey && key != want {
		s.fail(name, fmt.Sprintf("got %q, want %q", key, want))
	}
}

// anyKey makes key check nothing but the agreement of both backends.
const anyKey = "\x00any"

// ok reports whether step name has not failed so far (its output is worth parsing).
func (s *session) ok(name string) bool { _, failed := s.fails[name]; return !failed }

// script is the sequence of commands both backends run.
func (s *session) script() {
	secretsFlag := []string{}
	if s.be.file {
		secretsFlag = []string{"--secrets-provider", "passphrase"}
	}
	s.step("login", s.work, 0, "login", s.be.login)
	if r := s.step("whoami", s.work, 0, "whoami"); s.ok("whoami") && strings.TrimSpace(r.stdout) == "" {
		s.fail("whoami", "printed no user name:\n"+r.output())
	}

	s.step("stack init base", s.base, 0, append([]string{"stack", "init", "base"}, secretsFlag...)...)
	s.summaryStep("up (base)", s.base, "succeeded create=1", "up", "--yes", "--skip-preview")

	s.step("stack init dev", s.app, 0, append([]string{"stack", "init", "dev"}, secretsFlag...)...)
	s.step("stack init scratch", s.app, 0, append([]string{"stack", "init", "scratch"}, secretsFlag...)...)
	s.stackLs("stack ls", "dev scratch*")
	s.step("stack select", s.app, 0, "stack", "select", "dev")
	s.stackLs("stack ls after select", "dev* scratch")
	s.step("stack rename", s.app, 0, "stack", "rename", "scratch2", "--stack", "scratch")
	s.stackLs("stack ls after rename", "dev scratch2*") // the CLI selects the stack it renamed
	s.step("stack rm", s.app, 0, "stack", "rm", "scratch2", "--yes")
	s.stackLs("stack ls after rm", "dev")
	s.step("stack select again", s.app, 0, "stack", "select", "dev")

	s.step("config set", s.app, 0, "config", "set", "message", "hello")
	s.step("config set --secret", s.app, 0, "config", "set", "--secret", "password", secretValue)
	s.configGet("config get (secret)", "password", secretValue)
	s.secretAtRest("config set --secret", filepath.Join(s.app, "Pulumi.dev.yaml"))

	s.summaryStep("preview", s.app, "succeeded create=1", "preview") // reads are not counted
	s.summaryStep("up", s.app, "succeeded create=1", "up", "--yes", "--skip-preview")
	if r := s.step("stack output", s.app, 0, "stack", "output", "--json", "--show-secrets"); s.ok("stack output") {
		var out map[string]any
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			s.fail("stack output", fmt.Sprintf("not JSON: %v\n%s", err, r.output()))
		}
		b, _ := json.Marshal(out)
		s.key("stack output", string(b), `{"answer":42,"greeting":"hello","message":"hello","password":"`+secretValue+`"}`)
	}
	exportUp := filepath.Join(s.work, "export-up.json")
	var versions []string // the export after each operation that makes history, in order
	versions = append(versions, s.export("stack export after up", exportUp, "152 resources: pulumi:providers:pulumi=1 pulumi:pulumi:Stack=1 pulumi:pulumi:StackReference=150; stack outputs answer greeting message password (password secret)"))

	s.step("config set (local change)", s.app, 0, "config", "set", "message", "changed")
	s.step("config refresh", s.app, 0, "config", "refresh", "--force")
	s.configGet("config get after refresh", "message", "hello")
	s.configGet("config get (secret) after refresh", "password", secretValue)

	s.summaryStep("refresh", s.app, "succeeded", "refresh", "--yes", "--skip-preview")
	versions = append(versions, s.export("stack export after refresh", "", anyKey))

	s.step("stack tag set", s.app, 0, "stack", "tag", "set", "team", "blue")
	s.tagLs("stack tag ls", "team=blue")
	s.step("stack tag rm", s.app, 0, "stack", "tag", "rm", "team")
	s.tagLs("stack tag ls after rm", "team unset")

	s.step("stack import", s.app, 0, "stack", "import", "--file", exportUp)
	versions = append(versions, s.export("stack export after import", "", s.keyOf("stack export after up")))

	s.history("stack history", "update succeeded; refresh succeeded")
	if s.be.file {
		s.skip("stack export --version", "the file backend does not implement backend.SpecificDeploymentExporter: "+
			"the CLI answers \"the current backend … does not provide the ability to export previous deployments\"")
	} else {
		s.exportVersions("stack export --version", versions)
	}

	s.concurrentUps()
	s.cancelKilled()

	s.summaryStep("destroy", s.app, "succeeded delete=1 discard=150", "destroy", "--yes", "--skip-preview")
	s.export("stack export after destroy", "", "0 resources:")
	s.step("stack rm dev", s.app, 0, "stack", "rm", "dev", "--yes")
	s.summaryStep("destroy (base)", s.base, "succeeded delete=1", "destroy", "--yes", "--skip-preview")
	s.step("stack rm base", s.base, 0, "stack", "rm", "base", "--yes")
	s.stackLs("stack ls at the end", "")
}

// keyOf is the key recorded for step name without its exit code.
func (s *session) keyOf(name string) string {
	_, k, _ := strings.Cut(s.keys[name], "; ")
	return k
}

// summaryStep runs an operation with `--output json` and keys it by its result and resource changes.
func (s *session) summaryStep(name, dir, want string, args ...string) {
	s.t.Helper()
	r := s.step(name, dir, 0, append(args, "--output", "json")...)
	if !s.ok(name) {
		return
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var sum struct {
		Result  string         `json:"result"`
		Summary map[string]int `json:"summary"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		s.fail(name, fmt.Sprintf("the last line of stdout is no --output json summary: %v\n%s", err, r.output()))
		return
	}
	key := sum.Result
	for _, op := range slices.Sorted(maps.Keys(sum.Summary)) {
		if op != "same" {
			key += fmt.Sprintf(" %s=%d", op, sum.Summary[op])
		}
	}
	s.key(name, key, want)
}

// stackLs keys `stack ls --json` by the stacks' names, the current one marked with *.
func (s *session) stackLs(name, want string) {
	s.t.Helper()
	r := s.step(name, s.app, 0, "stack", "ls", "--json")
	if !s.ok(name) {
		return
	}
	var stacks []struct {
		Name    string `json:"name"`
		Current bool   `json:"current"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &stacks); err != nil {
		s.fail(name, fmt.Sprintf("not JSON: %v\n%s", err, r.output()))
		return
	}
	var names []string
	for _, st := range stacks {
		n := st.Name[strings.LastIndex(st.Name, "/")+1:] // the service qualifies names with the organization
		if st.Current {
			n += "*"
		}
		names = append(names, n)
	}
	slices.Sort(names)
	s.key(name, strings.Join(names, " "), want)
}

func (s *session) configGet(name, key, want string) {
	s.t.Helper()
	if r := s.step(name, s.app, 0, "config", "get", key); s.ok(name) {
		s.key(name, strings.TrimSpace(r.stdout), want)
	}
}

// secretValue is the value of the secret config key password.
const secretValue = "s3cr3t"

// secretAtRest checks that the stack's config file holds the secret only encrypted (secure: …).
func (s *session) secretAtRest(name, file string) {
	s.t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		s.fail(name, err.Error())
		return
	}
	if strings.Contains(string(b), secretValue) || !strings.Contains(string(b), "secure:") {
		s.fail(name, fmt.Sprintf("%s does not hold the secret encrypted (secure: …):\n%s", filepath.Base(file), b))
	}
}

func (s *session) tagLs(name, want string) {
	s.t.Helper()
	r := s.step(name, s.app, 0, "stack", "tag", "ls", "--json")
	if !s.ok(name) {
		return
	}
	var tags map[string]string
	if err := json.Unmarshal([]byte(r.stdout), &tags); err != nil {
		s.fail(name, fmt.Sprintf("not JSON: %v\n%s", err, r.output()))
		return
	}
	got := "team unset"
	if v, ok := tags["team"]; ok {
		got = "team=" + v
	}
	s.key(name, got, want)
}

// deployment is the part of `pulumi stack export` the script looks at.
type deployment struct {
	Version    int `json:"version"`
	Deployment struct {
		Resources []struct {
			URN     string         `json:"urn"`
			Type    string         `json:"type"`
			Outputs map[string]any `json:"outputs"`
		} `json:"resources"`
	} `json:"deployment"`
}

// deploymentKey sums a deployment up: its resources per type, and the stack's outputs (which are secret).
func deploymentKey(d deployment) string {
	types := map[string]int{}
	var outputs []string
	for _, r := range d.Deployment.Resources {
		types[r.Type]++
		if r.Type != "pulumi:pulumi:Stack" {
			continue
		}
		outputs = append(outputs, slices.Sorted(maps.Keys(r.Outputs))...)
		for _, k := range slices.Sorted(maps.Keys(r.Outputs)) {
			if m, ok := r.Outputs[k].(map[string]any); ok && m["4dabf18193072939515e22adb298388d"] == "1b47061264138c4ac30d75fd1eb44270" {
				outputs = append(outputs, "("+k+" secret)")
			}
		}
	}
	key := fmt.Sprintf("%d resources:", len(d.Deployment.Resources))
	for _, t := range slices.Sorted(maps.Keys(types)) {
		key += fmt.Sprintf(" %s=%d", t, types[t])
	}
	if len(outputs) > 0 {
		key += "; stack outputs " + strings.Join(outputs, " ")
	}
	return key
}

// export runs `stack export` (into file when not empty) and keys it by deploymentKey; it returns the key.
func (s *session) export(name, file, want string) string {
	s.t.Helper()
	args := []string{"stack", "export"}
	if file != "" {
		args = append(args, "--file", file)
	}
	r := s.step(name, s.app, 0, args...)
	if !s.ok(name) {
		return ""
	}
	text := r.stdout
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			s.fail(name, err.Error())
			return ""
		}
		text = string(b)
	}
	var d deployment
	if err := json.Unmarshal([]byte(text), &d); err != nil {
		s.fail(name, fmt.Sprintf("not a deployment: %v\n%s", err, r.output()))
		return ""
	}
	if strings.Contains(text, secretValue) {
		s.fail(name, "the export holds the secret config value in plain text")
	}
	k := deploymentKey(d)
	s.key(name, k, want)
	return k
}

// historyEntry is one entry of `stack history --json` (the CLI's updateInfoJSON).
type historyEntry struct {
	Version         int            `json:"version"`
	Kind            string         `json:"kind"`
	Result          string         `json:"result"`
	ResourceChanges map[string]int `json:"resourceChanges"`
}

// history keys `stack history --json` by its entries' kinds and results, oldest first, without imports:
// the file backend records no history entry for `stack import`, Pulumi Cloud does (kind import). On the
// service the import must be there, after the entries of want; the entries are kept for exportVersions.
func (s *session) history(name, want string) {
	s.t.Helper()
	r := s.step(name, s.app, 0, "stack", "history", "--json")
	if !s.ok(name) {
		return
	}
	var entries []historyEntry
	if err := json.Unmarshal([]byte(r.stdout), &entries); err != nil {
		s.fail(name, fmt.Sprintf("not JSON: %v\n%s", err, r.output()))
		return
	}
	slices.Reverse(entries) // the CLI lists the newest first
	var all, parts []string
	for _, e := range entries {
		all = append(all, e.Kind+" "+e.Result)
		if e.Kind != "import" {
			parts = append(parts, e.Kind+" "+e.Result)
		}
	}
	s.key(name, strings.Join(parts, "; "), want)
	if wantAll := want + "; import succeeded"; !s.be.file && strings.Join(all, "; ") != wantAll {
		s.fail(name, fmt.Sprintf("the service's history is %q, want %q (Pulumi Cloud records a stack import)", strings.Join(all, "; "), wantAll))
	}
	s.lastHistory = entries
}

// exportVersions exports each version stack history lists and compares it with the export the script made
// right after the operation of that version: `stack export --version N` must be the state update N left.
func (s *session) exportVersions(name string, after []string) {
	s.t.Helper()
	s.order = append(s.order, name)
	s.keys[name] = "exit 0"
	entries := s.lastHistory
	if len(entries) != len(after) {
		s.fail(name, fmt.Sprintf("stack history lists %d versions, the script made %d operations", len(entries), len(after)))
		return
	}
	for i, e := range entries {
		v := strconv.Itoa(e.Version)
		r := run(s.app, s.env, cmdTimeout, s.pulumi, append(slices.Clone(globalFlags), "stack", "export", "--version", v)...)
		if r.code != 0 || r.err != nil {
			s.fail(name, fmt.Sprintf("version %s (%s): exited %d:\n%s", v, e.Kind, r.code, r.output()))
			continue
		}
		var d deployment
		if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
			s.fail(name, fmt.Sprintf("version %s: not a deployment: %v\n%s", v, err, r.output()))
			continue
		}
		if got := deploymentKey(d); got != after[i] {
			s.fail(name, fmt.Sprintf("version %s (%s #%d in history): got %q, want the state after that operation, %q", v, e.Kind, i+1, got, after[i]))
		}
	}
}

// background is a Pulumi CLI command running while the script goes on.
type background struct {
	cmd    *exec.Cmd
	marker chan struct{} // closed when a line of stdout contains the marker
	exited chan struct{} // closed when the command has ended; res is set then
	res    result
}

// start starts `pulumi args…` in the app's folder; marker closes when stdout shows a line with marker.
func (s *session) start(marker string, args ...string) *background {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	all := append(slices.Clone(globalFlags), args...)
	cmd := newCmd(ctx, s.app, s.env, s.pulumi, all...)
	b := &background{cmd: cmd, marker: make(chan struct{}), exited: make(chan struct{})}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	setLive(cmd, true)
	s.t.Cleanup(func() {
		select {
		case <-b.exited:
		default:
			killGroup(cmd)
		}
		cancel()
		<-b.exited
	})
	go func() {
		defer close(b.exited)
		var out strings.Builder
		sc := bufio.NewScanner(stdout)
		seen := false
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if !seen && strings.Contains(sc.Text(), marker) {
				seen = true
				close(b.marker)
			}
		}
		err := cmd.Wait()
		setLive(cmd, false)
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // whatever of its process group is left
		b.res = finish(ctx, cmd, append([]string{"pulumi"}, all...), begin, err, out.String(), stderr.String())
	}()
	return b
}

// wait waits for b to end and returns what it left.
func (b *background) wait() result {
	<-b.exited
	return b.res
}

// midRun waits until b's update is under way (it has read a StackReference, so it holds the stack's lock),
// and reports false (failing step name) when b ends first.
func (s *session) midRun(name string, b *background) bool {
	s.t.Helper()
	select {
	case <-b.marker:
		return true
	case <-b.exited:
		s.fail(name, "the first update ended before it was under way:\n"+b.res.output())
	case <-time.After(cmdTimeout):
		s.fail(name, "the first update was not under way within "+cmdTimeout.String())
	}
	return false
}

// midRunMarker is a line the CLI prints once the engine runs, after the stack's lock is taken.
const midRunMarker = "read pulumi:pulumi:StackReference"

// conflictStep runs an update that must lose against a running one with the backend's message.
func (s *session) conflictStep(name string) {
	s.t.Helper()
	r := s.step(name, s.app, 1, "up", "--yes", "--skip-preview")
	out := r.stdout + r.stderr
	shown := strings.Contains(out, fileConflict)
	if !s.be.file {
		shown = strings.Contains(out, serviceConflict) && strings.Contains(out, conflictHelp)
	}
	if !shown {
		want := fmt.Sprintf("%q", fileConflict)
		if !s.be.file {
			want = fmt.Sprintf("%q and %q", serviceConflict, conflictHelp)
		}
		s.fail(name, fmt.Sprintf("the loser does not show %s:\n%s", want, r.output()))
	}
	s.key(name, fmt.Sprintf("conflict message shown: %t", shown), "conflict message shown: true")
}

// concurrentUps runs two `pulumi up`s of one stack at once: the first is stopped (SIGSTOP of its process
// group) as soon as it holds the stack, the second must fail with the update-in-progress message, and the
// first, continued, must succeed.
func (s *session) concurrentUps() {
	const name = "concurrent up (winner)"
	a := s.start(midRunMarker, "up", "--yes", "--skip-preview")
	if !s.midRun(name, a) {
		s.order = append(s.order, name)
		s.keys[name] = "not under way"
		return
	}
	_ = syscall.Kill(-a.cmd.Process.Pid, syscall.SIGSTOP)
	s.conflictStep("concurrent up (loser)")
	_ = syscall.Kill(-a.cmd.Process.Pid, syscall.SIGCONT)
	r := a.wait()
	s.order = append(s.order, name)
	s.keys[name] = fmt.Sprintf("exit %d", r.code)
	if r.code != 0 || r.err != nil {
		s.fail(name, fmt.Sprintf("exited %d, want 0:\n%s", r.code, r.output()))
	}
}

// cancelKilled kills an update with SIGKILL while it runs (a CI job killed with -9): the stack stays
// busy until `pulumi cancel`, after which an update succeeds again.
func (s *session) cancelKilled() {
	const name = "kill -9 of up"
	c := s.start(midRunMarker, "up", "--yes", "--skip-preview")
	s.order = append(s.order, name)
	s.keys[name] = "killed"
	if !s.midRun(name, c) {
		return
	}
	killGroup(c.cmd)
	c.wait()
	s.conflictStep("up after kill -9")
	s.step("cancel", s.app, 0, "cancel", "--yes")
	s.summaryStep("up after cancel", s.app, "succeeded", "up", "--yes", "--skip-preview")
}

// summary logs, per step, whether it passed on this backend, with the reason of each failure or skip.
func (s *session) summary() {
	var b strings.Builder
	for _, name := range s.order {
		if msg, ok := s.fails[name]; ok {
			first, _, _ := strings.Cut(msg, "\n")
			fmt.Fprintf(&b, "  FAIL %s: %s\n", name, first)
		} else {
			fmt.Fprintf(&b, "  ok   %s\n", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.skipped)) {
		fmt.Fprintf(&b, "  skip %s: %s\n", name, s.skipped[name])
	}
	s.t.Logf("%s backend, %d steps, %d failed:\n%s", s.be.name, len(s.order), len(s.fails), b.String())
}
