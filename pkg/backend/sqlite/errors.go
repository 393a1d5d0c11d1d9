package sqlite

import (
	"errors"
	"fmt"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// sqliteCode returns the primary SQLite result code of err (e.g. SQLITE_BUSY), or 0.
func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() & 0xff
	}
	return 0
}

// openError turns a failure to open or migrate the file at path into an error that says what to do.
func openError(path string, err error) error {
	var hint string
	switch sqliteCode(err) {
	case sqlite3.SQLITE_NOTADB:
		hint = "the file is not a SQLite database; move it aside or pass another path"
	case sqlite3.SQLITE_CORRUPT:
		hint = "the database file is corrupt; restore it from a backup or move it aside"
	case sqlite3.SQLITE_CANTOPEN:
		hint = "cannot open the file; check that its directory exists and is writable"
	case sqlite3.SQLITE_PERM, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_AUTH:
		hint = "permission denied; check the permissions of the file, its -wal and -shm files, and its directory"
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		hint = "the database is locked by another process; retry when it is done"
	case sqlite3.SQLITE_FULL:
		hint = "the disk is full; free some space"
	default:
		return fmt.Errorf("open state database %s: %w", path, err)
	}
	return fmt.Errorf("open state database %s: %s: %w", path, hint, err)
}

// dbError wraps a failure of op (e.g. "commit stack web") on the database at path, adding a hint for the
// failures a user can act on.
func dbError(path, op string, err error) error {
	switch sqliteCode(err) {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return fmt.Errorf("%s: state database %s is locked by another process for more than %s: %w", op, path, BusyTimeout, err)
	case sqlite3.SQLITE_FULL:
		return fmt.Errorf("%s: state database %s: the disk is full: %w", op, path, err)
	case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_PERM:
		return fmt.Errorf("%s: state database %s is not writable; check its permissions: %w", op, path, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}
