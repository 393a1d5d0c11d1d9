// Package sqlstore is the one implementation of the state and deployment contract (state.Backend but
// Commit, GetStack and Close) over SQL, for the SQLite and PostgreSQL backends: they differ in
// transactions, locks, placeholders and errors, which their Dialect says, not in what a deployment or a
// lock is. The rules are pkg/state's (state.PlanClaims, state.ApplyTransition, …); the row shapes and the
// queue's writes are sqlschema's.
package sqlstore

import (
	"context"

	"github.com/cdkx-dev/cdkx/pkg/backend/internal/sqlschema"
)

// Querier runs statements on a connection, a pool or inside a transaction.
type Querier interface {
	// Exec runs query and returns the number of rows it changed.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	// Query runs query; the caller closes the rows.
	Query(ctx context.Context, query string, args ...any) (Rows, error)
	// QueryRow runs a query of one row; Scan returns an error for which Dialect.NoRows holds when there
	// is none.
	QueryRow(ctx context.Context, query string, args ...any) sqlschema.Row
}

// Rows is a query's result, read row by row, that the caller closes.
type Rows interface {
	sqlschema.Rows
	Close()
}

// Dialect is what one database does its own way. Statements use $N placeholders, which both accept.
type Dialect interface {
	// Tx runs f in one write transaction and commits when f returns nil, else rolls back. It runs f again
	// from the start, in a new transaction, when the database asks for it (a serialization failure, a
	// deadlock, sqlschema.ErrLostRace, a concurrent claim that won), a few times, until ctx ends.
	Tx(ctx context.Context, f func(q Querier) error) error
	// Read is the querier of reads outside a transaction (a read-only pool where there is one).
	Read() Querier
	// In returns the condition that column is one of values, with placeholders from $from on, and its
	// arguments; values is never empty.
	In(column string, from int, values []string) (string, []any)
	// LockSeq serializes the numbering of new deployments until the transaction ends (a database whose
	// write transactions are serialized already does nothing).
	LockSeq(ctx context.Context, q Querier) error
	// LockQueues locks the queued deployments of stacks (of every stack when empty) until the transaction
	// ends, so that two claims of one queue are serialized.
	LockQueues(ctx context.Context, q Querier, stacks []string) error
	// RowLock is the suffix that locks a row read in a transaction until it ends: " FOR UPDATE", or "".
	RowLock() string
	// NoRows reports whether err says that a query of one row found none.
	NoRows(err error) bool
	// Duplicate reports whether err is a unique-key violation.
	Duplicate(err error) bool
	// Error wraps a failure of op with the database's hints (where it is, what to do).
	Error(op string, err error) error
	// Closed returns an error wrapping commitqueue.ErrClosed, naming op, once the backend is closed; else
	// nil.
	Closed(op string) error
}
