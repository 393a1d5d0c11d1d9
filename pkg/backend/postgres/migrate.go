package postgres

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/cdkx-dev/cdkx/pkg/backend/internal/sqlschema"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
)

// migrateLockKey is the key of the session-level advisory lock held while migrating ("cdkxmigr" in
// ASCII). Advisory locks are per database, so schemas of one database migrate one after the other.
const migrateLockKey int64 = 0x63646b786d696772

// versionTable is goose's table of applied migrations, in the first schema of search_path.
const versionTable = "goose_db_version"

// knownVersion returns the highest migration version this binary embeds.
func knownVersion() (int64, error) {
	names, err := fs.Glob(sqlschema.Migrations(), "*.sql")
	if err != nil {
		return 0, err
	}
	var known int64
	for _, name := range names {
		v, err := goose.NumericComponent(name)
		if err != nil {
			return 0, fmt.Errorf("migration %s: %w", name, err)
		}
		known = max(known, v)
	}
	return known, nil
}

// migrate brings the schema up to date. When it already is (the common case), it costs one query.
// Otherwise it takes the migration advisory lock on a connection of its own (outside the pool, so that
// a pool of one connection cannot deadlock), runs goose, and releases the lock; a concurrent cdkx
// waits on the lock and then finds nothing to do. A schema newer than this binary is refused without
// being touched.
func migrate(ctx context.Context, pool *pgxpool.Pool, cc *pgx.ConnConfig) error {
	known, err := knownVersion()
	if err != nil {
		return fmt.Errorf("load migrations: %w", err)
	}
	current, err := dbVersion(ctx, pool)
	if err != nil {
		return err
	}
	if current > known {
		return newerSchemaError(current, known)
	}
	if current == known {
		return nil
	}

	conn, err := pgx.ConnectConfig(ctx, cc.Copy())
	if err != nil {
		return err
	}
	// Closing the session also releases its advisory locks, whatever happened.
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrateLockKey); err != nil {
		return fmt.Errorf("wait for the migration lock: %w", err)
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrateLockKey) }()

	// Under the lock, look again: another process may have migrated meanwhile.
	if current, err = dbVersion(ctx, pool); err != nil {
		return err
	}
	if current > known {
		return newerSchemaError(current, known)
	}
	if current == known {
		return nil
	}
	var schema *string
	if err := conn.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return fmt.Errorf("read current schema: %w", err)
	}
	if schema == nil {
		return errNoSchema
	}
	db := stdlib.OpenDBFromPool(pool)
	defer func() { _ = db.Close() }()
	p, err := goose.NewProvider(goose.DialectPostgres, db, sqlschema.Migrations(), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return fmt.Errorf("load migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate schema: %w", err)
	}
	if current, err = p.GetDBVersion(ctx); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if current != known {
		return fmt.Errorf("migrate schema: at version %d after migrating, want %d", current, known)
	}
	return nil
}

// dbVersion returns the highest migration version applied to the database, 0 when none is.
func dbVersion(ctx context.Context, pool *pgxpool.Pool) (int64, error) {
	var v *int64
	err := pool.QueryRow(ctx, `SELECT max(version_id) FROM `+versionTable).Scan(&v)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == codeUndefinedTable {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	if v == nil {
		return 0, nil
	}
	return *v, nil
}

// errNoSchema is returned when no schema of search_path exists, so there is nowhere to create tables.
var errNoSchema = errors.New("no schema of search_path exists")

// errNewerSchema marks a database migrated by a newer cdkx.
var errNewerSchema = errors.New("schema is newer than this cdkx")

func newerSchemaError(current, known int64) error {
	return fmt.Errorf("schema version %d is newer than this cdkx knows (%d); upgrade cdkx: %w", current, known, errNewerSchema)
}
