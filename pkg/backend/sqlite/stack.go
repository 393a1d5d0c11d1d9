package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/cdkx-dev/cdkx/pkg/backend/internal/sqlschema"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

// GetStack returns the current state of stack name, read in one transaction: its stacks row and all its
// resource rows. A stack never committed to is state.NewStack(name) at version 0.
func (b *Backend) GetStack(ctx context.Context, name string) (*state.Stack, error) {
	op := fmt.Sprintf("read stack %q", name)
	tx, err := b.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, dbError(b.path, op, err)
	}
	defer func() { _ = tx.Rollback() }()

	s := state.NewStack(name)
	var outputs, deps []byte
	var updated int64
	err = tx.QueryRowContext(ctx,
		`SELECT version, status, outputs, dependencies, updated_at FROM stacks WHERE name = $1`, name,
	).Scan(&s.Version, &s.Status, &outputs, &deps, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return s, nil
	}
	if err != nil {
		return nil, dbError(b.path, op, err)
	}
	s.UpdatedAt = sqlschema.FromNanos(updated)
	if err := sqlschema.DecodeStackFields(s, outputs, deps); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}

	// The rows in the table's order (rowid), found through the index: each page of the table is read once,
	// where the index's order (logical ID) visits them at random, several times each (BenchmarkGetStack:
	// a third less CPU).
	rows, err := tx.QueryContext(ctx,
		`SELECT logical_id, data FROM resources WHERE rowid IN (SELECT rowid FROM resources WHERE stack = $1)`, name)
	if err != nil {
		return nil, dbError(b.path, op, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var data sql.RawBytes
		if err := rows.Scan(&id, &data); err != nil {
			return nil, dbError(b.path, op, err)
		}
		r := new(state.Resource)
		if err := state.UnmarshalResource(data, r); err != nil {
			return nil, fmt.Errorf("%s: decode resource %q: %w", op, id, err)
		}
		s.Resources[r.LogicalID] = r
	}
	if err := rows.Err(); err != nil {
		return nil, dbError(b.path, op, err)
	}
	return s, nil
}
