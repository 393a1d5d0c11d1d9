package postgres

import (
	"context"
	"fmt"

	"github.com/cdkx-dev/cdkx/pkg/backend/internal/sqlschema"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

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
