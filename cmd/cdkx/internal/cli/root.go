package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// EnvironmentHelp documents the environment variables cdkx reads (`cdkx help environment`). A test checks
// that every variable the code reads is here.
const EnvironmentHelp = `Flags win over the environment, and the environment over cdkx.json. The global flags and the
confirmation flags can be set as CDKX_ followed by the flag's name in upper case, dashes as
underscores (--lock-timeout: CDKX_LOCK_TIMEOUT); other flags only on the command line.

Global flags:
  CDKX_APP               cloud assembly directory (--app; default: "output" of cdkx.json, else
                         cdkx.out)
  CDKX_STATE             state location (--state): a SQLite path (default .cdkx/state.db), a
                         postgres:// URL or a state service https://host
  CDKX_CONCURRENCY       provider calls in flight at once (--concurrency; default 10)
  CDKX_CONCURRENCY_<PROVIDER>  calls in flight to one provider, e.g. CDKX_CONCURRENCY_RABBITMQ=2
                         (default: the provider's own limit, rabbitmq 4, hetzner 50, multipass
                         2; within --concurrency; also "concurrency" in cdkx.json)
  CDKX_MAX_BODY_<PROVIDER>  cap on one answer of an HTTP provider, e.g. CDKX_MAX_BODY_POWERDNS=64MiB
                         (default 32MiB)
  CDKX_CALL_TIMEOUT_<PROVIDER>  longest HTTP call, retries included (default 5m)
  CDKX_RESPONSE_TIMEOUT_<PROVIDER>  longest wait for an answer's headers (default 60s)
  CDKX_BODY_TIMEOUT_<PROVIDER>  longest read of an answer's body (default 60s)
  CDKX_LOCK_TIMEOUT      how long to wait for a locked stack, e.g. 5m (--lock-timeout; default 0)
  CDKX_JSON              JSON on stdout instead of tables (--json)
  CDKX_NO_COLOR          no colours (--no-color)
  CDKX_VERBOSE           print warnings and notes (--verbose)

Deploy and destroy:
  CDKX_REQUIRE_APPROVAL  which plans ask before they run: never, destructive (default) or any
                         (--require-approval; also "requireApproval" in cdkx.json)
  CDKX_YES               answer yes to the confirmation (--yes); CDKX_AUTO_APPROVE is the same
  CDKX_SHOW_UNCHANGED    list unchanged resources in the event table, not only count them
                         (--show-unchanged)
  CDKX_SECRETS_PASSPHRASE  encrypts the sensitive (write-only) values of deployment snapshots that
                         run later (deploy --propose, --no-wait) and opens them to run (deployments
                         approve --run, deployments run, agent); never stored

State service (--state https://host):
  CDKX_TOKEN             API token, from cdkx server token create; never logged
  CDKX_ORG               organization (default: the service's default organization)
  CDKX_PROJECT           project (default: the name of the working directory)

cdkx server:
  CDKX_DATABASE_URL      the PostgreSQL URL of its store (--database-url)
  CDKX_SERVER_SECRETS_KEY  base64 of 32 random bytes: the key of the service secrets provider
                         (--secrets-key-file holds the same)

Terminal:
  NO_COLOR               no colours, as https://no-color.org says
  CLICOLOR_FORCE         colours even when stderr is not a terminal
  TERM                   "dumb": no colours
  CI                     when set: no prompts, no live rendering (plain rows, RFC3339 times)

Go runtime:
  GOGC                   the collector's heap growth in percent before it runs again (Go's default
                         100; cdkx diff uses 200 when GOGC is unset: faster, a little more memory)
  GOMEMLIMIT             a soft limit on the process's memory, e.g. 500MiB (Go's default: none):
                         the collector runs more often near it (a 100,000-resource deploy peaks
                         at ~600 MB instead of ~900 MB, for ~10% more CPU); keep it above the
                         run's live heap, or the collector runs all the time

Providers:
  PDNS_API_URL           PowerDNS web server, e.g. http://127.0.0.1:8081
  PDNS_API_KEY           PowerDNS API key (the api-key of pdns.conf); never logged
  PDNS_SERVER_ID         PowerDNS server id (default localhost)
  RABBITMQ_API_URL       RabbitMQ management API, e.g. http://127.0.0.1:15672
  RABBITMQ_USERNAME      RabbitMQ management user (with the administrator tag)
  RABBITMQ_PASSWORD      its password; never logged
  HCLOUD_TOKEN           Hetzner Cloud API token of the project; never logged
  HCLOUD_ENDPOINT        Hetzner Cloud API base URL (default https://api.hetzner.cloud/v1)
  HCLOUD_POLL_INTERVAL   first wait between polls of a Hetzner action (default 100ms, doubling to
                         50×)
  HCLOUD_ACTION_TIMEOUT  longest wait for one Hetzner action (default 10m)
  MULTIPASS_BIN          the multipass command, a path or a name on PATH (default multipass)`

// Build describes the running binary: its version (for a "dev" build, the module version go install
// recorded, when there is one), the VCS revision it was built from ("unknown" when none was recorded),
// the Go version (e.g. "go1.26.8") and the platform ("linux/amd64"). The JSON keys are those of
// `cdkx version --json`.
type Build struct {
	Version  string `json:"version"`
	Revision string `json:"revision"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

// BuildOf returns the Build of this binary, whose version is version (main.Version).
func BuildOf(version string) Build {
	b := Build{Version: version, Revision: "unknown", Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			b.Version = bi.Main.Version // go install …/cmd/cdkx@v1.2.3 sets no -ldflags, but records the module version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				b.Revision = s.Value
			}
		}
	}
	return b
}

// String is what `cdkx version` and `cdkx --version` print, e.g.
// "cdkx v1.2.0 (revision 4d0df5e…, go1.26.8, linux/amd64)".
func (b Build) String() string {
	return fmt.Sprintf("cdkx %s (revision %s, %s, %s)", b.Version, b.Revision, b.Go, b.Platform)
}

// VersionLine is BuildOf(version).String(): what `cdkx version` and `cdkx --version` print.
func VersionLine(version string) string {
	return BuildOf(version).String()
}

// NewRootCmd returns the cdkx command with the global flags; commands are added by the caller.
func NewRootCmd(version string) *cobra.Command {
	root := &cobra.Command{
		Use:   "cdkx",
		Short: "Deploy cloud assemblies: fast, safe and honest in CI",
		Long: `cdkx deploys the cloud assembly a CDK-style app synthesizes (cdkx.out/) to real provider APIs,
in dependency order, recording state after every step. "cdkx help environment" lists the
environment variables it reads.`,
		Example: `  cdkx validate --app testdata/examples/dns/cdkx.out
  cdkx diff --app testdata/examples/dns/cdkx.out
  cdkx deploy --app testdata/examples/dns/cdkx.out
  cdkx outputs App.WwwFqdn --raw`,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// The same line as `cdkx version` (a version never holds a template's "{{").
	root.SetVersionTemplate(VersionLine(version) + "\n")
	// Flag descriptions wrap at 100 columns, as the help texts do.
	root.SetUsageTemplate(strings.NewReplacer(".LocalFlags.FlagUsages", "(.LocalFlags.FlagUsagesWrapped 100)",
		".InheritedFlags.FlagUsages", "(.InheritedFlags.FlagUsagesWrapped 100)").Replace(root.UsageTemplate()))
	AddGlobalFlags(root.PersistentFlags())
	root.AddCommand(&cobra.Command{Use: "environment", Short: "Environment variables cdkx reads", Long: EnvironmentHelp})
	return root
}
