// Package apptest writes cloud assemblies for the commands' tests.
package apptest

import (
	"testing"
)

// OneStack writes a cloud assembly of one stack, A, whose template is template (JSON, written as it is,
// valid or not), into a new temporary directory and returns that directory.
func OneStack(tb testing.TB, template string) string {
	tb.Helper()
	return Stacks(tb, map[string]string{"A": template})
}
