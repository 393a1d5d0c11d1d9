package operation

import (
	"fmt"
	"strings"

	"github.com/cdkx-dev/cdkx/pkg/diag"
)

// SnapshotInvalidError is returned when the snapshot of a deployment no longer validates with this cdkx
// (a newer cdkx, another provider schema): the deployment cannot run or be planned again here. Its
// message names every error, so that it says why wherever it goes (a terminal, a FAILED record).
type SnapshotInvalidError struct {
	ID, Version string
	Diagnostics diag.Diagnostics
}

// Error lists the errors, one per line.
func (e *SnapshotInvalidError) Error() string {
	var lines []string
	for _, d := range e.Diagnostics {
		if d.Severity == diag.Error {
			lines = append(lines, "  "+d.String())
		}
	}
	version := ""
	if e.Version != "" {
		version = " (" + e.Version + ")"
	}
	return fmt.Sprintf("the snapshot of deployment %s does not validate with this cdkx%s; nothing was run:\n%s", e.ID, version, strings.Join(lines, "\n"))
}
