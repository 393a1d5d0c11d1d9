// Package sqlschema is the layout of cdkx state in SQL tables, shared by the SQLite and PostgreSQL
// backends: the goose migrations that create the tables, and the encodings of the values in their rows.
//
// The migrations are portable SQL that both databases run unchanged: TEXT and BIGINT columns only, JSON
// documents as TEXT, and every time as BIGINT Unix nanoseconds in UTC, where 0 stands for the zero
// time.Time. One copy serves both backends, so their schemas (and schema versions) cannot drift apart.
package sqlschema

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Migrations returns the goose SQL migration files (00001_init.sql, …).
func Migrations() fs.FS {
	sub, err := fs.Sub(migrationFS, "migrations")
	if err != nil {
		panic(err) // the embedded directory always exists
	}
	return sub
}

// Nanos encodes t as Unix nanoseconds; the zero time is 0.
func Nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// FromNanos decodes Unix nanoseconds to a UTC time; 0 is the zero time.
func FromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// DecodeJSON decodes data into v, keeping numbers as json.Number as pkg/resource requires.
func DecodeJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}

// DecodeStackFields sets s.Outputs (never nil) and s.Dependencies (nil when empty) from their stored
// JSON.
func DecodeStackFields(s *state.Stack, outputs, deps []byte) error {
	if err := DecodeJSON(outputs, &s.Outputs); err != nil {
		return fmt.Errorf("decode outputs: %w", err)
	}
	if s.Outputs == nil {
		s.Outputs = resource.Properties{}
	}
	if err := DecodeJSON(deps, &s.Dependencies); err != nil {
		return fmt.Errorf("decode dependencies: %w", err)
	}
	if len(s.Dependencies) == 0 {
		s.Dependencies = nil
	}
	return nil
}
