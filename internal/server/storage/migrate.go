package storage

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrateLockKey is the key of the session-level advisory lock held while migrating ("cdkxsvcm" in
// ASCII), distinct from the state backend's, so that replicas starting at once migrate one at a time.
const migrateLockKey int64 = 0x63646b787376636d

// versionTable is goose's table of the service's applied migrations.
const versionTable = "svc_goose_db_version"

// migrate applies the pending migrations under the advisory lock, taken on a connection of its own.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	conn, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	// Closing the session releases its advisory locks, whatever happened.
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrateLockKey); err != nil {
		return fmt.Errorf("wait for the migration lock: %w", err)
	}
	db := stdlib.OpenDBFromPool(pool)
	defer func() { _ = db.Close() }()
	p, err := Migrations(db)
	if err != nil {
		return fmt.Errorf("load migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate schema: %w", err)
	}
	return nil
}

// Migrations returns a goose provider of the service's migrations on db (its version table
// svc_goose_db_version), to migrate step by step; Open applies them all.
func Migrations(db *sql.DB) (*goose.Provider, error) {
	sub, err := fs.Sub(migrationFS, "migrations")
	if err != nil {
		return nil, err
	}
	return goose.NewProvider(goose.DialectPostgres, db, sub, goose.WithDisableGlobalRegistry(true), goose.WithTableName(versionTable))
}
