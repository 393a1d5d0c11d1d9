package server

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/internal/server"
	"github.com/spf13/cobra"
)

// TokenOptions are the inputs of `cdkx server token create`.
type TokenOptions struct {
	Name string
	// Orgs are the --org values: the organizations the token reaches ("*": every one); none: the
	// server's default organization.
	Orgs     []string
	ReadOnly bool
}

// tokenOptions returns the server's options for o; defaultOrg is the server's default organization.
func (o TokenOptions) tokenOptions(defaultOrg string) []server.TokenOption {
	orgs := o.Orgs
	if len(orgs) == 0 {
		orgs = []string{defaultOrg}
	}
	opts := []server.TokenOption{server.ForOrgs(orgs...)}
	if o.ReadOnly {
		opts = append(opts, server.ReadOnly())
	}
	return opts
}

func newCmdToken(f *cli.Factory, opts *Options) *cobra.Command {
	cmd := &cobra.Command{Use: "token", Short: "Create, list or revoke API tokens of the state service",
		Example: "  cdkx server token create ci --org web\n  cdkx server token list\n  cdkx server token revoke ci"}
	var topts TokenOptions
	create := &cobra.Command{
		Use:   "create NAME [--org ORG]… [--read-only]",
		Short: "Create an API token and print it (only once; the server keeps only its SHA-256)",
		Long: `Create issues an API token named NAME and prints it; the server keeps only its SHA-256, so this is
the one time it can be read. The name is recorded as the author of the updates and deployments the
token makes.

A token reaches only its organizations: every request about another one is answered 403, and GET
/api/user (pulumi whoami, pulumi login) and the stack lists show only its organizations. --org names
one (repeat it for several); --org '*' reaches every organization, those created later included;
without --org the token reaches the server's default organization only ("organization").

--read-only makes a token that reads: stacks, exports (any version), history, locks, deployments and
their events, and the decrypt endpoints (reading a stack includes its secrets: pulumi stack output
--show-secrets). Everything else it sends is answered 403: creating, updating, importing, renaming,
tagging or deleting stacks, previews (a preview takes the stack's lock), encrypt, and every
deployment queue change (create, claim, approve, abort, finish).

Tokens created before scopes existed reach every organization and may write.`,
		Example: "  cdkx server token create ci --org web\n  cdkx server token create auditor --org '*' --read-only",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			topts.Name = args[0]
			srv, err := openTokenServer(cmd, f, opts)
			if err != nil {
				return err
			}
			defer srv.Close()
			tok, err := srv.CreateToken(cmd.Context(), topts.Name, topts.tokenOptions(srv.DefaultOrganization())...)
			if errors.Is(err, server.ErrTokenExists) {
				return fmt.Errorf("a token named %q exists; revoke it first or choose another name", topts.Name)
			}
			if err != nil {
				return err
			}
			fmt.Fprintln(f.IO.Out, tok)
			return nil
		},
	}
	create.Flags().StringArrayVar(&topts.Orgs, "org", nil, "organization the token reaches (repeatable; '*': every organization; default: the server's default organization)")
	create.Flags().BoolVar(&topts.ReadOnly, "read-only", false, "the token may only read (GET requests and decrypt); every other request is refused")
	cmd.AddCommand(create)
	cmd.AddCommand(&cobra.Command{
		Use:     "list",
		Short:   "List the API tokens: name, organizations, access and creation time (never the tokens)",
		Example: "  cdkx server token list",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			srv, err := openTokenServer(cmd, f, opts)
			if err != nil {
				return err
			}
			defer srv.Close()
			tokens, err := srv.Tokens(cmd.Context())
			if err != nil {
				return err
			}
			return writeTokens(f, tokens)
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:     "revoke NAME",
		Short:   "Revoke the API token named NAME",
		Example: "  cdkx server token revoke ci",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			srv, err := openTokenServer(cmd, f, opts)
			if err != nil {
				return err
			}
			defer srv.Close()
			if err := srv.RevokeToken(cmd.Context(), args[0]); err != nil {
				if errors.Is(err, server.ErrTokenNotFound) {
					return fmt.Errorf("no token is named %q", args[0])
				}
				return err
			}
			fmt.Fprintf(f.IO.ErrOut, "revoked token %q\n", args[0])
			return nil
		},
	})
	return cmd
}

// openTokenServer opens the server's database for a token command (--database-url, else
// CDKX_DATABASE_URL).
func openTokenServer(cmd *cobra.Command, f *cli.Factory, opts *Options) (*server.Server, error) {
	if opts.DatabaseURL == "" {
		opts.DatabaseURL = f.Getenv("CDKX_DATABASE_URL")
	}
	return openServer(cmd.Context(), opts, nil)
}

// writeTokens prints tokens as a table: NAME, ORGS ('*': every organization), ACCESS (read-write or
// read-only) and CREATED (RFC 3339, UTC).
func writeTokens(f *cli.Factory, tokens []server.TokenInfo) error {
	w := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tORGS\tACCESS\tCREATED")
	for _, t := range tokens {
		access := "read-write"
		if t.ReadOnly {
			access = "read-only"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", t.Name, strings.Join(t.Orgs, ","), access, t.CreatedAt.UTC().Format(time.RFC3339))
	}
	return w.Flush()
}
