package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
)

// writer is the backend's one write connection, pinned out of its pool at Open, with the hot statements
// prepared on it. Transactions are run with prepared BEGIN IMMEDIATE and COMMIT statements rather than
// database/sql's Tx, which re-prepares them and rebinds every statement per transaction; that saves about
// a quarter of a Commit's CPU time.
type writer struct {
	// mu serializes the connection's users: a transaction holds it from BEGIN to COMMIT or ROLLBACK.
	mu    sync.Mutex
	conn  *sql.Conn
	stmts statements
	// refuse, when set, is what every use returns instead of writing: the backend is read-only.
	refuse error
}

// statements are prepared once on the write connection. Placeholders are $N, which SQLite and PostgreSQL
// both accept.
type statements struct {
	// Transaction control.
	begin, commit, rollback *sql.Stmt

	// Commit's statements.
	bumpVersion, deleteResource, putStack, insertJournal, insertEvent, appendEvent, lastSeq *sql.Stmt

	// multi holds Commit's multi-row statements, prepared on first use: multi[k][i] writes 1<<i rows of
	// manyKinds[k].
	multi [len(manyKinds)][maxManyLog + 1]*sql.Stmt
}

// manyKind is a multi-row INSERT: its head (up to VALUES), the number of columns of a row, and its tail.
type manyKind struct {
	head    string
	columns int
	tail    string
}

// The kinds of multi-row statements (indexes of statements.multi and of manyKinds).
const (
	putResources = iota
	insertEvents
)

var manyKinds = [...]manyKind{
	putResources: {`INSERT INTO resources (stack, logical_id, data) VALUES `, 3,
		` ON CONFLICT (stack, logical_id) DO UPDATE SET data = excluded.data`},
	insertEvents: {`INSERT INTO events (deployment_id, seq, time, stack, logical_id, type, status, reason) VALUES `, 8, ``},
}

// maxManyLog bounds multi-row statements to 1<<maxManyLog rows (8 columns × 64 rows = 512 parameters,
// well under SQLite's 32,766).
const maxManyLog = 6

// SQL of the prepared statements.
const (
	// sqlBumpVersion creates the stack's row at version 1 or increments its version, and returns it.
	sqlBumpVersion = `INSERT INTO stacks (name, version, updated_at) VALUES ($1, 1, $2)
ON CONFLICT (name) DO UPDATE SET version = stacks.version + 1, updated_at = excluded.updated_at
RETURNING version`
	sqlDeleteResource = `DELETE FROM resources WHERE stack = $1 AND logical_id = $2`
	sqlPutStack       = `UPDATE stacks SET status = $2, outputs = $3, dependencies = $4 WHERE name = $1`
	sqlInsertJournal  = `INSERT INTO journal (stack, version, deployment_id, data, created_at)
VALUES ($1, $2, $3, $4, $5)`
	// sqlInsertEvent stores an event with the Seq the caller chose.
	sqlInsertEvent = `INSERT INTO events (deployment_id, seq, time, stack, logical_id, type, status, reason)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`
	// sqlAppendEvent stores an event numbered after the deployment's highest stored Seq (from 1).
	sqlAppendEvent = `INSERT INTO events (deployment_id, seq, time, stack, logical_id, type, status, reason)
SELECT $1, COALESCE(MAX(seq), 0) + 1, $2, $3, $4, $5, $6, $7 FROM events WHERE deployment_id = $1`
	// sqlLastSeq reads a deployment's highest stored event Seq (0 when it has none).
	sqlLastSeq = `SELECT COALESCE(MAX(seq), 0) FROM events WHERE deployment_id = $1`
)

// open pins a connection of db and prepares the statements on it.
func (w *writer) open(ctx context.Context, db *sql.DB) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	w.conn = conn
	s := &w.stmts
	for _, p := range []struct {
		dst   **sql.Stmt
		query string
	}{
		// The driver's _txlock=immediate applies to database/sql's BeginTx only.
		{&s.begin, "BEGIN IMMEDIATE"},
		{&s.commit, "COMMIT"},
		{&s.rollback, "ROLLBACK"},
		{&s.bumpVersion, sqlBumpVersion},
		{&s.deleteResource, sqlDeleteResource},
		{&s.putStack, sqlPutStack},
		{&s.insertJournal, sqlInsertJournal},
		{&s.insertEvent, sqlInsertEvent},
		{&s.appendEvent, sqlAppendEvent},
		{&s.lastSeq, sqlLastSeq},
	} {
		stmt, err := conn.PrepareContext(ctx, p.query)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", p.query, err)
		}
		*p.dst = stmt
	}
	return nil
}

// many returns the statement of kind that writes the most rows, a power of two, not more than n (> 0),
// and that number of rows, preparing it on conn the first time. The caller holds mu (inside inTx or do).
func (w *writer) many(ctx context.Context, conn *sql.Conn, kind, n int) (*sql.Stmt, int, error) {
	log := 0
	for log < maxManyLog && 2<<log <= n {
		log++
	}
	stmt := &w.stmts.multi[kind][log]
	if *stmt == nil {
		query := manyQuery(manyKinds[kind], 1<<log)
		s, err := conn.PrepareContext(ctx, query)
		if err != nil {
			return nil, 0, fmt.Errorf("prepare %q: %w", query, err)
		}
		*stmt = s
	}
	return *stmt, 1 << log, nil
}

// manyQuery is the statement of k that writes rows rows, its arguments row after row. Its placeholders are
// ?, not $N: the driver asks SQLite for each parameter's name, a linear search of the statement's names
// for $N, which made binding 512 of them quadratic (a third of a Commit's CPU).
func manyQuery(k manyKind, rows int) string {
	var sb strings.Builder
	sb.WriteString(k.head)
	for i := range rows {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteByte('(')
		for c := range k.columns {
			if c > 0 {
				sb.WriteString(", ")
			}
			sb.WriteByte('?')
		}
		sb.WriteByte(')')
	}
	sb.WriteString(k.tail)
	return sb.String()
}

// close closes the statements and returns the connection to its pool.
func (w *writer) close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := &w.stmts
	all := []*sql.Stmt{s.begin, s.commit, s.rollback, s.bumpVersion, s.deleteResource, s.putStack,
		s.insertJournal, s.insertEvent, s.appendEvent, s.lastSeq}
	for _, m := range s.multi {
		all = append(all, m[:]...)
	}
	for _, stmt := range all {
		if stmt != nil {
			_ = stmt.Close()
		}
	}
	s.multi = [len(manyKinds)][maxManyLog + 1]*sql.Stmt{}
	if w.conn == nil {
		return nil
	}
	err := w.conn.Close()
	w.conn = nil
	return err
}

// do runs f with the connection, holding mu.
func (w *writer) do(f func(conn *sql.Conn) error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.refuse != nil {
		return w.refuse
	}
	if w.conn == nil {
		return errClosed
	}
	return f(w.conn)
}

// inTx runs f in a BEGIN IMMEDIATE transaction on the connection, holding mu, and commits when f returns
// nil. Otherwise, and on a panic, it rolls back, so the connection never stays inside a transaction.
// ctx bounds BEGIN (which waits up to BusyTimeout for another process) and f; COMMIT and ROLLBACK run to
// completion.
func (w *writer) inTx(ctx context.Context, f func(conn *sql.Conn) error) error {
	return w.do(func(conn *sql.Conn) error {
		if _, err := w.stmts.begin.ExecContext(ctx); err != nil {
			return err
		}
		done := false
		defer func() {
			if !done {
				_, _ = w.stmts.rollback.ExecContext(context.WithoutCancel(ctx))
			}
		}()
		if err := f(conn); err != nil {
			return err
		}
		if _, err := w.stmts.commit.ExecContext(context.WithoutCancel(ctx)); err != nil {
			return err
		}
		done = true
		return nil
	})
}
