package postgres

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestRetryable(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{&pgconn.PgError{Code: codeSerializationFailure}, true},
		{fmt.Errorf("increment version: %w", &pgconn.PgError{Code: codeDeadlockDetected}), true},
		{&pgconn.PgError{Code: codeUniqueViolation}, false},
		{errors.New("affected 0 rows, want 1"), false},
	}
	for _, tt := range tests {
		if got := retryable(tt.err); got != tt.want {
			t.Errorf("retryable(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

func TestDescribe(t *testing.T) {
	tests := []struct {
		cfg  pgconn.Config
		want string
	}{
		{pgconn.Config{Host: "db.example.org", Port: 5432, User: "alice", Database: "cdkx", Password: "secret"},
			"postgres://alice@db.example.org:5432/cdkx"},
		{pgconn.Config{Host: "::1", Port: 15432, User: "postgres", Database: "state"}, "postgres://postgres@[::1]:15432/state"},
		{pgconn.Config{Host: "/var/run/postgresql", Port: 5432, User: "cdkx", Database: "cdkx"},
			"postgres://cdkx@/cdkx?host=/var/run/postgresql"},
	}
	for _, tt := range tests {
		if got := describe(&tt.cfg); got != tt.want {
			t.Errorf("describe(%+v) = %q, want %q", tt.cfg, got, tt.want)
		}
	}
}

func TestRedact(t *testing.T) {
	err := redact(errors.New("cannot parse `postgres://u:hunter22@h/db`"), "hunter22")
	if strings.Contains(err.Error(), "hunter22") || !strings.Contains(err.Error(), "u:xxxxx@h") {
		t.Errorf("redact() = %q, want the password masked", err)
	}
	base := errors.New("base")
	if got := redact(fmt.Errorf("wrapped: %w", base), "nothere"); !errors.Is(got, base) {
		t.Errorf("redact() = %v, want the original error kept", got)
	}
}
