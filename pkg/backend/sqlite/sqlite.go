// Package sqlite keeps cdkx state in a local SQLite database file.
//
// The file (by default .cdkx/state.db) is opened with the pure-Go driver modernc.org/sqlite and migrated
// with goose at open. The schema (pkg/backend/internal/sqlschema, shared with the PostgreSQL backend) is portable
// SQL that PostgreSQL runs unchanged: TEXT and BIGINT columns only, JSON documents as TEXT, and every
// time as BIGINT Unix nanoseconds in UTC, where 0 stands for the zero time.Time.
//
// Durability: the database runs in WAL journal mode with synchronous=NORMAL. Every Commit is one
// transaction, atomic whatever happens to the process: a process killed with SIGKILL loses nothing that was
// committed. An operating-system crash or power loss may lose the last few commits (the WAL is synced only
// at checkpoints), but never corrupts the file and never leaves a half-applied commit. synchronous=FULL
// would close that window at the price of one fsync per commit, which a deploy of thousands of resources
// cannot afford; the engine's pending operations make a lost commit recoverable (the provider is read back
// on the next run).
//
// Concurrency: all writes of one Backend go through one connection, so concurrent Commits from goroutines
// queue in Go instead of spinning on SQLite's busy handler, and Commits that queue are written together in
// one transaction (group commit, see Backend.Commit). Write transactions are BEGIN IMMEDIATE, and a busy
// timeout of 5 s covers another process writing the same file. Reads use a small pool of read-only
// connections and, thanks to WAL, never wait for writers.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/backend/internal/commitqueue"
	"github.com/cdkx-dev/cdkx/pkg/backend/internal/sqlstore"

	"github.com/cdkx-dev/cdkx/pkg/state"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// DefaultPath is where cdkx keeps local state, relative to the project directory.
const DefaultPath = ".cdkx/state.db"

// BusyTimeout is how long a write waits for another process holding the database's write lock before it
// fails with "database is locked".
const BusyTimeout = 5 * time.Second

// maxReaders bounds the read-only connection pool.
const maxReaders = 4

// Backend is a state.Backend on one SQLite file. It is safe for concurrent use; see the package
// documentation for its durability and concurrency guarantees.
type Backend struct {
	path string
	// w is the write pool, of one connection, which wr pins; r is the read-only pool.
	w, r *sql.DB
	wr   writer
	// queue groups concurrent Commits into shared transactions.
	queue commitqueue.Queue
	// ckpt runs WAL checkpoints in the background.
	ckpt *checkpointer
	// now is the clock for times the backend stamps itself (stack and journal times, lock defaults).
	now func() time.Time

	// Store is the deployment queue, the locks and the stack reads, over dialect.
	sqlstore.Store

	closeOnce sync.Once
	closeErr  error
}

var _ state.Backend = (*Backend)(nil)

// SetPolicy sets the approval policy the deployment queue enforces from now on (state.CheckCreate,
// state.CheckTransition): the project's cdkx.json "approval" settings. The zero Policy is the default.
// Call it before the backend is shared.
func (b *Backend) SetPolicy(p state.Policy) { b.Policy = p }

// newBackend returns a backend on path, with its store bound to its dialect and clock; Open and
// OpenReadOnly fill in its connections.
func newBackend(path string) *Backend {
	b := &Backend{path: path, now: time.Now}
	b.Store = sqlstore.Store{D: dialect{b}, Now: func() time.Time { return b.now() }}
	b.queue.Write = b.writeTx
	return b
}

// checkPath refuses a state database path that cannot be one: empty, holding a '?' (the driver splits its
// DSN at the first one), or naming a directory.
func checkPath(path string) error {
	if path == "" {
		return errors.New("open state database: empty path")
	}
	if strings.Contains(path, "?") {
		return fmt.Errorf("open state database %s: the path must not contain '?'; choose another path", path)
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("open state database %s: it is a directory; pass the path of a file", path)
	}
	return nil
}

// Open opens (creating it and its parent directories when absent) the state database at path, applies any
// pending schema migrations and returns the backend. Errors name the path and say what to do, e.g. when
// the file is not a SQLite database, is not writable, or was written by a newer cdkx.
func Open(ctx context.Context, path string) (*Backend, error) {
	if err := checkPath(path); err != nil {
		return nil, err
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			if errors.Is(err, fs.ErrPermission) {
				return nil, fmt.Errorf("open state database %s: cannot create directory %s, permission denied; check the permissions of its parent or pass another path: %w", path, dir, err)
			}
			return nil, fmt.Errorf("open state database %s: create directory %s: %w", path, dir, err)
		}
	}

	b := newBackend(path)
	var err error
	b.w, err = openPool(ctx, path, writerParams(), 1)
	if err != nil {
		return nil, openError(path, err)
	}
	if err := b.checkJournalMode(ctx); err != nil {
		_ = b.w.Close()
		return nil, err
	}
	if err := migrate(ctx, b.w); err != nil {
		_ = b.w.Close()
		return nil, openError(path, err)
	}
	b.r, err = openPool(ctx, path, readerParams(), maxReaders)
	if err != nil {
		_ = b.w.Close()
		return nil, openError(path, err)
	}
	if err := b.wr.open(ctx, b.w); err != nil {
		_ = b.Close()
		return nil, openError(path, err)
	}
	if b.ckpt, err = startCheckpointer(ctx, path); err != nil {
		_ = b.Close()
		return nil, openError(path, err)
	}
	return b, nil
}

// Path returns the database file's path as given to Open.
func (b *Backend) Path() string { return b.path }

// Close waits for the Commits already queued, then closes the database. Commits already returned are
// durable as described in the package documentation. Close is idempotent; methods called after Close
// fail.
func (b *Backend) Close() error {
	b.closeOnce.Do(func() {
		b.queue.Close()
		var errs []error
		if b.ckpt != nil {
			errs = append(errs, b.ckpt.close())
		}
		errs = append(errs, b.wr.close())
		if b.r != nil {
			errs = append(errs, b.r.Close())
		}
		if b.w != nil {
			errs = append(errs, b.w.Close())
		}
		if err := errors.Join(errs...); err != nil {
			b.closeErr = fmt.Errorf("close state database %s: %w", b.path, err)
		}
	})
	return b.closeErr
}

// writerParams are the DSN parameters of the write connection. busy_timeout is applied first by the
// driver, so that the journal_mode switch itself waits for other processes.
func writerParams() url.Values {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", BusyTimeout.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	// Checkpoints run in the background (checkpointer), never inside a commit.
	q.Add("_pragma", "wal_autocheckpoint(0)")
	// Write transactions take the write lock at BEGIN: a deferred transaction that reads and then writes
	// can fail with SQLITE_BUSY_SNAPSHOT, which no busy timeout retries.
	q.Set("_txlock", "immediate")
	return q
}

// checkpointParams are the DSN parameters of the checkpointer's connection.
func checkpointParams() url.Values {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", BusyTimeout.Milliseconds()))
	return q
}

// readerParams are the DSN parameters of the read-only pool.
func readerParams() url.Values {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", BusyTimeout.Milliseconds()))
	q.Add("_pragma", "query_only(1)")
	return q
}

// openPool opens a pool of at most n connections to path and checks that the file is usable.
func openPool(ctx context.Context, path string, params url.Values, n int) (*sql.DB, error) {
	db, err := sql.Open("sqlite", path+"?"+params.Encode())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	// The first statement opens a connection (running the pragmas); reading the schema fails on a file
	// that is not a database.
	if _, err := db.ExecContext(ctx, "SELECT count(*) FROM sqlite_master"); err != nil {
		_ = db.Close()
		return nil, err
	}
	return db, nil
}

// checkJournalMode fails when the file system refused WAL mode (e.g. some network file systems).
func (b *Backend) checkJournalMode(ctx context.Context) error {
	var mode string
	if err := b.w.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return openError(b.path, err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("open state database %s: journal mode is %q, not WAL; put the file on a local file system", b.path, mode)
	}
	return nil
}
