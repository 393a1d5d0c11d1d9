package hcloud

import (
	"net/http"
	"sync"
	"time"
)

// pacer is an http.RoundTripper that keeps requests within the project's rate limit before Hetzner
// refuses them: it mirrors the API's token bucket from the RateLimit-* headers of the responses and,
// when the estimate of the requests left falls below 1 + pacerMargin, holds the next request until the
// bucket has refilled enough. Without those headers it only passes requests on. So under a tight budget
// the adapter slows down to the refill rate (1 request per second at Hetzner) instead of running into
// 429s.
//
// Requests are numbered as they are sent, each noting how many were in flight at that moment. The budget
// is taken from the answer to the latest-sent request answered so far: R remaining at time t. Requests are
// not charged in the order they were sent, though: any of those in flight when that request was sent may
// have been charged after it. So the estimate is R, minus the requests in flight when that one was sent,
// plus rate·(now − t), at most the limit, minus every request sent after it (answered or not). It never
// runs ahead of the bucket but by the error of the rate, which pacerMargin covers.
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
	seq      uint64  // the number of the last request sent
	observed uint64  // the number of the request whose answer gave the budget
	// inFlight maps each request in flight to the number of requests in flight when it was sent.
	inFlight map[uint64]int
	// waited is the total time requests were held, for tests and logs.
	waited time.Duration
}

// pacerMargin is the part of a request's budget the pacer keeps in hand when the budget runs low: it sends
// the next request once 1.5 requests' worth has refilled, not 1, so that an estimate a little ahead of the
// API's bucket (whose headers are whole numbers and whole seconds) never meets an empty bucket. At the
// refill rate it delays each request by half a refill, once.
const pacerMargin = 0.5

func newPacer(next http.RoundTripper, now func() time.Time) *pacer {
	return &pacer{next: next, now: now, inFlight: map[uint64]int{}, sleep: func(req *http.Request, d time.Duration) bool {
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
	n, err := p.admit(req)
	if err != nil {
		return nil, err
	}
	resp, err := p.next.RoundTrip(req)
	p.mu.Lock()
	before := p.inFlight[n]
	delete(p.inFlight, n)
	if err == nil && (!p.known || n > p.observed) {
		now := p.now()
		if rl, ok := parseRateLimit(resp.Header, now); ok {
			p.known, p.at, p.left, p.limit, p.rate, p.observed = true, now, rl.remaining-float64(before), rl.limit, rl.rate, n
		}
	}
	p.mu.Unlock()
	return resp, err
}

// estimate is the requests left at now (see pacer). Called with p.mu held.
func (p *pacer) estimate(now time.Time) float64 {
	return min(p.left+p.rate*now.Sub(p.at).Seconds(), p.limit) - float64(p.seq-p.observed)
}

// admit waits until the estimated budget allows one more request, then numbers it and counts it as
// sent.
func (p *pacer) admit(req *http.Request) (uint64, error) {
	p.mu.Lock()
	for p.known {
		est := p.estimate(p.now())
		if est >= 1+pacerMargin {
			break
		}
		wait := time.Duration((1 + pacerMargin - est) / p.rate * float64(time.Second))
		wait = max(wait, 10*time.Millisecond)
		p.waited += wait
		p.mu.Unlock()
		if !p.sleep(req, wait) {
			return 0, req.Context().Err()
		}
		p.mu.Lock()
	}
	p.seq++
	n := p.seq
	p.inFlight[n] = len(p.inFlight)
	p.mu.Unlock()
	return n, nil
}
