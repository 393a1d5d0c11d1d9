package server

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

// received is one request a receiver got.
type received struct {
	event, delivery, signature string
	body                       []byte
}

// receiver is a webhook receiver behind httptest that answers with answer(n) to its n-th request
// (0-based) and remembers every request.
type receiver struct {
	mu     sync.Mutex
	got    []received
	answer func(n int, w http.ResponseWriter, r *http.Request)
	ts     *httptest.Server
}

func newReceiver(t *testing.T, answer func(n int, w http.ResponseWriter, r *http.Request)) *receiver {
	t.Helper()
	rc := &receiver{answer: answer}
	rc.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		n := len(rc.got)
		rc.got = append(rc.got, received{event: r.Header.Get(EventHeader), delivery: r.Header.Get(DeliveryHeader),
			signature: r.Header.Get(SignatureHeader), body: body})
		rc.mu.Unlock()
		if rc.answer != nil {
			rc.answer(n, w, r)
		}
	}))
	t.Cleanup(rc.ts.Close)
	return rc
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// eventually polls cond every few milliseconds for up to 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// fastHooks is a hookConfig whose backoff records the attempts it follows and waits not at all.
type fastHooks struct {
	mu    sync.Mutex
	waits []int
}

func (f *fastHooks) config(attempts int) hookConfig {
	return hookConfig{attempts: attempts, backoff: func(n int) time.Duration {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.waits = append(f.waits, n)
		return 0
	}}
}

// verify checks a delivery's signature as a receiver would: HMAC-SHA256 of the exact body.
func verify(secret []byte, r received) bool {
	m := hmac.New(sha256.New, secret)
	m.Write(r.body)
	want := "sha256=" + hex.EncodeToString(m.Sum(nil))
	return hmac.Equal([]byte(want), []byte(r.signature))
}

var testTime = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func testNotifier(t *testing.T, urls []string, secret []byte, cfg hookConfig) *notifier {
	t.Helper()
	n, err := newNotifier(urls, secret, "https://cdkx.example/", func() time.Time { return testTime }, slog.New(slog.DiscardHandler), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.close)
	return n
}

func TestWebhookRetriesAndSignature(t *testing.T) {
	secret := []byte("s3cret")
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n < 2 {
			http.Error(w, "not now", http.StatusInternalServerError)
		}
	})
	fh := &fastHooks{}
	n := testNotifier(t, []string{rc.ts.URL}, secret, fh.config(WebhookAttempts))
	d := webhookDeployment{ID: "1a2b3c4d5e6f", Stack: "App", Kind: state.KindDeploy, Status: state.StatusApproved, Message: "bump",
		CreatedBy: "bob", ApprovedBy: "alice", CreatedAt: testTime}
	n.notify("web", "shop", notice{event: "approved", d: d})
	eventually(t, "the delivery", func() bool {
		ds := n.deliveries(func(string) bool { return true })
		return len(ds) == 1 && ds[0].Status == DeliveryDelivered
	})
	got := rc.requests()
	if len(got) != 3 {
		t.Fatalf("receiver got %d requests, want 3 (two 500s, then 200)", len(got))
	}
	for i, r := range got {
		if !verify(secret, r) {
			t.Errorf("request %d: signature %q does not verify", i, r.signature)
		}
		if r.event != "approved" || r.delivery != got[0].delivery || uuid.Validate(r.delivery) != nil {
			t.Errorf("request %d: event %q, delivery %q; want approved and one UUID for every attempt", i, r.event, r.delivery)
		}
	}
	var body map[string]any
	if err := json.Unmarshal(got[0].body, &body); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"event": "approved",
		"deployment": map[string]any{"id": "1a2b3c4d5e6f", "stack": "App", "kind": "deploy", "status": "APPROVED", "message": "bump",
			"createdBy": "bob", "approvedBy": "alice", "createdAt": "2026-01-02T03:04:05Z"},
		"organization": "web", "project": "shop",
		"url":  "https://cdkx.example/web/shop/deployments/1a2b3c4d5e6f",
		"text": "Deployment 1a2b3c4d of App approved by alice",
		"time": "2026-01-02T03:04:05Z",
	}
	if diff := cmp.Diff(want, body); diff != "" {
		t.Errorf("payload (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{1, 2}, fh.waits); diff != "" {
		t.Errorf("backoff after attempts (-want +got):\n%s", diff)
	}
	ds := n.deliveries(func(string) bool { return true })
	if ds[0].Attempts != 3 || ds[0].ResponseCode != 200 || ds[0].ID != got[0].delivery || ds[0].Webhook != rc.ts.URL {
		t.Errorf("delivery = %+v, want 3 attempts, 200, the header's ID", ds[0])
	}
}

func TestWebhookGivesUp(t *testing.T) {
	tests := []struct {
		name     string
		code     int
		attempts int
		status   string
	}{
		{"500 every time", http.StatusInternalServerError, 3, DeliveryFailed},
		{"410 stops at once", http.StatusGone, 1, DeliveryGone},
		{"a redirect is an answer, not followed", http.StatusFound, 3, DeliveryFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			followed := newReceiver(t, nil)
			rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
				if tt.code == http.StatusFound {
					http.Redirect(w, r, followed.ts.URL, tt.code)
					return
				}
				w.WriteHeader(tt.code)
			})
			fh := &fastHooks{}
			n := testNotifier(t, []string{rc.ts.URL + "/hook?token=x"}, nil, fh.config(3))
			n.notify("web", "shop", notice{event: "proposed", d: webhookDeployment{ID: "d1", Stack: "App", Status: state.StatusProposed}})
			eventually(t, "the last attempt", func() bool {
				ds := n.deliveries(func(string) bool { return true })
				return len(ds) == 1 && ds[0].Status == tt.status
			})
			ds := n.deliveries(func(string) bool { return true })
			if ds[0].Attempts != tt.attempts || ds[0].ResponseCode != tt.code || len(rc.requests()) != tt.attempts {
				t.Errorf("delivery = %+v after %d requests, want %d attempts answered %d", ds[0], len(rc.requests()), tt.attempts, tt.code)
			}
			if ds[0].Webhook != rc.ts.URL+"/…" {
				t.Errorf("listed webhook = %q, want its path and query hidden", ds[0].Webhook)
			}
			if got := followed.requests(); len(got) != 0 {
				t.Errorf("the redirect's target got %d requests, want none", len(got))
			}
			if got := rc.requests(); len(got) > 0 && got[0].signature != "" {
				t.Errorf("signature without a secret = %q, want none", rc.requests()[0].signature)
			}
		})
	}
}

// TestWebhookOrder: a deployment's events arrive in their order, whatever the retries.
func TestWebhookOrder(t *testing.T) {
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n%3 == 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	fh := &fastHooks{}
	n := testNotifier(t, []string{rc.ts.URL}, nil, fh.config(WebhookAttempts))
	events := []string{"proposed", "approved", "started", "completed"}
	for _, ev := range events {
		for _, id := range []string{"a", "b", "c"} {
			n.notify("web", "shop", notice{event: ev, d: webhookDeployment{ID: id, Stack: "App"}})
		}
	}
	eventually(t, "every delivery", func() bool {
		for _, d := range n.deliveries(func(string) bool { return true }) {
			if d.Status != DeliveryDelivered {
				return false
			}
		}
		return true
	})
	order := map[string][]string{}
	seen := map[string]bool{}
	for _, r := range rc.requests() {
		var p webhookPayload
		if err := json.Unmarshal(r.body, &p); err != nil {
			t.Fatal(err)
		}
		if seen[r.delivery] {
			continue // a retried attempt
		}
		seen[r.delivery] = true
		order[p.Deployment.ID] = append(order[p.Deployment.ID], p.Event)
	}
	for _, id := range []string{"a", "b", "c"} {
		if diff := cmp.Diff(events, order[id]); diff != "" {
			t.Errorf("events of %s (-want +got):\n%s", id, diff)
		}
	}
}

// TestWebhookStuckReceiver: a receiver that never answers blocks neither notify nor close, and a full
// queue drops its oldest deliveries.
func TestWebhookStuckReceiver(t *testing.T) {
	release := make(chan struct{})
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	fh := &fastHooks{}
	cfg := fh.config(WebhookAttempts)
	cfg.queue = 2
	n, err := newNotifier([]string{rc.ts.URL}, nil, "", time.Now, slog.New(slog.DiscardHandler), cfg)
	if err != nil {
		t.Fatal(err)
	}
	n.notify("web", "shop", notice{event: "proposed", d: webhookDeployment{ID: "d0"}})
	eventually(t, "the first attempt", func() bool { return len(rc.requests()) == 1 })
	start := time.Now()
	for _, id := range []string{"d1", "d2", "d3", "d4"} {
		n.notify("web", "shop", notice{event: "proposed", d: webhookDeployment{ID: id}})
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("notify with a stuck receiver took %v", took)
	}
	status := map[string]string{}
	for _, d := range n.deliveries(func(string) bool { return true }) {
		status[d.Deployment] = d.Status
	}
	want := map[string]string{"d0": DeliveryQueued, "d1": DeliveryDropped, "d2": DeliveryDropped, "d3": DeliveryQueued, "d4": DeliveryQueued}
	if diff := cmp.Diff(want, status); diff != "" {
		t.Errorf("deliveries (-want +got):\n%s", diff)
	}
	done := make(chan struct{})
	go func() { n.close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("close() did not return while a delivery hung")
	}
}

func TestWebhookBackoff(t *testing.T) {
	for n := 1; n < WebhookAttempts; n++ {
		full := WebhookBackoff << (n - 1)
		for range 100 {
			if d := defaultBackoff(n); d < full/2 || d > full {
				t.Fatalf("defaultBackoff(%d) = %v, want within [%v, %v]", n, d, full/2, full)
			}
		}
	}
}

func TestEventText(t *testing.T) {
	d := webhookDeployment{ID: "1a2b3c4d5e6f", Stack: "App", CreatedBy: "bob", ApprovedBy: "alice", RejectedBy: "carol", AbortedBy: "dan"}
	tests := []struct {
		event string
		err   string
		want  string
	}{
		{"proposed", "", "Deployment 1a2b3c4d of App proposed by bob"},
		{"approved", "", "Deployment 1a2b3c4d of App approved by alice"},
		{"rejected", "too big", "Deployment 1a2b3c4d of App rejected by carol: too big"},
		{"started", "", "Deployment 1a2b3c4d of App started"},
		{"completed", "", "Deployment 1a2b3c4d of App completed"},
		{"failed", "apply Bucket: <denied> & more\nsecond line", "Deployment 1a2b3c4d of App failed: apply Bucket: &lt;denied&gt; &amp; more"},
		{"aborted", "x\x1b[31m", "Deployment 1a2b3c4d of App aborted by dan: x[31m"},
	}
	for _, tt := range tests {
		d := d
		d.Error = tt.err
		if got := eventText(tt.event, d); got != tt.want {
			t.Errorf("eventText(%s) = %q, want %q", tt.event, got, tt.want)
		}
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://hooks.slack.com/services/T0/B0/XYZ": "https://hooks.slack.com/…",
		"http://u:p@host:8080":                       "http://host:8080",
		"http://host/":                               "http://host",
		"http://host?k=v":                            "http://host/…",
		"::":                                         "(invalid URL)",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNewNotifierRefusesBadURLs(t *testing.T) {
	for _, u := range []string{"ftp://host/x", "host/x", "http://"} {
		if _, err := newNotifier([]string{u}, nil, "", time.Now, slog.New(slog.DiscardHandler), hookConfig{}); err == nil {
			t.Errorf("newNotifier(%q) = nil error, want one", u)
		}
	}
	if n, err := newNotifier(nil, nil, "", time.Now, slog.New(slog.DiscardHandler), hookConfig{}); n != nil || err != nil {
		t.Errorf("newNotifier(no URL) = %v, %v; want nil, nil", n, err)
	}
}

// hookEvents returns "event id" of each first attempt the receiver got, in order.
func hookEvents(t *testing.T, rc *receiver) []string {
	t.Helper()
	var out []string
	seen := map[string]bool{}
	for _, r := range rc.requests() {
		if seen[r.delivery] {
			continue
		}
		seen[r.delivery] = true
		var p webhookPayload
		if err := json.Unmarshal(r.body, &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p.Event+" "+p.Deployment.ID)
	}
	return out
}

// TestWebhooksOfTheQueue: the queue's transitions post their events after they commit, none for a
// refused request or a replayed one.
func TestWebhooksOfTheQueue(t *testing.T) {
	secret := []byte("s3cret")
	rc := newReceiver(t, nil)
	fh := &fastHooks{}
	e := newEnvWith(t, Options{Webhooks: []string{rc.ts.URL}, WebhookSecret: secret, PublicURL: "https://cdkx.example", hookConfig: fh.config(3)})
	e.createStack("dev")
	e.create(dep("p1", "dev", state.StatusProposed))
	e.must(409, "POST", deps, e.token, deploymentsBody{Deployments: []state.Deployment{dep("p1", "dev", state.StatusProposed)}})
	e.must(200, "POST", deps+"/p1/transition", e.token, map[string]any{"from": []string{"PROPOSED"}, "to": "APPROVED"})
	e.must(409, "POST", deps+"/p1/transition", e.token, map[string]any{"from": []string{"PROPOSED"}, "to": "REJECTED"})
	e.must(200, "POST", deps+"/claim", e.token, map[string]any{"ids": []string{"p1"}, "runner": "r"})
	e.must(200, "POST", deps+"/p1/abort", e.token, nil) // an abort request: still RUNNING, no event
	e.must(200, "PATCH", deps+"/p1", e.token, map[string]any{"status": "COMPLETED"})
	e.create(dep("p2", "dev", state.StatusProposed), dep("d3", "dev", state.StatusPending))
	for range 2 { // the second is a replay of the first: its stored answer, and no second event
		code, body := e.do("POST", deps+"/p2/transition", e.token, map[string]any{"from": []string{"PROPOSED"}, "to": "REJECTED", "error": "too big"},
			IdempotencyHeader, "k1")
		if code != 200 {
			t.Fatalf("reject p2 = %d %s", code, body)
		}
	}
	e.must(200, "POST", deps+"/claim-next", e.token, map[string]any{"runner": "agent"})
	e.must(200, "PATCH", deps+"/d3", e.token, map[string]any{"status": "FAILED", "error": "boom"})
	want := []string{"proposed p1", "approved p1", "started p1", "completed p1", "proposed p2", "rejected p2", "started d3", "failed d3"}
	eventually(t, "the deliveries", func() bool {
		ds := e.srv.hooks.deliveries(func(string) bool { return true })
		return len(ds) >= len(want) && ds[0].Status == DeliveryDelivered
	})
	if diff := cmp.Diff(want, hookEvents(t, rc)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	var p webhookPayload
	got := rc.requests()
	// The record as stored: the creator is the token, not what the client sent.
	if err := json.Unmarshal(got[0].body, &p); err != nil {
		t.Fatal(err)
	}
	if p.Deployment.CreatedBy != "alice" || p.Deployment.CreatedAt.IsZero() || p.Text != "Deployment p1 of dev proposed by alice" {
		t.Errorf("proposal = %+v, want created by alice, with its time", p)
	}
	if err := json.Unmarshal(got[5].body, &p); err != nil {
		t.Fatal(err)
	}
	if !verify(secret, got[5]) || p.Text != "Deployment p2 of dev rejected by alice: too big" || p.URL != "https://cdkx.example/org/proj/deployments/p2" ||
		p.Organization != "org" || p.Project != "proj" || p.Deployment.CreatedBy != "alice" || p.Deployment.Status != state.StatusRejected {
		t.Errorf("rejection = %+v (signature verifies: %v)", p, verify(secret, got[5]))
	}

	// The deliveries, newest first, to a token of the organization; none to another organization's.
	var list struct{ Deliveries []WebhookDelivery }
	decode(t, e.must(200, "GET", "/api/cdkx/webhooks/deliveries", e.token, nil), &list)
	if len(list.Deliveries) != len(want) || list.Deliveries[0].Deployment != "d3" || list.Deliveries[0].Event != "failed" || list.Deliveries[0].Status != DeliveryDelivered {
		t.Errorf("deliveries = %+v, want %d, newest first, delivered", list.Deliveries, len(want))
	}
	other, err := e.srv.CreateToken(context.Background(), "eve", ForOrgs("elsewhere"), ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	decode(t, e.must(200, "GET", "/api/cdkx/webhooks/deliveries", "token "+other, nil), &list)
	if len(list.Deliveries) != 0 {
		t.Errorf("deliveries to another organization's token = %+v, want none", list.Deliveries)
	}
	e.must(401, "GET", "/api/cdkx/webhooks/deliveries", "", nil)
}

// TestWebhookDeadWaiters: a waiter aborted by the queue (no heartbeat) is an "aborted" event.
func TestWebhookDeadWaiters(t *testing.T) {
	rc := newReceiver(t, nil)
	fh := &fastHooks{}
	e := newEnvWith(t, Options{Webhooks: []string{rc.ts.URL}, hookConfig: fh.config(3)})
	e.createStack("dev")
	e.create(waiting("w1", "dev"), dep("d2", "dev", state.StatusPending))
	e.clock.advance(state.DeadAfter + time.Second)
	e.must(200, "POST", deps+"/claim", e.token, map[string]any{"ids": []string{"d2"}, "runner": "r"})
	want := []string{"aborted w1", "started d2"}
	eventually(t, "the events", func() bool { return len(hookEvents(t, rc)) >= len(want) })
	if diff := cmp.Diff(want, hookEvents(t, rc)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestWebhookNeverBlocksTheQueue: with a receiver that never answers, every transition answers at once.
func TestWebhookNeverBlocksTheQueue(t *testing.T) {
	release := make(chan struct{})
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	fh := &fastHooks{}
	e := newEnvWith(t, Options{Webhooks: []string{rc.ts.URL}, hookConfig: fh.config(3)})
	t.Cleanup(func() { close(release) }) // before the receiver closes (cleanups run last first)
	e.createStack("dev")
	for i, step := range []func(){
		func() { e.create(dep("p1", "dev", state.StatusProposed)) },
		func() {
			e.must(200, "POST", deps+"/p1/transition", e.token, map[string]any{"from": []string{"PROPOSED"}, "to": "APPROVED"})
		},
		func() {
			e.must(200, "POST", deps+"/claim", e.token, map[string]any{"ids": []string{"p1"}, "runner": "r"})
		},
		func() { e.must(200, "PATCH", deps+"/p1", e.token, map[string]any{"status": "COMPLETED"}) },
	} {
		start := time.Now()
		step()
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("step %d took %v with a stuck receiver", i, took)
		}
	}
	eventually(t, "the first attempt", func() bool { return len(rc.requests()) >= 1 })
	var list struct{ Deliveries []WebhookDelivery }
	decode(t, e.must(200, "GET", "/api/cdkx/webhooks/deliveries", e.token, nil), &list)
	if len(list.Deliveries) != 4 || !strings.HasPrefix(list.Deliveries[3].Webhook, "http://127.0.0.1") {
		t.Errorf("deliveries = %+v, want 4", list.Deliveries)
	}
}

// roundTripper is an http.RoundTripper of a function.
type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestWebhookBackoffSchedule runs the real backoff in a synctest bubble (its clock advances when every
// goroutine waits): six attempts, each wait between half of and all of 5, 10, 20, 40 and 80 s.
func TestWebhookBackoffSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var at []time.Time
		client := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			defer mu.Unlock()
			at = append(at, time.Now())
			return &http.Response{StatusCode: http.StatusBadGateway, Body: io.NopCloser(strings.NewReader("down")), Request: r}, nil
		})}
		n, err := newNotifier([]string{"https://hooks.example/x"}, []byte("k"), "", time.Now, slog.New(slog.DiscardHandler), hookConfig{client: client})
		if err != nil {
			t.Fatal(err)
		}
		defer n.close()
		start := time.Now()
		n.notify("web", "shop", notice{event: "failed", d: webhookDeployment{ID: "d1", Stack: "App", Error: "boom"}})
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		ds := n.deliveries(func(string) bool { return true })
		if len(ds) != 1 || ds[0].Status != DeliveryFailed || ds[0].Attempts != WebhookAttempts || ds[0].ResponseCode != http.StatusBadGateway {
			t.Fatalf("deliveries = %+v, want one failed after %d attempts", ds, WebhookAttempts)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(at) != WebhookAttempts || !at[0].Equal(start) {
			t.Fatalf("attempts at %v, want %d, the first at once", at, WebhookAttempts)
		}
		for i := 1; i < len(at); i++ {
			full := WebhookBackoff << (i - 1)
			if gap := at[i].Sub(at[i-1]); gap < full/2 || gap > full {
				t.Errorf("wait before attempt %d = %v, want within [%v, %v]", i+1, gap, full/2, full)
			}
		}
		if total := at[len(at)-1].Sub(start); total > 155*time.Second {
			t.Errorf("the attempts spanned %v, want at most 155s", total)
		}
	})
}

// TestWebhookDrain: drain returns once every queued delivery is done.
func TestWebhookDrain(t *testing.T) {
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond)
		if n == 0 {
			w.WriteHeader(http.StatusInternalServerError)
		}
	})
	fh := &fastHooks{}
	n := testNotifier(t, []string{rc.ts.URL}, nil, fh.config(3))
	for _, id := range []string{"a", "b", "c"} {
		n.notify("web", "shop", notice{event: "completed", d: webhookDeployment{ID: id}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := n.drain(ctx); err != nil {
		t.Fatalf("drain() = %v", err)
	}
	for _, d := range n.deliveries(func(string) bool { return true }) {
		if d.Status != DeliveryDelivered {
			t.Errorf("after drain, %s = %s, want delivered", d.Deployment, d.Status)
		}
	}
	if got := len(rc.requests()); got != 4 {
		t.Errorf("receiver got %d requests, want 4 (one retry)", got)
	}
	// A receiver that never answers: drain gives up at the deadline.
	stuck := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	n2 := testNotifier(t, []string{stuck.ts.URL}, nil, fh.config(3))
	n2.notify("web", "shop", notice{event: "completed", d: webhookDeployment{ID: "x"}})
	short, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	if err := n2.drain(short); err == nil {
		t.Error("drain() with a stuck receiver = nil, want the deadline's error")
	}
}
