package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"

	"github.com/pressly/goose/v3"

	"github.com/cdkx-dev/cdkx/pkg/backend/internal/sqlschema"
)

// ErrReadOnly is returned by every write (Commit, the deployment queue's changes, locks) of a backend
// opened with OpenReadOnly.
var ErrReadOnly = errors.New("the state database is open read-only")

// OpenReadOnly opens the state database at path for reading and creates nothing: no directory, no file.
// A missing file reads as an empty state (no stacks, no deployments), held in memory. An existing file is
// opened with query-only connections when its schema is current; one written by an older cdkx is opened
// with Open instead, which migrates it, as any command would. Writes fail with ErrReadOnly. Errors are
// Open's.
func OpenReadOnly(ctx context.Context, path string) (*Backend, error) {
	if err := checkPath(path); err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return openEmpty(ctx, path)
	} else if err != nil {
		return nil, openError(path, err)
	}
	// query_only rather than mode=ro: the last connection of a read-only open leaves the -wal and -shm
	// files behind, a query-only one removes them at Close as a writer does.
	r, err := openPool(ctx, path, readerParams(), maxReaders)
	if err != nil {
		return nil, openError(path, err)
	}
	current, err := schemaCurrent(ctx, r)
	if err != nil {
		_ = r.Close()
		return nil, openError(path, err)
	}
	if !current {
		_ = r.Close()
		return Open(ctx, path)
	}
	b := newBackend(path)
	b.r, b.wr.refuse = r, ErrReadOnly
	return b, nil
}

// openEmpty returns a read-only backend on an empty state in memory, reported under path: one connection
// to a private in-memory database, migrated, then made query-only.
func openEmpty(ctx context.Context, path string) (*Backend, error) {
	q := url.Values{}
	q.Add("_pragma", "foreign_keys(1)")
	r, err := openPool(ctx, ":memory:", q, 1)
	if err != nil {
		return nil, fmt.Errorf("open empty state for %s: %w", path, err)
	}
	if err := migrate(ctx, r); err != nil {
		_ = r.Close()
		return nil, fmt.Errorf("open empty state for %s: %w", path, err)
	}
	if _, err := r.ExecContext(ctx, "PRAGMA query_only = 1"); err != nil {
		_ = r.Close()
		return nil, fmt.Errorf("open empty state for %s: %w", path, err)
	}
	b := newBackend(path)
	b.r, b.wr.refuse = r, ErrReadOnly
	return b, nil
}

// schemaCurrent reports whether the database in db has every migration this cdkx knows; a database
// migrated by a newer cdkx is an error, one with no schema at all is not current.
func schemaCurrent(ctx context.Context, db *sql.DB) (bool, error) {
	var tables int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'goose_db_version'").Scan(&tables); err != nil {
		return false, err
	}
	if tables == 0 {
		return false, nil
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, db, sqlschema.Migrations(), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return false, fmt.Errorf("load migrations: %w", err)
	}
	var known int64
	for _, s := range p.ListSources() {
		known = max(known, s.Version)
	}
	var current sql.NullInt64
	if err := db.QueryRowContext(ctx, "SELECT max(version_id) FROM goose_db_version WHERE is_applied").Scan(&current); err != nil {
		return false, fmt.Errorf("read schema version: %w", err)
	}
	if current.Int64 > known {
		return false, fmt.Errorf("schema version %d is newer than this cdkx knows (%d); upgrade cdkx", current.Int64, known)
	}
	return current.Int64 == known, nil
}
