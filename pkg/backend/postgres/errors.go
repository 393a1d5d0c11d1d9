package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// SQLSTATE codes the backend acts on (PostgreSQL's errcodes.txt).
const (
	codeUniqueViolation      = "23505"
	codeReadOnlyTransaction  = "25006"
	codeInvalidAuthorization = "28000"
	codeInvalidPassword      = "28P01"
	codeInvalidCatalogName   = "3D000"
	codeInvalidSchemaName    = "3F000"
	codeSerializationFailure = "40001"
	codeDeadlockDetected     = "40P01"
	codeInsufficientPrivs    = "42501"
	codeUndefinedTable       = "42P01"
	codeDiskFull             = "53100"
	codeTooManyConnections   = "53300"
	codeAdminShutdown        = "57P01"
	codeCrashShutdown        = "57P02"
	codeCannotConnectNow     = "57P03"
)

// pgCode returns the SQLSTATE of err when it is a server error, or "".
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// redactedError is an error whose message had a password masked; Unwrap still reaches the original.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redact returns err with every occurrence of password in its message masked. Passwords shorter than 4
// characters are left alone: masking them would mangle the message more than it hides.
func redact(err error, password string) error {
	if err == nil || len(password) < 4 || !strings.Contains(err.Error(), password) {
		return err
	}
	return &redactedError{msg: strings.ReplaceAll(err.Error(), password, "xxxxx"), err: err}
}

// parseError reports a URL that pgx cannot parse, without its password.
func parseError(raw string, err error) error {
	var password string
	if u, perr := url.Parse(raw); perr == nil && u.User != nil {
		password, _ = u.User.Password()
	}
	return fmt.Errorf("open state database: the PostgreSQL URL is not valid; write it as postgres://user:password@host:5432/database?sslmode=disable: %w",
		redact(err, password))
}

// openError turns a failure to connect to or migrate the database named where into an error that says
// what to do.
func openError(where string, c *pgconn.Config, err error) error {
	err = redact(err, c.Password)
	hint := connectHint(c, err)
	if errors.Is(err, errNoSchema) {
		hint = "no schema to create the state tables in: the schema named by search_path does not exist; create it (CREATE SCHEMA …) or fix search_path in the URL"
	}
	if hint == "" {
		switch pgCode(err) {
		case codeInvalidPassword:
			hint = fmt.Sprintf("password authentication failed for user %q; check the user and password in the URL (or PGPASSWORD, ~/.pgpass)", c.User)
		case codeInvalidAuthorization:
			hint = fmt.Sprintf("the server refused user %q (no such role, or no pg_hba.conf entry for this host, user and database); check the user in the URL or ask the database administrator to allow it", c.User)
		case codeInvalidCatalogName:
			hint = fmt.Sprintf("database %q does not exist; create it (createdb -h %s -p %d -U %s %s) or fix the database name in the URL",
				c.Database, c.Host, c.Port, c.User, c.Database)
		case codeInvalidSchemaName:
			hint = "no schema to create the state tables in: the schema named by search_path does not exist; create it (CREATE SCHEMA …) or fix search_path in the URL"
		case codeInsufficientPrivs:
			hint = fmt.Sprintf("user %q may not create the state tables; grant it CREATE on the schema, or run cdkx once as the database owner", c.User)
		case codeTooManyConnections:
			hint = "the server has no free connection slots; retry later, or lower pool_max_conns in the URL or raise the server's max_connections"
		case codeCannotConnectNow, codeAdminShutdown, codeCrashShutdown:
			hint = "the server is starting up or shutting down; retry in a moment"
		case codeReadOnlyTransaction:
			hint = "the server is a read-only standby; point the URL at the primary"
		}
	}
	if errors.Is(err, errNewerSchema) {
		return fmt.Errorf("open state database %s: %w", where, err)
	}
	if hint == "" {
		return fmt.Errorf("open state database %s: %w", where, err)
	}
	return fmt.Errorf("open state database %s: %s: %w", where, hint, err)
}

// connectHint says what to do about a failure to reach the server, or returns "" for other failures.
func connectHint(c *pgconn.Config, err error) string {
	addr := fmt.Sprintf("%s port %d", c.Host, c.Port)
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, context.Canceled):
		return ""
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ENOENT) && strings.HasPrefix(c.Host, "/"):
		return fmt.Sprintf("no PostgreSQL server is listening at %s; check the host and port in the URL, and start PostgreSQL if it is not running", addr)
	case errors.As(err, &dnsErr):
		return fmt.Sprintf("cannot resolve host %q; check the host in the URL", c.Host)
	case pgconn.Timeout(err), errors.Is(err, context.DeadlineExceeded), isNetTimeout(err):
		return fmt.Sprintf("no answer from %s within %s; check the host, port and firewall, or raise connect_timeout in the URL", addr, c.ConnectTimeout)
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return fmt.Sprintf("cannot reach %s; check the host in the URL and the network", addr)
	}
	return ""
}

func isNetTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// dbError wraps a failure of op (e.g. `commit to stack "web"`) on the database named where, adding a
// hint for the failures a user can act on.
func dbError(where, op string, err error) error {
	switch pgCode(err) {
	case codeReadOnlyTransaction:
		return fmt.Errorf("%s: state database %s is a read-only standby; point the URL at the primary: %w", op, where, err)
	case codeDiskFull:
		return fmt.Errorf("%s: state database %s: the server's disk is full; free some space: %w", op, where, err)
	case codeAdminShutdown, codeCrashShutdown, codeCannotConnectNow:
		return fmt.Errorf("%s: state database %s is shutting down or restarting; retry when it is back: %w", op, where, err)
	case codeSerializationFailure, codeDeadlockDetected:
		return fmt.Errorf("%s: state database %s: still conflicting with concurrent writers after %d attempts; retry: %w", op, where, maxAttempts, err)
	case codeUndefinedTable:
		return fmt.Errorf("%s: state database %s has no state tables (was the schema dropped?); run cdkx again to recreate them: %w", op, where, err)
	case codeInsufficientPrivs:
		return fmt.Errorf("%s: state database %s: permission denied; grant the user access to the state tables: %w", op, where, err)
	case "":
		if errors.Is(err, errClosed) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("%s: %w", op, err)
		}
		var ne net.Error
		if pgconn.Timeout(err) || errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) ||
			errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
			return fmt.Errorf("%s: lost the connection to state database %s; check that PostgreSQL is running and reachable, then retry: %w", op, where, err)
		}
	}
	return fmt.Errorf("%s: %w", op, err)
}
