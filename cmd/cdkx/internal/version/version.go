// Package version implements `cdkx version`.
package version

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
)

// NewCmdVersion returns the version command: cdkx's version, the VCS revision it was built from and the Go
// version, the same line as `cdkx --version` (cli.VersionLine).
func NewCmdVersion(f *cli.Factory) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the cdkx version",
		Long:    "Version prints cdkx's version, the VCS revision it was built from, the Go version and the platform,\nthe same line as cdkx --version.",
		Example: "  cdkx version",
		Args:    cobra.NoArgs,
		Run: func(*cobra.Command, []string) {
			fmt.Fprintln(f.IO.Out, cli.VersionLine(f.Version))
		},
	}
}
