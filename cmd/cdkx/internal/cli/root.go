package cli

import (
	"github.com/spf13/cobra"
)

// EnvironmentHelp documents the environment variables cdkx reads (`cdkx help environment`).
const EnvironmentHelp = `Every flag can be set through an environment variable: CDKX_ followed by the flag name in
upper case with dashes as underscores. Flags win over the environment.

  CDKX_APP            cloud assembly directory (--app; default "output" of cdkx.json, else cdkx.out)
  CDKX_STATE          state location (--state): a SQLite path (default .cdkx/state.db) or postgres://…
  CDKX_DATABASE_URL   cdkx server: the PostgreSQL URL of its store (--database-url)
  CDKX_CONCURRENCY    provider calls in flight at once (--concurrency; default 10)
  CDKX_LOCK_TIMEOUT   how long to wait for a locked stack, e.g. 5m (--lock-timeout; default 0)
  CDKX_JSON           JSON lines on stdout (--json)
  CDKX_NO_COLOR       no colours (--no-color)
  NO_COLOR            no colours, as https://no-color.org says
  CDKX_SECRETS_PASSPHRASE  encrypts the sensitive (write-only) values of deployment snapshots that run
                      later (deploy --propose, --no-wait) and opens them to run (approve --run, run,
                      agent); never stored
  CLICOLOR_FORCE      colours even when stderr is not a terminal
  CI                  when set: no prompts, no live rendering (plain rows, RFC3339 times)

Providers:
  PDNS_API_URL        PowerDNS web server, e.g. http://127.0.0.1:8081
  PDNS_API_KEY        PowerDNS API key (the api-key of pdns.conf); never logged
  PDNS_SERVER_ID      PowerDNS server id (default localhost)
  RABBITMQ_API_URL    RabbitMQ management API, e.g. http://127.0.0.1:15672
  RABBITMQ_USERNAME   RabbitMQ management user
  RABBITMQ_PASSWORD   its password; never logged
  HCLOUD_TOKEN        Hetzner Cloud API token of the project; never logged
  HCLOUD_ENDPOINT     Hetzner Cloud API base URL (default https://api.hetzner.cloud/v1)
  HCLOUD_POLL_INTERVAL   first wait between polls of a Hetzner action (default 100ms, doubling to 50×)
  HCLOUD_ACTION_TIMEOUT  longest wait for one Hetzner action (default 10m)
  CDKX_CONCURRENCY_<PROVIDER>  calls in flight to one provider, e.g. CDKX_CONCURRENCY_RABBITMQ=2
                      (default: the provider's own limit, rabbitmq 4, hetzner 50; within --concurrency)`

// NewRootCmd returns the cdkx command with the global flags; commands are added by the caller.
func NewRootCmd(version string) *cobra.Command {
	root := &cobra.Command{
		Use:   "cdkx",
		Short: "Deploy cloud assemblies: fast, safe and honest in CI",
		Long: `cdkx deploys the cloud assembly a CDK-style app synthesizes (cdkx.out/) to real provider APIs,
in dependency order, recording state after every step.`,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	AddGlobalFlags(root.PersistentFlags())
	root.AddCommand(&cobra.Command{Use: "environment", Short: "Environment variables cdkx reads", Long: EnvironmentHelp})
	return root
}
