package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdkx-dev/cdkx/pkg/backend/internal/sqlschema"
	"github.com/cdkx-dev/cdkx/pkg/backend/internal/sqlstore"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// dialect is PostgreSQL's sqlstore.Dialect. Every change of the queue runs in a READ COMMITTED transaction
// that first locks the rows it decides on (SELECT … FOR UPDATE): a claim locks the queued rows of the
// stacks it looks at, in (stack, seq) order, so that claimers of one stack, in this process or any other,
// take turns and each reads the queue as the previous one left it. The unique index
// deployments_one_running is the final guard: should two claims of one stack ever both get through (a
// deployment that joined the queue after the locks were taken), the second fails on it, rolls back and
// starts again. Transactions that PostgreSQL aborts to break a deadlock are retried too.
type dialect struct{ b *Backend }

var _ sqlstore.Dialect = dialect{}

// seqLockClass is the first key of the transaction-level advisory lock that serializes the numbering of
// new deployments ("CDKQ" in ASCII); the second is a hash of the schema. Held until the creating
// transaction commits, it makes deployments become visible in Seq order: a claimer never sees a
// deployment while one with a lower Seq is still to appear.
const seqLockClass int32 = 0x43444b51

// queueAttempts bounds how often a transaction that lost a race, or that PostgreSQL aborted to resolve a
// conflict, is tried.
const queueAttempts = 10

const (
	sqlLockSeq = `SELECT pg_advisory_xact_lock($1::integer, hashtext(coalesce(current_schema(), '') || '/deployments'))`
	// sqlLockQueues locks the queued deployments of the stacks $1 (all stacks when $1 is empty), in one
	// order for every transaction, so that claimers never wait for each other in a cycle.
	sqlLockQueues = `SELECT id FROM deployments WHERE status IN ` + sqlschema.QueuedStatuses + `
  AND (cardinality($1::text[]) = 0 OR stack = ANY($1::text[]))
ORDER BY stack, seq FOR UPDATE`
	constraintRunning = "deployments_one_running"
)

// Tx runs f in a transaction and tries again, after a short jittered backoff, when it lost a race
// (sqlschema.ErrLostRace, or a second RUNNING deployment refused by deployments_one_running) or failed in
// a way that changed nothing (retryable), up to queueAttempts times.
func (d dialect) Tx(ctx context.Context, f func(q sqlstore.Querier) error) error {
	for attempt := 1; ; attempt++ {
		err := pgx.BeginFunc(ctx, d.b.pool, func(tx pgx.Tx) error { return f(querier{tx}) })
		if err == nil || attempt == queueAttempts || !lostRace(err) {
			return err
		}
		backoff := time.Duration(attempt)*time.Millisecond + rand.N(5*time.Millisecond)
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(backoff):
		}
	}
}

// lostRace reports whether a transaction failed only because of a concurrent one, and may succeed when
// tried again.
func lostRace(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == codeUniqueViolation && pe.ConstraintName == constraintRunning {
		return true
	}
	return errors.Is(err, sqlschema.ErrLostRace) || retryable(err)
}

func (d dialect) Read() sqlstore.Querier { return querier{d.b.pool} }

// In is column = ANY($from::text[]): one argument whatever the number of values.
func (dialect) In(column string, from int, values []string) (string, []any) {
	return fmt.Sprintf("%s = ANY($%d::text[])", column, from), []any{values}
}

func (dialect) LockSeq(ctx context.Context, q sqlstore.Querier) error {
	_, err := q.Exec(ctx, sqlLockSeq, seqLockClass)
	return err
}

func (dialect) LockQueues(ctx context.Context, q sqlstore.Querier, stacks []string) error {
	if stacks == nil {
		stacks = []string{}
	}
	_, err := q.Exec(ctx, sqlLockQueues, stacks)
	return err
}

func (dialect) RowLock() string                    { return " FOR UPDATE" }
func (dialect) NoRows(err error) bool              { return errors.Is(err, pgx.ErrNoRows) }
func (dialect) Duplicate(err error) bool           { return pgCode(err) == codeUniqueViolation }
func (d dialect) Error(op string, err error) error { return dbError(d.b.where, op, err) }
func (d dialect) Closed(op string) error           { return d.b.checkOpen(op) }

// querier is a sqlstore.Querier on the pool or a transaction.
type querier struct {
	db interface {
		Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
		Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
		QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	}
}

func (q querier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := q.db.Exec(ctx, query, args...)
	return tag.RowsAffected(), err
}

func (q querier) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	return q.db.Query(ctx, query, args...)
}

func (q querier) QueryRow(ctx context.Context, query string, args ...any) sqlschema.Row {
	return q.db.QueryRow(ctx, query, args...)
}

// Abilities declares none beyond the contract: locks are rows that stay until their holder unlocks them
// (or a client takes over a stale one), and nobody cancels another's run.
func (b *Backend) Abilities() state.Abilities { return state.Abilities{} }
