package server

// Webhooks (Options.Webhooks): each deployment event — proposed, approved, rejected, started, completed,
// failed, aborted — is posted as JSON (webhookPayload) to every configured URL, signed with HMAC-SHA256
// over the exact body (X-Cdkx-Signature: sha256=<hex>, like GitHub's X-Hub-Signature-256), with the
// headers X-Cdkx-Event and X-Cdkx-Delivery (one UUID per delivery, the same on its retries).
//
// Events are gathered while a request's transaction runs (an outbox in its context, notes) and handed to
// the notifier only after it committed: a rolled-back transaction notifies nobody. Handing them over never
// blocks: each webhook has a bounded in-memory queue served by one goroutine, which posts the deliveries
// one after the other (so that a deployment's events arrive in their order), retrying each with
// exponential backoff and jitter; a full queue drops its oldest delivery, counted and logged. The last
// deliveries of each webhook are kept with their status (GET /api/cdkx/webhooks/deliveries). Deliveries
// live in memory: a stopping server waits a little for them (DrainWebhooks), then those still queued are
// lost; each replica posts the events of the requests it served.

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/google/uuid"

	"github.com/cdkx-dev/cdkx/pkg/state"
)

// Webhook defaults.
const (
	// WebhookQueue is how many deliveries wait per webhook; beyond, the oldest is dropped.
	WebhookQueue = 1000
	// WebhookAttempts is how often a delivery is tried before it is given up.
	WebhookAttempts = 6
	// WebhookBackoff is the wait before the second attempt; it doubles after each (with jitter: each wait
	// is between half of it and all of it), so six attempts span about two and a half minutes.
	WebhookBackoff = 5 * time.Second
	// WebhookTimeout bounds one attempt, from connecting to reading the response.
	WebhookTimeout = 10 * time.Second
	// WebhookKept is how many recent deliveries are listed per webhook.
	WebhookKept = 100
	// webhookBodyLimit bounds the response body read (and discarded) per attempt.
	webhookBodyLimit = 64 << 10
)

// The webhook headers.
const (
	SignatureHeader = "X-Cdkx-Signature"
	EventHeader     = "X-Cdkx-Event"
	DeliveryHeader  = "X-Cdkx-Delivery"
)

// Delivery statuses.
const (
	DeliveryQueued    = "queued"    // waiting for its first attempt
	DeliveryRetrying  = "retrying"  // an attempt failed; it will be tried again
	DeliveryDelivered = "delivered" // answered 2xx
	DeliveryFailed    = "failed"    // every attempt failed
	DeliveryGone      = "gone"      // answered 410: not tried again
	DeliveryDropped   = "dropped"   // dropped from a full queue
	DeliveryCancelled = "cancelled" // the server stopped first
)

// WebhookDelivery is one delivery as GET /api/cdkx/webhooks/deliveries lists it.
type WebhookDelivery struct {
	ID           string    `json:"id"`
	Webhook      string    `json:"webhook"` // the URL without its path, query and user (they may hold secrets)
	Event        string    `json:"event"`
	Deployment   string    `json:"deployment"`
	Organization string    `json:"organization"`
	Project      string    `json:"project"`
	Status       string    `json:"status"`
	Attempts     int       `json:"attempts"`
	ResponseCode int       `json:"responseCode,omitempty"`
	Error        string    `json:"error,omitempty"`
	CreatedAt    time.Time `json:"createdAt"`
	LastAttempt  time.Time `json:"lastAttemptAt,omitzero"`
}

// webhookPayload is the JSON body of a delivery.
type webhookPayload struct {
	Event        string            `json:"event"`
	Deployment   webhookDeployment `json:"deployment"`
	Organization string            `json:"organization"`
	Project      string            `json:"project"`
	URL          string            `json:"url,omitempty"`
	Text         string            `json:"text"`
	Time         time.Time         `json:"time"`
}

// webhookDeployment is the part of a deployment record a payload carries (never its plan or snapshot).
type webhookDeployment struct {
	ID         string                 `json:"id"`
	Stack      string                 `json:"stack"`
	Kind       state.DeploymentKind   `json:"kind"`
	Status     state.DeploymentStatus `json:"status"`
	Message    string                 `json:"message"`
	CreatedBy  string                 `json:"createdBy"`
	ApprovedBy string                 `json:"approvedBy,omitempty"`
	RejectedBy string                 `json:"rejectedBy,omitempty"`
	AbortedBy  string                 `json:"abortedBy,omitempty"`
	Runner     string                 `json:"runner,omitempty"`
	Error      string                 `json:"error,omitempty"`
	CreatedAt  time.Time              `json:"createdAt,omitzero"`
	StartedAt  time.Time              `json:"startedAt,omitzero"`
	FinishedAt time.Time              `json:"finishedAt,omitzero"`
}

func hookDeployment(d *state.Deployment) webhookDeployment {
	return webhookDeployment{ID: d.ID, Stack: d.Stack, Kind: d.Kind, Status: d.Status, Message: d.Message, CreatedBy: d.CreatedBy,
		ApprovedBy: d.ApprovedBy, RejectedBy: d.RejectedBy, AbortedBy: d.AbortedBy, Runner: d.Runner, Error: d.Error,
		CreatedAt: d.CreatedAt, StartedAt: d.StartedAt, FinishedAt: d.FinishedAt}
}

// eventOf is the webhook event of a deployment that became status ("" for PENDING, which has none).
func eventOf(status state.DeploymentStatus) string {
	switch status {
	case state.StatusProposed:
		return "proposed"
	case state.StatusApproved:
		return "approved"
	case state.StatusRejected:
		return "rejected"
	case state.StatusRunning:
		return "started"
	case state.StatusCompleted:
		return "completed"
	case state.StatusFailed:
		return "failed"
	case state.StatusAborted:
		return "aborted"
	}
	return ""
}

// eventText is the one-line, Slack-compatible summary of event on d, e.g. "Deployment 1a2b3c4d of App
// approved by alice". Record text is data: control characters are dropped, and Slack's &, < and > are
// escaped.
func eventText(event string, d webhookDeployment) string {
	id := d.ID
	if len(id) > 8 {
		id = id[:8]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Deployment %s of %s %s", id, d.Stack, event)
	by := ""
	switch event {
	case "proposed":
		by = d.CreatedBy
	case "approved":
		by = d.ApprovedBy
	case "rejected":
		by = d.RejectedBy
	case "aborted":
		by = d.AbortedBy
	}
	if by != "" {
		b.WriteString(" by " + by)
	}
	if d.Error != "" && (event == "failed" || event == "aborted" || event == "rejected") {
		msg, _, _ := strings.Cut(d.Error, "\n")
		if r := []rune(msg); len(r) > 200 {
			msg = string(r[:200]) + "…"
		}
		b.WriteString(": " + msg)
	}
	return slackEscape(b.String())
}

// slackEscape drops control characters and escapes what Slack's text format reserves.
func slackEscape(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// redactURL is u without its path, query and user: a Slack webhook URL's path is its secret.
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return "(invalid URL)"
	}
	out := p.Scheme + "://" + p.Host
	if p.Path != "" && p.Path != "/" || p.RawQuery != "" {
		out += "/…"
	}
	return out
}

// Sign returns the X-Cdkx-Signature value of body under secret: "sha256=" and the hex HMAC-SHA256.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// webhookClient is the HTTP client of deliveries: bounded in time, following no redirect (a 3xx is an
// answer like any other non-2xx).
func webhookClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ResponseHeaderTimeout = WebhookTimeout
	tr.MaxIdleConnsPerHost = 2
	return &http.Client{
		Transport:     tr,
		Timeout:       WebhookTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// notifier posts deployment events to the webhooks.
type notifier struct {
	hooks  []*hook
	secret []byte
	base   string
	now    func() time.Time
	log    *slog.Logger
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// hookConfig is what a notifier's tests may change.
type hookConfig struct {
	client   *http.Client
	attempts int
	// backoff is the wait after attempt n (1-based) failed.
	backoff func(n int) time.Duration
	queue   int
	kept    int
}

// defaultBackoff is WebhookBackoff doubled per attempt, with jitter: between half of it and all of it.
func defaultBackoff(n int) time.Duration {
	d := WebhookBackoff << (n - 1)
	return d/2 + rand.N(d/2+1)
}

// hook is one webhook: its queue, its dispatcher's state and its recent deliveries.
type hook struct {
	url string
	cfg hookConfig
	mu  sync.Mutex
	// queue holds the deliveries not yet taken by the dispatcher, oldest first.
	queue []*pending
	// recent holds the last cfg.kept deliveries, oldest first.
	recent  []*WebhookDelivery
	dropped int64
	// busy is true while the dispatcher holds a delivery (drain).
	busy bool
	wake chan struct{}
}

// pending is a delivery in a queue: its body and its listed record (guarded by hook.mu).
type pending struct {
	body []byte
	rec  *WebhookDelivery
}

// newNotifier starts one dispatcher per URL; nil when there is none.
func newNotifier(urls []string, secret []byte, base string, now func() time.Time, log *slog.Logger, cfg hookConfig) (*notifier, error) {
	if len(urls) == 0 {
		return nil, nil
	}
	for _, u := range urls {
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return nil, fmt.Errorf("webhook %s: want an http or https URL", redactURL(u))
		}
	}
	if cfg.client == nil {
		cfg.client = webhookClient()
	}
	if cfg.attempts <= 0 {
		cfg.attempts = WebhookAttempts
	}
	if cfg.backoff == nil {
		cfg.backoff = defaultBackoff
	}
	if cfg.queue <= 0 {
		cfg.queue = WebhookQueue
	}
	if cfg.kept <= 0 {
		cfg.kept = WebhookKept
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &notifier{secret: secret, base: strings.TrimRight(base, "/"), now: now, log: log, cancel: cancel}
	for _, u := range urls {
		h := &hook{url: u, cfg: cfg, wake: make(chan struct{}, 1)}
		n.hooks = append(n.hooks, h)
		n.wg.Go(func() { n.dispatch(ctx, h) })
	}
	return n, nil
}

// close stops the dispatchers (an attempt in flight is cancelled) and waits for them.
func (n *notifier) close() {
	if n == nil {
		return
	}
	n.cancel()
	n.wg.Wait()
}

// drain waits until every queue is empty and no delivery is in flight (a delivery waiting to be tried
// again counts as in flight), or ctx is done.
func (n *notifier) drain(ctx context.Context) error {
	if n == nil {
		return nil
	}
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		idle := true
		for _, h := range n.hooks {
			h.mu.Lock()
			idle = idle && len(h.queue) == 0 && !h.busy
			h.mu.Unlock()
		}
		if idle {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// DrainWebhooks waits until the webhooks' queued deliveries are done (delivered or given up), or ctx is
// done: a server that stops calls it, with a deadline, before Close.
func (s *Server) DrainWebhooks(ctx context.Context) error { return s.hooks.drain(ctx) }

// notice is one event gathered in a transaction.
type notice struct {
	event string
	d     webhookDeployment
}

// notify queues event on d of org/project for every webhook; it never blocks.
func (n *notifier) notify(org, project string, nt notice) {
	if n == nil || nt.event == "" {
		return
	}
	p := webhookPayload{Event: nt.event, Deployment: nt.d, Organization: org, Project: project,
		Text: eventText(nt.event, nt.d), Time: n.now().UTC()}
	if n.base != "" {
		p.URL = n.base + "/" + url.PathEscape(org) + "/" + url.PathEscape(project) + "/deployments/" + url.PathEscape(nt.d.ID)
	}
	body, err := json.Marshal(p)
	if err != nil {
		n.log.Error("webhook: encode the payload", "error", err)
		return
	}
	for _, h := range n.hooks {
		rec := &WebhookDelivery{ID: uuid.NewString(), Webhook: redactURL(h.url), Event: nt.event, Deployment: nt.d.ID,
			Organization: org, Project: project, Status: DeliveryQueued, CreatedAt: p.Time}
		h.mu.Lock()
		if len(h.queue) >= h.cfg.queue {
			old := h.queue[0]
			h.queue = h.queue[1:]
			old.rec.Status = DeliveryDropped
			h.dropped++
			n.log.Warn("webhook: queue full, dropped the oldest delivery", "webhook", old.rec.Webhook, "delivery", old.rec.ID,
				"event", old.rec.Event, "deployment", old.rec.Deployment, "dropped", h.dropped)
		}
		h.queue = append(h.queue, &pending{body: body, rec: rec})
		h.recent = append(h.recent, rec)
		if len(h.recent) > h.cfg.kept {
			h.recent = h.recent[len(h.recent)-h.cfg.kept:]
		}
		h.mu.Unlock()
		select {
		case h.wake <- struct{}{}:
		default:
		}
	}
}

// deliveries returns copies of the recent deliveries of every webhook that keep (by organization),
// newest first.
func (n *notifier) deliveries(keep func(org string) bool) []WebhookDelivery {
	out := []WebhookDelivery{}
	if n == nil {
		return out
	}
	for _, h := range n.hooks {
		h.mu.Lock()
		for i := len(h.recent) - 1; i >= 0; i-- {
			if rec := h.recent[i]; keep(rec.Organization) {
				out = append(out, *rec)
			}
		}
		h.mu.Unlock()
	}
	slices.SortStableFunc(out, func(a, b WebhookDelivery) int { return b.CreatedAt.Compare(a.CreatedAt) })
	return out
}

// dispatch serves h's queue until ctx is done.
func (n *notifier) dispatch(ctx context.Context, h *hook) {
	for {
		h.mu.Lock()
		var p *pending
		if len(h.queue) > 0 {
			p = h.queue[0]
			h.queue[0] = nil
			h.queue = h.queue[1:]
		}
		h.busy = p != nil
		h.mu.Unlock()
		if p == nil {
			select {
			case <-ctx.Done():
				return
			case <-h.wake:
				continue
			}
		}
		n.deliver(ctx, h, p)
		if ctx.Err() != nil {
			return
		}
	}
}

// deliver posts p to h until it is delivered, gone or out of attempts, and records each attempt.
func (n *notifier) deliver(ctx context.Context, h *hook, p *pending) {
	for attempt := 1; ; attempt++ {
		code, err := n.post(ctx, h, p)
		status := DeliveryRetrying
		switch {
		case err == nil && code >= 200 && code < 300:
			status = DeliveryDelivered
		case err == nil && code == http.StatusGone:
			status = DeliveryGone
		case ctx.Err() != nil:
			status = DeliveryCancelled
		case attempt >= h.cfg.attempts:
			status = DeliveryFailed
		}
		msg := ""
		if err != nil {
			msg = err.Error()
		} else if status != DeliveryDelivered {
			msg = fmt.Sprintf("answered %d", code)
		}
		h.mu.Lock()
		p.rec.Attempts, p.rec.ResponseCode, p.rec.Error, p.rec.Status, p.rec.LastAttempt = attempt, code, msg, status, n.now().UTC()
		rec := *p.rec
		h.mu.Unlock()
		attrs := []any{"webhook", rec.Webhook, "delivery", rec.ID, "event", rec.Event, "deployment", rec.Deployment,
			"attempt", attempt, "status", rec.Status}
		if code != 0 {
			attrs = append(attrs, "responseCode", code)
		}
		switch status {
		case DeliveryDelivered:
			n.log.Info("webhook delivery", attrs...)
			return
		case DeliveryRetrying:
			n.log.Warn("webhook delivery", append(attrs, "error", msg)...)
		default:
			n.log.Error("webhook delivery", append(attrs, "error", msg)...)
			return
		}
		t := time.NewTimer(h.cfg.backoff(attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			h.mu.Lock()
			p.rec.Status = DeliveryCancelled
			h.mu.Unlock()
			return
		case <-t.C:
		}
	}
}

// post makes one attempt: the response's status code, or an error when there was none.
func (n *notifier) post(ctx context.Context, h *hook, p *pending) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(p.body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "cdkx-webhook")
	req.Header.Set(EventHeader, p.rec.Event)
	req.Header.Set(DeliveryHeader, p.rec.ID)
	if len(n.secret) > 0 {
		req.Header.Set(SignatureHeader, Sign(n.secret, p.body))
	}
	resp, err := h.cfg.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL, which may hold a secret
		}
		return 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, webhookBodyLimit))
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// outbox gathers the events of one request's transaction, handed to the notifier once it committed.
type outbox struct {
	org, project string
	notices      []notice
}

type outboxKey struct{}

// withOutbox returns ctx with a new outbox for org/project; ctx itself when there is no webhook.
func (s *Server) withOutbox(ctx context.Context, org, project string) (context.Context, *outbox) {
	if s.hooks == nil {
		return ctx, nil
	}
	ob := &outbox{org: org, project: project}
	return context.WithValue(ctx, outboxKey{}, ob), ob
}

// note records the event of deployment d's new status in ctx's outbox, if it has one.
func note(ctx context.Context, d *state.Deployment) {
	if ob, _ := ctx.Value(outboxKey{}).(*outbox); ob != nil {
		ob.add(hookDeployment(d))
	}
}

// noteRecords is note of each stored record (decoded without its plan).
func noteRecords(ctx context.Context, records ...json.RawMessage) {
	ob, _ := ctx.Value(outboxKey{}).(*outbox)
	if ob == nil {
		return
	}
	for _, r := range records {
		var d webhookDeployment
		if err := json.Unmarshal(r, &d); err == nil {
			ob.add(d)
		}
	}
}

// add records the event of d's status, if it has one.
func (ob *outbox) add(d webhookDeployment) {
	if ev := eventOf(d.Status); ev != "" {
		ob.notices = append(ob.notices, notice{event: ev, d: d})
	}
}

// reset empties ob (a transaction begins again).
func (ob *outbox) reset() {
	if ob != nil {
		ob.notices = nil
	}
}

// flush hands ob's events to the notifier (after the commit) and empties it.
func (s *Server) flush(ob *outbox) {
	if ob == nil {
		return
	}
	for _, nt := range ob.notices {
		s.hooks.notify(ob.org, ob.project, nt)
	}
	ob.notices = nil
}

// webhookDeliveries answers GET /api/cdkx/webhooks/deliveries: the recent deliveries of the
// organizations the token reaches, newest first.
func (s *Server) webhookDeliveries(r *http.Request, c *call) (any, error) {
	return map[string]any{"deliveries": s.hooks.deliveries(c.scope.reaches)}, nil
}
