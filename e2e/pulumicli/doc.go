// Package pulumicli runs the real Pulumi CLI against `cdkx server`, with Pulumi's own file backend as the
// control: one script of CLI commands (login, stacks, config and secrets, preview, up, refresh, destroy,
// export and import, history, tags, cancel, two concurrent updates) runs against each backend, and each
// command's exit code and the key parts of its output must agree.
//
// It is a module of its own so that the Pulumi CLI's dependencies stay out of cdkx's go.mod. The tests run
// on Linux (they reap what the CLI leaves running through /proc and PR_SET_CHILD_SUBREAPER) and need the
// e2e build tag and PostgreSQL (scripts/test.sh runs them):
//
//	export CDKX_TEST_POSTGRES_URL=$(bash scripts/pg-up.sh /tmp/pg-e2e | tail -n 1)
//	cd e2e/pulumicli && go test -tags e2e -timeout 40m -v ./...
//
// The first run builds the Pulumi CLI v3.259.0 and pulumi-language-yaml v1.38.0 from the Go module proxy
// (about 10 minutes on 2 cores) into the user's cache directory (see pulumiBinaries); later runs reuse them.
package pulumicli
