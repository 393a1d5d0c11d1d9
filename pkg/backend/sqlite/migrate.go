package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/cdkx-dev/cdkx/pkg/backend/internal/sqlschema"

	"github.com/pressly/goose/v3"
)

// migrate applies pending migrations to db, and refuses a database whose schema is newer than this binary.
// Two processes migrating a new file at once can race (goose lists applied migrations before its
// transaction), so a failure is retried once: the second attempt sees the other's work.
func migrate(ctx context.Context, db *sql.DB) error {
	err := migrateOnce(ctx, db)
	if err != nil && ctx.Err() == nil {
		err = migrateOnce(ctx, db)
	}
	return err
}

func migrateOnce(ctx context.Context, db *sql.DB) error {
	p, err := goose.NewProvider(goose.DialectSQLite3, db, sqlschema.Migrations(), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return fmt.Errorf("load migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate schema: %w", err)
	}
	current, err := p.GetDBVersion(ctx)
	if err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	var known int64
	for _, s := range p.ListSources() {
		known = max(known, s.Version)
	}
	if current > known {
		return fmt.Errorf("schema version %d is newer than this cdkx knows (%d); upgrade cdkx", current, known)
	}
	return nil
}
