// Package postgrestest gives tests a PostgreSQL schema of their own on the database named by
// CDKX_TEST_POSTGRES_URL (scripts/test.sh starts one; scripts/pg-up.sh DIR prints a URL).
package postgrestest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// URLEnv names the test database; tests that need it are skipped without it.
const URLEnv = "CDKX_TEST_POSTGRES_URL"

// URL returns the test database's URL, or skips the test when none is configured.
func URL(tb testing.TB) string {
	tb.Helper()
	u := os.Getenv(URLEnv)
	if u == "" {
		tb.Skipf("%s is not set; start a PostgreSQL with `bash scripts/pg-up.sh DIR` and export the URL it prints to run this test", URLEnv)
	}
	return u
}

// FreshSchema creates a schema of its own for the test (cdkx_test_<random>) in the test database, dropped
// with everything in it at the end of the test, and returns the URL that opens it (search_path set).
func FreshSchema(tb testing.TB) string {
	tb.Helper()
	base := URL(tb)
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		tb.Fatalf("%s = %q: want a postgres:// URL", URLEnv, base)
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	schema := "cdkx_test_" + hex.EncodeToString(rnd[:])
	admin := func(sql string) {
		tb.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			tb.Fatalf("connect to %s: %v", URLEnv, err)
		}
		defer func() { _ = conn.Close(ctx) }()
		if _, err := conn.Exec(ctx, sql); err != nil {
			tb.Fatalf("%s: %v", sql, err)
		}
	}
	admin("CREATE SCHEMA " + schema)
	tb.Cleanup(func() { admin("DROP SCHEMA " + schema + " CASCADE") })
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
