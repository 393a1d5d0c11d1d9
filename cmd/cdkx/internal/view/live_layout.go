package view

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// The caps of the columns: a column is as wide as its widest name, up to its cap; longer names are
// shortened with … (at the end for names and logical IDs, whose start a person chose; at the start for
// physical IDs; leading "Provider::" segments first for types). On a terminal the columns shrink further, down to their minimum, until a
// row fits the width.
const (
	stackCap, typeCap, idCap = 24, 40, 48
	stackMin, typeMin, idMin = 10, 9, 16
	// plainDetailCap bounds the physical ID or reason of a plain row (CI logs): the full text of a
	// failure is in the summary.
	plainDetailCap = 200
	// liveDetailMin is the least width a terminal row shows a physical ID or reason in, after the names;
	// with less left there is none (the failures' reasons are in the summary).
	liveDetailMin = 12
	// statusMin is the width of the status column: the longest status of a resource in progress
	// (CREATE_IN_PROGRESS). Rollback statuses widen it to statusMax (UPDATE_ROLLBACK_IN_PROGRESS); a
	// stack's status, which can be longer (UPDATE_COMPLETE_CLEANUP_IN_PROGRESS), is on a line of its own
	// on a terminal and the last column of a plain row.
	statusMin, statusMax = 18, 27
	// timeWidth is the width of a terminal row's time (15:04:05) or in-flight elapsed time.
	timeWidth = 8
	sep       = "  "
)

// layout is the widths of a row's columns.
type layout struct {
	stack, typ, id, status, detail int
}

// naturalLayout returns the columns as wide as their widest names, capped.
func naturalLayout(stack, typ, id int) layout {
	return layout{stack: min(stack, stackCap), typ: min(typ, typeCap), id: min(id, idCap), status: statusMin}
}

// fit returns l shrunk to rows of at most width columns: the names come first — they give way, widest first
// (down to their minimums), only as far as the row needs — and the detail (physical ID or reason) takes
// what is left, shown when that is at least liveDetailMin. On a terminal narrower still, the names go down
// to 3 cells and then the status column gives way.
func (l layout) fit(width int) layout {
	fixed := timeWidth + len(sep)*4 + l.status
	l.shrink(width-fixed, stackMin, typeMin, idMin)
	l.shrink(width-fixed, 3, 3, 3)
	if over := fixed + l.stack + l.typ + l.id - width; over > 0 {
		l.status = max(3, l.status-over)
		fixed = timeWidth + len(sep)*4 + l.status
	}
	l.detail = width - fixed - l.stack - l.typ - l.id - len(sep)
	if l.detail < liveDetailMin {
		l.detail = 0
	}
	return l
}

// narrowType returns l with the type column narrowed to need cells (when it is wider), the cells freed
// going to the logical ID column up to naturalID and then to the detail, in a row of width columns.
func (l layout) narrowType(need, naturalID, width int) layout {
	if l.typ <= need {
		return l
	}
	free := l.typ - need
	l.typ = need
	grow := min(free, max(0, naturalID-l.id))
	l.id += grow
	l.detail = width - timeWidth - len(sep)*5 - l.status - l.stack - l.typ - l.id
	if l.detail < liveDetailMin {
		l.detail = 0
	}
	return l
}

// shrink narrows the name columns, the one furthest above its minimum first, until they take at most
// budget cells or are at their minimums.
func (l *layout) shrink(budget int, mins ...int) {
	cols := []*int{&l.stack, &l.typ, &l.id}
	for l.stack+l.typ+l.id > budget {
		widest := -1
		for i, c := range cols {
			if *c > mins[i] && (widest < 0 || *c-mins[i] > *cols[widest]-mins[widest]) {
				widest = i
			}
		}
		if widest < 0 {
			return
		}
		*cols[widest]--
	}
}

// width returns the display width of s (its cells on a terminal).
func width(s string) int { return ansi.StringWidth(s) }

// shortenEnd returns s cut to n cells, its end replaced by "…".
func shortenEnd(s string, n int) string {
	if width(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	return takeHead(s, n-1) + "…"
}

// shortenName returns a stack name or logical ID cut to n cells, its end replaced by "…": the start is
// the name a person gave it (WwwRecordSet, Record001), the end at most the hash the CDK appends.
func shortenName(s string, n int) string { return shortenEnd(s, n) }

// shortenMiddle returns s cut to n cells with "…" in the middle: both ends of a "Stack/LogicalID" path
// stay.
func shortenMiddle(s string, n int) string {
	if width(s) <= n {
		return s
	}
	if n <= 1 {
		return shortenEnd(s, n)
	}
	head := n / 2
	return takeHead(s, head) + "…" + takeTail(s, n-1-head)
}

// shortenStart returns s cut to n cells, its start replaced by "…": the end of a physical ID (a record's
// name and type, a path's last part) tells it apart.
func shortenStart(s string, n int) string {
	if width(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	return "…" + takeTail(s, n-1)
}

// shortenType returns a resource type cut to n cells: its leading "Provider::" segments go first
// (PowerDNS::DNS::RecordSet → DNS::RecordSet → RecordSet), then its end.
func shortenType(s string, n int) string {
	for width(s) > n {
		_, rest, ok := strings.Cut(s, "::")
		if !ok {
			break
		}
		s = rest
	}
	return shortenEnd(s, n)
}

// takeHead returns the first n cells of s, takeTail its last n (ansi: escape codes and wide characters
// counted as a terminal shows them).
func takeHead(s string, n int) string { return ansi.Truncate(s, max(n, 0), "") }

func takeTail(s string, n int) string { return ansi.TruncateLeft(s, max(width(s)-n, 0), "") }

// cell returns s shortened by shorten to n cells and padded to n.
func cell(s string, n int, shorten func(string, int) string) string {
	return pad(shorten(s, n), n)
}
