// Package version implements `cdkx version`.
package version

import (
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/view"
)

// Options are the inputs of one `cdkx version`.
type Options struct {
	F *cli.Factory
	// JSON prints the build as one JSON object (--json, CDKX_JSON) instead of the line.
	JSON bool
}

// NewCmdVersion returns the version command: cdkx's version, the VCS revision it was built from and the Go
// version, the same line as `cdkx --version` (cli.VersionLine), or with --json the same as a JSON object
// (cli.Build); runF replaces versionRun in tests. It reads no cdkx.json: only --json and CDKX_JSON.
func NewCmdVersion(f *cli.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{F: f}
	return &cobra.Command{
		Use:   "version",
		Short: "Print the cdkx version",
		Long: "Version prints cdkx's version, the VCS revision it was built from, the Go version and the platform,\n" +
			"the same line as cdkx --version. With --json: {\"version\", \"revision\", \"go\", \"platform\"}.",
		Example: "  cdkx version\n  cdkx version --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.JSON = jsonFlag(cmd, f.Getenv)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return versionRun(opts)
		},
	}
}

// jsonFlag returns --json, or when it was not given CDKX_JSON read as strconv.ParseBool reads it (anything
// else is false, as for the other commands, whose viper reads it so).
func jsonFlag(cmd *cobra.Command, getenv func(string) string) bool {
	if fl := cmd.Flags().Lookup("json"); fl != nil && fl.Changed {
		return fl.Value.String() == "true"
	}
	b, _ := strconv.ParseBool(getenv("CDKX_JSON"))
	return b
}

func versionRun(opts *Options) error {
	b := cli.BuildOf(opts.F.Version)
	if opts.JSON {
		return view.JSONEncoder(opts.F.IO.Out).Encode(b)
	}
	_, err := fmt.Fprintln(opts.F.IO.Out, b)
	return err
}
