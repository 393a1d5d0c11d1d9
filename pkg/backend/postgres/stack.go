package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/cdkx-dev/cdkx/pkg/backend/sqlschema"
	"github.com/jackc/pgx/v5"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

// StackVersion returns the stack's current version, 0 when it has no state.
func (b *Backend) StackVersion(ctx context.Context, name string) (int64, error) {
	op := fmt.Sprintf("read the version of stack %q", name)
	if err := b.checkOpen(op); err != nil {
		return 0, err
	}
	var v int64
	err := b.pool.QueryRow(ctx, `SELECT version FROM stacks WHERE name = $1`, name).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, dbError(b.where, op, err)
	}
	return v, nil
}

// ListStacks returns the names of the stacks with at least one commit, sorted by bytes (collation "C",
// whatever the database's collation is, as the SQLite backend sorts).
func (b *Backend) ListStacks(ctx context.Context) ([]string, error) {
	const op = "list stacks"
	if err := b.checkOpen(op); err != nil {
		return nil, err
	}
	rows, err := b.pool.Query(ctx, `SELECT name FROM stacks ORDER BY name COLLATE "C"`)
	if err != nil {
		return nil, dbError(b.where, op, err)
	}
	defer rows.Close()
	names := []string{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, dbError(b.where, op, err)
		}
		names = append(names, name)
	}
	if err := rows.Err(); err != nil {
		return nil, dbError(b.where, op, err)
	}
	return names, nil
}

// sqlGetStack reads a stack's row and all its resource rows in one statement, hence from one snapshot:
// the row with a version is the stack's, the others are its resources.
const sqlGetStack = `SELECT NULL::text, version, status, outputs, dependencies, updated_at FROM stacks WHERE name = $1
UNION ALL
SELECT logical_id, NULL::bigint, NULL::text, data, NULL::text, NULL::bigint FROM resources WHERE stack = $1`

// GetStack returns the current state of stack name, read from one snapshot: its stacks row and all its
// resource rows. A stack never committed to is state.NewStack(name) at version 0.
func (b *Backend) GetStack(ctx context.Context, name string) (*state.Stack, error) {
	op := fmt.Sprintf("read stack %q", name)
	if err := b.checkOpen(op); err != nil {
		return nil, err
	}
	rows, err := b.pool.Query(ctx, sqlGetStack, name)
	if err != nil {
		return nil, dbError(b.where, op, err)
	}
	defer rows.Close()

	s := state.NewStack(name)
	found := false
	for rows.Next() {
		var id, status, deps *string
		var version, updated *int64
		var data []byte
		if err := rows.Scan(&id, &version, &status, &data, &deps, &updated); err != nil {
			return nil, dbError(b.where, op, err)
		}
		if version != nil {
			found = true
			s.Version, s.Status, s.UpdatedAt = *version, *status, sqlschema.FromNanos(*updated)
			if err := sqlschema.DecodeStackFields(s, data, []byte(*deps)); err != nil {
				return nil, fmt.Errorf("%s: %w", op, err)
			}
			continue
		}
		r := new(state.Resource)
		if err := state.UnmarshalResource(data, r); err != nil {
			return nil, fmt.Errorf("%s: decode resource %q: %w", op, *id, err)
		}
		s.Resources[r.LogicalID] = r
	}
	if err := rows.Err(); err != nil {
		return nil, dbError(b.where, op, err)
	}
	if !found {
		return state.NewStack(name), nil
	}
	return s, nil
}

// GetStackVersion returns stack name as of version, rebuilt by replaying journal versions 1..version in
// order with state.Stack.Apply. Version 0 is the empty stack; a version the stack never reached (or a
// negative one) is an error wrapping state.ErrNotFound.
func (b *Backend) GetStackVersion(ctx context.Context, name string, version int64) (*state.Stack, error) {
	op := fmt.Sprintf("read stack %q at version %d", name, version)
	if err := b.checkOpen(op); err != nil {
		return nil, err
	}
	s := state.NewStack(name)
	if version == 0 {
		return s, nil
	}
	if version < 0 {
		return nil, fmt.Errorf("%s: %w", op, state.ErrNotFound)
	}
	rows, err := b.pool.Query(ctx,
		`SELECT version, data, created_at FROM journal WHERE stack = $1 AND version <= $2 ORDER BY version`,
		name, version)
	if err != nil {
		return nil, dbError(b.where, op, err)
	}
	defer rows.Close()
	if err := sqlschema.ReplayJournal(s, rows, version); err != nil {
		return nil, dbError(b.where, op, err)
	}
	return s, nil
}
