package view

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// LockTable writes the held locks as cdkx unlock lists them: a header, then one row per lock with its
// stack, lock ID, operation, holder (user@host), PID, the age of its last heartbeat at now (whole seconds)
// and whether a run would take it over on its own ("no", or "yes: " and why).
func LockTable(w io.Writer, locks []operation.HeldLock, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STACK\tLOCK ID\tOPERATION\tHOLDER\tPID\tHEARTBEAT\tSTALE")
	for _, l := range locks {
		verdict := "no"
		if l.Stale {
			verdict = "yes: " + l.Why
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s@%s\t%d\t%s ago\t%s\n", l.Stack, l.ID, l.Operation, l.User, l.Host, l.PID,
			now.Sub(l.HeartbeatAt).Round(time.Second), verdict)
	}
	return tw.Flush()
}

// LockJSON is one lock as cdkx unlock and cdkx cancel print it with --json, one object per line: the
// holder's fields (state.LockInfo's JSON), then, when listed, "stale" and "staleReason"; when removed by
// unlock, "removed": true; when ended by cancel, "cancelled": true.
type LockJSON struct {
	state.LockInfo
	Stale       *bool  `json:"stale,omitempty"`
	StaleReason string `json:"staleReason,omitempty"`
	Removed     bool   `json:"removed,omitempty"`
	Cancelled   bool   `json:"cancelled,omitempty"`
}

// HeldLockJSON is the listed lock l as --json prints it.
func HeldLockJSON(l operation.HeldLock) LockJSON {
	stale := l.Stale
	return LockJSON{LockInfo: l.LockInfo, Stale: &stale, StaleReason: l.Why}
}
