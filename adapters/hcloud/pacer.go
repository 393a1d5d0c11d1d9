package hcloud

import (
	"net/http"
	"sync"
	"time"
)

// pacer is an http.RoundTripper that keeps requests within the project's rate limit before Hetzner
// refuses them: it mirrors the API's token bucket from the RateLimit-* headers of the latest response and,
// when the estimate of the requests left (minus those in flight) falls below one, holds the next request
// until the bucket has refilled enough. Without those headers it only passes requests on.
//
// The estimate after a response that said R remaining at time t is R + rate·(now − t) − (requests sent
// since t); requests in flight are subtracted too, since any of them may reach the API before the next
// one. Responses overtake each other, so a response that says more is left than the estimate is
// ignored: it may describe the bucket before requests that were answered earlier. So under a tight budget the adapter slows down to the refill rate (1 request per second at
// Hetzner) instead of running into 429s.
type pacer struct {
	next http.RoundTripper
	now  func() time.Time
	// sleep waits d or until the request's context ends (false).
	sleep func(req *http.Request, d time.Duration) bool

	mu       sync.Mutex
	known    bool
	at       time.Time // when the latest budget was observed
	left     float64   // requests remaining then
	limit    float64
	rate     float64 // refill, requests per second
	sent     int     // requests sent since at
	inFlight int
	// waited is the total time requests were held, for tests and logs.
	waited time.Duration
}

func newPacer(next http.RoundTripper, now func() time.Time) *pacer {
	return &pacer{next: next, now: now, sleep: func(req *http.Request, d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-req.Context().Done():
			return false
		}
	}}
}

// RoundTrip waits for budget, sends req and observes the response's rate-limit headers.
func (p *pacer) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := p.admit(req); err != nil {
		return nil, err
	}
	resp, err := p.next.RoundTrip(req)
	p.mu.Lock()
	p.inFlight--
	if err == nil {
		now := p.now()
		// Responses overtake each other: one that says more is left than the estimate may describe the
		// bucket before requests that were answered already, so only news of less budget is taken.
		if rl, ok := parseRateLimit(resp.Header, now); ok && (!p.known || rl.remaining <= p.estimate(now)) {
			p.known, p.at, p.left, p.limit, p.rate, p.sent = true, now, rl.remaining, rl.limit, rl.rate, 0
		}
	}
	p.mu.Unlock()
	return resp, err
}

// estimate is the requests left at now by the latest observation, the refill since and the requests
// sent since. Called with p.mu held.
func (p *pacer) estimate(now time.Time) float64 {
	return min(p.left+p.rate*now.Sub(p.at).Seconds(), p.limit) - float64(p.sent)
}

// admit waits until the estimated budget allows one more request, then counts it as sent.
func (p *pacer) admit(req *http.Request) error {
	p.mu.Lock()
	for p.known {
		est := p.estimate(p.now()) - float64(p.inFlight)
		if est >= 1 {
			break
		}
		wait := time.Duration((1 - est) / p.rate * float64(time.Second))
		wait = max(wait, 10*time.Millisecond)
		p.waited += wait
		p.mu.Unlock()
		if !p.sleep(req, wait) {
			return req.Context().Err()
		}
		p.mu.Lock()
	}
	p.sent++
	p.inFlight++
	p.mu.Unlock()
	return nil
}
