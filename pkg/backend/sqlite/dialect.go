package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/cdkx-dev/cdkx/pkg/backend/internal/sqlschema"
	"github.com/cdkx-dev/cdkx/pkg/backend/internal/sqlstore"
	"github.com/cdkx-dev/cdkx/pkg/state"
	sqlite3 "modernc.org/sqlite/lib"
)

// dialect is SQLite's sqlstore.Dialect. Every write transaction runs on the backend's one write connection
// (BEGIN IMMEDIATE), which serializes it with every other write of this process and, through SQLite's
// write lock, of every other process on the file: a claim reads the queue and writes its decision with no
// writer in between, so nothing is locked row by row and nothing is retried. The unique index
// deployments_one_running is the database's own guard of one RUNNING deployment per stack.
type dialect struct{ b *Backend }

var _ sqlstore.Dialect = dialect{}

func (d dialect) Tx(ctx context.Context, f func(q sqlstore.Querier) error) error {
	return d.b.wr.inTx(ctx, func(conn *sql.Conn) error { return f(querier{conn}) })
}

func (d dialect) Read() sqlstore.Querier { return querier{d.b.r} }

// In is column IN ($from, …).
func (dialect) In(column string, from int, values []string) (string, []any) {
	var sb strings.Builder
	args := make([]any, len(values))
	fmt.Fprintf(&sb, "%s IN (", column)
	for i, v := range values {
		if i > 0 {
			sb.WriteString(", ")
		}
		fmt.Fprintf(&sb, "$%d", from+i)
		args[i] = v
	}
	sb.WriteByte(')')
	return sb.String(), args
}

func (dialect) LockSeq(context.Context, sqlstore.Querier) error              { return nil }
func (dialect) LockQueues(context.Context, sqlstore.Querier, []string) error { return nil }
func (dialect) RowLock() string                                              { return "" }
func (dialect) NoRows(err error) bool                                        { return errors.Is(err, sql.ErrNoRows) }
func (dialect) Duplicate(err error) bool                                     { return sqliteCode(err) == sqlite3.SQLITE_CONSTRAINT }
func (d dialect) Error(op string, err error) error                           { return dbError(d.b.path, op, err) }

// Closed is nil: a closed backend's connections fail by themselves (errClosed, sql.ErrConnDone).
func (dialect) Closed(string) error { return nil }

// querier is a sqlstore.Querier on a connection or a pool.
type querier struct {
	db interface {
		ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
		QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
		QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	}
}

func (q querier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := q.db.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (q querier) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	rows, err := q.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

func (q querier) QueryRow(ctx context.Context, query string, args ...any) sqlschema.Row {
	return q.db.QueryRowContext(ctx, query, args...)
}

// sqlRows closes *sql.Rows without an error: Err reports what went wrong while reading.
type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { _ = r.Rows.Close() }

// Abilities declares none beyond the contract: locks are rows that stay until their holder unlocks them
// (or a client takes over a stale one), and nobody cancels another's run.
func (b *Backend) Abilities() state.Abilities { return state.Abilities{} }
