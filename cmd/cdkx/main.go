// Command cdkx deploys cloud assemblies to real provider APIs.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/agent"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cancel"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/console"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/deploy"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/deployments"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/destroy"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/diff"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/importcmd"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/list"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/outputs"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/refresh"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/server"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/statecmd"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/unlock"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/validate"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/version"
)

// Version is set at build time by -ldflags "-X main.Version=…" (goreleaser).
var Version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C ends the process at once
	}()
	code := run(ctx)
	stop()
	os.Exit(code)
}

func run(ctx context.Context) int {
	f := cli.New(Version)
	root := newRoot(f)
	err := cli.Execute(ctx, root)
	cli.PrintError(f.IO.ErrOut, err)
	return cli.ExitCode(err)
}

// newRoot returns the cdkx command with every subcommand, on the factory f.
func newRoot(f *cli.Factory) *cobra.Command {
	root := cli.NewRootCmd(f.Version)
	// Before any command runs: a misspelt cdkx.json key would otherwise be ignored in silence.
	root.PersistentPreRun = func(cmd *cobra.Command, _ []string) {
		switch cmd.Name() {
		case "help", "version", "completion", "environment": // they read no cdkx.json
		default:
			cli.PrintConfigWarnings(f.IO.ErrOut)
		}
	}
	root.AddCommand(
		cancel.NewCmdCancel(f, nil),
		console.NewCmdConsole(f, nil),
		deploy.NewCmdDeploy(f, nil),
		diff.NewCmdDiff(f, nil),
		destroy.NewCmdDestroy(f, nil),
		list.NewCmdList(f, nil),
		outputs.NewCmdOutputs(f, nil),
		refresh.NewCmdRefresh(f, nil),
		deployments.NewCmdDeployments(f),
		deployments.NewCmdList(f, "history"),
		agent.NewCmdAgent(f, nil),
		importcmd.NewCmdImport(f, nil),
		server.NewCmdServer(f, nil),
		statecmd.NewCmdState(f),
		unlock.NewCmdUnlock(f, nil),
		validate.NewCmdValidate(f, nil),
		version.NewCmdVersion(f, nil),
	)
	return root
}
