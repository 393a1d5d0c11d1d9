// Package version implements `cdkx version`.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
)

// NewCmdVersion returns the version command: cdkx's version, the VCS revision it was built from and the Go
// version.
func NewCmdVersion(f *cli.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the cdkx version",
		Args:  cobra.NoArgs,
		Run: func(*cobra.Command, []string) {
			rev := "unknown"
			if bi, ok := debug.ReadBuildInfo(); ok {
				for _, s := range bi.Settings {
					if s.Key == "vcs.revision" {
						rev = s.Value
					}
				}
			}
			fmt.Fprintf(f.IO.Out, "cdkx %s (revision %s, %s, %s/%s)\n", f.Version, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		},
	}
}
