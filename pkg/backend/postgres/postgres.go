// Package postgres keeps cdkx state in a PostgreSQL database shared by a team or a CI fleet.
//
// Open takes a URL such as postgres://user:password@db.example.org:5432/cdkx?sslmode=require (the
// scheme postgresql:// works too). Anything the pgx driver accepts in the URL applies: sslmode and the
// other libpq parameters, connect_timeout (10 s when absent), pool_max_conns (default: the greater of
// 4 and the number of CPUs), search_path to keep cdkx's tables in a schema of their own (the schema
// must exist), default_query_exec_mode=exec behind a transaction-pooling proxy such as PgBouncer, and
// the PG* environment variables and ~/.pgpass for what the URL leaves out. Errors name the server as
// postgres://user@host:port/database, never with the password.
//
// Schema: the same migrations as the SQLite backend (portable SQL: TEXT and BIGINT columns, JSON as
// TEXT, times as BIGINT Unix nanoseconds in UTC), applied with goose at Open under a PostgreSQL
// advisory lock, so that cdkx processes opening a new database at once migrate it one after the other.
// Both backends report the same schema version; a database migrated by a newer cdkx is refused.
//
// Durability and concurrency: every Commit is one transaction, committed (and fsynced by PostgreSQL)
// before Commit returns. Concurrent Commits of one process are written together (group commit): each
// group is one pipelined batch on one connection, one round trip and one WAL flush for all of them.
// Commits to one stack from several processes serialize on the stack's row lock, so versions stay
// contiguous and no update is lost; conflicts that PostgreSQL resolves by aborting a transaction
// (deadlock, serialization failure) are retried. Reads run on a connection pool and never wait for
// writers. Statements are prepared once per connection by pgx.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/backend/internal/commitqueue"
	"github.com/cdkx-dev/cdkx/pkg/backend/internal/sqlstore"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

// DefaultConnectTimeout bounds each connection attempt when the URL has no connect_timeout.
const DefaultConnectTimeout = 10 * time.Second

// CommitTimeout bounds the writing of one group of Commits, retries included. Once a group is sent it is
// not tied to any caller's context, so this is what keeps an unreachable server from blocking Commit
// forever.
const CommitTimeout = 60 * time.Second

// errClosed is returned by methods called after Close.
var errClosed = commitqueue.ErrClosed

// Backend is a state.Backend on one PostgreSQL database (or one schema of it, with search_path). It is
// safe for concurrent use, and several processes may use one database at once; see the package
// documentation.
type Backend struct {
	// where names the database in errors: postgres://user@host:port/database, without the password.
	where string
	pool  *pgxpool.Pool
	// queue groups concurrent Commits into shared transactions.
	queue commitqueue.Queue
	// Store is the deployment queue, the locks and the stack reads, over dialect.
	sqlstore.Store

	closed    atomic.Bool
	closeOnce sync.Once
}

var _ state.Backend = (*Backend)(nil)

// SetPolicy sets the approval policy the deployment queue enforces from now on (state.CheckCreate,
// state.CheckTransition): the project's cdkx.json "approval" settings. The zero Policy is the default.
// Call it before the backend is shared.
func (b *Backend) SetPolicy(p state.Policy) { b.Policy = p }

// Open connects to the PostgreSQL database at url, applies any pending schema migrations and returns
// the backend. Errors name the server and database (never the password) and say what to do: when the
// URL does not parse, the server is not reachable, authentication fails, the database does not exist,
// the user may not create tables, or the schema was written by a newer cdkx.
func Open(ctx context.Context, url string) (*Backend, error) {
	if url == "" {
		return nil, errors.New("open state database: empty PostgreSQL URL; pass one such as postgres://user@host:5432/cdkx")
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, parseError(url, err)
	}
	cc := cfg.ConnConfig
	if cc.ConnectTimeout == 0 {
		cc.ConnectTimeout = DefaultConnectTimeout
	}
	if _, ok := cc.RuntimeParams["application_name"]; !ok {
		cc.RuntimeParams["application_name"] = "cdkx"
	}
	b := &Backend{where: describe(&cc.Config)}
	b.Store = sqlstore.Store{D: dialect{b}, Now: time.Now}
	b.queue.Write, b.queue.Replayable = b.writeTx, rolledBack

	b.pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, openError(b.where, &cc.Config, err)
	}
	if err := b.pool.Ping(ctx); err != nil {
		b.pool.Close()
		return nil, openError(b.where, &cc.Config, err)
	}
	if err := migrate(ctx, b.pool, cc); err != nil {
		b.pool.Close()
		return nil, openError(b.where, &cc.Config, err)
	}
	return b, nil
}

// Location returns the database as postgres://user@host:port/database, without the password.
func (b *Backend) Location() string { return b.where }

// Close waits for the Commits already queued, then closes the connection pool. Close is idempotent;
// methods called after Close fail.
func (b *Backend) Close() error {
	b.closeOnce.Do(func() {
		b.closed.Store(true)
		b.queue.Close()
		b.pool.Close()
	})
	return nil
}

// checkOpen returns errClosed, wrapped with op, after Close.
func (b *Backend) checkOpen(op string) error {
	if b.closed.Load() {
		return fmt.Errorf("%s: %w", op, errClosed)
	}
	return nil
}

// describe renders the database of c as postgres://user@host:port/database.
func describe(c *pgconn.Config) string {
	host := c.Host
	if strings.HasPrefix(host, "/") {
		return fmt.Sprintf("postgres://%s@/%s?host=%s", c.User, c.Database, host)
	}
	return fmt.Sprintf("postgres://%s@%s/%s", c.User, net.JoinHostPort(host, strconv.Itoa(int(c.Port))), c.Database)
}
