package console

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/cdkx-dev/cdkx/pkg/text"
)

// eventJSON is one event as the live stream sends it; every string is sanitized (the page's script sets
// it as text, never as HTML).
type eventJSON struct {
	Seq       int64  `json:"seq"`
	Time      string `json:"time"`
	Stack     string `json:"stack"`
	LogicalID string `json:"logicalId"`
	Type      string `json:"type"`
	Status    string `json:"status"`
	Reason    string `json:"reason"`
}

func eventOf(e state.Event) eventJSON {
	return eventJSON{Seq: e.Seq, Time: e.Time.UTC().Format("15:04:05.000"), Stack: text.Sanitize(e.Stack),
		LogicalID: text.Sanitize(e.LogicalID), Type: text.Sanitize(e.Type), Status: text.Sanitize(e.Status), Reason: text.Sanitize(e.Reason)}
}

// eventsStream streams a deployment's events as Server-Sent Events: "event" messages with each new event
// (polled from the Source every PollEvery), then one "done" message with the deployment's final status
// and error, and the stream ends. A reconnecting browser sends Last-Event-ID (or ?after=N) and gets only
// what follows.
func (c *console) eventsStream(w http.ResponseWriter, r *http.Request, s *session, sc Scope) {
	ctx, id := r.Context(), r.PathValue("id")
	d, err := c.src.Deployment(ctx, s.caller, sc, id)
	if err != nil {
		c.sourceError(w, r, s, err)
		return
	}
	after, _ := strconv.Atoi(r.Header.Get("Last-Event-ID"))
	if a, err := strconv.Atoi(r.URL.Query().Get("after")); err == nil && a > after {
		after = a
	}
	// Through a ResponseController: a middleware's writer (cdkx server's request log) hides http.Flusher
	// from a type assertion, and the stream would then reach the page only when it ends.
	rc := http.NewResponseController(w)
	flush := func() { _ = rc.Flush() } // a writer that cannot flush delivers at the end: no better to do
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	flush() // the page's EventSource opens now, not at the first event
	send := func(event string, id int64, v any) bool {
		b, err := json.Marshal(v)
		if err != nil {
			return false
		}
		if id > 0 {
			fmt.Fprintf(w, "id: %d\n", id)
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return false
		}
		flush()
		return true
	}
	tick := time.NewTicker(c.opts.PollEvery)
	defer tick.Stop()
	lastWrite := time.Now()
	for {
		events, err := c.src.Events(ctx, s.caller, sc, d.ID, after)
		if err != nil {
			send("failure", 0, map[string]string{"message": "the events could not be read"})
			return
		}
		for _, e := range events {
			if e.Seq <= int64(after) {
				continue
			}
			if !send("event", e.Seq, eventOf(e)) {
				return
			}
			after = int(e.Seq)
			lastWrite = time.Now()
		}
		if d.Status.Terminal() {
			send("done", 0, map[string]any{"status": d.Status, "error": text.Sanitize(d.Error), "version": d.Version,
				"finishedAt": d.FinishedAt.UTC().Format(time.RFC3339)})
			return
		}
		if time.Since(lastWrite) > 15*time.Second { // a comment line keeps proxies from closing an idle stream
			if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
				return
			}
			flush()
			lastWrite = time.Now()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if d, err = c.src.Deployment(ctx, s.caller, sc, id); err != nil {
			send("failure", 0, map[string]string{"message": "the deployment could not be read"})
			return
		}
	}
}
