package server

import (
	"errors"
	"fmt"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/internal/server"
	"github.com/spf13/cobra"
)

func newCmdToken(f *cli.Factory, opts *Options) *cobra.Command {
	cmd := &cobra.Command{Use: "token", Short: "Create or revoke API tokens of the state service"}
	cmd.AddCommand(&cobra.Command{
		Use:   "create NAME",
		Short: "Create an API token and print it (only once; the server keeps only its SHA-256)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.DatabaseURL == "" {
				opts.DatabaseURL = f.Getenv("CDKX_DATABASE_URL")
			}
			srv, err := openServer(cmd.Context(), opts, nil)
			if err != nil {
				return err
			}
			defer srv.Close()
			tok, err := srv.CreateToken(cmd.Context(), args[0])
			if errors.Is(err, server.ErrTokenExists) {
				return fmt.Errorf("a token named %q exists; revoke it first or choose another name", args[0])
			}
			if err != nil {
				return err
			}
			fmt.Fprintln(f.IO.Out, tok)
			return nil
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "revoke NAME",
		Short: "Revoke the API token named NAME",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.DatabaseURL == "" {
				opts.DatabaseURL = f.Getenv("CDKX_DATABASE_URL")
			}
			srv, err := openServer(cmd.Context(), opts, nil)
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
