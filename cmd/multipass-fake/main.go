// Command multipass-fake is a stand-in for the `multipass` command line, for tests and demos of cdkx's
// Multipass provider where no Multipass can run: put it on PATH as `multipass` (or point MULTIPASS_BIN at
// it) and it answers multipass's own arguments — version, launch, info, list, networks, delete, purge —
// with the JSON shapes, messages and exit codes of Multipass 1.16.3, keeping its instances in a state
// file (package fakemp has the details).
//
// Environment:
//
//	MULTIPASS_FAKE_DIR             state folder (created if missing; safe under concurrent invocations)
//	MULTIPASS_FAKE_NETWORKS        comma-separated host interfaces, e.g. en0,bridge (default none)
//	MULTIPASS_FAKE_LAUNCH_SECONDS  how long a launch takes (float seconds, default 1)
//	MULTIPASS_FAKE_FAIL_LAUNCH     comma-separated instance names (or *) whose launch fails
//	MULTIPASS_FAKE_DAEMON_DOWN     1: commands fail as when multipassd does not answer
//	MULTIPASS_FAKE_LOG             file to which each invocation appends {"args": [...], "stdin": "..."}
//
// Called without arguments it prints this usage (exit 2, as multipass does); with --help, exit 0.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/cdkx-dev/cdkx/cmd/multipass-fake/internal/fakemp"
)

func main() {
	env, err := fakemp.EnvFrom(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "multipass-fake:", err)
		os.Exit(1) //nolint:forbidigo // a main package of its own; only main exits
	}
	code := fakemp.Run(context.Background(), env, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	os.Exit(code) //nolint:forbidigo // a main package of its own; only main exits
}
