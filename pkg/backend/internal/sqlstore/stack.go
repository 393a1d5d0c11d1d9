package sqlstore

import (
	"context"
	"fmt"
	"slices"

	"github.com/cdkx-dev/cdkx/pkg/backend/internal/sqlschema"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// StackVersion returns the stack's current version, 0 when it has no state.
func (s *Store) StackVersion(ctx context.Context, name string) (int64, error) {
	op := fmt.Sprintf("read the version of stack %q", name)
	if err := s.D.Closed(op); err != nil {
		return 0, err
	}
	var v int64
	err := s.D.Read().QueryRow(ctx, `SELECT version FROM stacks WHERE name = $1`, name).Scan(&v)
	if s.D.NoRows(err) {
		return 0, nil
	}
	if err != nil {
		return 0, s.D.Error(op, err)
	}
	return v, nil
}

// ListStacks returns the names of the stacks with at least one commit, sorted bytewise.
func (s *Store) ListStacks(ctx context.Context) ([]string, error) {
	const op = "list stacks"
	if err := s.D.Closed(op); err != nil {
		return nil, err
	}
	rows, err := s.D.Read().Query(ctx, `SELECT name FROM stacks`)
	if err != nil {
		return nil, s.D.Error(op, err)
	}
	defer rows.Close()
	names := []string{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, s.D.Error(op, err)
		}
		names = append(names, name)
	}
	if err := rows.Err(); err != nil {
		return nil, s.D.Error(op, err)
	}
	// Sorted in Go: SQL collations differ between databases.
	slices.Sort(names)
	return names, nil
}

// GetStackVersion returns stack name as of version, rebuilt by replaying journal versions 1..version in
// order with state.Stack.Apply. Version 0 is the empty stack; a version the stack never reached (or a
// negative one) is an error wrapping state.ErrNotFound.
func (s *Store) GetStackVersion(ctx context.Context, name string, version int64) (*state.Stack, error) {
	op := fmt.Sprintf("read stack %q at version %d", name, version)
	if err := s.D.Closed(op); err != nil {
		return nil, err
	}
	st := state.NewStack(name)
	if version == 0 {
		return st, nil
	}
	if version < 0 {
		return nil, fmt.Errorf("%s: %w", op, state.ErrNotFound)
	}
	rows, err := s.D.Read().Query(ctx,
		`SELECT version, data, created_at FROM journal WHERE stack = $1 AND version <= $2 ORDER BY version`,
		name, version)
	if err != nil {
		return nil, s.D.Error(op, err)
	}
	defer rows.Close()
	if err := sqlschema.ReplayJournal(st, rows, version); err != nil {
		return nil, s.D.Error(op, err)
	}
	return st, nil
}
