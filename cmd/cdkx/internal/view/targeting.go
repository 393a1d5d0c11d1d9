package view

import (
	"fmt"
	"io"

	"github.com/cdkx-dev/cdkx/planner"
)

// WarnTargeting prints, when sel is not nil, the one warning line that says targeting is in effect.
func WarnTargeting(w io.Writer, sel *planner.Selection) {
	if sel == nil {
		return
	}
	fmt.Fprintf(w, "Warning: targeting is in effect: only %d of %d resources are considered; the others are left as they are, so the result may not match the assembly. Run without --target/--exclude to converge.\n",
		sel.Len(), sel.Total)
}
