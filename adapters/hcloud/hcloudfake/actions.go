package hcloudfake

import (
	"net/http"
	"strconv"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
)

// action is an asynchronous operation (https://docs.hetzner.cloud/#actions). While running it holds
// every object in Resources: action-starting requests and deletes on them answer 423 locked.
type action struct {
	schema.Action
	// began is when the action started, to the nanosecond: Started, as the API shows it, has whole
	// seconds, and ActionDuration is measured from began.
	began     time.Time
	polls     int
	fail      bool
	onSuccess func() // applied when the action succeeds (e.g. a new server becomes running)
	onError   func() // applied when the action fails (e.g. a failed create removes its object)
}

func (a *action) id() int64                   { return a.ID }
func (a *action) nameOf() string              { return "" }
func (a *action) labelsOf() map[string]string { return nil }

func ref(typ string, id int64) schema.ActionResourceReference {
	return schema.ActionResourceReference{ID: id, Type: typ}
}

// newAction records a running action on res; the caller applies the effect unless a.fail, sets the hooks,
// then calls f.launch(a). Called with f.mu held.
func (f *Fake) newAction(command string, res ...schema.ActionResourceReference) *action {
	f.nextID++
	now := f.now()
	a := &action{began: now, Action: schema.Action{
		ID: f.nextID, Status: "running", Command: command, Started: now.UTC().Truncate(time.Second),
		Resources: append([]schema.ActionResourceReference{}, res...),
	}}
	if f.failNext[command] > 0 {
		f.failNext[command]--
		a.fail = true
	}
	f.st.actions[a.ID] = a
	f.st.running[a.ID] = a
	return a
}

// launch ends a if it is already complete (no delay configured). Called with f.mu held.
func (f *Fake) launch(a *action) *action {
	f.tick(a, f.now())
	return a
}

// tick ends a when its polls or duration are used up. Called with f.mu held.
func (f *Fake) tick(a *action, now time.Time) {
	if a.Status != "running" {
		return
	}
	n, d := f.opts.ActionPolls, f.opts.ActionDuration
	done := (n == 0 && d == 0) || (n > 0 && a.polls >= n) || (d > 0 && now.Sub(a.began) >= d)
	if !done {
		p := 0
		if n > 0 {
			p = a.polls * 100 / n
		}
		if d > 0 {
			p = max(p, int(now.Sub(a.began)*100/d))
		}
		a.Progress = min(max(p, 0), 99)
		return
	}
	fin := now.UTC()
	a.Finished = &fin
	a.Progress = 100
	delete(f.st.running, a.ID)
	if a.fail {
		a.Status = "error"
		a.Error = &schema.ActionError{Code: "action_failed", Message: "action " + a.Command + " failed (injected by FailActions)"}
		if a.onError != nil {
			a.onError()
		}
		return
	}
	a.Status = "success"
	if a.onSuccess != nil {
		a.onSuccess()
	}
}

// settle ends every running action whose duration has passed. Called with f.mu held.
func (f *Fake) settle(now time.Time) {
	if f.opts.ActionDuration == 0 {
		return
	}
	for _, a := range f.st.running {
		f.tick(a, now)
	}
}

// checkLock answers 423 locked when a running action holds the object. Called with f.mu held.
func (f *Fake) checkLock(typ string, id int64) error {
	for _, a := range f.st.running {
		for _, r := range a.Resources {
			if r.Type == typ && r.ID == id {
				return errLocked(typ, id)
			}
		}
	}
	return nil
}

// poll counts one fetch of a, ends it when due, and renders it.
func (f *Fake) poll(a *action) schema.Action {
	if a.Status == "running" {
		a.polls++
		f.tick(a, f.now())
	}
	return a.Action
}

func (f *Fake) actionRoutes() {
	// GET /actions?id=…: https://docs.hetzner.cloud/#actions-get-multiple-actions
	f.handle("GET /v1/actions", func(r *http.Request) (int, any, error) {
		ids := map[int64]bool{}
		for _, s := range r.URL.Query()["id"] {
			id, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return 0, nil, invalid(field{"id", "must be an integer"})
			}
			ids[id] = true
		}
		if len(ids) == 0 {
			return 0, nil, invalid(field{"id", "at least one id is required"})
		}
		return f.listActions(r, func(a *action) bool { return ids[a.ID] })
	})
	// GET /actions/{id}: https://docs.hetzner.cloud/#actions-get-an-action
	f.handle("GET /v1/actions/{id}", func(r *http.Request) (int, any, error) {
		id, err := pathID(r, "action")
		if err != nil {
			return 0, nil, err
		}
		a, ok := f.st.actions[id]
		if !ok {
			return 0, nil, errNotFound("action")
		}
		return http.StatusOK, map[string]any{"action": f.poll(a)}, nil
	})
	for _, kind := range []string{"networks", "servers", "primary_ips", "floating_ips", "volumes", "firewalls", "load_balancers", "certificates"} {
		typ := singular(kind)
		// GET /<kind>/actions (GET /<kind>/actions/{id} is left out: Go's mux cannot tell it from /<kind>/{id}/actions)
		f.handle("GET /v1/"+kind+"/actions", func(r *http.Request) (int, any, error) {
			return f.listActions(r, func(a *action) bool { return actionTouches(a, typ, 0) })
		})
		// GET /<kind>/{id}/actions and /<kind>/{id}/actions/{action_id}
		f.handle("GET /v1/"+kind+"/{id}/actions", func(r *http.Request) (int, any, error) {
			id, err := pathID(r, typ)
			if err != nil {
				return 0, nil, err
			}
			return f.listActions(r, func(a *action) bool { return actionTouches(a, typ, id) })
		})
		f.handle("GET /v1/"+kind+"/{id}/actions/{action_id}", func(r *http.Request) (int, any, error) {
			id, err := pathID(r, typ)
			if err != nil {
				return 0, nil, err
			}
			aid, err := strconv.ParseInt(r.PathValue("action_id"), 10, 64)
			if err != nil {
				return 0, nil, errNotFound("action")
			}
			a, ok := f.st.actions[aid]
			if !ok || !actionTouches(a, typ, id) {
				return 0, nil, errNotFound("action")
			}
			return http.StatusOK, map[string]any{"action": f.poll(a)}, nil
		})
	}
}

func (f *Fake) listActions(r *http.Request, keep func(*action) bool) (int, any, error) {
	var all []*action
	for _, a := range f.st.actions {
		all = append(all, a)
	}
	var polled []*action
	status, body, err := list(r, "actions", all, func(a *action) any {
		polled = append(polled, a)
		return a
	}, func(a *action) bool {
		if !keep(a) {
			return false
		}
		if st := r.URL.Query()["status"]; len(st) > 0 && !contains(st, a.Status) {
			return false
		}
		return true
	})
	if err != nil {
		return 0, nil, err
	}
	m := body.(map[string]any)
	out := make([]schema.Action, 0, len(polled))
	for _, a := range polled {
		out = append(out, f.poll(a))
	}
	m["actions"] = out
	return status, m, nil
}

func actionTouches(a *action, typ string, id int64) bool {
	for _, r := range a.Resources {
		if r.Type == typ && (id == 0 || r.ID == id) {
			return true
		}
	}
	return false
}

func singular(kind string) string {
	switch kind {
	case "networks", "servers", "volumes", "firewalls", "load_balancers", "certificates", "primary_ips", "floating_ips", "ssh_keys", "placement_groups":
		return kind[:len(kind)-1]
	}
	return kind
}

// actionRoute serves POST /<kind>/{id}/actions/<name>: it loads the object, decodes and checks the body,
// answers 423 while the object is held, validates with apply, then starts command and applies the
// returned effect unless the action is set to fail.
func actionRoute[T any](f *Fake, kind, typ, name, command string, get func(*http.Request) (T, error), idOf func(T) int64, required []string,
	body func() any, apply func(obj T, req any) ([]schema.ActionResourceReference, func(), error)) {
	f.handle("POST /v1/"+kind+"/{id}/actions/"+name, func(r *http.Request) (int, any, error) {
		obj, err := get(r)
		if err != nil {
			return 0, nil, err
		}
		var req any
		if body != nil {
			req = body()
			if err := decode(r, req, required...); err != nil {
				return 0, nil, err
			}
		}
		if err := f.checkLock(typ, idOf(obj)); err != nil {
			return 0, nil, err
		}
		res, effect, err := apply(obj, req)
		if err != nil {
			return 0, nil, err
		}
		a := f.newAction(command, append([]schema.ActionResourceReference{ref(typ, idOf(obj))}, res...)...)
		if !a.fail && effect != nil {
			effect()
		}
		return http.StatusCreated, map[string]any{"action": f.launch(a).Action}, nil
	})
}
