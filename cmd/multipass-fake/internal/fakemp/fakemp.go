// Package fakemp is a stand-in for the `multipass` command line: it answers multipass's own arguments
// with the outputs, messages and exit codes of Multipass 1.16.3 (canonical/multipass, src/client/cli and
// src/daemon/daemon.cpp), keeping its instances in a JSON state file instead of running VMs.
package fakemp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Version is the Multipass release whose CLI the fake reproduces: `version` reports it for the client
// and the daemon.
const Version = "1.16.3"

// Exit codes of the multipass client (include/multipass/cli/return_codes.h; timeout_exit_code in
// include/multipass/constants.h).
const (
	ExitOK           = 0
	ExitCommandLine  = 1 // the command line is wrong; nothing was asked of the daemon
	ExitCommandFail  = 2 // the daemon refused or failed, or cannot be reached
	ExitTimeout      = 5 // --timeout ran out (the daemon goes on)
	exitUsageNoArgs  = ExitCommandFail
	fakeErrorCommand = "multipass-fake"
)

// Environment variables that configure the fake.
const (
	EnvDir            = "MULTIPASS_FAKE_DIR"
	EnvNetworks       = "MULTIPASS_FAKE_NETWORKS"
	EnvLaunchSeconds  = "MULTIPASS_FAKE_LAUNCH_SECONDS"
	EnvFailLaunch     = "MULTIPASS_FAKE_FAIL_LAUNCH"
	EnvDaemonDown     = "MULTIPASS_FAKE_DAEMON_DOWN"
	EnvLog            = "MULTIPASS_FAKE_LOG"
	defaultLaunchTime = time.Second
)

// Env is the fake's configuration: where its state lives and how its "daemon" behaves.
type Env struct {
	// Dir is the state folder (MULTIPASS_FAKE_DIR), created if missing.
	Dir string
	// Networks are the host interfaces `networks` lists and `--network` accepts (MULTIPASS_FAKE_NETWORKS);
	// the first is also the interface `--bridged` uses (the real one's local.bridged-network setting).
	Networks []string
	// LaunchDuration is how long a launch takes before the instance is Running
	// (MULTIPASS_FAKE_LAUNCH_SECONDS, default 1s).
	LaunchDuration time.Duration
	// FailLaunch names the instances whose launch fails ("*": every one) (MULTIPASS_FAKE_FAIL_LAUNCH).
	FailLaunch []string
	// DaemonDown makes every command that needs multipassd fail as when its socket does not answer
	// (MULTIPASS_FAKE_DAEMON_DOWN=1).
	DaemonDown bool
	// LogPath, if set, is a file to which every invocation appends one JSON line (MULTIPASS_FAKE_LOG).
	LogPath string
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// EnvFrom reads the fake's configuration from environment variables through getenv (os.Getenv in
// main). A malformed MULTIPASS_FAKE_LAUNCH_SECONDS or MULTIPASS_FAKE_DAEMON_DOWN is an error that names
// the variable.
func EnvFrom(getenv func(string) string) (Env, error) {
	env := Env{
		Dir:            getenv(EnvDir),
		Networks:       splitList(getenv(EnvNetworks)),
		LaunchDuration: defaultLaunchTime,
		FailLaunch:     splitList(getenv(EnvFailLaunch)),
		LogPath:        getenv(EnvLog),
	}
	if s := strings.TrimSpace(getenv(EnvLaunchSeconds)); s != "" {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || f < 0 || f > 86400 {
			return env, fmt.Errorf("%s=%q: want a number of seconds from 0 to 86400", EnvLaunchSeconds, s)
		}
		env.LaunchDuration = time.Duration(f * float64(time.Second))
	}
	switch v := strings.TrimSpace(getenv(EnvDaemonDown)); v {
	case "", "0", "false":
	case "1", "true":
		env.DaemonDown = true
	default:
		return env, fmt.Errorf("%s=%q: want 1 or 0", EnvDaemonDown, v)
	}
	return env, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func (e Env) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

func (e Env) failsLaunch(name string) bool {
	for _, f := range e.FailLaunch {
		if f == "*" || f == name {
			return true
		}
	}
	return false
}

// invocation is one run of the fake: its configuration, arguments and streams, and what it read from
// stdin (for the log line).
type invocation struct {
	ctx            context.Context
	env            Env
	args           []string
	stdin          io.Reader
	stdout, stderr io.Writer
	stdinRead      *string
	logged         bool
}

// command is one multipass command the fake answers.
type command struct {
	name, shortHelp, usage string
	options                []option
	run                    func(inv *invocation, p parsedArgs) int
}

var commands []command

func init() {
	commands = []command{
		{name: "delete", shortHelp: "Delete instances and snapshots", usage: "delete [options] <instance> [<instance> ...]",
			options: []option{{long: "all"}, {long: "purge", short: "p"}}, run: runDelete},
		{name: "help", shortHelp: "Display help about a command", usage: "help [<command>]", run: runHelp},
		{name: "info", shortHelp: "Display information about instances or snapshots", usage: "info [options] [<instance> ...]",
			options: []option{{long: "all"}, {long: "no-runtime-information"}, {long: "snapshots"}, {long: "format", takesValue: true}}, run: runInfo},
		{name: "launch", shortHelp: "Create and start an Ubuntu instance", usage: "launch [options] [[<remote:>]<image> | <url>]",
			options: launchOptions, run: runLaunch},
		{name: "list", shortHelp: "List all available instances or snapshots", usage: "list [options]",
			options: []option{{long: "snapshots"}, {long: "format", takesValue: true}, {long: "no-ipv4"}}, run: runList},
		{name: "networks", shortHelp: "List available network interfaces", usage: "networks [options]",
			options: []option{{long: "format", takesValue: true}}, run: runNetworks},
		{name: "purge", shortHelp: "Purge all deleted instances permanently", usage: "purge", run: runPurge},
		{name: "version", shortHelp: "Show version details", usage: "version [options]",
			options: []option{{long: "format", takesValue: true}}, run: runVersion},
	}
}

// unimplemented are multipass commands the fake does not answer: asking for one is a clear error rather
// than "Unknown command".
var unimplemented = map[string]bool{
	"alias": true, "aliases": true, "authenticate": true, "clone": true, "exec": true, "find": true,
	"get": true, "mount": true, "prefer": true, "recover": true, "restart": true, "restore": true,
	"set": true, "shell": true, "sh": true, "connect": true, "snapshot": true, "start": true, "stop": true,
	"suspend": true, "transfer": true, "copy-files": true, "umount": true, "unmount": true, "unalias": true,
	"wait-ready": true,
}

// Run runs one invocation of the fake with multipass's arguments args (without the program name) and
// returns its exit code. It reads stdin only for `launch --cloud-init -`.
func Run(ctx context.Context, env Env, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	inv := &invocation{ctx: ctx, env: env, args: args, stdin: stdin, stdout: stdout, stderr: stderr}
	defer inv.log()
	name, rest := commandOf(args)
	if name == "" {
		p, err := parseArgs(args, nil)
		if err == nil && p.isSet("version") {
			return inv.runCommand(findCommand("version"), rest)
		}
		if err != nil {
			fmt.Fprintf(stderr, "%s\n\n", err)
		}
		fmt.Fprint(stdout, Usage())
		if err == nil && p.isSet("help") {
			return ExitOK
		}
		return exitUsageNoArgs
	}
	if c := findCommand(name); c != nil {
		return inv.runCommand(c, rest)
	}
	if unimplemented[name] {
		fmt.Fprintf(stderr, "%s: the fake does not implement \"multipass %s\"; it answers %s\n",
			fakeErrorCommand, name, strings.Join(commandNames(), ", "))
		return ExitCommandLine
	}
	// src/client/cli/argparser.cpp prints this on stdout.
	fmt.Fprintf(stdout, "Error: Unknown command or alias '%s' (try \"multipass help\" or \"multipass aliases\")\n", name)
	return ExitCommandLine
}

func findCommand(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

func commandNames() []string {
	var names []string
	for _, c := range commands {
		names = append(names, c.name)
	}
	sort.Strings(names)
	return names
}

func (inv *invocation) runCommand(c *command, args []string) int {
	p, err := parseArgs(args, c.options)
	if err != nil {
		fmt.Fprintln(inv.stderr, err)
		return ExitCommandLine
	}
	if p.isSet("help") {
		fmt.Fprint(inv.stdout, commandHelp(c))
		return ExitOK
	}
	return c.run(inv, p)
}

// commandHelp is a short help text of one command (the real one lists every option).
func commandHelp(c *command) string {
	return fmt.Sprintf("Usage: multipass %s\n%s.\n\nThis is multipass-fake, a stand-in for tests and demos; "+
		"run it without arguments to see how it is configured.\n", c.usage, c.shortHelp)
}

// Usage is the fake's general help: the commands it answers and the environment variables that
// configure it. Run prints it on stdout when called without a command (exit 2, like multipass) or with
// --help alone (exit 0).
func Usage() string {
	var b strings.Builder
	b.WriteString("Usage: multipass [options] <command>\n")
	b.WriteString("multipass-fake: a stand-in for the `multipass` command line (Multipass " + Version + ")\n")
	b.WriteString("for tests and demos. It answers multipass's own arguments with the real JSON shapes,\n")
	b.WriteString("messages and exit codes, and keeps its instances in a state file instead of VMs.\n\n")
	b.WriteString("Options:\n  -h, --help     Display this help\n  -v, --verbose  Increase logging verbosity (ignored)\n\n")
	b.WriteString("Available commands:\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-8s  %s\n", c.name, c.shortHelp)
	}
	b.WriteString("\nEnvironment:\n")
	for _, e := range [][2]string{
		{EnvDir, "state folder (created if missing; required by every command but version)"},
		{EnvNetworks, "comma-separated host interfaces, e.g. en0,bridge (default none);\n    the first one is what --bridged uses"},
		{EnvLaunchSeconds, "how long a launch takes, in seconds (default 1); the instance becomes\n    Running then even if the launching process was killed"},
		{EnvFailLaunch, "comma-separated instance names (or *) whose launch fails, leaving no instance"},
		{EnvDaemonDown, "1: commands fail as when multipassd does not answer"},
		{EnvLog, "file to which each invocation appends {\"args\": [...], \"stdin\": \"...\"}"},
	} {
		fmt.Fprintf(&b, "  %s\n    %s\n", e[0], e[1])
	}
	return b.String()
}

// readStdin reads all of stdin once and remembers it for the log line.
func (inv *invocation) readStdin() (string, error) {
	if inv.stdinRead != nil {
		return *inv.stdinRead, nil
	}
	var b []byte
	var err error
	if inv.stdin != nil {
		b, err = io.ReadAll(inv.stdin)
	}
	s := string(b)
	inv.stdinRead = &s
	return s, err
}

// logLine is one line of MULTIPASS_FAKE_LOG.
type logLine struct {
	Args  []string `json:"args"`
	Stdin *string  `json:"stdin,omitempty"`
}

// log appends the invocation's line to MULTIPASS_FAKE_LOG once (launch logs before it waits, so that a
// killed launch is logged too). The line is written with one write on a file opened for appending, so
// lines of concurrent invocations do not interleave.
func (inv *invocation) log() {
	if inv.logged || inv.env.LogPath == "" {
		return
	}
	inv.logged = true
	args := inv.args
	if args == nil {
		args = []string{}
	}
	b, err := json.Marshal(logLine{Args: args, Stdin: inv.stdinRead})
	if err == nil {
		var f *os.File
		f, err = os.OpenFile(inv.env.LogPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err == nil {
			_, err = f.Write(append(b, '\n'))
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
	}
	if err != nil {
		fmt.Fprintf(inv.stderr, "%s: %s: %v\n", fakeErrorCommand, EnvLog, err)
	}
}

// errDaemonDown is the failure multipass reports when multipassd's socket does not answer
// (include/multipass/cli/command.h, Command::dispatch: a NOT_FOUND status, hence exit 2 through
// standard_failure_handler_for in src/client/common/client_common.cpp).
var errDaemonDown = errors.New("cannot connect to the multipass socket")

// fail prints "<command> failed: <message>" and the optional details on stderr, as
// standard_failure_handler_for (src/client/common/client_common.cpp) does, and returns exit 2.
func (inv *invocation) fail(cmd, message, details string) int {
	fmt.Fprintf(inv.stderr, "%s failed: %s\n", cmd, message)
	if details != "" {
		fmt.Fprintln(inv.stderr, details)
	}
	return ExitCommandFail
}

// daemonDown fails the command as multipass does when its daemon does not answer (MULTIPASS_FAKE_DAEMON_DOWN);
// down is false when the daemon answers.
func (inv *invocation) daemonDown(cmd string) (code int, down bool) {
	if inv.env.DaemonDown {
		return inv.fail(cmd, errDaemonDown.Error(), ""), true
	}
	return 0, false
}

// update runs fn on the state under its lock; an error of the fake itself (state folder unset or
// unreadable) is reported as a failure of cmd.
func (inv *invocation) update(cmd string, fn func(s *store) (bool, error)) (int, bool) {
	if err := update(inv.env.Dir, fn); err != nil {
		var de daemonError
		if errors.As(err, &de) {
			return inv.fail(cmd, de.message, de.details), false
		}
		return inv.fail(cmd, fakeErrorCommand+": "+err.Error(), ""), false
	}
	return ExitOK, true
}

// daemonError is a refusal of the daemon: its status message and the client's details line.
type daemonError struct{ message, details string }

func (e daemonError) Error() string { return e.message }

// missingInstances is the daemon's answer when names are not instances (src/daemon/daemon.cpp,
// require_existing_instances_reaction and grpc_status_for): one line per missing name.
func missingInstances(names []string) daemonError {
	var lines []string
	for _, n := range names {
		lines = append(lines, fmt.Sprintf("instance \"%s\" does not exist", n))
	}
	return daemonError{message: "The following errors occurred:\n" + strings.Join(lines, "\n")}
}
