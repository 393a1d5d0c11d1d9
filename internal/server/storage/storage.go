// Package storage holds all the SQL of the state service (package server): its PostgreSQL schema (the
// svc_* tables and their migrations) and every statement on it, as functions of plain values — names of
// organizations, projects and stacks, row IDs, bytes — never of an HTTP request. What a tenant may see is
// scoped by the organization and project the functions take; who the caller is, and what they may do,
// is the handlers' to decide.
//
// A Store is the connection pool; Store.InTx runs a function in a transaction (a *Tx). Both are a Conn,
// which has the statements that need no transaction of their own.
package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// SQLSTATE codes the service acts on.
const (
	codeUniqueViolation      = "23505"
	codeSerializationFailure = "40001"
	codeDeadlockDetected     = "40P01"
)

// ErrNotFound is returned (wrapped or as is) when a row asked for does not exist in the scope given.
var ErrNotFound = errors.New("not found")

// querier is what a pool and a transaction share.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, rows pgx.CopyFromSource) (int64, error)
}

// Conn runs statements on the pool (Store) or in one transaction (Tx).
type Conn struct {
	q querier
}

// Store is the service's database: a pool of connections to PostgreSQL. It is safe for concurrent use.
type Store struct {
	Conn
	pool *pgxpool.Pool
}

// Tx is one transaction of a Store (InTx); not safe for concurrent use.
type Tx struct {
	Conn
}

// PoolConns is the size of the connection pool Open makes unless the URL sets pool_max_conns (pgx's own
// default is the number of CPUs, at least 4). With 50 concurrent updates pacing their checkpoints
// (bench/server -think 200ms, 2 cores), 10 connections keep a checkpoint's p99 at 12–15 ms where 4 let
// it queue to 25 ms.
const PoolConns = 10

// Open connects to the PostgreSQL database at url (anything pgx accepts, e.g.
// postgres://user:password@host:5432/cdkx?sslmode=require; search_path selects a schema of its own) and
// applies the service's pending migrations. Errors say what to check (the URL, that PostgreSQL runs).
func Open(ctx context.Context, url string) (*Store, error) {
	if url == "" {
		return nil, errors.New("open service database: empty PostgreSQL URL; pass one such as postgres://user@host:5432/cdkx")
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, errors.New("open service database: the PostgreSQL URL is not valid; write it as postgres://user:password@host:5432/database")
	}
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = max(cfg.MaxConns, PoolConns)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 10 * time.Second
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = "cdkx-server"
	}
	where := fmt.Sprintf("postgres://%s@%s:%d/%s", cfg.ConnConfig.User, cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open service database %s: %w", where, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open service database %s: check that PostgreSQL runs and the URL is right: %w", where, err)
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open service database %s: %w", where, err)
	}
	return &Store{Conn: Conn{q: pool}, pool: pool}, nil
}

// Close closes the connection pool.
func (s *Store) Close() { s.pool.Close() }

// Pool is the connection pool (for tests that look at the tables themselves).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

// InTx runs f in a transaction, committed when f returns nil and rolled back otherwise: an error leaves
// the database unchanged.
func (s *Store) InTx(ctx context.Context, f func(tx *Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		return f(&Tx{Conn: Conn{q: tx}})
	})
}

// pgCode returns the SQLSTATE of err when it is a server error, or "".
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// UniqueViolation reports whether err is PostgreSQL's unique violation (23505).
func UniqueViolation(err error) bool { return pgCode(err) == codeUniqueViolation }

// Conflict reports whether err is a transient conflict between concurrent transactions (a serialization
// failure or a deadlock): the request may be retried.
func Conflict(err error) bool {
	code := pgCode(err)
	return code == codeSerializationFailure || code == codeDeadlockDetected
}

// Unavailable tells whether err means PostgreSQL could not be reached or dropped the connection
// (restarting, shutting down, refusing connections), as opposed to a failed statement: the request can be
// retried once it is back. Retries are safe: every execution call is idempotent by its sequence number
// or by the update's status.
func Unavailable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case strings.HasPrefix(pe.Code, "08"), // connection exception
			pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03", // admin/crash shutdown, cannot connect now
			pe.Code == "53300": // too many connections
			return true
		}
		return false
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	switch {
	case errors.As(err, &ce), errors.As(err, &ne), pgconn.SafeToRetry(err),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	}
	return strings.Contains(err.Error(), "conn closed") || strings.Contains(err.Error(), "closed pool")
}
