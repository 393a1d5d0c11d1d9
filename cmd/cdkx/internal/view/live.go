package view

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// The live region is redrawn with ANSI sequences every terminal understands: the cursor goes up over
// the lines drawn last (CSI n A), erases each (CSI 2K, CSI B down) and goes back up to the first. Because
// every line fits the width, the lines drawn are the rows to go up; after a resize, the rows they wrapped
// into. (Erasing to the end of the screen, CSI J, would be shorter, but tmux and some terminals keep a
// screen erased from its top line in their scrollback: the region would pile up there.)

// draw writes the queued events' rows above the live region and the region drawn at now, in one write.
// Called with t.mu held.
func (t *Table) draw(now time.Time) {
	var b strings.Builder
	t.erase(&b)
	for _, r := range t.takeQueued() {
		b.WriteString(r + "\n")
	}
	region := t.region(now)
	t.drawn = t.drawn[:0]
	for _, l := range region {
		b.WriteString(l + "\n")
		t.drawn = append(t.drawn, width(l))
	}
	if b.Len() > 0 {
		_, _ = io.WriteString(t.w, b.String())
	}
}

// erase blanks the lines of the region drawn last and moves the cursor to the first of them.
func (t *Table) erase(b *strings.Builder) {
	if len(t.drawn) == 0 {
		return
	}
	w, _ := t.size()
	n := 0
	for _, lw := range t.drawn {
		n += max(1, (lw+w-1)/w)
	}
	fmt.Fprintf(b, "\r\x1b[%dA\x1b[2K", n)
	for range n - 1 {
		b.WriteString("\x1b[B\x1b[2K")
	}
	if n > 1 {
		fmt.Fprintf(b, "\x1b[%dA", n-1)
	}
}

// region returns the live region's lines at now: the steps in flight, longest running first, with
// their elapsed time (as many as a third of the terminal's height holds, at least 3 and at most 10; then
// "… and N more in flight"), and the footer.
func (t *Table) region(now time.Time) []string {
	p := &t.phase
	if !p.active {
		return nil
	}
	w, h := t.size()
	l := t.columns()
	steps := t.inFlight()
	shown := min(len(steps), max(3, min(10, h/3)))
	if shown < len(steps) {
		shown-- // the "more" line takes one
	}
	lines := make([]string, 0, shown+2)
	for _, r := range steps[:shown] {
		elapsed := fmt.Sprintf("%*s", timeWidth, elapsedText(now.Sub(r.since)))
		lines = append(lines, t.row(l, t.pal.busy.Render(elapsed), r.event, string(r.event.Status), t.pal.busy, Sanitize(r.event.Reason), false))
	}
	if more := len(steps) - shown; more > 0 {
		lines = append(lines, shortenEnd(fmt.Sprintf("%*s%s… and %d more in flight", timeWidth, "", sep, more), w))
	}
	done := min(len(p.done), p.total)
	if p.total == 0 {
		done = len(p.done)
	}
	footer := shortenEnd(fmt.Sprintf("%s · %d/%d · %d in flight · %s", p.label, done, p.total, len(steps),
		elapsedText(now.Sub(p.started))), w)
	return append(lines, t.pal.bold.Render(footer))
}

// elapsedText renders d in whole seconds: 12s, 1m05s, 1h02m.
func elapsedText(d time.Duration) string {
	s := max(0, int(d/time.Second))
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	}
	return fmt.Sprintf("%dh%02dm", s/3600, s/60%60)
}

// Write writes p to the table's writer: whatever else a command prints while the run goes on (notices,
// the interrupt message). Live, p goes above the region, which is drawn again below it, and its lines
// longer than the terminal is wide are wrapped at spaces.
func (t *Table) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.opt.Live {
		return t.w.Write(p)
	}
	text := t.wrapLines(string(p))
	redraw := len(t.drawn) > 0
	var b strings.Builder
	t.erase(&b)
	for _, r := range t.takeQueued() {
		b.WriteString(r + "\n")
	}
	b.WriteString(text)
	if redraw && len(p) > 0 && p[len(p)-1] != '\n' {
		b.WriteString("\n")
	}
	t.drawn = nil
	if _, err := io.WriteString(t.w, b.String()); err != nil {
		return 0, err
	}
	if redraw {
		t.draw(t.now())
	}
	return len(p), nil
}

// Pause writes the queued rows, takes the live region off the screen and stops redrawing it, for a question asked in the middle of
// a command or an error that ends it; the next Begin draws it again. Plain, it does nothing.
func (t *Table) Pause() {
	t.mu.Lock()
	defer t.mu.Unlock()
	var b strings.Builder
	t.erase(&b)
	for _, r := range t.takeQueued() {
		b.WriteString(r + "\n")
	}
	t.drawn = nil
	t.phase.active = false
	if t.stop != nil {
		close(t.stop)
		t.stop = nil
	}
	if b.Len() > 0 {
		_, _ = io.WriteString(t.w, b.String())
	}
}

// wrapLines wraps each complete line of s that is wider than the terminal at its spaces; an unfinished
// last line (a question waiting for its answer) is left as it is.
func (t *Table) wrapLines(s string) string {
	w, _ := t.size()
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		body := strings.TrimSuffix(l, "\n")
		if body != l && width(body) > w {
			lines[i] = wrap("", body, w, "")
		}
	}
	return strings.Join(lines, "")
}
