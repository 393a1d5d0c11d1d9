package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"

	"github.com/cdkx-dev/cdkx/pkg/backend/sqlschema"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

// StackVersion returns the stack's current version, 0 when it has no state.
func (b *Backend) StackVersion(ctx context.Context, name string) (int64, error) {
	var v int64
	err := b.r.QueryRowContext(ctx, `SELECT version FROM stacks WHERE name = $1`, name).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, dbError(b.path, fmt.Sprintf("read the version of stack %q", name), err)
	}
	return v, nil
}

// ListStacks returns the names of the stacks with at least one commit, sorted.
func (b *Backend) ListStacks(ctx context.Context) ([]string, error) {
	rows, err := b.r.QueryContext(ctx, `SELECT name FROM stacks`)
	if err != nil {
		return nil, dbError(b.path, "list stacks", err)
	}
	defer rows.Close()
	names := []string{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, dbError(b.path, "list stacks", err)
		}
		names = append(names, name)
	}
	if err := rows.Err(); err != nil {
		return nil, dbError(b.path, "list stacks", err)
	}
	// Sorted in Go: SQL collations differ between databases.
	sort.Strings(names)
	return names, nil
}

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

	rows, err := tx.QueryContext(ctx, `SELECT logical_id, data FROM resources WHERE stack = $1`, name)
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

// GetStackVersion returns stack name as of version, rebuilt by replaying journal versions 1..version in
// order with state.Stack.Apply. Version 0 is the empty stack; a version the stack never reached (or a
// negative one) is an error wrapping state.ErrNotFound.
func (b *Backend) GetStackVersion(ctx context.Context, name string, version int64) (*state.Stack, error) {
	op := fmt.Sprintf("read stack %q at version %d", name, version)
	s := state.NewStack(name)
	if version == 0 {
		return s, nil
	}
	if version < 0 {
		return nil, fmt.Errorf("%s: %w", op, state.ErrNotFound)
	}
	rows, err := b.r.QueryContext(ctx,
		`SELECT version, data, created_at FROM journal WHERE stack = $1 AND version <= $2 ORDER BY version`,
		name, version)
	if err != nil {
		return nil, dbError(b.path, op, err)
	}
	defer rows.Close()
	if err := sqlschema.ReplayJournal(s, rows, version); err != nil {
		return nil, dbError(b.path, op, err)
	}
	return s, nil
}
