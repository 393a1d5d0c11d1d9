package hcloud

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Defaults of PollOptions.
const (
	DefaultPollInterval  = 100 * time.Millisecond
	DefaultActionTimeout = 10 * time.Minute
)

// PollOptions say how the adapter waits for actions (https://docs.hetzner.cloud/#actions).
type PollOptions struct {
	// Interval is the first wait before an action is polled again; later waits double up to
	// 50 × Interval (5 s by default). 0 means DefaultPollInterval.
	Interval time.Duration
	// Timeout bounds the wait for one action; 0 means DefaultActionTimeout. An action still running then
	// fails the step with an error that says it may still finish.
	Timeout time.Duration
}

func (o PollOptions) withDefaults() PollOptions {
	if o.Interval <= 0 {
		o.Interval = DefaultPollInterval
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultActionTimeout
	}
	return o
}

// action is an action as the API returns it (the fields the adapter reads).
type action struct {
	ID       int64  `json:"id"`
	Command  string `json:"command"`
	Status   string `json:"status"` // running, success or error
	Progress int    `json:"progress"`
	Error    *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// ActionError is the error of an action that ended with status "error": its command and Hetzner's
// code and message (e.g. "action create_server failed: action_failed: …").
type ActionError struct {
	ID      int64
	Command string
	Code    string
	Message string
}

// Error renders the action's command, ID, code and message.
func (e *ActionError) Error() string {
	return fmt.Sprintf("%s: action %s (%d) failed: %s: %s", Name, e.Command, e.ID, e.Code, e.Message)
}

// wait polls GET /actions/{id} (several actions: GET /actions?id=…&id=…) until every action in as has
// status success, and returns the *ActionError of the first that ended with status error, or an error
// when Timeout passes first or ctx ends. nil entries are skipped.
//
// Polling predicts: when an action reports progress p% after t, the next poll comes when it should
// finish, t·(100−p)/p later (at least Interval/2, at most the backoff's cap); while progress does not
// move, the waits double from Interval up to 50 × Interval.
func (c *client) wait(ctx context.Context, as ...*action) error {
	running := map[int64]*action{}
	for _, a := range as {
		if a == nil {
			continue
		}
		if err := a.failure(); err != nil {
			return err
		}
		if a.Status != "success" {
			running[a.ID] = a
		}
	}
	if len(running) == 0 {
		return nil
	}
	opts := c.poll.withDefaults()
	start := c.now()
	deadline := start.Add(opts.Timeout)
	backoff, maxWait := opts.Interval, 50*opts.Interval
	lastProgress := -1
	for {
		wait := backoff
		if p := minProgress(running); p > 0 && p < 100 && p != lastProgress {
			elapsed := c.now().Sub(start)
			wait = max(min(time.Duration(float64(elapsed)*float64(100-p)/float64(p)), maxWait), opts.Interval/2)
			lastProgress = p
		} else {
			backoff = min(backoff*2, maxWait)
		}
		if c.now().Add(wait).After(deadline) {
			wait = max(deadline.Sub(c.now()), 0)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		got, err := c.poll1(ctx, running)
		if err != nil {
			return err
		}
		for _, a := range got {
			if err := a.failure(); err != nil {
				return err
			}
			if a.Status == "success" {
				delete(running, a.ID)
			} else if r, ok := running[a.ID]; ok {
				*r = a
			}
		}
		if len(running) == 0 {
			return nil
		}
		if !c.now().Before(deadline) {
			for _, a := range running {
				return fmt.Errorf("%s: action %s (%d) still %s after %s (at %d%%); it may still finish: run cdkx refresh later to record what it did",
					Name, a.Command, a.ID, a.Status, opts.Timeout, a.Progress)
			}
		}
	}
}

// poll1 fetches the running actions: GET /actions/{id} for one, GET /actions?id=…&id=… for several.
func (c *client) poll1(ctx context.Context, running map[int64]*action) ([]action, error) {
	if len(running) == 1 {
		for id := range running {
			var out struct {
				Action action `json:"action"`
			}
			if err := c.call(ctx, http.MethodGet, idPath("/actions", id), nil, &out); err != nil {
				return nil, err
			}
			return []action{out.Action}, nil
		}
	}
	var kv []string
	for id := range running {
		kv = append(kv, "id", strconv.FormatInt(id, 10))
	}
	var out struct {
		Actions []action `json:"actions"`
	}
	if err := c.call(ctx, http.MethodGet, "/actions"+query(kv...), nil, &out); err != nil {
		return nil, err
	}
	return out.Actions, nil
}

// failure is the *ActionError of an action that ended with status error, else nil.
func (a *action) failure() error {
	if a.Status != "error" {
		return nil
	}
	e := &ActionError{ID: a.ID, Command: a.Command, Code: "error", Message: "no detail given"}
	if a.Error != nil {
		e.Code, e.Message = a.Error.Code, a.Error.Message
	}
	return e
}

// minProgress is the least progress of the running actions.
func minProgress(running map[int64]*action) int {
	p := 101
	for _, a := range running {
		p = min(p, a.Progress)
	}
	if p == 101 {
		return 0
	}
	return p
}

// started names the actions an answer says a request started: "action", "actions" (firewalls) and
// "next_actions" (e.g. a server's start_server).
type started struct {
	Action      *action   `json:"action"`
	Actions     []*action `json:"actions"`
	NextActions []*action `json:"next_actions"`
}

// all lists the actions, nil entries included (wait skips them).
func (s *started) all() []*action {
	return append(append([]*action{s.Action}, s.Actions...), s.NextActions...)
}

// runAction sends POST {collection}/{id}/actions/{command} with body (nil: none), e.g.
// runAction(ctx, "/networks", 7, "add_subnet", …), and waits for every action the answer names.
// secrets are scrubbed from its errors.
func (p *Provider) runAction(ctx context.Context, collection string, id int64, command string, body any, secrets ...string) error {
	var out started
	if err := p.c.call(ctx, http.MethodPost, idPath(collection, id)+"/actions/"+command, body, &out, secrets...); err != nil {
		return err
	}
	return p.c.wait(ctx, out.all()...)
}
