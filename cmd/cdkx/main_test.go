package main

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
)

// execute runs cdkx with args on a factory whose streams are buffers and whose environment is env
// (nothing else), in the working directory; it returns stdout, stderr and the exit code.
func execute(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	f := cli.New("v1.2.3")
	f.IO = &cli.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut, Width: 80}
	f.Getenv = func(k string) string { return env[k] }
	root := newRoot(f)
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errOut)
	err := root.ExecuteContext(t.Context())
	var ee *cli.ExitError
	if err != nil && !errors.Is(err, cli.ErrSilent) && (!errors.As(err, &ee) || ee.Err != nil) {
		errOut.WriteString("error: " + err.Error() + "\n")
	}
	return out.String(), errOut.String(), cli.ExitCode(err)
}

// pdnsKey is the API key pdnsStandIn accepts.
const pdnsKey = "test-key"

// pdnsStandIn starts a stand-in for the PowerDNS API that answers the one read a diff or deploy makes
// before anything else, the credentials check (GET /api/v1/servers/localhost): 200 with X-API-Key
// pdnsKey, 401 without. It returns the environment that points cdkx at it with key, and counts every
// request in calls.
func pdnsStandIn(t *testing.T, key string) (env map[string]string, calls *[]string) {
	t.Helper()
	calls = new([]string)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*calls = append(*calls, r.Method+" "+r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Header.Get("X-API-Key") != pdnsKey:
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"Unauthorized"}`))
		case r.Method == http.MethodGet && r.URL.Path == "/api/v1/servers/localhost":
			_, _ = w.Write([]byte(`{"id":"localhost","type":"Server","daemon_type":"authoritative"}`))
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":"Not Found"}`))
		}
	}))
	t.Cleanup(srv.Close)
	return map[string]string{"PDNS_API_URL": srv.URL, "PDNS_API_KEY": key}, calls
}

// examples is the absolute path of the shipped example assemblies.
func examples(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "testdata", "examples", name, "cdkx.out"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReadOnlyCommandsCreateNoState runs every command that only reads state in an empty folder: each
// succeeds (or fails for its own reason) and the folder stays empty — no .cdkx/state.db.
func TestReadOnlyCommandsCreateNoState(t *testing.T) {
	app := examples(t, "dns")
	env, _ := pdnsStandIn(t, pdnsKey) // diff checks the credentials of the providers it would call
	dir := t.TempDir()
	t.Chdir(dir)
	tests := []struct {
		args     []string
		wantCode int
	}{
		{args: []string{"outputs"}},
		{args: []string{"outputs", "Zones"}, wantCode: cli.ExitErr},
		{args: []string{"history"}},
		{args: []string{"history", "--json"}},
		{args: []string{"deployments", "list"}},
		{args: []string{"deployments", "show", "6f1c"}, wantCode: cli.ExitErr},
		{args: []string{"state", "export"}},
		{args: []string{"unlock"}},
		{args: []string{"list", "--app", app}},
		{args: []string{"validate", "--app", app}},
		{args: []string{"diff", "--app", app}},
		{args: []string{"diff", "--app", app, "--json"}},
	}
	for _, tt := range tests {
		_, stderr, code := execute(t, env, tt.args...)
		if code != tt.wantCode {
			t.Errorf("cdkx %s: exit code %d, want %d; stderr:\n%s", strings.Join(tt.args, " "), code, tt.wantCode, stderr)
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			t.Errorf("cdkx %s created %s in an empty folder", strings.Join(tt.args, " "), e.Name())
		}
	}
}

// commands returns every command of the tree under root, root included.
func commands(root *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{root}
	for _, c := range root.Commands() {
		out = append(out, commands(c)...)
	}
	return out
}

// TestHelpTexts checks every command's help: a Short in sentence case without a final period, Long and
// Example lines and the whole --help output (flags wrap) within 100 columns, and an Example for every
// command that runs.
func TestHelpTexts(t *testing.T) {
	t.Parallel()
	root := newRoot(cli.New("dev"))
	for _, c := range commands(root) {
		path := c.CommandPath()
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" || strings.HasPrefix(path, "cdkx completion") {
			continue
		}
		first, _ := utf8.DecodeRuneInString(c.Short)
		switch {
		case c.Short == "":
			t.Errorf("%s: no Short", path)
		case !unicode.IsUpper(first):
			t.Errorf("%s: Short %q does not begin with a capital letter", path, c.Short)
		case strings.HasSuffix(c.Short, "."):
			t.Errorf("%s: Short %q ends with a period", path, c.Short)
		}
		for _, l := range strings.Split(c.Long+"\n"+c.Example, "\n") {
			if n := utf8.RuneCountInString(l); n > 100 {
				t.Errorf("%s: a help line of %d columns, want at most 100: %q", path, n, l)
			}
		}
		if c.Long != "" {
			if first, _ := utf8.DecodeRuneInString(c.Long); !unicode.IsUpper(first) && !strings.HasPrefix(c.Long, "cdkx ") {
				t.Errorf("%s: Long begins in lower case: %q", path, c.Long[:min(len(c.Long), 40)])
			}
		}
		if (c.Runnable() || c.HasSubCommands()) && c.Example == "" && c.Name() != "environment" {
			t.Errorf("%s: no Example", path)
		}
		args := append(strings.Fields(path)[1:], "--help")
		out, _, _ := execute(t, nil, args...)
		for _, l := range strings.Split(out, "\n") {
			if n := utf8.RuneCountInString(l); n > 100 {
				t.Errorf("%s --help: a line of %d columns, want at most 100: %q", path, n, l)
			}
		}
	}
}

// exampleRuns are the commands whose Examples run offline against the shipped examples: they read the
// assembly and at most an empty state.
var exampleRuns = map[string]bool{"cdkx": true, "cdkx validate": true, "cdkx list": true, "cdkx diff": true,
	"cdkx version": true, "cdkx history": true, "cdkx deployments list": true, "cdkx state export": true}

// TestExamplesRun runs each Example line of the commands in exampleRuns, in an empty folder with
// testdata/ pointing at the repository's: each line must exit 0 (lines with pipes, redirections or
// shell syntax, and other commands' lines, are left out).
func TestExamplesRun(t *testing.T) {
	testdata, err := filepath.Abs(filepath.Join("..", "..", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	env, _ := pdnsStandIn(t, pdnsKey) // diff checks the credentials of the providers it would call
	ran := 0
	for _, c := range commands(newRoot(cli.New("dev"))) {
		if !exampleRuns[c.CommandPath()] {
			continue
		}
		for _, line := range strings.Split(c.Example, "\n") {
			line = strings.TrimSpace(line)
			if !strings.HasPrefix(line, "cdkx ") || strings.ContainsAny(line, "|&<>$;\"'`") {
				continue
			}
			args := strings.Fields(line)[1:]
			if c.CommandPath() == "cdkx" && args[0] != "validate" && args[0] != "diff" && args[0] != "list" {
				continue // the root's examples that deploy or read deployed state
			}
			for i, a := range args {
				args[i] = strings.Replace(a, "testdata/", testdata+"/", 1)
			}
			ran++
			if _, stderr, code := execute(t, env, args...); code != 0 {
				t.Errorf("%s: exit code %d, want 0; stderr:\n%s", line, code, stderr)
			}
		}
	}
	if ran < 8 {
		t.Errorf("ran %d example lines, want at least 8: the Examples changed shape", ran)
	}
	if entries, _ := os.ReadDir("."); len(entries) != 0 {
		t.Errorf("the examples left %d files in the folder, want none", len(entries))
	}
}

// TestVersion checks that `cdkx version` and `cdkx --version` print the same line.
func TestVersion(t *testing.T) {
	t.Parallel()
	out1, _, code1 := execute(t, nil, "version")
	out2, _, code2 := execute(t, nil, "--version")
	if code1 != 0 || code2 != 0 {
		t.Fatalf("exit codes %d, %d; want 0", code1, code2)
	}
	if !strings.HasPrefix(out1, "cdkx v1.2.3 (revision ") {
		t.Errorf("cdkx version = %q, want cdkx v1.2.3 (revision …)", out1)
	}
	if diff := cmp.Diff(out1, out2); diff != "" {
		t.Errorf("cdkx version and cdkx --version differ (-version +--version):\n%s", diff)
	}
}

// TestEnvironmentHelp checks that `cdkx help environment` prints the documentation of the variables.
func TestEnvironmentHelp(t *testing.T) {
	t.Parallel()
	out, _, code := execute(t, nil, "help", "environment")
	if code != 0 || !strings.Contains(out, "CDKX_TOKEN") || !strings.Contains(out, "PDNS_API_URL") {
		t.Errorf("cdkx help environment = %d, %q; want the variables", code, out)
	}
}

// TestConfigWarnings: a misspelt cdkx.json key is warned about by the commands that read cdkx.json, not by
// help or version.
func TestConfigWarnings(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.WriteFile("cdkx.json", []byte(`{"requireAproval": "never"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	const warning = `warning: cdkx.json: unknown key "requireAproval"; did you mean "requireApproval"?`
	for _, tc := range []struct {
		args []string
		warn bool
	}{
		{[]string{"validate", "--app", examples(t, "dns")}, true},
		{[]string{"help", "environment"}, false},
		{[]string{"version"}, false},
		{[]string{"deploy", "--help"}, false},
	} {
		_, stderr, _ := execute(t, nil, tc.args...)
		if got := strings.Contains(stderr, warning); got != tc.warn {
			t.Errorf("cdkx %s: warned %t, want %t; stderr:\n%s", strings.Join(tc.args, " "), got, tc.warn, stderr)
		}
	}
}

// TestWrongCredentials: with a PowerDNS API key the server refuses, diff and deploy (and deploy
// --propose) exit 1 naming PDNS_API_KEY after the one read that checks it: no other request, nothing
// recorded.
func TestWrongCredentials(t *testing.T) {
	app := examples(t, "dns")
	t.Chdir(t.TempDir())
	for _, args := range [][]string{
		{"diff", "--app", app},
		{"diff", "--app", app, "--json"},
		{"deploy", "--app", app, "--yes"},
		{"deploy", "--app", app, "--propose"},
	} {
		env, calls := pdnsStandIn(t, "wrong-key")
		_, stderr, code := execute(t, env, args...)
		if code != cli.ExitErr || !strings.Contains(stderr, "powerdns refused the credentials in PDNS_API_KEY") {
			t.Errorf("cdkx %s with a wrong key: exit %d, want 1 and a message naming PDNS_API_KEY; stderr:\n%s", strings.Join(args, " "), code, stderr)
		}
		if diff := cmp.Diff([]string{"GET /api/v1/servers/localhost"}, *calls); diff != "" {
			t.Errorf("cdkx %s with a wrong key: requests (-want +got):\n%s", strings.Join(args, " "), diff)
		}
	}
	env, _ := pdnsStandIn(t, pdnsKey)
	if out, stderr, code := execute(t, env, "deployments", "list", "--json"); code != 0 || strings.Contains(out, `"id"`) {
		t.Errorf("deployments list after refused runs: exit %d, %s%s; want no deployment", code, out, stderr)
	}
}
