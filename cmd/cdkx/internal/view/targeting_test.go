package view_test

import (
	"bytes"
	"testing"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/view"
	"github.com/cdkx-dev/cdkx/planner"
)

func TestWarnTargeting(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	view.WarnTargeting(&buf, nil)
	if buf.Len() != 0 {
		t.Errorf("WarnTargeting(nil) printed %q, want nothing", buf.String())
	}
	sel := &planner.Selection{Resources: map[string]bool{"App/A": true, "App/B": true}, Total: 5}
	view.WarnTargeting(&buf, sel)
	want := "Warning: targeting is in effect: only 2 of 5 resources are considered; the others are left as they are, " +
		"so the result may not match the assembly. Run without --target/--exclude to converge.\n"
	if got := buf.String(); got != want {
		t.Errorf("WarnTargeting() = %q, want %q", got, want)
	}
}
